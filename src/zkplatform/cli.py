"""The `zkplatform` command: `serve` runs the API on hypercorn."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from hypercorn.config import Config as HypercornConfig
from hypercorn.run import run as hypercorn_run

from zkplatform.config import DEFAULT_BIND, ConfigError, Settings

log = logging.getLogger("zkplatform")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="zkplatform", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the Connect API (and GET /healthz) with hypercorn")
    serve.add_argument(
        "--bind", default=DEFAULT_BIND, metavar="HOST:PORT", help=f"address to listen on (default {DEFAULT_BIND})"
    )
    serve.add_argument("--store", default=None, metavar="URL", help="storage (default: memory:)")
    serve.add_argument("--workers", type=_positive, default=1, metavar="N", help="worker processes (default 1)")
    return parser


def _positive(raw: str) -> int:
    if not raw.isdigit() or int(raw) < 1:
        msg = f"must be a positive whole number, not {raw!r}"
        raise argparse.ArgumentTypeError(msg)
    return int(raw)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return _serve(args)
    except ConfigError as error:
        print(f"zkplatform: {error}", file=sys.stderr)
        return 2


def _serve(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    if args.store is not None:
        settings = Settings(store_url=args.store, max_body_bytes=settings.max_body_bytes)
    from zkplatform.app import create_app  # noqa: PLC0415 # fail on bad settings before binding

    create_app(settings)
    os.environ.update(settings.to_env())  # hypercorn's worker processes read these
    config = HypercornConfig()
    config.bind = [args.bind]
    config.application_path = "zkplatform.app:create_app()"
    # hypercorn runs a single worker in this process; N > 1 spawns N processes.
    config.workers = 0 if args.workers == 1 else args.workers
    config.accesslog = None  # an access log would record query strings, where tokens may leak
    config.errorlog = logging.getLogger("hypercorn.error")  # one handler: ours
    log.info(
        "serving platform.v1 on http://%s with %d worker(s), store %s", args.bind, args.workers, settings.store_url
    )
    return hypercorn_run(config)
