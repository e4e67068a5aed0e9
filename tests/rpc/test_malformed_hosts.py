"""Malformed hosts and ports, in every place a request can name one, through the whole app in process.

A `Host` (HTTP/2's `:authority`, which hypercorn hands on as the Host:
tests/e2e/test_malformed_hosts.py sends it over HTTP/2) that is not a host and an
optional port answers 400 `HEADER_INVALID` naming `host`, on every path; a DPoP
proof whose `htu` is not an http(s) URL of such a host answers `DPOP_PROOF_INVALID`
naming the htu check; a trusted proxy's malformed forwarded host is ignored. None of
them answers 500, and none logs an error or a traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import httpx
import pytest
from joserfc import jwk

from tests.connect import BROKER_MINT, JSON, VAULT_DELETE, brief, detail, error_of, headers
from tests.dpop import make_proof, new_key, thumbprint
from tests.world import BASE_URL, FakeClock, World
from zkplatform.app import create_app
from zkplatform.config import Settings, parse_networks
from zkplatform.domain.authority import Authority, parse_authority
from zkplatform.domain.dpop import normalize_htu
from zkplatform.wiring import Platform

# Hosts that name nothing: IPv6 literals broken every way, ports out of range or not numbers,
# with and without a port.
MALFORMED = [
    "[::1",
    "[::1]]",
    "[zz::1]",
    "[1:2:3]",
    "[127.0.0.1]",
    "[]",
    "[v1.x]",
    "[v1.x]:8443",
    "[fe80::1%25eth0]",
    "[fe80::1%eth0]:8443",
    "::1",
    "::1:8443",
    "[::1]x",
    "[::1]:",
    "[::1]:0",
    "[::1]:-1",
    "[::1]:1e3",
    "[::1]:65536",
    "[::1]:99999",
    "[::1]:80:80",
    "[zz::1]:8443",
    "host:",
    "host:0",
    "host:-1",
    "host:+80",
    "host:1e3",
    "host:0x50",
    "host:65536",
    "host:99999",
    "host:123456",
    "host:80:80",
    "host: 80",
    "a b",
    "user@host",
    "host\\x",
]
# Hosts that do name something, as written and as they compare.
WELL_FORMED = [
    ("testserver", Authority("testserver")),
    ("API.Example.COM:8443", Authority("api.example.com", 8443)),
    ("my_host.internal:1", Authority("my_host.internal", 1)),
    ("127.0.0.1:65535", Authority("127.0.0.1", 65535)),
    ("[::1]", Authority("[::1]")),
    ("[0:0::1]:8443", Authority("[::1]", 8443)),
    ("[2001:DB8::A]:00443", Authority("[2001:db8::a]", 443)),
    ("[::ffff:192.0.2.1]", Authority("[::ffff:c000:201]")),
]
DELETE_URL = BASE_URL + VAULT_DELETE
MINT_URL = BASE_URL + BROKER_MINT


@pytest.fixture(autouse=True)
def no_errors_logged(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Every test here: nothing at ERROR or above, no traceback, whatever it sends."""
    caplog.set_level(logging.INFO)
    yield
    bad = [record for record in caplog.records if record.levelno >= logging.ERROR or record.exc_info]
    assert not bad, [record.getMessage() for record in bad]


@pytest.fixture
def key() -> jwk.Key:
    return new_key("ec")


@pytest.mark.parametrize("text", MALFORMED)
def test_a_malformed_host_is_no_authority(text: str) -> None:
    assert parse_authority(text) is None
    assert normalize_htu(f"https://{text}/platform.v1.VaultService/DeleteItem") is None


@pytest.mark.parametrize(("text", "authority"), WELL_FORMED)
def test_a_host_compares_in_lower_case_and_an_ipv6_address_compressed(text: str, authority: Authority) -> None:
    assert parse_authority(text) == authority
    assert normalize_htu(f"http://{text}/x") == f"http://{authority.text(80)}/x"


def assert_bad_host(response: httpx.Response) -> None:
    assert response.status_code == 400, response.text
    error = error_of(response)
    assert brief(error) == {
        "code": "invalid_argument",
        "message": "malformed request: the Host header is not a host name or [IPv6 address]"
        " with an optional port from 1 to 65535",
        "reason": "HEADER_INVALID",
    }
    assert detail(error, "google.rpc.ErrorInfo")["metadata"] == {"header": "host"}


def assert_htu_refused(response: httpx.Response) -> None:
    assert response.status_code == 401, response.text
    assert brief(error_of(response)) == {
        "code": "unauthenticated",
        "message": "DPoP proof: htu does not match the request URL:"
        " the proof's htu is not an http(s) URL naming a host and an optional port",
        "reason": "DPOP_PROOF_INVALID",
    }


async def bound_token(client: httpx.AsyncClient, world: World, key: jwk.Key, clock: FakeClock) -> str:
    alice = world.token("alice")
    body = {"tenantId": "acme", "requestedScopes": ["vault.items.delete"], "popKeyId": thumbprint(key)}
    proof = make_proof(key, MINT_URL, alice, iat=clock.now)
    response = await client.post(BROKER_MINT, json=body, headers=headers(JSON, alice, DPoP=proof))
    assert response.status_code == 200, response.text
    return str(response.json()["token"]["accessToken"])


async def delete_bound(
    client: httpx.AsyncClient, token: str, proof: str, item_id: str = "no-such-item", **extra: str
) -> httpx.Response:
    body = {"vaultId": "acme-private", "itemId": item_id, "baseVersion": 1}
    return await client.post(
        VAULT_DELETE, json=body, headers=headers(JSON, Authorization=f"DPoP {token}", DPoP=proof, **extra)
    )


# the Host header


@pytest.mark.parametrize("host", MALFORMED)
async def test_a_malformed_host_is_refused_on_a_dpop_call(
    client: httpx.AsyncClient, world: World, key: jwk.Key, clock: FakeClock, host: str
) -> None:
    token = await bound_token(client, world, key, clock)
    proof = make_proof(key, f"http://{host}{VAULT_DELETE}", token, iat=clock.now)

    assert_bad_host(await delete_bound(client, token, proof, Host=host))


@pytest.mark.parametrize("host", MALFORMED)
async def test_a_malformed_host_is_refused_on_a_mint_binding_a_key(
    client: httpx.AsyncClient, world: World, key: jwk.Key, clock: FakeClock, host: str
) -> None:
    alice = world.token("alice")
    body = {"tenantId": "acme", "requestedScopes": ["vault.items.read"], "popKeyId": thumbprint(key)}
    proof = make_proof(key, f"http://{host}{BROKER_MINT}", alice, iat=clock.now)

    response = await client.post(BROKER_MINT, json=body, headers=headers(JSON, alice, DPoP=proof, Host=host))

    assert_bad_host(response)


@pytest.mark.parametrize("path", [VAULT_DELETE, "/healthz", "/readyz", "/no/such/path"])
@pytest.mark.parametrize("host", ["[::1", "[zz::1]:8443", "host:65536", "[::1]:"])
async def test_a_malformed_host_is_refused_on_every_path(client: httpx.AsyncClient, path: str, host: str) -> None:
    response = await client.post(path, content=b"{}", headers=headers(JSON, Host=host))

    assert_bad_host(response)


async def test_a_host_is_judged_alike_every_time_it_is_sent(client: httpx.AsyncClient) -> None:
    """The front remembers its answer for a Host: the same malformed one is refused again,
    and a well-formed one, asked between and after, is served each time."""
    for host in ["[::1]:99999", "[::1]:8443", "[::1]:99999", "[::1]:8443"]:
        response = await client.get("/healthz", headers={"Host": host})
        if host.endswith("99999"):
            assert_bad_host(response)
        else:
            assert response.status_code == 200, response.text


async def test_two_host_headers_are_refused(client: httpx.AsyncClient, world: World) -> None:
    body = {"vaultId": "acme-private", "itemId": "x", "baseVersion": 1}
    both = [*headers(JSON, world.token("alice")).items(), ("Host", "testserver"), ("Host", "elsewhere.example")]

    response = await client.post(VAULT_DELETE, json=body, headers=both)

    assert response.status_code == 400, response.text
    assert brief(error_of(response))["message"] == "malformed request: more than one Host header"


@pytest.mark.parametrize(("host", "htu_host"), [(text, authority.text(80)) for text, authority in WELL_FORMED])
async def test_a_well_formed_host_names_the_url_a_proof_is_checked_against(
    client: httpx.AsyncClient, world: World, key: jwk.Key, clock: FakeClock, host: str, htu_host: str
) -> None:
    """Such a host passes the front, and the proof names it as the host compares: in lower case,
    an IPv6 address compressed, a default port or none."""
    token = await bound_token(client, world, key, clock)
    proof = make_proof(key, f"http://{htu_host}{VAULT_DELETE}", token, iat=clock.now)

    response = await delete_bound(client, token, proof, Host=host)

    assert response.status_code == 404, response.text  # authenticated: the item does not exist
    assert brief(error_of(response))["reason"] == "ITEM_NOT_FOUND"


async def test_an_empty_host_names_the_address_the_request_reached(
    client: httpx.AsyncClient, world: World, key: jwk.Key, clock: FakeClock
) -> None:
    """HTTP/1.1's Host for a URL without an authority (RFC 9112 section 3.2): the origin is then
    the server's address (httpx's in-process server: the base URL's host, port 80)."""
    token = await bound_token(client, world, key, clock)
    proof = make_proof(key, DELETE_URL, token, iat=clock.now)

    response = await delete_bound(client, token, proof, Host="")

    assert response.status_code == 404, response.text  # authenticated: the item does not exist


# the proof's htu


@pytest.mark.parametrize("host", MALFORMED)
async def test_an_htu_of_a_malformed_host_is_refused_on_a_bound_tokens_call(
    client: httpx.AsyncClient, world: World, key: jwk.Key, clock: FakeClock, host: str
) -> None:
    token = await bound_token(client, world, key, clock)
    proof = make_proof(key, f"http://{host}{VAULT_DELETE}", token, iat=clock.now)

    assert_htu_refused(await delete_bound(client, token, proof))


@pytest.mark.parametrize("host", MALFORMED)
async def test_an_htu_of_a_malformed_host_is_refused_on_a_mint_binding_a_key(
    client: httpx.AsyncClient, world: World, key: jwk.Key, clock: FakeClock, host: str
) -> None:
    alice = world.token("alice")
    body = {"tenantId": "acme", "requestedScopes": ["vault.items.read"], "popKeyId": thumbprint(key)}
    proof = make_proof(key, f"https://{host}{BROKER_MINT}", alice, iat=clock.now)

    assert_htu_refused(await client.post(BROKER_MINT, json=body, headers=headers(JSON, alice, DPoP=proof)))


@pytest.mark.parametrize("htu", ["http://[::1", "ftp://testserver/x", "testserver/x", "http:///x", "//testserver/x"])
async def test_an_htu_that_is_no_http_url_is_refused(
    client: httpx.AsyncClient, world: World, key: jwk.Key, clock: FakeClock, htu: str
) -> None:
    token = await bound_token(client, world, key, clock)
    proof = make_proof(key, htu, token, iat=clock.now)

    assert_htu_refused(await delete_bound(client, token, proof))


# a trusted proxy's forwarded host

PROXY = ("10.0.0.5", 40000)


@pytest.mark.parametrize("host", ["[::1", "[zz::1]", "[1:2:3]:8443", "[::1]:99999", "host:-1", "host:1e3", "[v1.x]"])
@pytest.mark.parametrize("header", ["X-Forwarded-Host", "Forwarded"])
async def test_a_malformed_forwarded_host_is_ignored(
    platform: Platform, world: World, key: jwk.Key, clock: FakeClock, header: str, host: str
) -> None:
    """The origin is then the request's own Host: a proof of it passes, a proof of the forwarded
    value is refused as any other URL would be."""
    app = create_app(Settings(forwarded_allow_ips=parse_networks("10.0.0.0/24")), platform=platform)
    value = f'host="{host}"' if header == "Forwarded" else host
    transport = httpx.ASGITransport(app=app, client=PROXY)
    async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
        token = await bound_token(client, world, key, clock)
        of_host = make_proof(key, DELETE_URL, token, iat=clock.now)
        of_forwarded = make_proof(key, f"https://{host}{VAULT_DELETE}", token, iat=clock.now)
        kept = await delete_bound(client, token, of_host, **{header: value})
        refused = await delete_bound(client, token, of_forwarded, **{header: value})

    assert kept.status_code == 404, kept.text  # authenticated: the item does not exist
    assert_htu_refused(refused)
