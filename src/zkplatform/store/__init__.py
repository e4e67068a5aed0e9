"""Store adapters, and the one factory that picks one from a store URL."""

from __future__ import annotations

from zkplatform.repository import Store


class StoreURLError(ValueError):
    """A store URL this build cannot open; the message says why."""


def check_store_url(url: str) -> None:
    """Refuse an unusable URL before the server binds its port."""
    if url not in ("memory:", "memory://"):
        msg = f"unsupported store {url!r}: this build knows memory:"
        raise StoreURLError(msg)


def open_store(url: str) -> Store:
    check_store_url(url)
    from zkplatform.store.memory import MemoryStore  # noqa: PLC0415 # each adapter loads only when chosen

    return MemoryStore()
