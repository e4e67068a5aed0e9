"""The values of settings: each parser takes a setting's text, as a flag or an environment
variable gives it, and returns its value or raises ConfigError saying what is wrong.

A message that names no flag is completed with the variable's name or the flag's by whoever
reads it (config.Setting); one that names its flag (--public-url ...) is shown as it is.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from zkplatform.domain.authority import parse_authority

DEFAULT_BIND = "127.0.0.1:8080"
MAX_WITNESS_TIMEOUT_SECONDS = 300.0


class ConfigError(ValueError):
    """A setting that cannot be used; the message says which and why."""


_HOSTNAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,252})")


def check_bind(bind: str) -> str:
    """HOST:PORT as `serve --bind` takes it ([::1]:PORT for IPv6), or ConfigError saying what is wrong."""
    host, colon, port = bind.rpartition(":")
    usage = f"HOST:PORT expected, with a port from 1 to 65535 (e.g. {DEFAULT_BIND} or [::1]:8080), not {bind!r}"
    if not colon or not port.isascii() or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ConfigError(usage)
    if host.startswith("[") and host.endswith("]"):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise ConfigError(usage) from None
    elif not _HOSTNAME.fullmatch(host):  # also refuses an unbracketed IPv6 address and an empty host
        raise ConfigError(usage)
    return bind


def check_public_url(raw: str) -> str:
    """`serve --public-url`: the origin clients address, http(s)://HOST[:PORT], or ConfigError.

    Its authority is read as a DPoP proof's `htu` and a request's Host are (domain/authority.py),
    so that the origin the server compares them with is one they can name: an IPv6 address from
    the future (`[v1.x]`), with a zone, or a port that is empty or out of range is refused."""
    usage = f"--public-url must be https://HOST[:PORT] (or http://), without a path, not {raw!r}"
    try:
        parts = urlsplit(raw)
    except ValueError:  # brackets that do not close
        raise ConfigError(usage) from None
    scheme = parts.scheme.lower()
    authority = parse_authority(parts.netloc)  # None for user info too: '@' is no host's
    if scheme not in ("http", "https") or authority is None or parts.path not in ("", "/") or parts.query:
        raise ConfigError(usage)
    if parts.fragment or raw.endswith(("?", "#")):
        raise ConfigError(usage)
    return f"{scheme}://{authority.text()}"


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(raw: str) -> tuple[Network, ...]:
    """`serve --forwarded-allow-ips`: comma-separated IP addresses and CIDR networks, or ConfigError."""
    networks = []
    for member in raw.split(","):
        if not member.strip():
            continue
        try:
            networks.append(ipaddress.ip_network(member.strip()))
        except ValueError:
            msg = f"--forwarded-allow-ips takes IP addresses and networks (10.0.0.0/8), not {member.strip()!r}"
            raise ConfigError(msg) from None
    return tuple(networks)


_DEFAULT_PORTS = {"http": 80, "https": 443}


def parse_cors_origins(raw: str) -> tuple[str, ...]:
    """`serve --cors-origins`: comma-separated web origins, scheme://host[:port], each as a browser
    sends it in `Origin` (lowercase, without its scheme's default port), or ConfigError.
    `*` is refused: the platform serves an allow-list, and a wildcard copied into production
    would let every page on the web call it."""
    origins: list[str] = []
    for member in (part.strip() for part in raw.split(",")):
        if not member:
            continue
        if member == "*":
            msg = "--cors-origins takes exact origins (https://app.example.com), not '*': list each origin"
            raise ConfigError(msg)
        origin = _origin(member)
        if origin is None:
            msg = f"--cors-origins takes origins, http(s)://HOST[:PORT] without a path, not {member!r}"
            raise ConfigError(msg)
        origins.append(origin)
    return tuple(dict.fromkeys(origins))


def _origin(raw: str) -> str | None:
    """`raw` as the serialized origin a browser sends, or None when it names none."""
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if (
        scheme not in _DEFAULT_PORTS
        or not raw.isascii()
        or parts.username is not None
        or parts.path
        or parts.query
        or parts.fragment
        or raw.endswith(("?", "#"))
        or not host
        or port == 0
    ):
        return None
    bracketed = f"[{host}]" if ":" in host else host
    try:
        check_bind(f"{bracketed}:{port or 1}")
    except ConfigError:
        return None
    if ":" in host:  # browsers write an IPv6 address compressed: [::1], never [0:0::1]
        bracketed = f"[{ipaddress.IPv6Address(host).compressed}]"
    return f"{scheme}://{bracketed}" + ("" if port in (None, _DEFAULT_PORTS[scheme]) else f":{port}")


def parse_paths(raw: str) -> tuple[Path, ...]:
    """`ZKPLATFORM_LOG_KEY_FILES`: comma-separated paths (a path holding a comma cannot be named)."""
    return tuple(Path(part.strip()) for part in raw.split(",") if part.strip())


_KEY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def check_log_name(raw: str) -> str:
    """The name of a log key the server makes: letters, digits, '.', '_' and '-' (a signed-note key
    name may hold more, but an origin's first element is best kept plain), or ConfigError."""
    if not _KEY_NAME.fullmatch(raw):
        msg = (
            f"a log name is 1 to 100 of [A-Za-z0-9._-], the first a letter or digit (e.g. log.example.com), not {raw!r}"
        )
        raise ConfigError(msg)
    return raw


def parse_timeout(raw: str) -> float:
    """Seconds, more than 0 and at most MAX_WITNESS_TIMEOUT_SECONDS (fractions allowed)."""
    seconds = float(raw) if raw.isascii() and raw.replace(".", "", 1).isdigit() else -1.0
    if not 0 < seconds <= MAX_WITNESS_TIMEOUT_SECONDS:
        msg = f"must be a number of seconds above 0 and at most {MAX_WITNESS_TIMEOUT_SECONDS:g}, not {raw!r}"
        raise ConfigError(msg)
    return seconds


def positive_up_to(at_most: int) -> Callable[[str], int]:
    """A whole number from 1 to `at_most`."""

    def parse(raw: str) -> int:
        if not raw.isdigit() or not 1 <= int(raw) <= at_most:
            msg = f"must be a whole number from 1 to {at_most}, not {raw!r}"
            raise ConfigError(msg)
        return int(raw)

    return parse


def positive(raw: str) -> int:
    """A whole number from 1 up (`--workers`, `--witness-interval`)."""
    if not raw.isdigit() or int(raw) < 1:
        msg = f"must be a positive whole number, not {raw!r}"
        raise ConfigError(msg)
    return int(raw)


def whole(raw: str) -> int:
    """A whole number from 0 up (`--witness-quorum`)."""
    if not (raw.isascii() and raw.isdigit()):
        msg = f"must be a whole number, not {raw!r}"
        raise ConfigError(msg)
    return int(raw)


def quorum(raw: str) -> int:
    """How many witnesses must cosign (the number of witnesses is checked once they are read)."""
    if not (raw.isascii() and raw.isdigit()) or int(raw) > 1000:
        msg = f"must be a whole number from 0 to the number of witnesses, not {raw!r}"
        raise ConfigError(msg)
    return int(raw)


def seconds(raw: str) -> float:
    """Seconds from 0 to 3600 (`--graceful-timeout`): longer is a mistake."""
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 3600:  # an hour
        msg = f"must be a number of seconds from 0 to 3600, not {raw!r}"
        raise ConfigError(msg)
    return value


def one_of(choices: Sequence[str]) -> Callable[[str], str]:
    def check(raw: str) -> str:
        if raw not in choices:
            msg = f"must be one of {', '.join(choices)}, not {raw!r}"
            raise ConfigError(msg)
        return raw

    return check


def is_one(raw: str) -> bool:
    """A switch a variable turns on with 1 (anything else: off)."""
    return raw == "1"
