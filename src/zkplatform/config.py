"""Settings, from `zkplatform serve` flags or the environment.

`serve --workers N` spawns its worker processes itself (zkplatform.server.workers);
each starts a clean interpreter and builds the application from the
environment, so the CLI hands its flags to them through these same
environment variables.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from zkplatform.domain.authority import parse_authority
from zkplatform.domain.broker import MintPolicy
from zkplatform.domain.sync import WatchPolicy
from zkplatform.store import DEFAULT_POOL_SIZE, DEFAULT_SQLITE_URL

DEFAULT_BIND = "127.0.0.1:8080"
DEFAULT_STORE = DEFAULT_SQLITE_URL
DEFAULT_TOMBSTONE_RETENTION_DAYS = 90
DEFAULT_MAX_BODY_BYTES = 64 * 1024
DEFAULT_BODY_READ_TIMEOUT_SECONDS = 30
DEFAULT_CLIENT_STALL_SECONDS = 30
# Answers held for clients that have not taken them (rpc/front/unread.py): four of the largest
# messages (3 MiB) on a connection; a worker's share of memory in all.
DEFAULT_MAX_UNREAD_BYTES_PER_CONNECTION = 16 * 1024 * 1024
DEFAULT_MAX_UNREAD_BYTES_PER_WORKER = 64 * 1024 * 1024
# Streams that need a token (WatchChanges): above the watches' own bound (1,000), whose refusal names it.
DEFAULT_MAX_STREAMS = 1100
# Streams that need no token (health Watch, reflection): a load balancer's health watches and a few
# reflection sessions, on a budget of their own.
DEFAULT_MAX_STREAMS_WITHOUT_TOKEN = 100
DEFAULT_MAX_STREAMS_WITHOUT_TOKEN_PER_CONNECTION = 10
DEFAULT_WATCH_HEARTBEAT_SECONDS = 15
DEFAULT_WATCH_MAX_PER_PRINCIPAL = 10
DEFAULT_WATCH_MAX_PER_WORKER = 1000
DEFAULT_STATE_DIR = Path("var")
# The name of the log key the server makes itself (SQLite store, memory store): the log's name.
DEFAULT_LOG_NAME = "zkplatform.local"
DEFAULT_WITNESS_INTERVAL_SECONDS = 300
DEFAULT_WITNESS_TIMEOUT_SECONDS = 5.0
MAX_WITNESS_TIMEOUT_SECONDS = 300.0
DEFAULT_DEV_CREDENTIALS = DEFAULT_STATE_DIR / "dev-credentials.json"


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


@dataclass(frozen=True, slots=True)
class Settings:
    store_url: str = DEFAULT_STORE
    # PostgreSQL: the most connections each worker's pool opens for calls (its LISTEN connection aside).
    store_pool_size: int = DEFAULT_POOL_SIZE
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    # How long a request's body may take to arrive, from its headers to its last byte.
    body_read_timeout_seconds: int = DEFAULT_BODY_READ_TIMEOUT_SECONDS
    # How long an answer may wait for its client to take any of it before the call is given up.
    client_stall_seconds: int = DEFAULT_CLIENT_STALL_SECONDS
    # Bytes of answers a connection's, and a worker's, clients may leave unread before the calls
    # that waited longest for them are given up.
    max_unread_bytes_per_connection: int = DEFAULT_MAX_UNREAD_BYTES_PER_CONNECTION
    max_unread_bytes_per_worker: int = DEFAULT_MAX_UNREAD_BYTES_PER_WORKER
    # Open streaming calls that need a token (WatchChanges) per worker.
    max_streams: int = DEFAULT_MAX_STREAMS
    # Open streaming calls that need no token (health Watch, reflection) per worker, and per connection.
    max_streams_without_token: int = DEFAULT_MAX_STREAMS_WITHOUT_TOKEN
    max_streams_without_token_per_connection: int = DEFAULT_MAX_STREAMS_WITHOUT_TOKEN_PER_CONNECTION
    # Where the server keeps its own files (the token pepper, when none is configured).
    state_dir: Path = DEFAULT_STATE_DIR
    # base64url HMAC key for stored tokens; generated into state_dir when unset.
    token_pepper: str | None = None
    dev: bool = False
    dev_credentials: Path = DEFAULT_DEV_CREDENTIALS
    base_url: str = f"http://{DEFAULT_BIND}"
    mint_policy: MintPolicy = field(default_factory=MintPolicy)
    tombstone_retention_days: int = DEFAULT_TOMBSTONE_RETENTION_DAYS
    # The origin clients address when a proxy stands in front (DPoP proofs name it).
    public_url: str | None = None
    # Peers whose forwarded headers (Forwarded, X-Forwarded-*) are believed.
    forwarded_allow_ips: tuple[Network, ...] = ()
    # The web origins whose pages may call the API (rpc/front/cors.py); none: cross-origin calls are refused.
    cors_origins: tuple[str, ...] = ()
    # WatchChanges: the heartbeat period (and token re-check), open watches per principal and per worker.
    watch_heartbeat_seconds: int = DEFAULT_WATCH_HEARTBEAT_SECONDS
    watch_max_per_principal: int = DEFAULT_WATCH_MAX_PER_PRINCIPAL
    watch_max_per_worker: int = DEFAULT_WATCH_MAX_PER_WORKER
    # HOST:PORT of the Prometheus metrics listener; None: no metrics recorded.
    metrics_bind: str | None = None
    # The key log's signing keys (files of note private keys): all sign checkpoints, the first
    # is the key a rotation moves to. None given: the server makes or reads one by its store.
    log_key_files: tuple[Path, ...] = ()
    # The name of a log key the server makes itself.
    log_name: str = DEFAULT_LOG_NAME
    # The witnesses: a file of `<cosignature vkey> <url>` lines; None: no witness.
    witnesses_file: Path | None = None
    # How many of them must cosign a checkpoint before it is served; None: all of them.
    witness_quorum: int | None = None
    # How often every tenant's checkpoint is sent to the witnesses again (fresh cosignatures).
    witness_interval_seconds: int = DEFAULT_WITNESS_INTERVAL_SECONDS
    # How long a witness has to answer, and a change's answer waits for the witnesses.
    witness_timeout_seconds: float = DEFAULT_WITNESS_TIMEOUT_SECONDS

    @property
    def tombstone_retention_seconds(self) -> int:
        """How long a tombstone is kept after its delete: then it is purged (and its purge_time says so)."""
        return self.tombstone_retention_days * 86_400

    @property
    def watch_policy(self) -> WatchPolicy:
        return WatchPolicy(
            heartbeat_seconds=self.watch_heartbeat_seconds,
            max_per_principal=self.watch_max_per_principal,
            max_per_worker=self.watch_max_per_worker,
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        return cls(
            store_url=env.get("ZKPLATFORM_STORE", DEFAULT_STORE),
            store_pool_size=_positive_int(env, "ZKPLATFORM_STORE_POOL_SIZE", DEFAULT_POOL_SIZE, at_most=10_000),
            max_body_bytes=_positive_int(env, "ZKPLATFORM_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES),
            body_read_timeout_seconds=_positive_int(
                env, "ZKPLATFORM_BODY_READ_TIMEOUT_SECONDS", DEFAULT_BODY_READ_TIMEOUT_SECONDS, at_most=3600
            ),
            client_stall_seconds=_positive_int(
                env, "ZKPLATFORM_CLIENT_STALL_SECONDS", DEFAULT_CLIENT_STALL_SECONDS, at_most=3600
            ),
            max_unread_bytes_per_connection=_positive_int(
                env, "ZKPLATFORM_MAX_UNREAD_BYTES_PER_CONNECTION", DEFAULT_MAX_UNREAD_BYTES_PER_CONNECTION
            ),
            max_unread_bytes_per_worker=_positive_int(
                env, "ZKPLATFORM_MAX_UNREAD_BYTES_PER_WORKER", DEFAULT_MAX_UNREAD_BYTES_PER_WORKER
            ),
            max_streams=_positive_int(env, "ZKPLATFORM_MAX_STREAMS", DEFAULT_MAX_STREAMS, at_most=100_000),
            max_streams_without_token=_positive_int(
                env, "ZKPLATFORM_MAX_STREAMS_WITHOUT_TOKEN", DEFAULT_MAX_STREAMS_WITHOUT_TOKEN, at_most=100_000
            ),
            max_streams_without_token_per_connection=_positive_int(
                env,
                "ZKPLATFORM_MAX_STREAMS_WITHOUT_TOKEN_PER_CONNECTION",
                DEFAULT_MAX_STREAMS_WITHOUT_TOKEN_PER_CONNECTION,
                at_most=100_000,
            ),
            state_dir=Path(env.get("ZKPLATFORM_STATE_DIR", str(DEFAULT_STATE_DIR))),
            token_pepper=env.get("ZKPLATFORM_TOKEN_PEPPER") or None,
            dev=env.get("ZKPLATFORM_DEV", "") == "1",
            dev_credentials=Path(env.get("ZKPLATFORM_DEV_CREDENTIALS", str(DEFAULT_DEV_CREDENTIALS))),
            base_url=env.get("ZKPLATFORM_BASE_URL", f"http://{DEFAULT_BIND}"),
            mint_policy=_mint_policy(env),
            tombstone_retention_days=_positive_int(
                env, "ZKPLATFORM_TOMBSTONE_RETENTION_DAYS", DEFAULT_TOMBSTONE_RETENTION_DAYS, at_most=36_500
            ),
            public_url=check_public_url(env["ZKPLATFORM_PUBLIC_URL"]) if env.get("ZKPLATFORM_PUBLIC_URL") else None,
            forwarded_allow_ips=parse_networks(env.get("ZKPLATFORM_FORWARDED_ALLOW_IPS", "")),
            cors_origins=parse_cors_origins(env.get("ZKPLATFORM_CORS_ORIGINS", "")),
            watch_heartbeat_seconds=_positive_int(
                env, "ZKPLATFORM_WATCH_HEARTBEAT_SECONDS", DEFAULT_WATCH_HEARTBEAT_SECONDS, at_most=3600
            ),
            watch_max_per_principal=_positive_int(
                env, "ZKPLATFORM_WATCH_MAX_PER_PRINCIPAL", DEFAULT_WATCH_MAX_PER_PRINCIPAL, at_most=100_000
            ),
            watch_max_per_worker=_positive_int(
                env, "ZKPLATFORM_WATCH_MAX_PER_WORKER", DEFAULT_WATCH_MAX_PER_WORKER, at_most=100_000
            ),
            metrics_bind=check_bind(env["ZKPLATFORM_METRICS_BIND"]) if env.get("ZKPLATFORM_METRICS_BIND") else None,
            log_key_files=parse_paths(env.get("ZKPLATFORM_LOG_KEY_FILES", "")),
            log_name=check_log_name(env.get("ZKPLATFORM_LOG_NAME") or DEFAULT_LOG_NAME),
            witnesses_file=Path(env["ZKPLATFORM_WITNESSES_FILE"]) if env.get("ZKPLATFORM_WITNESSES_FILE") else None,
            witness_quorum=_quorum(env.get("ZKPLATFORM_WITNESS_QUORUM", "")),
            witness_interval_seconds=_positive_int(
                env, "ZKPLATFORM_WITNESS_INTERVAL", DEFAULT_WITNESS_INTERVAL_SECONDS, at_most=86_400
            ),
            witness_timeout_seconds=_timeout(env.get("ZKPLATFORM_WITNESS_TIMEOUT", "")),
        )

    def to_env(self) -> dict[str, str]:
        """The settings as environment variables, for worker processes (the pepper stays where it was)."""
        return {
            "ZKPLATFORM_STORE": self.store_url,
            "ZKPLATFORM_STORE_POOL_SIZE": str(self.store_pool_size),
            "ZKPLATFORM_MAX_BODY_BYTES": str(self.max_body_bytes),
            "ZKPLATFORM_BODY_READ_TIMEOUT_SECONDS": str(self.body_read_timeout_seconds),
            "ZKPLATFORM_CLIENT_STALL_SECONDS": str(self.client_stall_seconds),
            "ZKPLATFORM_MAX_UNREAD_BYTES_PER_CONNECTION": str(self.max_unread_bytes_per_connection),
            "ZKPLATFORM_MAX_UNREAD_BYTES_PER_WORKER": str(self.max_unread_bytes_per_worker),
            "ZKPLATFORM_MAX_STREAMS": str(self.max_streams),
            "ZKPLATFORM_MAX_STREAMS_WITHOUT_TOKEN": str(self.max_streams_without_token),
            "ZKPLATFORM_MAX_STREAMS_WITHOUT_TOKEN_PER_CONNECTION": str(self.max_streams_without_token_per_connection),
            "ZKPLATFORM_STATE_DIR": str(self.state_dir),
            "ZKPLATFORM_DEV": "1" if self.dev else "0",
            "ZKPLATFORM_DEV_CREDENTIALS": str(self.dev_credentials),
            "ZKPLATFORM_BASE_URL": self.base_url,
            "ZKPLATFORM_TOMBSTONE_RETENTION_DAYS": str(self.tombstone_retention_days),
            "ZKPLATFORM_PUBLIC_URL": self.public_url or "",
            "ZKPLATFORM_FORWARDED_ALLOW_IPS": ",".join(map(str, self.forwarded_allow_ips)),
            "ZKPLATFORM_CORS_ORIGINS": ",".join(self.cors_origins),
            "ZKPLATFORM_WATCH_HEARTBEAT_SECONDS": str(self.watch_heartbeat_seconds),
            "ZKPLATFORM_WATCH_MAX_PER_PRINCIPAL": str(self.watch_max_per_principal),
            "ZKPLATFORM_WATCH_MAX_PER_WORKER": str(self.watch_max_per_worker),
            "ZKPLATFORM_METRICS_BIND": self.metrics_bind or "",
            "ZKPLATFORM_LOG_KEY_FILES": ",".join(str(path.absolute()) for path in self.log_key_files),
            "ZKPLATFORM_LOG_NAME": self.log_name,
            "ZKPLATFORM_WITNESSES_FILE": str(self.witnesses_file.absolute()) if self.witnesses_file else "",
            "ZKPLATFORM_WITNESS_QUORUM": "" if self.witness_quorum is None else str(self.witness_quorum),
            "ZKPLATFORM_WITNESS_INTERVAL": str(self.witness_interval_seconds),
            "ZKPLATFORM_WITNESS_TIMEOUT": f"{self.witness_timeout_seconds:g}",
            **{name: str(getattr(self.mint_policy, attr)) for name, attr in _MINT_POLICY_ENV.items()},
        }


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


def _quorum(raw: str) -> int | None:
    if not raw:
        return None
    if not (raw.isascii() and raw.isdigit()) or int(raw) > 1000:
        msg = f"ZKPLATFORM_WITNESS_QUORUM must be a whole number from 0 to the number of witnesses, not {raw!r}"
        raise ConfigError(msg)
    return int(raw)


def parse_timeout(raw: str) -> float:
    """Seconds, more than 0 and at most MAX_WITNESS_TIMEOUT_SECONDS (fractions allowed); ValueError otherwise."""
    seconds = float(raw) if raw.isascii() and raw.replace(".", "", 1).isdigit() else -1.0
    if not 0 < seconds <= MAX_WITNESS_TIMEOUT_SECONDS:
        msg = f"must be a number of seconds above 0 and at most {MAX_WITNESS_TIMEOUT_SECONDS:g}, not {raw!r}"
        raise ValueError(msg)
    return seconds


def _timeout(raw: str) -> float:
    if not raw:
        return DEFAULT_WITNESS_TIMEOUT_SECONDS
    try:
        return parse_timeout(raw)
    except ValueError as error:
        raise ConfigError(f"ZKPLATFORM_WITNESS_TIMEOUT {error}") from None


# environment variable -> MintPolicy field
_MINT_POLICY_ENV = {
    "ZKPLATFORM_TOKEN_TTL_DEFAULT": "default_ttl_seconds",
    "ZKPLATFORM_TOKEN_TTL_MIN": "min_ttl_seconds",
    "ZKPLATFORM_TOKEN_TTL_MAX": "max_ttl_seconds",
    "ZKPLATFORM_MINT_RATE_PER_MINUTE": "mints_per_minute",
    "ZKPLATFORM_MINT_ACTIVE_CAP": "active_minted_cap",
}


def _mint_policy(env: Mapping[str, str]) -> MintPolicy:
    defaults = MintPolicy()
    values = {attr: _positive_int(env, name, getattr(defaults, attr)) for name, attr in _MINT_POLICY_ENV.items()}
    try:
        return MintPolicy(**values)
    except ValueError as error:
        raise ConfigError(str(error)) from None


def _positive_int(env: Mapping[str, str], name: str, default: int, *, at_most: int = 2**31 - 1) -> int:
    raw = env.get(name)
    if raw is None:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= at_most:
        msg = f"{name} must be a whole number from 1 to {at_most}, not {raw!r}"
        raise ConfigError(msg)
    return int(raw)
