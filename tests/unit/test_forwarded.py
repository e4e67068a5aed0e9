"""The origin a DPoP proof must name: forwarded headers (RFC 7239 and X-Forwarded-*), believed
only from trusted proxies, and a configured public URL."""

from __future__ import annotations

import ipaddress

import pytest

from zkplatform.config import ConfigError, check_public_url, parse_networks
from zkplatform.rpc.origin import (
    Forwarded,
    Origin,
    client_of,
    forwarded_by_proxy,
    is_trusted,
    node_address,
    parse_forwarded,
)

PROXY = ("10.0.0.5", 40000)
TRUSTED = parse_networks("10.0.0.0/24,::1")


def scope(*headers: tuple[str, str], client: tuple[str, int] | None = PROXY) -> dict[str, object]:
    return {
        "scheme": "http",
        "path": "/platform.v1.VaultService/DeleteItem",
        "headers": [(b"host", b"10.0.0.9:8080"), *((k.encode(), v.encode()) for k, v in headers)],
        "server": ("10.0.0.9", 8080),
        "client": client,
    }


@pytest.mark.parametrize(
    ("lines", "elements"),
    [
        (["proto=https;host=api.example.com"], [{"proto": "https", "host": "api.example.com"}]),
        (
            ['for=192.0.2.60;proto=http, for="[2001:db8::1]:4711";Proto=HTTPS;host="api.example.com:8443"'],
            [
                {"for": "192.0.2.60", "proto": "http"},
                {"for": "[2001:db8::1]:4711", "proto": "HTTPS", "host": "api.example.com:8443"},
            ],
        ),
        (["for=a", "for=b;host=x"], [{"for": "a"}, {"for": "b", "host": "x"}]),  # two header lines
        (["for=a , , for=b"], [{"for": "a"}, {"for": "b"}]),  # empty list members
        (['host="a\\"b"'], [{"host": 'a"b'}]),  # a quoted-pair
        ([""], []),
    ],
)
def test_forwarded_elements_are_parsed(lines: list[str], elements: list[dict[str, str]]) -> None:
    assert parse_forwarded(lines) == elements


@pytest.mark.parametrize(
    "line",
    ["host", "host=", "host=a b", 'host="unterminated', "proto=https;proto=http", "host=a;;", "=x", "host=a host=b"],
)
def test_a_malformed_forwarded_header_is_refused_whole(line: str) -> None:
    assert parse_forwarded([line]) is None


@pytest.mark.parametrize(
    ("headers", "forwarded"),
    [
        ([("forwarded", "for=1.2.3.4;proto=https;host=api.example.com")], Forwarded("https", "api.example.com")),
        # each proxy appends its element: the last is the nearest proxy's, the one we trust
        (
            [("forwarded", "proto=http;host=evil.example, proto=https;host=api.example.com:8443")],
            Forwarded("https", "api.example.com:8443"),
        ),
        (
            [("x-forwarded-proto", "https"), ("x-forwarded-host", "api.example.com")],
            Forwarded("https", "api.example.com"),
        ),
        (
            [("x-forwarded-proto", "http, https"), ("x-forwarded-host", "a.example, b.example")],
            Forwarded("https", "b.example"),
        ),
        # Forwarded, the standard, wins over X-Forwarded-*
        ([("forwarded", "proto=https"), ("x-forwarded-host", "other.example")], Forwarded("https", None)),
        # what is not a scheme we serve or not a host is ignored, not half-used
        ([("x-forwarded-proto", "gopher"), ("x-forwarded-host", "a/b")], Forwarded(None, None)),
        ([("forwarded", "host=a.example:99999")], Forwarded(None, None)),
        ([("forwarded", "host=a.example;;")], Forwarded(None, None)),
        ([("forwarded", 'host="[::1]:8443"')], Forwarded(None, "[::1]:8443")),
        ([], Forwarded(None, None)),
    ],
)
def test_what_the_nearest_proxy_forwarded(headers: list[tuple[str, str]], forwarded: Forwarded) -> None:
    assert forwarded_by_proxy([(k.encode(), v.encode()) for k, v in headers]) == forwarded


@pytest.mark.parametrize(
    ("client", "trusted"),
    [
        (("10.0.0.5", 1), True),
        (("10.0.1.5", 1), False),
        (("::1", 1), True),
        (("::ffff:10.0.0.7", 1), True),  # an IPv4 peer on a dual-stack socket
        (("/run/zk.sock", None), False),
        (None, False),
    ],
)
def test_trusted_peers(client: tuple[str, int | None] | None, trusted: bool) -> None:
    assert is_trusted(client, TRUSTED) is trusted


def test_no_peer_is_trusted_by_default() -> None:
    assert not is_trusted(("127.0.0.1", 1), ())


def test_the_origin_is_the_host_header_without_configuration() -> None:
    forwarded = scope(("x-forwarded-proto", "https"), ("x-forwarded-host", "api.example.com"))

    assert Origin().url(forwarded) == "http://10.0.0.9:8080/platform.v1.VaultService/DeleteItem"


def test_forwarded_headers_count_from_a_trusted_proxy_only() -> None:
    headers = (("forwarded", "proto=https;host=api.example.com"),)
    origin = Origin(trusted=TRUSTED)

    assert origin.of(scope(*headers)) == "https://api.example.com"
    assert origin.of(scope(*headers, client=("192.0.2.1", 5))) == "http://10.0.0.9:8080"
    assert origin.of(scope(("x-forwarded-proto", "https"))) == "https://10.0.0.9:8080"  # the Host passed through


def test_the_public_url_wins_over_everything() -> None:
    origin = Origin(public="https://api.example.com", trusted=TRUSTED)
    forwarded = scope(("forwarded", "proto=http;host=other.example"))

    assert origin.url(forwarded) == "https://api.example.com/platform.v1.VaultService/DeleteItem"


@pytest.mark.parametrize(
    ("node", "address"),
    [
        ("192.0.2.43", ("192.0.2.43", None)),
        ("192.0.2.43:47011", ("192.0.2.43", 47011)),
        ("[2001:db8:cafe::17]:4711", ("2001:db8:cafe::17", 4711)),
        ("[2001:db8:cafe::17]", ("2001:db8:cafe::17", None)),
        ("2001:db8:cafe::17", ("2001:db8:cafe::17", None)),  # X-Forwarded-For's bare IPv6
        ("192.0.2.43:_port", ("192.0.2.43", None)),  # an obfuscated port
        ("unknown", None),
        ("_hidden", None),
        ("192.0.2.300", None),
        ("[192.0.2.43]", None),
        ("192.0.2.43:0", None),
        ("192.0.2.43:65536", None),
        ("proxy.internal", None),
        ("", None),
    ],
)
def test_forwarded_nodes(node: str, address: tuple[str, int | None] | None) -> None:
    assert node_address(node) == address


@pytest.mark.parametrize(
    ("headers", "peer", "client"),
    [
        ([("x-forwarded-for", "203.0.113.7")], PROXY, ("203.0.113.7", None)),
        ([("x-forwarded-for", "198.51.100.1"), ("x-forwarded-for", "203.0.113.7")], PROXY, ("203.0.113.7", None)),
        ([("x-forwarded-for", "198.51.100.1, 203.0.113.7, 10.0.0.8")], PROXY, ("203.0.113.7", None)),
        ([("x-forwarded-for", "10.0.0.7, 10.0.0.8")], PROXY, ("10.0.0.7", None)),  # proxies all the way
        ([("forwarded", 'for="[2001:db8::1]:4711"')], ("::1", 9), ("2001:db8::1", 4711)),
        ([("forwarded", "for=203.0.113.7"), ("x-forwarded-for", "198.51.100.1")], PROXY, ("203.0.113.7", None)),
        ([("forwarded", "for=203.0.113.7;;")], PROXY, PROXY),
        ([("forwarded", "for=unknown")], PROXY, PROXY),
        ([("forwarded", "host=a.example")], PROXY, PROXY),
        ([("x-forwarded-for", "")], PROXY, PROXY),
        ([("x-forwarded-for", "203.0.113.7, , 10.0.0.8")], PROXY, PROXY),
        ([], PROXY, PROXY),
        ([("x-forwarded-for", "203.0.113.7")], ("192.0.2.1", 5), ("192.0.2.1", 5)),  # not a proxy
        ([("x-forwarded-for", "203.0.113.7")], None, None),
    ],
)
def test_the_client_behind_trusted_proxies(
    headers: list[tuple[str, str]], peer: tuple[str, int] | None, client: tuple[str, int | None] | None
) -> None:
    encoded = [(k.encode(), v.encode()) for k, v in headers]

    assert client_of(peer, encoded, TRUSTED) == client
    assert Origin(trusted=TRUSTED).client(scope(*headers, client=peer)) == client
    assert Origin().client(scope(*headers, client=peer)) == peer  # nobody trusted


@pytest.mark.parametrize(
    ("raw", "origin"),
    [
        ("https://API.Example.com", "https://api.example.com"),
        ("https://api.example.com:8443/", "https://api.example.com:8443"),
        ("http://[::1]:9000", "http://[::1]:9000"),
    ],
)
def test_public_urls(raw: str, origin: str) -> None:
    assert check_public_url(raw) == origin


@pytest.mark.parametrize(
    "raw",
    [
        "api.example.com",
        "ftp://a.example",
        "https://a.example/base",
        "https://u:p@a.example",
        "https://a.example:0",
        "https://a.example?x=1",
        "https://",
        # An authority a DPoP proof's htu or a Host could not name (domain/authority.py): before,
        # [v1.x] became https://v1.x and the others passed as they were.
        "https://[v1.x]",
        "https://[v1.x]:8443",
        "https://[fe80::1%25eth0]",
        "https://a.example:",
        "https://a.example:+443",
        "https://[::1",
    ],
)
def test_a_public_url_with_more_or_less_than_an_origin_is_refused(raw: str) -> None:
    with pytest.raises(ConfigError, match="--public-url must be https://HOST"):
        check_public_url(raw)


def test_allowed_ips_are_addresses_and_networks() -> None:
    assert parse_networks(" 127.0.0.1, 10.0.0.0/8 ,::1,") == (
        ipaddress.ip_network("127.0.0.1"),
        ipaddress.ip_network("10.0.0.0/8"),
        ipaddress.ip_network("::1"),
    )
    assert parse_networks("") == ()
    with pytest.raises(ConfigError, match=r"'proxy\.internal'"):
        parse_networks("10.0.0.1,proxy.internal")
