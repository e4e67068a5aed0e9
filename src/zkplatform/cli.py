"""The `zkplatform` command: `serve` runs the API on hypercorn."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from hypercorn.config import Config as HypercornConfig
from hypercorn.run import run as hypercorn_run

from zkplatform.app import create_app
from zkplatform.config import DEFAULT_BIND, DEFAULT_DEV_CREDENTIALS, DEFAULT_STORE, ConfigError, Settings
from zkplatform.pepper import load_pepper
from zkplatform.rpc.edge import Edge
from zkplatform.store import StoreURLError, kind_of, open_store
from zkplatform.store.migrations import SchemaError
from zkplatform.workers import listening_socket, run_workers

log = logging.getLogger("zkplatform")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="zkplatform", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the Connect API (and GET /healthz) with hypercorn")
    serve.add_argument(
        "--bind", default=DEFAULT_BIND, metavar="HOST:PORT", help=f"address to listen on (default {DEFAULT_BIND})"
    )
    serve.add_argument(
        "--store",
        default=None,
        metavar="URL",
        help=f"sqlite:///PATH, postgresql://... or memory: (default: $ZKPLATFORM_STORE or {DEFAULT_STORE})",
    )
    serve.add_argument("--workers", type=_positive, default=1, metavar="N", help="worker processes (default 1)")
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
    admin = commands.add_parser(
        "admin", help="operator commands on a store (zkplatform admin --help)", add_help=False, prefix_chars="\0"
    )
    admin.add_argument("arguments", nargs=argparse.REMAINDER)
    return parser


def _positive(raw: str) -> int:
    if not raw.isdigit() or int(raw) < 1:
        msg = f"must be a positive whole number, not {raw!r}"
        raise argparse.ArgumentTypeError(msg)
    return int(raw)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "admin":
        from zkplatform.admin import main as admin_main  # noqa: PLC0415 # the server never loads it

        return admin_main(args.arguments)
    configure_logging()
    try:
        return _serve(args)
    except (ConfigError, StoreURLError, SchemaError) as error:
        print(f"zkplatform: {error}", file=sys.stderr)
        return 2


def serve_settings(args: argparse.Namespace, env: Settings) -> Settings:
    """The environment's settings, overridden by the command line."""
    settings = dataclasses.replace(env, base_url=f"http://{args.bind}")
    if args.store is not None:
        settings = dataclasses.replace(settings, store_url=args.store)
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


def configure_logging() -> None:
    """One format for every process; the pid tells the workers apart."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(process)d] %(levelname)s %(name)s: %(message)s")


def worker_app() -> Edge:
    """What each hypercorn worker loads: spawned workers start with no logging set up."""
    configure_logging()
    return create_app()


async def _check_store(url: str) -> None:
    """Open the store once: a bad URL, an unreachable server or another schema version stops here."""
    store = await open_store(url)
    await store.close()


def _serve(args: argparse.Namespace) -> int:
    settings = serve_settings(args, Settings.from_env())
    # Fail on unusable settings here, before binding the port or spawning workers.
    asyncio.run(_check_store(settings.store_url))
    load_pepper(settings.token_pepper, settings.state_dir)
    os.environ.update(settings.to_env())  # the worker processes read these
    log.info(
        "serving platform.v1 on http://%s with %d worker(s), store %s%s",
        args.bind,
        args.workers,
        settings.store_url,
        " (development mode)" if settings.dev else "",
    )
    if args.workers == 1:
        return hypercorn_run(_hypercorn_config(args.bind))
    return run_workers(args.workers, args.bind, _worker)


def _hypercorn_config(bind: str) -> HypercornConfig:
    config = HypercornConfig()
    config.bind = [bind]
    config.application_path = "zkplatform.cli:worker_app()"
    config.workers = 0  # serve in this process: several workers are our processes (zkplatform.workers)
    config.accesslog = None  # an access log would record query strings, where tokens may leak
    config.errorlog = logging.getLogger("hypercorn.error")  # one handler: ours
    return config


def _worker(bind: str) -> None:
    """One of several worker processes: hypercorn on a listening socket of its own."""
    configure_logging()
    sock = listening_socket(bind)  # kept referenced: hypercorn serves its file descriptor
    try:
        code = hypercorn_run(_hypercorn_config(f"fd://{sock.fileno()}"))
    finally:
        sock.close()
    raise SystemExit(code)  # the process's exit code, which run_workers reports
