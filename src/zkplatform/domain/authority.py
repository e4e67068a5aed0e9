"""The authority of an http(s) URL, `host[:port]` (RFC 3986 section 3.2), read strictly.

What a DPoP proof's `htu`, a request's `Host` (HTTP/2's `:authority`) and a
trusted proxy's forwarded host may name, so that all three are read alike and
anything else is refused as malformed instead of failing deeper down:

- the host is a name of letters, digits, `-`, `.`, `_` and `~` (RFC 3986's
  unreserved characters; at most 253), or an IPv6 address in brackets. An
  address from the future (`[v1.x]`) or with a zone (`[fe80::1%25eth0]`)
  cannot name this server, and is refused;
- the port, when there is one, is 1 to 5 digits of a value from 1 to 65535: an
  empty port (`host:`), `0`, a sign, an exponent or another colon is refused.

Hosts compare in lower case, IPv6 addresses in their compressed form.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Final

_NAME: Final = re.compile(r"[A-Za-z0-9._~-]{1,253}")
_PORT: Final = re.compile(r"[0-9]{1,5}")
MAX_PORT: Final = 65535


@dataclass(frozen=True, slots=True)
class Authority:
    """A host (lower case; an IPv6 address bracketed and compressed) and its port, if given."""

    host: str
    port: int | None = None

    def text(self, default_port: int | None = None) -> str:
        """host[:port], the port left out when it is the scheme's default."""
        return self.host if self.port is None or self.port == default_port else f"{self.host}:{self.port}"


def parse_authority(text: str) -> Authority | None:
    """The authority `text` names, or None when it is not a host and an optional port as above."""
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return None
        host = _ipv6(text[1:end])
        rest = text[end + 1 :]
    else:
        name, colon, port_text = text.partition(":")
        host = name.lower() if _NAME.fullmatch(name) else None
        rest = colon + port_text
    if host is None:
        return None
    if not rest:
        return Authority(host)
    if not rest.startswith(":") or not _PORT.fullmatch(rest[1:]) or not 1 <= int(rest[1:]) <= MAX_PORT:
        return None
    return Authority(host, int(rest[1:]))


def _ipv6(literal: str) -> str | None:
    if "%" in literal:  # a zone means something to one host's interfaces only
        return None
    try:
        return f"[{ipaddress.IPv6Address(literal).compressed}]"
    except ValueError:
        return None
