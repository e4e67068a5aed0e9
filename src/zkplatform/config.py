"""Settings: one table (SETTINGS) says, for each, its environment variable, its flag of
`zkplatform serve`, how its text is read, its default and its help; from it come
Settings.from_env, Settings.to_env, the flags of `serve`, their help and the environment list
of `serve --help`. docs/operations.md lists the same variables (tests/unit/test_settings.py
holds it to the table). The table is long because each setting is one entry of it: a new
setting is one entry here and a field of Settings (docs/development.md).

`serve --workers N` spawns its worker processes itself (zkplatform.server.workers); each
starts a clean interpreter and builds the application from the environment, so the command
line hands its flags to them through these same environment variables (Settings.to_env).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any, Final

from zkplatform.domain.broker import MintPolicy
from zkplatform.domain.sync import WatchPolicy
from zkplatform.observability.logs import LOG_FORMATS
from zkplatform.setting_values import (
    DEFAULT_BIND,
    MAX_WITNESS_TIMEOUT_SECONDS,
    ConfigError,
    Network,
    check_bind,
    check_log_name,
    check_public_url,
    is_one,
    one_of,
    parse_cors_origins,
    parse_networks,
    parse_paths,
    parse_timeout,
    positive,
    positive_up_to,
    quorum,
    seconds,
    whole,
)
from zkplatform.store import DEFAULT_POOL_SIZE, DEFAULT_SQLITE_URL

__all__ = [
    "DEFAULT_BIND",
    "INTERNAL_VARIABLES",
    "MAX_WITNESS_TIMEOUT_SECONDS",
    "SETTINGS",
    "ConfigError",
    "Network",
    "Setting",
    "Settings",
    "check_bind",
    "check_log_name",
    "check_public_url",
    "parse_cors_origins",
    "parse_networks",
    "parse_paths",
    "parse_timeout",
]

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
DEFAULT_DEV_CREDENTIALS = DEFAULT_STATE_DIR / "dev-credentials.json"
DEFAULT_GRACEFUL_TIMEOUT = 30.0
# The listen queue of each worker's socket: room for bursts of a few hundred connects while the
# worker is busy (hypercorn's own default is 100); the kernel caps it at net.core.somaxconn.
DEFAULT_LISTEN_BACKLOG = 1024
MAX_LISTEN_BACKLOG = 65535
LOG_LEVELS = ("debug", "info", "warning", "error")
# Handed by `serve` to its own worker processes, not for operators to set (so not in the docs).
INTERNAL_VARIABLES: Final = frozenset({"ZKPLATFORM_DEV", "ZKPLATFORM_DEV_CREDENTIALS", "ZKPLATFORM_BASE_URL"})
_MINT: Final = MintPolicy()
_INT_MAX: Final = 2**31 - 1


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _joined(values: tuple[object, ...]) -> str:
    return ",".join(map(str, values))


def _absolute(path: Path | None) -> str:
    return "" if path is None else str(path.absolute())


@dataclass(frozen=True, slots=True)
class Setting:
    """One setting: its variable, its flag of `serve`, how its text is read, its default, its help."""

    variable: str
    parse: Callable[[str], Any]  # the text of its variable or flag -> its value, or ConfigError
    default: Any
    field: str | None = None  # its field of Settings; None: how `serve` runs, read by the command line
    flag: str | None = None
    help: str | None = None  # its line in the environment list of `serve --help`; None: not listed there
    flag_help: str | None = None
    metavar: str | None = None
    # The parser's message is completed with the variable's name (else it names its flag itself).
    names_variable: bool = True
    # An empty variable means the default (else its empty text is read as any other).
    blank_is_default: bool = True
    show: Callable[[Any], str] | None = _text  # the value as the variable's text, for the workers; None: kept back
    flag_parse: Callable[[str], Any] | None = None  # the flag's own reading, where it says other words
    choices: tuple[str, ...] | None = None  # the flag's choices (argparse's own message)
    switch: bool = False  # a flag without a value

    def read(self, env: Mapping[str, str]) -> Any:
        """The value its variable gives in `env`, or its default; ConfigError names the variable."""
        raw = env.get(self.variable)
        if raw is None or (not raw and self.blank_is_default):
            return self.default
        try:
            return self.parse(raw)
        except ConfigError as error:
            if self.names_variable:
                raise ConfigError(f"{self.variable} {error}") from None
            raise

    @property
    def dest(self) -> str:
        """Its attribute on the parsed command line."""
        return (self.flag or "").removeprefix("--").replace("-", "_")


def _count(variable: str, field: str, default: int, at_most: int, help_: str) -> Setting:
    return Setting(variable, positive_up_to(at_most), default, field, help=help_, blank_is_default=False)


def _mint(variable: str, attribute: str, help_: str) -> Setting:
    default = getattr(_MINT, attribute)
    return Setting(
        variable,
        positive_up_to(_INT_MAX),
        default,
        f"mint_policy.{attribute}",
        help=help_.format(default=default),
        blank_is_default=False,
    )


# In the order of `serve --help`: how `serve` runs (flags only), then the settings of the
# environment list, then what `serve` hands its workers.
SETTINGS: Final = (
    # How `serve` runs: read by the command line, never a field of Settings.
    Setting(
        "ZKPLATFORM_BIND",
        check_bind,
        DEFAULT_BIND,
        flag="--bind",
        flag_help=f"address to listen on (default: $ZKPLATFORM_BIND or {DEFAULT_BIND})",
        metavar="HOST:PORT",
    ),
    Setting(
        "ZKPLATFORM_WORKERS",
        positive,
        1,
        flag="--workers",
        flag_help="worker processes (default: $ZKPLATFORM_WORKERS or 1)",
        metavar="N",
    ),
    Setting(
        "ZKPLATFORM_LOG_LEVEL",
        one_of(LOG_LEVELS),
        "info",
        flag="--log-level",
        flag_help="least severe log level shown (default: $ZKPLATFORM_LOG_LEVEL or info)",
        choices=LOG_LEVELS,
    ),
    Setting(
        "ZKPLATFORM_LOG_FORMAT",
        one_of(LOG_FORMATS),
        "text",
        flag="--log-format",
        flag_help="text lines, or one JSON object a line (default: $ZKPLATFORM_LOG_FORMAT or text)",
        choices=LOG_FORMATS,
    ),
    Setting(
        "ZKPLATFORM_CERTFILE",
        Path,
        None,
        flag="--certfile",
        flag_help="serve TLS with this certificate chain (PEM; $ZKPLATFORM_CERTFILE)",
        metavar="PATH",
    ),
    Setting(
        "ZKPLATFORM_KEYFILE",
        Path,
        None,
        flag="--keyfile",
        flag_help="the certificate's private key (PEM, unencrypted; $ZKPLATFORM_KEYFILE)",
        metavar="PATH",
    ),
    Setting(
        "ZKPLATFORM_GRACEFUL_TIMEOUT",
        seconds,
        DEFAULT_GRACEFUL_TIMEOUT,
        flag="--graceful-timeout",
        flag_help="on SIGTERM, how long calls in flight may take to finish"
        f" (default: $ZKPLATFORM_GRACEFUL_TIMEOUT or {DEFAULT_GRACEFUL_TIMEOUT:g})",
        metavar="SECONDS",
    ),
    Setting(
        "ZKPLATFORM_LISTEN_BACKLOG",
        positive_up_to(MAX_LISTEN_BACKLOG),
        DEFAULT_LISTEN_BACKLOG,
        flag="--backlog",
        flag_help="connections each worker's socket holds before it accepts them (the kernel caps it at"
        f" net.core.somaxconn; default: $ZKPLATFORM_LISTEN_BACKLOG or {DEFAULT_LISTEN_BACKLOG})",
        metavar="N",
    ),
    Setting(
        "ZKPLATFORM_STORE",
        str,
        DEFAULT_STORE,
        "store_url",
        flag="--store",
        help=f"store URL (default {DEFAULT_STORE})",
        flag_help=f"sqlite:///PATH, postgresql://... or memory: (default: $ZKPLATFORM_STORE or {DEFAULT_STORE})",
        metavar="URL",
        blank_is_default=False,
    ),
    _count(
        "ZKPLATFORM_STORE_POOL_SIZE",
        "store_pool_size",
        DEFAULT_POOL_SIZE,
        10_000,
        f"PostgreSQL connections each worker's pool opens at most (default {DEFAULT_POOL_SIZE});\n"
        "each worker also opens one LISTEN connection (docs/deploy.md counts them)",
    ),
    _count(
        "ZKPLATFORM_MAX_BODY_BYTES",
        "max_body_bytes",
        DEFAULT_MAX_BODY_BYTES,
        _INT_MAX,
        f"largest request body, in bytes (default {DEFAULT_MAX_BODY_BYTES})",
    ),
    _count(
        "ZKPLATFORM_BODY_READ_TIMEOUT_SECONDS",
        "body_read_timeout_seconds",
        DEFAULT_BODY_READ_TIMEOUT_SECONDS,
        3600,
        f"seconds a request body may take to arrive (default {DEFAULT_BODY_READ_TIMEOUT_SECONDS})",
    ),
    _count(
        "ZKPLATFORM_CLIENT_STALL_SECONDS",
        "client_stall_seconds",
        DEFAULT_CLIENT_STALL_SECONDS,
        3600,
        "seconds an answer may wait for its client to read before the call is given up"
        f" (default {DEFAULT_CLIENT_STALL_SECONDS})",
    ),
    _count(
        "ZKPLATFORM_MAX_UNREAD_BYTES_PER_CONNECTION",
        "max_unread_bytes_per_connection",
        DEFAULT_MAX_UNREAD_BYTES_PER_CONNECTION,
        _INT_MAX,
        f"bytes of answers a connection's clients may leave unread (default {DEFAULT_MAX_UNREAD_BYTES_PER_CONNECTION})",
    ),
    _count(
        "ZKPLATFORM_MAX_UNREAD_BYTES_PER_WORKER",
        "max_unread_bytes_per_worker",
        DEFAULT_MAX_UNREAD_BYTES_PER_WORKER,
        _INT_MAX,
        f"bytes of answers a worker's clients may leave unread (default {DEFAULT_MAX_UNREAD_BYTES_PER_WORKER})",
    ),
    _count(
        "ZKPLATFORM_MAX_STREAMS",
        "max_streams",
        DEFAULT_MAX_STREAMS,
        100_000,
        f"open streaming calls that need a token per worker (default {DEFAULT_MAX_STREAMS})",
    ),
    _count(
        "ZKPLATFORM_MAX_STREAMS_WITHOUT_TOKEN",
        "max_streams_without_token",
        DEFAULT_MAX_STREAMS_WITHOUT_TOKEN,
        100_000,
        f"open health and reflection streams per worker (default {DEFAULT_MAX_STREAMS_WITHOUT_TOKEN})",
    ),
    _count(
        "ZKPLATFORM_MAX_STREAMS_WITHOUT_TOKEN_PER_CONNECTION",
        "max_streams_without_token_per_connection",
        DEFAULT_MAX_STREAMS_WITHOUT_TOKEN_PER_CONNECTION,
        100_000,
        f"the same on one connection (default {DEFAULT_MAX_STREAMS_WITHOUT_TOKEN_PER_CONNECTION})",
    ),
    Setting(
        "ZKPLATFORM_PUBLIC_URL",
        check_public_url,
        None,
        "public_url",
        flag="--public-url",
        help="the origin clients address behind a proxy (as --public-url)",
        flag_help="https://HOST[:PORT] clients address behind a proxy: the origin DPoP proofs must name",
        metavar="URL",
        names_variable=False,
    ),
    Setting(
        "ZKPLATFORM_FORWARDED_ALLOW_IPS",
        parse_networks,
        (),
        "forwarded_allow_ips",
        flag="--forwarded-allow-ips",
        help="proxies whose forwarded headers are believed (as --forwarded-allow-ips)",
        flag_help="comma-separated IPs and CIDR networks of proxies whose Forwarded and X-Forwarded-Proto/-Host "
        "headers are believed (default: none)",
        metavar="IPS",
        names_variable=False,
        show=_joined,
    ),
    Setting(
        "ZKPLATFORM_CORS_ORIGINS",
        parse_cors_origins,
        (),
        "cors_origins",
        flag="--cors-origins",
        help="web origins whose pages may call the API (as --cors-origins; default: none)",
        flag_help="comma-separated web origins, https://HOST[:PORT], whose pages may call the Connect and gRPC-Web "
        "API (CORS; default: none, cross-origin calls refused)",
        metavar="ORIGINS",
        names_variable=False,
        show=_joined,
    ),
    Setting(
        "ZKPLATFORM_METRICS_BIND",
        check_bind,
        None,
        "metrics_bind",
        flag="--metrics-bind",
        help="where Prometheus metrics are served (as --metrics-bind; default: nowhere)",
        flag_help="serve Prometheus metrics on this address of their own, needing no token (default: no metrics)",
        metavar="HOST:PORT",
        names_variable=False,
    ),
    Setting(
        "ZKPLATFORM_STATE_DIR",
        Path,
        DEFAULT_STATE_DIR,
        "state_dir",
        help=f"the server's own files, such as the token pepper (default ./{DEFAULT_STATE_DIR})",
        blank_is_default=False,
    ),
    Setting(
        "ZKPLATFORM_TOKEN_PEPPER",
        str,
        None,
        "token_pepper",
        help="base64url key (>= 32 bytes) tokens are stored under, the same on every host\n"
        "(default: generated once into the state directory)",
        show=None,  # the workers load it where the server found it (pepper.py)
    ),
    _count(
        "ZKPLATFORM_TOMBSTONE_RETENTION_DAYS",
        "tombstone_retention_days",
        DEFAULT_TOMBSTONE_RETENTION_DAYS,
        36_500,
        f"days a tombstone is kept (default {DEFAULT_TOMBSTONE_RETENTION_DAYS})",
    ),
    _mint(
        "ZKPLATFORM_TOKEN_TTL_DEFAULT", "default_ttl_seconds", "lifetime of a mint that asks none (default {default} s)"
    ),
    _mint("ZKPLATFORM_TOKEN_TTL_MIN", "min_ttl_seconds", "shortest lifetime a mint may ask (default {default} s)"),
    _mint("ZKPLATFORM_TOKEN_TTL_MAX", "max_ttl_seconds", "longest lifetime a mint may ask (default {default} s)"),
    _mint(
        "ZKPLATFORM_MINT_RATE_PER_MINUTE",
        "mints_per_minute",
        "mint attempts per principal and minute (default {default})",
    ),
    _mint("ZKPLATFORM_MINT_ACTIVE_CAP", "active_minted_cap", "live minted tokens per principal (default {default})"),
    _count(
        "ZKPLATFORM_WATCH_HEARTBEAT_SECONDS",
        "watch_heartbeat_seconds",
        DEFAULT_WATCH_HEARTBEAT_SECONDS,
        3600,
        f"seconds between heartbeats of a quiet WatchChanges (default {DEFAULT_WATCH_HEARTBEAT_SECONDS})",
    ),
    _count(
        "ZKPLATFORM_WATCH_MAX_PER_PRINCIPAL",
        "watch_max_per_principal",
        DEFAULT_WATCH_MAX_PER_PRINCIPAL,
        100_000,
        f"open watches per principal (default {DEFAULT_WATCH_MAX_PER_PRINCIPAL})",
    ),
    _count(
        "ZKPLATFORM_WATCH_MAX_PER_WORKER",
        "watch_max_per_worker",
        DEFAULT_WATCH_MAX_PER_WORKER,
        100_000,
        f"open watches per worker (default {DEFAULT_WATCH_MAX_PER_WORKER})",
    ),
    Setting(
        "ZKPLATFORM_LOG_KEY_FILES",
        parse_paths,
        (),
        "log_key_files",
        flag="--log-key-files",
        help="the key log's signing keys, comma-separated files (as --log-key-files;\n"
        "default: on SQLite, <db>.log-key, made at first start)",
        flag_help="comma-separated files of the key log's signing keys (default: $ZKPLATFORM_LOG_KEY_FILES;"
        " on SQLite, <db>.log-key, made at first start)",
        metavar="FILES",
        show=lambda paths: ",".join(_absolute(path) for path in paths),
    ),
    Setting(
        "ZKPLATFORM_LOG_NAME",
        check_log_name,
        DEFAULT_LOG_NAME,
        "log_name",
        help=f"the name of a log key the server makes itself (default {DEFAULT_LOG_NAME})",
        names_variable=False,
    ),
    Setting(
        "ZKPLATFORM_WITNESSES_FILE",
        Path,
        None,
        "witnesses_file",
        flag="--witnesses-file",
        help="the witnesses, one '<vkey> <url>' a line (as --witnesses-file; default: none)",
        flag_help="the witnesses, one '<cosignature vkey> <url>' a line (default: $ZKPLATFORM_WITNESSES_FILE; none)",
        metavar="FILE",
        show=_absolute,
    ),
    Setting(
        "ZKPLATFORM_WITNESS_QUORUM",
        quorum,
        None,
        "witness_quorum",
        flag="--witness-quorum",
        help="witnesses that must cosign a checkpoint before it is served (default: all)",
        flag_help="witnesses that must cosign a checkpoint before it is served"
        " (default: $ZKPLATFORM_WITNESS_QUORUM; all)",
        metavar="N",
        flag_parse=whole,
    ),
    Setting(
        "ZKPLATFORM_WITNESS_INTERVAL",
        positive_up_to(86_400),
        DEFAULT_WITNESS_INTERVAL_SECONDS,
        "witness_interval_seconds",
        flag="--witness-interval",
        help="seconds between pushes of every checkpoint to the witnesses"
        f" (default {DEFAULT_WITNESS_INTERVAL_SECONDS})",
        flag_help="seconds between pushes of every checkpoint to the witnesses"
        f" (default: $ZKPLATFORM_WITNESS_INTERVAL or {DEFAULT_WITNESS_INTERVAL_SECONDS})",
        metavar="SECONDS",
        blank_is_default=False,
        flag_parse=positive,
    ),
    Setting(
        "ZKPLATFORM_WITNESS_TIMEOUT",
        parse_timeout,
        DEFAULT_WITNESS_TIMEOUT_SECONDS,
        "witness_timeout_seconds",
        flag="--witness-timeout",
        help="seconds a witness has to answer, and a change waits for them"
        f" (default {DEFAULT_WITNESS_TIMEOUT_SECONDS:g})",
        flag_help="seconds a witness has to answer, and a change's answer waits for them"
        f" (default: $ZKPLATFORM_WITNESS_TIMEOUT or {DEFAULT_WITNESS_TIMEOUT_SECONDS:g})",
        metavar="SECONDS",
        show=lambda value: f"{value:g}",
    ),
    # What `serve` hands its workers (--dev and --dev-credentials have rules of their own).
    Setting(
        "ZKPLATFORM_DEV",
        is_one,
        False,  # the default of a switch
        "dev",
        flag="--dev",
        flag_help="development mode: seed demo tenants, vaults and items in memory and write their tokens to a file",
        show=lambda on: "1" if on else "0",
        switch=True,
    ),
    Setting(
        "ZKPLATFORM_DEV_CREDENTIALS",
        Path,
        DEFAULT_DEV_CREDENTIALS,
        "dev_credentials",
        flag="--dev-credentials",
        flag_help=f"where --dev writes the tokens (default {DEFAULT_DEV_CREDENTIALS})",
        metavar="PATH",
        blank_is_default=False,
    ),
    Setting("ZKPLATFORM_BASE_URL", str, f"http://{DEFAULT_BIND}", "base_url", blank_is_default=False),
)


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
        values = {setting.field: setting.read(env) for setting in SETTINGS if setting.field is not None}
        mint = {name.removeprefix("mint_policy."): values.pop(name) for name in list(values) if "." in name}
        try:
            mint_policy = MintPolicy(**mint)
        except ValueError as error:
            raise ConfigError(str(error)) from None
        return cls(**values, mint_policy=mint_policy)

    def to_env(self) -> dict[str, str]:
        """The settings as environment variables, for worker processes (the pepper stays where it was)."""
        return {
            setting.variable: setting.show(attrgetter(setting.field)(self))
            for setting in SETTINGS
            if setting.field is not None and setting.show is not None
        }
