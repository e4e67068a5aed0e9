"""The `zkplatform` command: `serve` runs the API on hypercorn; `admin` acts directly on a store."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import importlib.metadata
import logging
import os
import signal
import socket
import ssl
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import NoReturn, cast

from hypercorn.asyncio import serve as hypercorn_serve
from hypercorn.config import Config as HypercornConfig
from hypercorn.typing import ASGIFramework
from prometheus_client import REGISTRY

from zkplatform import hypercorn_fix, tls_port
from zkplatform.app import create_app
from zkplatform.config import (
    DEFAULT_BIND,
    DEFAULT_BODY_READ_TIMEOUT_SECONDS,
    DEFAULT_CLIENT_STALL_SECONDS,
    DEFAULT_DEV_CREDENTIALS,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_STREAMS,
    DEFAULT_MAX_STREAMS_WITHOUT_TOKEN,
    DEFAULT_MAX_STREAMS_WITHOUT_TOKEN_PER_CONNECTION,
    DEFAULT_MAX_UNREAD_BYTES_PER_CONNECTION,
    DEFAULT_MAX_UNREAD_BYTES_PER_WORKER,
    DEFAULT_STATE_DIR,
    DEFAULT_STORE,
    DEFAULT_TOMBSTONE_RETENTION_DAYS,
    DEFAULT_WATCH_HEARTBEAT_SECONDS,
    DEFAULT_WATCH_MAX_PER_PRINCIPAL,
    DEFAULT_WATCH_MAX_PER_WORKER,
    DEFAULT_WITNESS_INTERVAL_SECONDS,
    DEFAULT_WITNESS_TIMEOUT_SECONDS,
    ConfigError,
    Settings,
    check_bind,
    check_log_name,
    check_public_url,
    parse_cors_origins,
    parse_networks,
    parse_paths,
    parse_timeout,
)
from zkplatform.domain.auth import Authenticator
from zkplatform.domain.broker import MintPolicy
from zkplatform.log_keys import (
    VERIFIER_KEY_SUFFIX,
    generate_key_file,
    local_key_path,
    local_log_key,
    log_keys_for,
    read_witnesses,
    witness_quorum,
)
from zkplatform.observability.logs import LOG_FORMATS, queued_handler
from zkplatform.observability.metrics import MetricsListener, Screen, multiprocess_registry
from zkplatform.observability.tracing import TracingConfigError, check_env
from zkplatform.pepper import load_pepper
from zkplatform.rpc.front.leaked_tokens import leaks_in
from zkplatform.store import DEFAULT_POOL_SIZE, StoreOpenError, StoreURLError, display_url, kind_of, open_store
from zkplatform.store.migrations import SchemaError
from zkplatform.wiring import platform_from
from zkplatform.workers import AddressUnavailable, hold_address, listen, listening_socket, run_workers

log = logging.getLogger("zkplatform")

# Conditions a user can cause and fix: one line on standard error, exit code 2.
STARTUP_ERRORS = (ConfigError, StoreURLError, StoreOpenError, SchemaError, AddressUnavailable, TracingConfigError)
LOG_LEVELS = ("debug", "info", "warning", "error")
DEFAULT_GRACEFUL_TIMEOUT = 30.0
# What a worker may take beyond the grace period to close its store and exit, before it is killed.
STOP_MARGIN_S = 15.0
# How long a metrics request waits for the serving loop to revoke a token in its URL.
_REVOKE_WAIT_S = 10.0

_MINT = MintPolicy()
_ENVIRONMENT = {
    "ZKPLATFORM_STORE": f"store URL (default {DEFAULT_STORE})",
    "ZKPLATFORM_STORE_POOL_SIZE": (
        f"PostgreSQL connections each worker's pool opens at most (default {DEFAULT_POOL_SIZE});\n"
        "each worker also opens one LISTEN connection (docs/deploy.md counts them)"
    ),
    "ZKPLATFORM_MAX_BODY_BYTES": f"largest request body, in bytes (default {DEFAULT_MAX_BODY_BYTES})",
    "ZKPLATFORM_BODY_READ_TIMEOUT_SECONDS": (
        f"seconds a request body may take to arrive (default {DEFAULT_BODY_READ_TIMEOUT_SECONDS})"
    ),
    "ZKPLATFORM_CLIENT_STALL_SECONDS": (
        f"seconds an answer may wait for its client to read before the call is given up"
        f" (default {DEFAULT_CLIENT_STALL_SECONDS})"
    ),
    "ZKPLATFORM_MAX_UNREAD_BYTES_PER_CONNECTION": (
        f"bytes of answers a connection's clients may leave unread (default {DEFAULT_MAX_UNREAD_BYTES_PER_CONNECTION})"
    ),
    "ZKPLATFORM_MAX_UNREAD_BYTES_PER_WORKER": (
        f"bytes of answers a worker's clients may leave unread (default {DEFAULT_MAX_UNREAD_BYTES_PER_WORKER})"
    ),
    "ZKPLATFORM_MAX_STREAMS": f"open streaming calls that need a token per worker (default {DEFAULT_MAX_STREAMS})",
    "ZKPLATFORM_MAX_STREAMS_WITHOUT_TOKEN": (
        f"open health and reflection streams per worker (default {DEFAULT_MAX_STREAMS_WITHOUT_TOKEN})"
    ),
    "ZKPLATFORM_MAX_STREAMS_WITHOUT_TOKEN_PER_CONNECTION": (
        f"the same on one connection (default {DEFAULT_MAX_STREAMS_WITHOUT_TOKEN_PER_CONNECTION})"
    ),
    "ZKPLATFORM_PUBLIC_URL": "the origin clients address behind a proxy (as --public-url)",
    "ZKPLATFORM_FORWARDED_ALLOW_IPS": "proxies whose forwarded headers are believed (as --forwarded-allow-ips)",
    "ZKPLATFORM_CORS_ORIGINS": "web origins whose pages may call the API (as --cors-origins; default: none)",
    "ZKPLATFORM_METRICS_BIND": "where Prometheus metrics are served (as --metrics-bind; default: nowhere)",
    "ZKPLATFORM_STATE_DIR": f"the server's own files, such as the token pepper (default ./{DEFAULT_STATE_DIR})",
    "ZKPLATFORM_TOKEN_PEPPER": "base64url key (>= 32 bytes) tokens are stored under, the same on every host\n"
    "(default: generated once into the state directory)",
    "ZKPLATFORM_TOMBSTONE_RETENTION_DAYS": f"days a tombstone is kept (default {DEFAULT_TOMBSTONE_RETENTION_DAYS})",
    "ZKPLATFORM_TOKEN_TTL_DEFAULT": f"lifetime of a mint that asks none (default {_MINT.default_ttl_seconds} s)",
    "ZKPLATFORM_TOKEN_TTL_MIN": f"shortest lifetime a mint may ask (default {_MINT.min_ttl_seconds} s)",
    "ZKPLATFORM_TOKEN_TTL_MAX": f"longest lifetime a mint may ask (default {_MINT.max_ttl_seconds} s)",
    "ZKPLATFORM_MINT_RATE_PER_MINUTE": f"mint attempts per principal and minute (default {_MINT.mints_per_minute})",
    "ZKPLATFORM_MINT_ACTIVE_CAP": f"live minted tokens per principal (default {_MINT.active_minted_cap})",
    "ZKPLATFORM_WATCH_HEARTBEAT_SECONDS": (
        f"seconds between heartbeats of a quiet WatchChanges (default {DEFAULT_WATCH_HEARTBEAT_SECONDS})"
    ),
    "ZKPLATFORM_WATCH_MAX_PER_PRINCIPAL": f"open watches per principal (default {DEFAULT_WATCH_MAX_PER_PRINCIPAL})",
    "ZKPLATFORM_WATCH_MAX_PER_WORKER": f"open watches per worker (default {DEFAULT_WATCH_MAX_PER_WORKER})",
    "ZKPLATFORM_LOG_KEY_FILES": "the key log's signing keys, comma-separated files (as --log-key-files;\n"
    "default: on SQLite, <db>.log-key, made at first start)",
    "ZKPLATFORM_LOG_NAME": "the name of a log key the server makes itself (default zkplatform.local)",
    "ZKPLATFORM_WITNESSES_FILE": "the witnesses, one '<vkey> <url>' a line (as --witnesses-file; default: none)",
    "ZKPLATFORM_WITNESS_QUORUM": "witnesses that must cosign a checkpoint before it is served (default: all)",
    "ZKPLATFORM_WITNESS_INTERVAL": (
        f"seconds between pushes of every checkpoint to the witnesses (default {DEFAULT_WITNESS_INTERVAL_SECONDS})"
    ),
    "ZKPLATFORM_WITNESS_TIMEOUT": (
        f"seconds a witness has to answer, and a change waits for them (default {DEFAULT_WITNESS_TIMEOUT_SECONDS:g})"
    ),
}
_EXIT_CODES = {
    "0": "stopped by SIGTERM or SIGINT (Ctrl-C)",
    "1": "a worker failed while serving",
    "2": "a usage, configuration or start-up problem: one line on standard error says what to do",
    "130": "interrupted (Ctrl-C) before it listened",
}


def _table(rows: dict[str, str], width: int) -> str:
    return "\n".join(
        f"  {key:<{width}}{text.replace(chr(10), chr(10) + ' ' * (width + 2))}" for key, text in rows.items()
    )


_NAMES_WIDTH = max(map(len, _ENVIRONMENT)) + 2
SERVE_EPILOG = (
    f"environment (the flags above win over it):\n{_table(_ENVIRONMENT, _NAMES_WIDTH)}\n\n"
    f"exit codes:\n{_table(_EXIT_CODES, 5)}"
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """One line, not the usage too: the mistake, and where the usage is."""
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="zkplatform", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", help="what to do; zkplatform COMMAND --help tells more"
    )
    serve = commands.add_parser(
        "serve",
        help="serve the Connect API (and GET /healthz) with hypercorn",
        description="Serve platform.v1 (Connect, gRPC, gRPC-Web) and GET /healthz with hypercorn.",
        epilog=SERVE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument(
        "--bind",
        type=_bind,
        metavar="HOST:PORT",
        help=f"address to listen on (default: $ZKPLATFORM_BIND or {DEFAULT_BIND})",
    )
    serve.add_argument(
        "--store",
        default=None,
        metavar="URL",
        help=f"sqlite:///PATH, postgresql://... or memory: (default: $ZKPLATFORM_STORE or {DEFAULT_STORE})",
    )
    serve.add_argument(
        "--workers", type=_positive, metavar="N", help="worker processes (default: $ZKPLATFORM_WORKERS or 1)"
    )
    serve.add_argument(
        "--migrate", action="store_true", help="create or upgrade the store's schema first (as `admin migrate` does)"
    )
    serve.add_argument(
        "--log-level", choices=LOG_LEVELS, help="least severe log level shown (default: $ZKPLATFORM_LOG_LEVEL or info)"
    )
    serve.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        help="text lines, or one JSON object a line (default: $ZKPLATFORM_LOG_FORMAT or text)",
    )
    serve.add_argument(
        "--metrics-bind",
        type=_bind,
        default=None,
        metavar="HOST:PORT",
        help="serve Prometheus metrics on this address of their own, needing no token (default: no metrics)",
    )
    serve.add_argument(
        "--certfile",
        type=Path,
        metavar="PATH",
        help="serve TLS with this certificate chain (PEM; $ZKPLATFORM_CERTFILE)",
    )
    serve.add_argument(
        "--keyfile",
        type=Path,
        metavar="PATH",
        help="the certificate's private key (PEM, unencrypted; $ZKPLATFORM_KEYFILE)",
    )
    serve.add_argument(
        "--public-url",
        type=_public_url,
        default=None,
        metavar="URL",
        help="https://HOST[:PORT] clients address behind a proxy: the origin DPoP proofs must name",
    )
    serve.add_argument(
        "--forwarded-allow-ips",
        type=_networks,
        default=None,
        metavar="IPS",
        help="comma-separated IPs and CIDR networks of proxies whose Forwarded and X-Forwarded-Proto/-Host "
        "headers are believed (default: none)",
    )
    serve.add_argument(
        "--cors-origins",
        type=_cors_origins,
        default=None,
        metavar="ORIGINS",
        help="comma-separated web origins, https://HOST[:PORT], whose pages may call the Connect and gRPC-Web "
        "API (CORS; default: none, cross-origin calls refused)",
    )
    serve.add_argument(
        "--graceful-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="on SIGTERM, how long calls in flight may take to finish"
        f" (default: $ZKPLATFORM_GRACEFUL_TIMEOUT or {DEFAULT_GRACEFUL_TIMEOUT:g})",
    )
    serve.add_argument(
        "--dev",
        action="store_true",
        help="development mode: seed demo tenants, vaults and items in memory and write their tokens to a file",
    )
    serve.add_argument(
        "--dev-credentials",
        type=Path,
        default=None,
        metavar="PATH",
        help=f"where --dev writes the tokens (default {DEFAULT_DEV_CREDENTIALS})",
    )
    _serve_transparency_flags(serve)
    log_key = commands.add_parser(
        "log-key",
        help="make the key log's signing key (zkplatform log-key generate --help)",
        description="The key log's signing key: a note private key in a file of its own (docs/key-transparency.md).",
    )
    log_key_actions = log_key.add_subparsers(dest="action", required=True, metavar="ACTION")
    generate = log_key_actions.add_parser(
        "generate",
        help="make a new log key into a file; print its verifier key",
        description="Make a new Ed25519 log key and write it to --out (which must not exist), readable only by"
        " its owner; print its verifier key, which clients pin. Name the file in ZKPLATFORM_LOG_KEY_FILES."
        " Exit codes: 0 done, 2 bad usage or a file that cannot be made.",
    )
    generate.add_argument(
        "--name", type=_log_name, required=True, metavar="NAME", help="the log's name (e.g. log.example.com)"
    )
    generate.add_argument("--out", type=Path, required=True, metavar="FILE", help="the new key's file")
    admin = commands.add_parser(
        "admin", help="operator commands on a store (zkplatform admin --help)", add_help=False, prefix_chars="\0"
    )
    admin.add_argument(
        "arguments", nargs=argparse.REMAINDER, help="an operator command and its arguments (zkplatform admin --help)"
    )
    witness = commands.add_parser(
        "witness", help="a witness of the key logs (zkplatform witness --help)", add_help=False, prefix_chars="\0"
    )
    witness.add_argument("arguments", nargs=argparse.REMAINDER, help="keygen or serve (zkplatform witness --help)")
    return parser


def _serve_transparency_flags(serve: argparse.ArgumentParser) -> None:
    """The key log's signing keys and witnesses (docs/operations.md, "The key log")."""
    serve.add_argument(
        "--log-key-files",
        default=None,
        metavar="FILES",
        help="comma-separated files of the key log's signing keys (default: $ZKPLATFORM_LOG_KEY_FILES;"
        " on SQLite, <db>.log-key, made at first start)",
    )
    serve.add_argument(
        "--witnesses-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="the witnesses, one '<cosignature vkey> <url>' a line (default: $ZKPLATFORM_WITNESSES_FILE; none)",
    )
    serve.add_argument(
        "--witness-quorum",
        type=_whole,
        default=None,
        metavar="N",
        help="witnesses that must cosign a checkpoint before it is served (default: $ZKPLATFORM_WITNESS_QUORUM; all)",
    )
    serve.add_argument(
        "--witness-interval",
        type=_positive,
        default=None,
        metavar="SECONDS",
        help="seconds between pushes of every checkpoint to the witnesses"
        f" (default: $ZKPLATFORM_WITNESS_INTERVAL or {DEFAULT_WITNESS_INTERVAL_SECONDS})",
    )
    serve.add_argument(
        "--witness-timeout",
        type=_timeout,
        default=None,
        metavar="SECONDS",
        help="seconds a witness has to answer, and a change's answer waits for them"
        f" (default: $ZKPLATFORM_WITNESS_TIMEOUT or {DEFAULT_WITNESS_TIMEOUT_SECONDS:g})",
    )


def _whole(raw: str) -> int:
    if not (raw.isascii() and raw.isdigit()):
        msg = f"must be a whole number, not {raw!r}"
        raise argparse.ArgumentTypeError(msg)
    return int(raw)


def _timeout(raw: str) -> float:
    try:
        return parse_timeout(raw)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _log_name(raw: str) -> str:
    try:
        return check_log_name(raw)
    except ConfigError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _version() -> str:
    try:
        return importlib.metadata.version("zkplatform")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _positive(raw: str) -> int:
    if not raw.isdigit() or int(raw) < 1:
        msg = f"must be a positive whole number, not {raw!r}"
        raise argparse.ArgumentTypeError(msg)
    return int(raw)


def _bind(raw: str) -> str:
    try:
        return check_bind(raw)
    except ConfigError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _public_url(raw: str) -> str:
    try:
        return check_public_url(raw)
    except ConfigError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--public-url ")) from None


def _networks(raw: str) -> str:
    try:
        parse_networks(raw)
    except ConfigError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--forwarded-allow-ips ")) from None
    return raw


def _cors_origins(raw: str) -> str:
    try:
        parse_cors_origins(raw)
    except ConfigError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--cors-origins ")) from None
    return raw


def _seconds(raw: str) -> float:
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= 3600:  # an hour: longer is a mistake
        msg = f"must be a number of seconds from 0 to 3600, not {raw!r}"
        raise argparse.ArgumentTypeError(msg)
    return seconds


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "admin":
        from zkplatform.admin import main as admin_main  # noqa: PLC0415 # the server never loads it

        return admin_main(args.arguments)
    if args.command == "log-key":
        return _generate_log_key(args)
    if args.command == "witness":
        from zkplatform.witness.command import main as witness_main  # noqa: PLC0415 # the server never loads it

        return witness_main(args.arguments)
    return _run_serve(args)


def _run_serve(args: argparse.Namespace) -> int:
    try:
        _flags_from_environment(args, os.environ)
    except ConfigError as error:
        print(f"zkplatform: {error}", file=sys.stderr)
        return 2
    configure_logging(args.log_level, args.log_format)
    try:
        return _serve(args)
    except STARTUP_ERRORS as error:
        print(f"zkplatform: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C before the server listened: nothing to stop
        return 130


def _generate_log_key(args: argparse.Namespace) -> int:
    try:
        vkey = generate_key_file(args.name, args.out)
    except ConfigError as error:
        print(f"zkplatform: {error}", file=sys.stderr)
        return 2
    print(f"zkplatform: log key {args.name} written to {args.out}; its verifier key:", file=sys.stderr)
    print(vkey)  # the verifier key is public: clients pin it
    return 0


def _choice(choices: Sequence[str]) -> Callable[[str], str]:
    def check(raw: str) -> str:
        if raw not in choices:
            msg = f"must be one of {', '.join(choices)}, not {raw!r}"
            raise argparse.ArgumentTypeError(msg)
        return raw

    return check


# The serve flags whose environment variables the parser does not read itself: a
# flag given wins, else its variable, else the default.
_FLAG_VARIABLES: dict[str, tuple[str, Callable[[str], object], object]] = {
    "bind": ("ZKPLATFORM_BIND", _bind, DEFAULT_BIND),
    "workers": ("ZKPLATFORM_WORKERS", _positive, 1),
    "log_level": ("ZKPLATFORM_LOG_LEVEL", _choice(LOG_LEVELS), "info"),
    "log_format": ("ZKPLATFORM_LOG_FORMAT", _choice(LOG_FORMATS), "text"),
    "certfile": ("ZKPLATFORM_CERTFILE", Path, None),
    "keyfile": ("ZKPLATFORM_KEYFILE", Path, None),
    "graceful_timeout": ("ZKPLATFORM_GRACEFUL_TIMEOUT", _seconds, DEFAULT_GRACEFUL_TIMEOUT),
}


def _flags_from_environment(args: argparse.Namespace, environ: Mapping[str, str]) -> None:
    """Fill each serve flag not given from its ZKPLATFORM_* variable, or its default."""
    for dest, (variable, convert, default) in _FLAG_VARIABLES.items():
        if getattr(args, dest) is not None:
            continue
        raw = environ.get(variable, "")
        try:
            setattr(args, dest, convert(raw) if raw else default)
        except argparse.ArgumentTypeError as error:
            raise ConfigError(f"{variable} {error}") from None


def serve_settings(args: argparse.Namespace, env: Settings) -> Settings:
    """The environment's settings, overridden by the command line."""
    if (args.certfile is None) != (args.keyfile is None):
        raise ConfigError("--certfile and --keyfile go together: TLS needs both")
    if args.public_url is not None:
        env = dataclasses.replace(env, public_url=args.public_url)
    if args.forwarded_allow_ips is not None:
        env = dataclasses.replace(env, forwarded_allow_ips=parse_networks(args.forwarded_allow_ips))
    if args.cors_origins is not None:
        env = dataclasses.replace(env, cors_origins=parse_cors_origins(args.cors_origins))
    scheme = "https" if args.certfile is not None else "http"
    settings = dataclasses.replace(env, base_url=env.public_url or f"{scheme}://{args.bind}")
    if args.store is not None:
        settings = dataclasses.replace(settings, store_url=args.store)
    kind_of(settings.store_url)  # a malformed or unsupported URL stops here, in one line
    settings = _with_metrics(args, settings)
    settings = _with_transparency(args, settings)
    if args.dev_credentials is not None and not args.dev:
        raise ConfigError("--dev-credentials only makes sense with --dev")
    if args.dev:
        if args.store is not None and kind_of(args.store) != "memory":
            raise ConfigError("--dev seeds the in-memory store; it cannot be combined with --store")
        settings = dataclasses.replace(settings, store_url="memory:")
        if args.workers > 1:
            raise ConfigError("--dev keeps its data in one process's memory; use --workers 1")
        settings = dataclasses.replace(settings, dev=True, dev_credentials=args.dev_credentials or env.dev_credentials)
    return settings


def _with_transparency(args: argparse.Namespace, settings: Settings) -> Settings:
    if args.log_key_files is not None:
        settings = dataclasses.replace(settings, log_key_files=parse_paths(args.log_key_files))
    if args.witnesses_file is not None:
        settings = dataclasses.replace(settings, witnesses_file=args.witnesses_file)
    if args.witness_quorum is not None:
        settings = dataclasses.replace(settings, witness_quorum=args.witness_quorum)
    if args.witness_interval is not None:
        settings = dataclasses.replace(settings, witness_interval_seconds=args.witness_interval)
    if args.witness_timeout is not None:
        settings = dataclasses.replace(settings, witness_timeout_seconds=args.witness_timeout)
    return settings


def _check_transparency(settings: Settings) -> None:
    """The log keys and witnesses usable, before anything starts (a SQLite store's own log key
    aside: `_local_log_key` makes it once the database is there)."""
    if settings.dev:
        return
    if settings.log_key_files or local_key_path(settings.store_url) is None:
        log_keys_for(settings)
    witnesses = read_witnesses(settings.witnesses_file) if settings.witnesses_file is not None else []
    witness_quorum(settings, witnesses)


def _local_log_key(settings: Settings) -> None:
    """A SQLite store's own log key, made now when there is none (once, so that the workers only
    read it), and where its verifier key is."""
    local = None if settings.dev or settings.log_key_files else local_key_path(settings.store_url)
    if local is None:
        return
    keys, created = local_log_key(local, settings.log_name)
    verifier = local.with_name(local.name + VERIFIER_KEY_SUFFIX)
    made = "made" if created else "kept"
    log.info("log key %s %s in %s; its verifier key, which clients pin, is in %s", keys.name, made, local, verifier)


def _with_metrics(args: argparse.Namespace, settings: Settings) -> Settings:
    if args.metrics_bind is not None:
        settings = dataclasses.replace(settings, metrics_bind=args.metrics_bind)
    if settings.metrics_bind is not None and settings.metrics_bind.rpartition(":")[2] == args.bind.rpartition(":")[2]:
        raise ConfigError("--metrics-bind needs a port of its own, not the API's (--bind)")
    return settings


def configure_logging(level: str = "info", log_format: str = "text") -> None:
    """One format for every process: the pid tells the workers apart, and times carry their UTC offset
    (text), or one JSON object a line (json).

    Debug output is ours only: the HTTP/2 libraries log every decoded header at
    debug level, Authorization included, and a token must never reach a log."""
    chosen = logging.getLevelNamesMapping()[level.upper()]
    # A line per call: spare each record what no format here shows (the logging
    # HOWTO's "Optimization"): the caller's file and line (a walk up the stack),
    # the thread's and the multiprocessing process's names.
    logging._srcfile = None  # noqa: SLF001 # the documented switch
    logging.logThreads = False
    logging.logMultiprocessing = False
    logging.basicConfig(level=max(chosen, logging.INFO), handlers=[queued_handler(log_format)])
    logging.getLogger("zkplatform").setLevel(chosen)


async def _prepare_store(url: str, *, migrate: bool) -> None:
    """Open the store once: a bad URL, an unreachable server or another schema version stops here."""
    if migrate:
        store = await open_store(url, check_schema=False)
        try:
            applied = await store.migrate()
        finally:
            await store.close()
        if applied:
            log.info("migrated %s: applied version(s) %s", display_url(url), ", ".join(map(str, applied)))
    store = await open_store(url)
    await store.close()


class _EncryptedKey(Exception):
    """Raised by _no_passphrase through OpenSSL, caught by Listener.check."""


def _no_passphrase() -> str:
    """What OpenSSL calls for an encrypted key's passphrase: the server never has one."""
    raise _EncryptedKey


@dataclasses.dataclass(frozen=True, slots=True)
class Listener:
    """How every worker serves its socket: TLS or not, and the grace period of a stop."""

    certfile: str | None = None
    keyfile: str | None = None
    graceful_timeout: float = DEFAULT_GRACEFUL_TIMEOUT

    @property
    def scheme(self) -> str:
        return "https" if self.certfile is not None else "http"

    def check(self) -> None:
        """Load the certificate and key once, so that a bad pair stops the start, in one line."""
        if self.certfile is None or self.keyfile is None:
            return
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            # Without a password callback OpenSSL would ask for the passphrase on the terminal.
            context.load_cert_chain(self.certfile, self.keyfile, password=_no_passphrase)
        except _EncryptedKey:
            msg = (
                f"--keyfile {self.keyfile} is encrypted: the server needs the key unencrypted (e.g. "
                "`openssl pkey -in KEY -out PLAIN.pem`, readable only by the server's user)"
            )
            raise ConfigError(msg) from None
        except OSError as error:  # ssl.SSLError is one: a key that does not match, a file that is not PEM
            why = _tls_files_problem(self.certfile, self.keyfile) or error.strerror or getattr(error, "reason", None)
            msg = f"cannot serve TLS with --certfile {self.certfile} and --keyfile {self.keyfile} ({why or error})"
            raise ConfigError(msg) from None


def _tls_files_problem(certfile: str, keyfile: str) -> str | None:
    """What is wrong with the pair, in words, when the PEM blocks in the files tell (OpenSSL only says "PEM lib")."""
    try:
        cert, key = Path(certfile).read_text(errors="replace"), Path(keyfile).read_text(errors="replace")
    except OSError:
        return None  # OpenSSL's own reason (no such file, permission denied) says it
    if "PRIVATE KEY-----" in cert and "-----BEGIN CERTIFICATE-----" in key:
        return "the two are swapped: --certfile names the private key and --keyfile the certificate"
    if "-----BEGIN CERTIFICATE-----" not in cert:
        return "--certfile holds no PEM certificate"
    if "PRIVATE KEY-----" not in key:
        return "--keyfile holds no PEM private key"
    return None


def _serve(args: argparse.Namespace) -> int:
    settings = serve_settings(args, Settings.from_env())
    listener = Listener(
        str(args.certfile.absolute()) if args.certfile is not None else None,
        str(args.keyfile.absolute()) if args.keyfile is not None else None,
        args.graceful_timeout,
    )
    log.debug(
        "settings: store %s, body limit %d bytes, body read timeout %d s, %d streams per worker, state in %s",
        display_url(settings.store_url),
        settings.max_body_bytes,
        settings.body_read_timeout_seconds,
        settings.max_streams,
        settings.state_dir,
    )
    listener.check()
    check_env()
    _check_transparency(settings)
    # Fail on unusable settings here, before binding the port or spawning workers.
    asyncio.run(_prepare_store(settings.store_url, migrate=args.migrate))
    _local_log_key(settings)  # after the store: beside a database that is there
    try:
        load_pepper(settings.token_pepper, settings.state_dir)
    except OSError as error:
        msg = f"cannot keep the token pepper in {settings.state_dir} ({error.strerror or error}): "
        raise ConfigError(msg + "set ZKPLATFORM_STATE_DIR to a writable directory") from None
    os.environ.update(settings.to_env())  # the worker processes read these

    def listening() -> None:
        log.info(
            "listening on %s://%s (%d worker(s), store %s%s)",
            listener.scheme,
            args.bind,
            args.workers,
            display_url(settings.store_url),
            ", development mode" if settings.dev else "",
        )

    revoker = _LeakRevoker(settings)
    signal.signal(signal.SIGHUP, _ignore_hangup)
    # The lock first, so a second server on the port is told so; then the address, bound
    # whatever the worker count, so a taken address fails before anything starts.
    with (
        contextlib.closing(hold_address(args.bind)) as lock,
        contextlib.closing(listening_socket(args.bind, shared=args.workers > 1)) as sock,
        _metrics_port(settings.metrics_bind, args.workers, revoker.screen),
    ):
        if args.workers == 1:
            signals = (signal.SIGINT, signal.SIGTERM)
            asyncio.run(_serve_app(sock, args.bind, listener, listening, signals, started=revoker.serving))
            code = 0
        else:  # sock stays bound, never listening: only listening sockets are given connections
            worker = functools.partial(_worker, log_level=args.log_level, log_format=args.log_format, listener=listener)
            stop_timeout = listener.graceful_timeout + STOP_MARGIN_S
            code = run_workers(args.workers, args.bind, worker, listening, stop_timeout=stop_timeout, lock=lock)
    log.info("stopped")
    return code


def _ignore_hangup(_signum: int, _frame: FrameType | None) -> None:
    """A terminal's hangup must not end the server without its graceful stop; and it
    reads its settings only as it starts, so there is nothing to reload."""
    log.warning("SIGHUP ignored: to change the settings, stop the server (SIGTERM) and start it again")


class _LeakRevoker:
    """How the metrics port revokes a token seen in its URL: by the API's own path
    (Authenticator.revoke_leaked), on the serving loop when the application runs in this
    process (one worker, the memory store included), else on the store opened for it."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._serving: tuple[asyncio.AbstractEventLoop, Authenticator] | None = None

    def serving(self, loop: asyncio.AbstractEventLoop, authenticator: Authenticator) -> None:
        self._serving = (loop, authenticator)

    def screen(self, path: str, query: bytes) -> bool:
        """Called on the metrics listener's threads: True when the URL carried a token (revoked)."""
        places, found = leaks_in(path, query)
        if found:
            try:
                if self._serving is None:
                    asyncio.run(self._revoke_on_own_store(found))
                else:
                    loop, authenticator = self._serving
                    asyncio.run_coroutine_threadsafe(authenticator.revoke_leaked(found), loop).result(_REVOKE_WAIT_S)
            except Exception as error:  # noqa: BLE001 # the refusal goes out whatever happened (a stopping loop)
                log.error("a token sent in a metrics URL could not be revoked (%s)", type(error).__name__)  # noqa: TRY400
        return bool(places)

    async def _revoke_on_own_store(self, found: list[str]) -> None:
        platform = await platform_from(self._settings)
        try:
            await platform.authenticator.revoke_leaked(found)
        finally:
            await platform.close()


@contextlib.contextmanager
def _metrics_port(bind: str | None, workers: int, screen: Screen | None = None) -> Iterator[None]:
    """The metrics listener, served by this process: with several workers, from
    the files they write into a directory made for this server (removed at exit)."""
    if bind is None:
        yield
        return
    with contextlib.ExitStack() as stack:
        registry = stack.enter_context(multiprocess_registry()) if workers > 1 else REGISTRY
        try:
            metrics = MetricsListener.start(bind, registry, screen)
        except OSError as error:
            msg = f"cannot serve metrics on {bind} ({error.strerror or error}): choose another --metrics-bind"
            raise AddressUnavailable(msg) from None
        stack.callback(metrics.close)
        log.info("metrics on http://%s/metrics", bind)
        yield


def _worker(bind: str, ready: Callable[[], None], *, log_level: str, log_format: str, listener: Listener) -> None:
    """One of several worker processes: the application on a listening socket of its own."""
    configure_logging(log_level, log_format)
    try:
        sock = listening_socket(bind)
        # the parent relays Ctrl-C as SIGTERM
        asyncio.run(_serve_app(sock, bind, listener, ready, (signal.SIGTERM,)))
    except STARTUP_ERRORS as error:
        print(f"zkplatform: worker {os.getpid()}: {error}", file=sys.stderr)
        raise SystemExit(2) from None


async def _serve_app(  # noqa: PLR0913 # started: for the metrics port, one worker only
    sock: socket.socket,
    bind: str,
    listener: Listener,
    ready: Callable[[], None],
    stop_signals: tuple[signal.Signals, ...],
    *,
    started: Callable[[asyncio.AbstractEventLoop, Authenticator], None] | None = None,
) -> None:
    """Start the application, then listen, then tell `ready`; serve until a stop signal.

    On a stop signal hypercorn stops accepting, closes idle connections and
    lets the calls in flight finish within the grace period; open streams are
    ended at once (they would otherwise hold the stop for all of it)."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in stop_signals:
        loop.add_signal_handler(sig, stopping.set)
    app = create_app()
    # The application's start-up (opening the store) runs here, before listening,
    # so that `ready` means both; hypercorn's lifespan then finds nothing left to start.
    await app.startup()
    if started is not None and app.platform is not None:
        started(loop, app.platform.authenticator)

    async def stopped() -> None:
        await stopping.wait()
        calls, streams = app.stop()
        log.info(
            "stopping: %d call(s) in flight finish within %g s; %d open stream(s) end now",
            calls,
            listener.graceful_timeout,
            streams,
        )

    try:
        if stopping.is_set():
            return
        config = _hypercorn_config(listener)
        hypercorn_fix.apply()
        tls_port.apply()
        listen(sock, bind, config.backlog)
        ready()
        # hypercorn closes the socket it makes from the descriptor; detached, ours will not close it a second time.
        config.bind = [f"fd://{sock.detach()}"]
        await hypercorn_serve(cast("ASGIFramework", app), config, shutdown_trigger=stopped)
    finally:
        await app.shutdown()


def _hypercorn_config(listener: Listener) -> HypercornConfig:
    config = HypercornConfig()
    config.accesslog = None  # an access log would record query strings, where tokens may leak
    config.errorlog = logging.getLogger("hypercorn.error")  # one handler: ours
    config.graceful_timeout = listener.graceful_timeout
    if listener.certfile is not None and listener.keyfile is not None:
        # With both set, hypercorn serves the descriptor in `bind` with TLS, offering
        # HTTP/2 first in ALPN: what gRPC clients require.
        config.certfile, config.keyfile = listener.certfile, listener.keyfile
        config.alpn_protocols = ["h2", "http/1.1"]
    return config
