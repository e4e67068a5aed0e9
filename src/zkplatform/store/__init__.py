"""Store adapters, and the one factory that picks one from a store URL.

- `memory:`: in-process, gone at exit (development mode, tests)
- `sqlite:///relative/path.db`, `sqlite:////absolute/path.db`: the embedded default
- `postgresql://user@host:port/db`: several workers and hosts on one database
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from zkplatform.domain.ports.store import Store

DEFAULT_SQLITE_URL = "sqlite:///./var/zkplatform.db"


class StoreURLError(ValueError):
    """A store URL this build cannot open; the message says why."""


class StoreOpenError(ValueError):
    """A store that cannot be opened (unreachable, refused, not a database); the message says what to do."""


def display_url(url: str) -> str:
    """The store URL as it may be printed: any password masked (user:password@ or libpq's ?password=)."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL (an IPv6 host without its closing bracket): masked as written
        return _masked_as_written(url)
    if parts.password is None and "password" not in parts.query.lower():
        return url  # as given: rebuilding would change sqlite:/// into sqlite:/
    if parts.password is not None:
        host = parts.netloc.rpartition("@")[2]
        parts = parts._replace(netloc=f"{parts.username or ''}:***@{host}")
    if "password" in parts.query.lower():
        query = [
            (k, "***" if k.lower() == "password" else v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
        ]
        parts = parts._replace(query=urlencode(query, safe="*"))
    return urlunsplit(parts)


def _masked_as_written(url: str) -> str:
    """A URL urlsplit refuses, with whatever could be a password masked: anything between the
    userinfo's first colon and its last `@`, and the value of a `password=` parameter."""
    scheme, separator, rest = url.partition("://")
    userinfo, at, host = rest.rpartition("@")
    if at and ":" in userinfo:
        rest = f"{userinfo.partition(':')[0]}:***@{host}"
    return re.sub(r"(?i)(password=)[^&]*", r"\1***", f"{scheme}{separator}{rest}")


class MigratableStore(Store, Protocol):
    async def schema_version(self) -> int | None: ...

    async def migrate(self) -> list[int]: ...


def kind_of(url: str) -> str:
    """ "memory", "sqlite" or "postgresql"; StoreURLError for anything else, a malformed URL too."""
    try:
        _ = urlsplit(url).port  # the host's brackets and the port are checked only when the port is read
    except ValueError:
        # Not the error's own text: it may quote the URL's user information, password included.
        msg = (
            f"malformed store URL {display_url(url)!r}: use memory:, sqlite:///PATH or "
            "postgresql://USER:PASSWORD@HOST:PORT/DATABASE, with an IPv6 HOST in brackets ([::1]) and PORT a number"
        )
        raise StoreURLError(msg) from None
    scheme = url.split(":", 1)[0].lower()
    if url in ("memory:", "memory://"):
        return "memory"
    if scheme == "sqlite" and sqlite_path(url):
        return "sqlite"
    if scheme in ("postgresql", "postgres"):
        return "postgresql"
    msg = f"unsupported store {display_url(url)!r}: use memory:, sqlite:///PATH or postgresql://..."
    raise StoreURLError(msg)


def sqlite_path(url: str) -> Path | None:
    """sqlite:///rel/x.db -> rel/x.db; sqlite:////abs/x.db -> /abs/x.db."""
    path = urlsplit(url).path
    return Path(path[1:]) if len(path) > 1 else None


DEFAULT_POOL_SIZE = 10


async def open_store(url: str, *, check_schema: bool = True, pool_size: int = DEFAULT_POOL_SIZE) -> MigratableStore:
    """Open the store; unless told otherwise, refuse a schema other than this build's (SchemaError).
    `pool_size`: the most connections a PostgreSQL store opens for its calls (its pool's size)."""
    kind = kind_of(url)
    if kind == "memory":
        from zkplatform.store.memory import MemoryStore  # noqa: PLC0415 # each adapter loads only when chosen

        return MemoryStore()
    if kind == "sqlite":
        from zkplatform.store.sqlite import SQLiteStore  # noqa: PLC0415

        path = sqlite_path(url)
        assert path is not None  # checked by kind_of
        return await SQLiteStore.open(path, check_schema=check_schema)
    from zkplatform.store.postgres import PostgresStore  # noqa: PLC0415

    return await PostgresStore.open(url, check_schema=check_schema, max_size=pool_size)
