"""Versioned schema migrations: `NNNN_name.sql` files per dialect, applied in order.

Each store keeps its version in `schema_version`. `zkplatform admin migrate`
applies what is missing; a server refuses to start on a database that is not
exactly at this build's version (uninitialised, older, or newer).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from importlib import resources


class SchemaError(RuntimeError):
    """The database's schema is not the one this build works with; the message says what to do."""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def migrations(dialect: str) -> list[Migration]:
    found = []
    for entry in resources.files(__package__).joinpath(dialect).iterdir():
        if entry.name.endswith(".sql"):
            number, _, rest = entry.name.partition("_")
            found.append(Migration(int(number), rest.removesuffix(".sql"), entry.read_text()))
    found.sort(key=lambda m: m.version)
    if [m.version for m in found] != list(range(1, len(found) + 1)):
        msg = f"{dialect} migrations must be numbered 1..n without gaps"
        raise RuntimeError(msg)
    return found


def latest(dialect: str) -> int:
    return len(migrations(dialect))


def check_version(current: int | None, dialect: str, store: str) -> None:
    """Refuse anything but exactly this build's schema version; `store` is the
    store's URL as it may be printed (no password), for the command to run."""
    expected = latest(dialect)
    migrate = f"run `zkplatform admin --store {shlex.quote(store)} migrate`"
    if current is None:
        msg = f"the database is not initialised: {migrate}"
        raise SchemaError(msg)
    if current > expected:
        msg = (
            f"the database schema is at version {current}, newer than this build knows ({expected}): upgrade zkplatform"
        )
        raise SchemaError(msg)
    if current < expected:
        msg = f"the database schema is at version {current}, this build needs {expected}: {migrate}"
        raise SchemaError(msg)
