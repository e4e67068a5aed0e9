"""`zkplatform admin`: operator commands, with direct access to a store (docs/admin.md).

This package is the command line only: `arguments` parses it, `commands` acts
on the store, `importer` reads the files `import` takes, `audit` exports and
verifies the audit trail. `main` runs one command per process, in its own event
loop, and turns every failure into one line on standard error and an exit code.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sqlite3
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from zkplatform.admin import audit, commands
from zkplatform.admin.arguments import build_parser, store_url
from zkplatform.admin.importer import BadFile, BadLine
from zkplatform.config import ConfigError, Settings
from zkplatform.domain.errors import DomainError, StoreUnavailable
from zkplatform.domain.ports.refusals import AlreadyExists, UnknownReference
from zkplatform.store import StoreOpenError, StoreURLError, kind_of, open_store
from zkplatform.store.migrations import SchemaError

__all__ = ["main"]

PROG = "zkplatform admin"
DONE, REFUSED, UNUSABLE, INTERRUPTED = 0, 1, 2, 130
# Bad input, found before anything was written: the operator can fix it and run again;
# or a break in the audit trail, which `audit verify` exists to find.
REFUSALS = (commands.Refused, audit.Finding, BadLine, BadFile, AlreadyExists, UnknownReference, DomainError)
# A setting or a store this command cannot work with; each message says what to do.
UNUSABLE_SETUP = (StoreURLError, StoreOpenError, SchemaError, ConfigError)


def main(argv: Sequence[str]) -> int:
    """Run one command: 0 done, 1 refused input (nothing changed) or a broken audit trail,
    2 bad usage or an unusable store."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        url = store_url(parser, args)
    except SystemExit as stop:  # --help, or a usage error argparse has already explained
        return stop.code if isinstance(stop.code, int) else UNUSABLE
    with _driver_complaints() as complaints:
        try:
            output = asyncio.run(_run(args, url))
        except (Exception, KeyboardInterrupt) as error:  # noqa: BLE001 # an operator gets one line, never a traceback
            code, message = _explain(error, complaints.last)
            # A file's bad lines each get their own line, before the one that sums them up.
            reported = error.reported if isinstance(error, BadFile) and error.total > 1 else ()
            for line in [*(str(bad) for bad in reported), message]:
                print(f"{PROG}: {' '.join(line.split())}", file=sys.stderr)
            return code
    if output:  # an empty list prints nothing, not an empty line
        print(output)  # the command's result (a token's JSON, a list) is for standard output
    return DONE


async def _run(args: argparse.Namespace, chosen_url: str | None) -> str:
    command: commands.Command = args.run
    url = chosen_url or Settings.from_env().store_url
    args.store_url = url  # the commands that need the server's settings for this store (keys reset)
    if kind_of(url) == "memory":
        print(f"{PROG}: note: the memory: store keeps nothing once this command ends", file=sys.stderr)
    # Only `migrate` may open a store whose schema is not this build's: it is what fixes that.
    store = await open_store(url, check_schema=args.command != "migrate")
    try:
        return await command(args, store)
    finally:
        await store.close()


def _explain(error: BaseException, driver_complaint: str) -> tuple[int, str]:
    """The exit code and the one line for the operator."""
    if isinstance(error, StoreUnavailable) and error.__cause__ is not None:
        error = error.__cause__  # the driver's own words tell an operator more than the callers' sentence
    if isinstance(error, REFUSALS):
        # An audit command only reads: there was nothing to change, so its line does not say so.
        return REFUSED, str(error) if isinstance(error, audit.Finding) else f"{error}; nothing was changed"
    if isinstance(error, UNUSABLE_SETUP):
        return UNUSABLE, str(error)
    if isinstance(error, OSError):
        # The file the operator named (an import file, the pepper file), and why it cannot be used.
        return UNUSABLE, f"{error.filename}: {error.strerror}" if error.filename and error.strerror else str(error)
    if _is_database_error(error):
        reason = f" ({driver_complaint})" if driver_complaint else ""
        return UNUSABLE, f"the store cannot be used: {error}{reason}"
    if isinstance(error, KeyboardInterrupt):
        return INTERRUPTED, "interrupted"
    return UNUSABLE, f"unexpected error ({type(error).__name__}): {error}"


def _is_database_error(error: BaseException) -> bool:
    """An error of the SQLite or PostgreSQL driver: the database is unreachable, locked, or not one."""
    if isinstance(error, sqlite3.Error):
        return True
    # psycopg is loaded only once a PostgreSQL store is opened; before that, no error can be one of its.
    psycopg = sys.modules.get("psycopg")
    return psycopg is not None and isinstance(error, psycopg.Error)


class _LastComplaint(logging.Handler):
    """The last warning of the PostgreSQL driver: why the pool could not connect, which the
    pool's eventual timeout does not say. Kept off standard error, where it would repeat
    for every attempt."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.last = ""

    def emit(self, record: logging.LogRecord) -> None:
        self.last = record.getMessage()


@contextmanager
def _driver_complaints() -> Iterator[_LastComplaint]:
    logger = logging.getLogger("psycopg")
    handler = _LastComplaint()
    propagate, logger.propagate = logger.propagate, False
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
