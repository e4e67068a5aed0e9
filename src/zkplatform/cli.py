"""The `zkplatform` command: `serve` runs the API on hypercorn; `admin` acts directly on a store."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from zkplatform.config import SETTINGS, ConfigError, Setting, Settings, check_log_name
from zkplatform.log_keys import generate_key_file
from zkplatform.server.listener import Listener
from zkplatform.server.log_setup import configure_logging
from zkplatform.server.serve import STARTUP_ERRORS, Serving, serve
from zkplatform.store import kind_of

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


_ENVIRONMENT = {setting.variable: setting.help for setting in SETTINGS if setting.help is not None}
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
    _serve_flags(serve)
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


def _serve_flags(serve: argparse.ArgumentParser) -> None:
    """A flag for each setting that has one (config.SETTINGS), and --migrate, which is an act."""
    for setting in SETTINGS:
        if setting.flag is None:
            continue
        if setting.switch:
            serve.add_argument(setting.flag, action="store_true", help=setting.flag_help)
        elif setting.choices is not None:
            serve.add_argument(setting.flag, choices=setting.choices, help=setting.flag_help)
        else:
            serve.add_argument(setting.flag, type=_flag_type(setting), metavar=setting.metavar, help=setting.flag_help)
    serve.add_argument(
        "--migrate", action="store_true", help="create or upgrade the store's schema first (as `admin migrate` does)"
    )


def _flag_type(setting: Setting) -> Callable[[str], Any]:
    """The setting's reading of a flag's text, its refusal in argparse's words (which name the flag)."""
    parse = setting.flag_parse or setting.parse

    def convert(raw: str) -> Any:
        try:
            return parse(raw)
        except ConfigError as error:
            raise argparse.ArgumentTypeError(str(error).removeprefix(f"{setting.flag} ")) from None

    return convert


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


def _flags_from_environment(args: argparse.Namespace, environ: Mapping[str, str]) -> None:
    """Fill each flag of how `serve` runs (a setting that is no field of Settings) that was not
    given from its ZKPLATFORM_* variable, or its default."""
    for setting in SETTINGS:
        if setting.field is None and getattr(args, setting.dest) is None:
            setattr(args, setting.dest, setting.read(environ))


# Flags whose effect has rules of their own (serve_settings).
_RULED = frozenset({"dev", "dev_credentials"})


def serve_settings(args: argparse.Namespace, env: Settings) -> Settings:
    """The environment's settings, overridden by the command line."""
    if (args.certfile is None) != (args.keyfile is None):
        raise ConfigError("--certfile and --keyfile go together: TLS needs both")
    given = {
        setting.field: getattr(args, setting.dest)
        for setting in SETTINGS
        if setting.field is not None and setting.flag is not None and setting.field not in _RULED
    }
    settings = dataclasses.replace(env, **{name: value for name, value in given.items() if value is not None})
    scheme = "https" if args.certfile is not None else "http"
    settings = dataclasses.replace(settings, base_url=settings.public_url or f"{scheme}://{args.bind}")
    kind_of(settings.store_url)  # a malformed or unsupported URL stops here, in one line
    if settings.metrics_bind is not None and settings.metrics_bind.rpartition(":")[2] == args.bind.rpartition(":")[2]:
        raise ConfigError("--metrics-bind needs a port of its own, not the API's (--bind)")
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


def _serve(args: argparse.Namespace) -> int:
    settings = serve_settings(args, Settings.from_env())
    listener = Listener(
        str(args.certfile.absolute()) if args.certfile is not None else None,
        str(args.keyfile.absolute()) if args.keyfile is not None else None,
        args.graceful_timeout,
        args.backlog,
    )
    return serve(settings, Serving(args.bind, args.workers, listener, args.log_level, args.log_format, args.migrate))
