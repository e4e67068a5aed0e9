"""The `zkplatform` command: `serve` runs the API on hypercorn; `admin` acts directly on a store."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NoReturn

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
from zkplatform.domain.broker import MintPolicy
from zkplatform.log_keys import generate_key_file
from zkplatform.observability.logs import LOG_FORMATS
from zkplatform.server.listener import DEFAULT_GRACEFUL_TIMEOUT, Listener
from zkplatform.server.log_setup import configure_logging
from zkplatform.server.serve import STARTUP_ERRORS, Serving, serve
from zkplatform.store import DEFAULT_POOL_SIZE, kind_of

LOG_LEVELS = ("debug", "info", "warning", "error")

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


def _with_metrics(args: argparse.Namespace, settings: Settings) -> Settings:
    if args.metrics_bind is not None:
        settings = dataclasses.replace(settings, metrics_bind=args.metrics_bind)
    if settings.metrics_bind is not None and settings.metrics_bind.rpartition(":")[2] == args.bind.rpartition(":")[2]:
        raise ConfigError("--metrics-bind needs a port of its own, not the API's (--bind)")
    return settings


def _serve(args: argparse.Namespace) -> int:
    settings = serve_settings(args, Settings.from_env())
    listener = Listener(
        str(args.certfile.absolute()) if args.certfile is not None else None,
        str(args.keyfile.absolute()) if args.keyfile is not None else None,
        args.graceful_timeout,
    )
    return serve(settings, Serving(args.bind, args.workers, listener, args.log_level, args.log_format, args.migrate))
