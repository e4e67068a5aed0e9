"""What the client addressed (scheme://host[:port], what a DPoP proof's `htu` must name), and
where the client is (its address, for the access log and the audit trail).

Behind a load balancer or reverse proxy, the request that reaches the server
names the server's internal address, not the one the client used. Two ways
to know the public one:

- a configured public URL (`serve --public-url`), which then always wins;
- the forwarded headers (RFC 7239 `Forwarded`, else `X-Forwarded-Proto` and
  `X-Forwarded-Host`), believed only when the connection comes from a trusted
  proxy (`serve --forwarded-allow-ips`): anyone else could name any origin.
  Each proxy appends its element, so the last one is what the nearest proxy,
  the trusted peer, saw. A malformed value is ignored, never half-used.

Without either, the origin is the request's own scheme and Host header. Every
host is read alike (domain/authority.py): a Host that is not a host and an
optional port is refused at the front (`host_refusal`), a forwarded one ignored.

The client's address is the connecting peer's, unless that peer is a trusted
proxy: then it is the address the proxies forwarded (the `for` parameters of
`Forwarded`, else `X-Forwarded-For`), read from the right, where the nearest
proxy appended the address it saw, past every address that is itself a trusted
proxy. Anything before the first untrusted address could have been written by
the client itself, so it is never read. A member that is no IP address
(`unknown`, an obfuscated name, garbage) leaves the peer as it was.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from zkplatform.domain.authority import parse_authority

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_TCHAR = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
# Values are tokens or quoted strings; a host:port or [IPv6] left unquoted, as some proxies
# send them, is taken too.
_PAIR = re.compile(rf'({_TCHAR})=([!#$%&\'*+.^_`|~0-9A-Za-z:\[\]-]+|"(?:[^"\\]|\\.)*")')
_SCHEMES = ("http", "https")
# A node (RFC 7239 section 6, the unquoted value; X-Forwarded-For members alike): an IPv4
# address or a bracketed IPv6 address with an optional port, or an IPv6 address alone.
_NODE = re.compile(r"(?:([0-9.]+)|\[([0-9A-Fa-f:.]+)\])(?::([0-9]{1,5}|_[A-Za-z0-9._-]+))?|([0-9A-Fa-f:.]+)")

Client = tuple[str, int | None]  # an address and, when known, its port


@dataclass(frozen=True, slots=True)
class Forwarded:
    """What a trusted proxy says the client addressed; None where it says nothing."""

    proto: str | None = None
    host: str | None = None


def parse_forwarded(values: Iterable[str]) -> list[dict[str, str]] | None:
    """The elements of `Forwarded` header lines (RFC 7239), in order, each a map of
    lower-cased parameter names to values (quotes removed); None when malformed."""
    text = ",".join(values)
    elements: list[dict[str, str]] = []
    element: dict[str, str] = {}
    at = 0
    while (at := _skip_space(text, at)) < len(text):
        if text[at] == ",":  # the next proxy's element; empty list members are allowed
            if element:
                elements.append(element)
            element, at = {}, at + 1
            continue
        pair = _PAIR.match(text, at)
        if pair is None:
            return None
        name, value = pair[1].lower(), pair[2]
        if name in element:
            return None  # a parameter named twice in one element (section 4)
        element[name] = re.sub(r"\\(.)", r"\1", value[1:-1]) if value.startswith('"') else value
        at = _skip_space(text, pair.end())
        if at < len(text) and text[at] not in ";,":
            return None
        if at < len(text) and text[at] == ";":
            at += 1
    if element:
        elements.append(element)
    return elements


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t":
        at += 1
    return at


def forwarded_by_proxy(headers: Sequence[tuple[bytes, bytes]]) -> Forwarded:
    """The scheme and host the nearest proxy forwarded: from its `Forwarded` element
    when the request carries that header, else from `X-Forwarded-Proto`/`-Host`."""
    lines: dict[bytes, list[str]] = {}
    for key, value in headers:
        if key in (b"forwarded", b"x-forwarded-proto", b"x-forwarded-host"):
            lines.setdefault(key, []).append(value.decode("latin-1"))
    if b"forwarded" in lines:
        elements = parse_forwarded(lines[b"forwarded"])
        last = elements[-1] if elements else {}
        return Forwarded(_proto(last.get("proto")), _host(last.get("host")))
    return Forwarded(
        _proto(_last_listed(lines.get(b"x-forwarded-proto"))), _host(_last_listed(lines.get(b"x-forwarded-host")))
    )


def _last_listed(lines: list[str] | None) -> str | None:
    """The last member of a comma-separated header: the one the nearest proxy added."""
    if not lines:
        return None
    members = [member.strip() for member in ",".join(lines).split(",")]
    return members[-1] or None


def _proto(value: str | None) -> str | None:
    return value.lower() if value is not None and value.lower() in _SCHEMES else None


def _host(value: str | None) -> str | None:
    authority = parse_authority(value) if value is not None else None
    return None if authority is None else authority.text()


def host_refusal(headers: Sequence[tuple[bytes, bytes]]) -> str | None:
    """Why the request's Host header (HTTP/2's `:authority`, which the server hands on as one) cannot
    be taken, or None when it can: RFC 9112 section 3.2 answers 400 to more than one, and to one
    that is not a host and an optional port (domain/authority.py). Empty or absent, it is fine:
    the origin is then the address the request reached."""
    hosts = [value for key, value in headers if key == b"host"]
    if len(hosts) > 1:
        return "more than one Host header"
    if hosts and hosts[0] and not _is_authority(hosts[0]):
        return "the Host header is not a host name or [IPv6 address] with an optional port from 1 to 65535"
    return None


# Every call asks, and a server is addressed by a handful of names: the answer, pure, is kept
# for the last few hundred (bounded, so that a client sending many Hosts only evicts).
@functools.lru_cache(maxsize=256)
def _is_authority(host: bytes) -> bool:
    return parse_authority(host.decode("latin-1")) is not None


def forwarded_for(headers: Sequence[tuple[bytes, bytes]]) -> list[str] | None:
    """The client addresses the proxies forwarded, in order (the nearest proxy's last): the `for`
    parameters of the `Forwarded` elements when the request carries that header, else the
    members of `X-Forwarded-For`. None when there are none, or when one is missing or the
    header is malformed: then nothing is known of the client."""
    forwarded: list[str] = []
    x_forwarded_for: list[str] = []
    for key, value in headers:
        if key == b"forwarded":
            forwarded.append(value.decode("latin-1"))
        elif key == b"x-forwarded-for":
            x_forwarded_for.append(value.decode("latin-1"))
    if forwarded:
        elements = parse_forwarded(forwarded)
        if not elements or any("for" not in element for element in elements):
            return None
        return [element["for"] for element in elements]
    members = [member.strip() for member in ",".join(x_forwarded_for).split(",")]
    return None if not x_forwarded_for or "" in members else members


def node_address(node: str) -> Client | None:
    """An IP address and its port (None when not given, or obfuscated) from a forwarded node,
    or None when the node names no IP address."""
    match = _NODE.fullmatch(node)
    if match is None:
        return None
    try:
        address = ipaddress.ip_address(match[1] or match[2] or match[4])
    except ValueError:
        return None
    if match[2] is not None and address.version != 6:  # brackets hold IPv6 only
        return None
    port = match[3]
    if port is None or port.startswith("_"):
        return (str(address), None)
    return (str(address), int(port)) if 1 <= int(port) <= 65535 else None


def client_of(
    client: Sequence[Any] | None, headers: Sequence[tuple[bytes, bytes]], trusted: Sequence[Network]
) -> Sequence[Any] | None:
    """The client's address: the peer's (ASGI `client`), or, when the peer is a trusted proxy,
    the nearest address the proxies forwarded that is not itself a trusted proxy (the
    farthest one when all are)."""
    if not is_trusted(client, trusted):
        return client
    nodes = forwarded_for(headers)
    if nodes is None:
        return client
    found: Client | None = None
    for node in reversed(nodes):
        found = node_address(node)
        if found is None:
            return client
        if not is_trusted(found, trusted):
            return found
    return found or client


def is_trusted(client: Sequence[Any] | None, trusted: Sequence[Network]) -> bool:
    """Whether the peer (ASGI `client`: host, port) is one of the trusted proxies."""
    if not trusted or not client:
        return False
    try:
        address = ipaddress.ip_address(str(client[0]))
    except ValueError:  # a unix socket's path, or no address at all
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # an IPv4 peer on a dual-stack socket
    return any(address in network for network in trusted)


@dataclass(frozen=True, slots=True)
class Origin:
    """Resolves the origin and the client of each request; `public`: the configured public
    origin, `trusted`: the proxies whose forwarded headers are believed."""

    public: str | None = None
    trusted: tuple[Network, ...] = ()

    def url(self, scope: Mapping[str, Any]) -> str:
        """scheme://host[:port]/path as the client addressed it: the path stays the request's."""
        return f"{self.of(scope)}{scope['path']}"

    def of(self, scope: Mapping[str, Any]) -> str:
        if self.public is not None:
            return self.public
        headers: Sequence[tuple[bytes, bytes]] = scope.get("headers", ())
        scheme: str = scope.get("scheme", "http")
        # Malformed or repeated, the Host was refused at the front (rpc/front/malformed.py).
        host = next((value.decode("latin-1") for key, value in headers if key == b"host"), "")
        if not host:  # HTTP/1.0 without one, or an empty one (RFC 9112 section 3.2): the address it reached
            server = scope.get("server") or ("localhost", None)
            name = f"[{server[0]}]" if ":" in str(server[0]) else str(server[0])
            host = name if server[1] is None else f"{name}:{server[1]}"
        if is_trusted(scope.get("client"), self.trusted):
            forwarded = forwarded_by_proxy(headers)
            scheme = forwarded.proto or scheme
            host = forwarded.host or host
        return f"{scheme}://{host}"

    def client(self, scope: Mapping[str, Any]) -> Sequence[Any] | None:
        """The client's address and port (None when unknown), as ASGI's `client`: see client_of."""
        peer: Sequence[Any] | None = scope.get("client")
        if not self.trusted:
            return peer
        return client_of(peer, scope.get("headers", ()), self.trusted)
