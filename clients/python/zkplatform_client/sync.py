"""A vault sync helper: list the vault once, then follow its changes from the listing's cursor.

- Every item is kept by id at its highest version: a listing is not a snapshot,
  so changes made while its pages were read arrive again after its cursor, and
  an older copy must never replace a newer one.
- The cursor is a sequence and the store's epoch (the identity of its history):
  both are kept and sent back (`since_epoch`), so that a store restored from a
  backup, whose epoch the restore rotated, is not taken for the one the cursor
  came from.
- A dropped stream, UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED (WATCH_BEHIND),
  RESOURCE_EXHAUSTED or a silent connection reconnects from the last cursor
  received, after a bounded, jittered backoff.
- CURSOR_EXPIRED (deletes this client may not have seen were purged, or the
  store was restored and its epoch is another) and CURSOR_AHEAD (the server's
  store is behind what this client saw: a restore) start over with a fresh
  listing that replaces the local state.
- A page may hold fewer items or changes than asked (pages stop at 3 MiB):
  only an empty next page token, or has_more false, ends a listing.
- UNAUTHENTICATED, PERMISSION_DENIED and every answer that retrying cannot
  change stop the sync with SyncStoppedError.

Cancel the task running `VaultSync.run()` to stop it.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from connectrpc.code import Code
from connectrpc.errors import ConnectError
from google.rpc.error_details_pb2 import ErrorInfo

from zkplatform_api.platform.v1.errors_pb2 import ErrorReason
from zkplatform_api.platform.v1.vault_connect import VaultServiceClient
from zkplatform_api.platform.v1.vault_pb2 import (
    Item,
    ItemChange,
    ListChangesRequest,
    ListItemsRequest,
    WatchChangesRequest,
)
from zkplatform_client.auth import ERROR_DOMAIN

Rpc = Literal["ListItems", "ListChanges", "WatchChanges"]
# The Authorization header (and a DPoP proof, made per call) for each call.
Headers = Mapping[str, str] | Callable[[Rpc], Mapping[str, str]]

# Codes after which the same request may succeed later.
TRANSIENT = frozenset(
    {
        Code.UNAVAILABLE,
        Code.DEADLINE_EXCEEDED,
        Code.ABORTED,
        Code.RESOURCE_EXHAUSTED,
        Code.INTERNAL,
        Code.UNKNOWN,
        Code.CANCELED,
    }
)
START_OVER = frozenset(ErrorReason.Name(reason) for reason in (ErrorReason.CURSOR_EXPIRED, ErrorReason.CURSOR_AHEAD))


@dataclass(frozen=True)
class Synced:
    cursor: int
    items: int


@dataclass(frozen=True)
class Changes:
    cursor: int
    changes: Sequence[ItemChange]


@dataclass(frozen=True)
class Heartbeat:
    cursor: int


@dataclass(frozen=True)
class Reconnecting:
    code: str
    reason: str
    attempt: int
    delay: float
    cursor: int


@dataclass(frozen=True)
class Restarting:
    reason: str
    cursor: int


SyncEvent = Synced | Changes | Heartbeat | Reconnecting | Restarting


@dataclass(frozen=True)
class Backoff:
    """Delays before reconnecting double from `initial` up to `maximum` seconds, jittered."""

    initial: float = 0.1
    maximum: float = 5.0

    def delay(self, attempt: int) -> float:
        ceiling = min(self.maximum, self.initial * 2.0 ** min(attempt - 1, 30))
        # Jitter spreads the reconnects of many clients after a server restart.
        return ceiling / 2 + random.random() * ceiling / 2  # noqa: S311 - not a secret


class SyncStoppedError(Exception):
    """The sync stopped for good: retrying cannot help (bad token, no access, a refused request)."""

    def __init__(self, vault_id: str, code: Code, reason: str | None, message: str) -> None:
        detail = f" ({reason})" if reason else ""
        super().__init__(f"sync of vault {vault_id} stopped: the server answered {code.value}{detail}: {message}")
        self.code = code
        self.reason = reason


class _StartOverError(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _StreamEndedError(Exception):
    pass


def error_reason(error: ConnectError) -> str | None:
    """The reason of the platform's google.rpc.ErrorInfo detail (domain ERROR_DOMAIN), if the error
    carries one: every error of the server does, a failure of the network or of a proxy does not.
    Compare it with `ErrorReason.Name(ErrorReason.CURSOR_EXPIRED)`, never the message."""
    for detail in error.details:
        if detail.type_name == "google.rpc.ErrorInfo":
            info = ErrorInfo.FromString(detail.message_bytes)
            if info.domain == ERROR_DOMAIN:
                return str(info.reason)
    return None


class VaultSync:
    """Keeps `items` (by id, at the highest version seen, tombstones included) in step with a vault."""

    def __init__(  # noqa: PLR0913 - every knob has a default
        self,
        vault: VaultServiceClient,
        vault_id: str,
        *,
        headers: Headers,
        mode: Literal["watch", "poll"] = "watch",
        page_size: int = 100,
        poll_interval: float = 1.0,
        backoff: Backoff | None = None,
        idle_timeout: float = 45.0,
        watch_timeout_ms: int | None = None,
        on_event: Callable[[SyncEvent], None] | None = None,
    ) -> None:
        self.items: dict[str, Item] = {}
        self.cursor = 0
        # The store's epoch the cursor belongs to ("" before the first listing).
        self.epoch = ""
        self._vault = vault
        self._vault_id = vault_id
        self._headers = headers
        self._mode = mode
        self._page_size = page_size
        self._poll_interval = poll_interval
        self._backoff = backoff or Backoff()
        # Three heartbeats (15 s each by default) without a word: the connection is dead.
        self._idle_timeout = idle_timeout
        self._watch_timeout_ms = watch_timeout_ms
        self._on_event = on_event
        self._attempt = 0

    def live_items(self) -> dict[str, Item]:
        return {item_id: item for item_id, item in self.items.items() if not item.deleted}

    async def run(self) -> None:
        """Sync until cancelled, or until the server refuses for good (SyncStoppedError)."""
        while True:
            try:
                await self._list()
                await (self._poll() if self._mode == "poll" else self._watch())
            except _StartOverError as restart:
                self._emit(Restarting(restart.reason, self.cursor))
                await self._pause(restart.reason, restart.reason)

    async def _list(self) -> None:
        """ListItems to the last page, under the first page's cursor."""
        while True:
            try:
                items: dict[str, Item] = {}
                cursor: int | None = None
                epoch = ""
                page_token = ""
                while True:
                    page = await self._vault.list_items(
                        ListItemsRequest(vault_id=self._vault_id, page_size=self._page_size, page_token=page_token),
                        headers=self._headers_for("ListItems"),
                    )
                    items.update((item.item_id, item) for item in page.items)
                    if cursor is None:
                        cursor, epoch = page.cursor.sequence, page.cursor.epoch
                    page_token = page.next_page_token
                    if not page_token:
                        break
            except (ConnectError, OSError) as error:
                await self._retry_or_raise(error)
                continue
            # A fresh listing replaces everything: a purged tombstone's item must vanish too.
            self.items = items
            self.cursor = cursor or 0
            self.epoch = epoch
            self._attempt = 0
            self._emit(Synced(self.cursor, len(self.live_items())))
            return

    async def _watch(self) -> None:
        while True:
            idle = False
            try:
                stream = self._vault.watch_changes(
                    WatchChangesRequest(vault_id=self._vault_id, since_sequence=self.cursor, since_epoch=self.epoch),
                    headers=self._headers_for("WatchChanges"),
                    timeout_ms=self._watch_timeout_ms,
                )
                try:
                    while True:
                        waiting = asyncio.timeout(self._idle_timeout)
                        try:
                            async with waiting:
                                response = await anext(stream)
                        except StopAsyncIteration:
                            break
                        finally:
                            idle = waiting.expired()
                        self._attempt = 0
                        cursor = response.cursor.sequence if response.HasField("cursor") else self.cursor
                        self._keep_epoch(response.cursor.epoch)
                        if response.changes:
                            self._apply(response.changes, cursor)
                        else:
                            self.cursor = max(self.cursor, cursor)
                            self._emit(Heartbeat(self.cursor))
                finally:
                    await stream.aclose()  # type: ignore[attr-defined]
                await self._retry_or_raise(_StreamEndedError("the stream ended"))
            except (ConnectError, OSError, TimeoutError) as error:
                await self._retry_or_raise(_StreamEndedError("no message or heartbeat in time") if idle else error)

    async def _poll(self) -> None:
        while True:
            try:
                request = ListChangesRequest(
                    vault_id=self._vault_id,
                    since_sequence=self.cursor,
                    page_size=self._page_size,
                    since_epoch=self.epoch,
                )
                page = await self._vault.list_changes(request, headers=self._headers_for("ListChanges"))
            except (ConnectError, OSError) as error:
                await self._retry_or_raise(error)
                continue
            self._attempt = 0
            cursor = page.cursor.sequence if page.HasField("cursor") else self.cursor
            self._keep_epoch(page.cursor.epoch)
            if page.changes:
                self._apply(page.changes, cursor)
            else:
                self.cursor = max(self.cursor, cursor)
            if not page.has_more:
                await asyncio.sleep(self._poll_interval)

    def _keep_epoch(self, epoch: str) -> None:
        """An answer to a request with our epoch is of it; one to a request without (a listing by
        a server from before epochs, then one with them) tells us the store's."""
        if epoch:
            self.epoch = epoch

    def _apply(self, changes: Sequence[ItemChange], cursor: int) -> None:
        for change in changes:
            known = self.items.get(change.item.item_id)
            if known is None or change.item.version > known.version:
                self.items[change.item.item_id] = change.item
        self.cursor = max(cursor, changes[-1].sequence)
        self._emit(Changes(self.cursor, changes))

    async def _retry_or_raise(self, error: Exception) -> None:
        """Wait and return when retrying may help (the caller resumes from its cursor); raise otherwise."""
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            # connectrpc turns a cancellation into ConnectError(CANCELED): the caller asked to stop.
            raise asyncio.CancelledError
        if isinstance(error, _StreamEndedError):
            await self._pause("dropped", str(error))
            return
        if not isinstance(error, ConnectError):
            await self._pause("unavailable", str(error))
            return
        reason = error_reason(error)
        if reason in START_OVER:
            raise _StartOverError(reason)
        if error.code in TRANSIENT:
            await self._pause(error.code.value, reason or error.message)
            return
        raise SyncStoppedError(self._vault_id, error.code, reason, error.message) from None

    async def _pause(self, code: str, reason: str) -> None:
        self._attempt += 1
        delay = self._backoff.delay(self._attempt)
        self._emit(Reconnecting(code, reason, self._attempt, delay, self.cursor))
        await asyncio.sleep(delay)

    def _headers_for(self, rpc: Rpc) -> Mapping[str, str]:
        return self._headers(rpc) if callable(self._headers) else self._headers

    def _emit(self, event: SyncEvent) -> None:
        if self._on_event is not None:
            self._on_event(event)
