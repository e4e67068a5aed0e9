"""A vault sync helper: list the vault once, then follow its changes from the listing's cursor;
or start from a saved state (items, cursor and epoch, through a SyncStore) and follow from there.

- Every item is kept by id at its highest version: a listing is not a snapshot,
  so changes made while its pages were read arrive again after its cursor, and
  an older copy must never replace a newer one.
- The cursor is a sequence and the store's epoch (the identity of its history):
  both are kept and sent back (`since_epoch`), so that a store restored from a
  backup, whose epoch the restore rotated, is not taken for the one the cursor
  came from.
- The sync is caught up (`caught_up`, and a CaughtUp event) once it holds every change up to
  the vault's latest: when a watch's message marked caught_up (the end of its backlog) is
  applied, or a ListChanges answer has no more to come. It is not caught up again until then
  after a dropped stream, a failed poll or a start over; `items` is complete only while it is.
- A dropped stream, UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED (WATCH_BEHIND),
  RESOURCE_EXHAUSTED or a silent connection reconnects from the last cursor
  received, after a bounded, jittered backoff.
- CURSOR_EXPIRED (deletes this client may not have seen were purged, or the
  store was restored and its epoch is another) and CURSOR_AHEAD (the server's
  store is behind what this client saw: a restore) start over with a fresh
  listing that replaces the local state.
- A page may hold fewer items or changes than asked (pages stop at 3 MiB):
  only an empty next page token, or has_more false, ends a listing.
- A server's RetryInfo is honoured: the sync waits at least that long.
- With a store, the state is saved after the listing and after every batch of
  changes (and heartbeat that moves the cursor); `run()` starts from the saved
  state without listing again, and lists again only on CURSOR_EXPIRED or
  CURSOR_AHEAD.
- An expired token (TOKEN_EXPIRED) is asked for once more at once: the auth
  interceptor of a client made with a token provider (or a `headers` function)
  has a new one by then. A second expiry before anything arrived, and every
  other UNAUTHENTICATED, PERMISSION_DENIED and answer that retrying cannot
  change, stop the sync with SyncStoppedError.

Cancel the task running `VaultSync.run()` to stop it.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, Protocol

from connectrpc.code import Code
from connectrpc.errors import ConnectError
from google.protobuf import json_format

from zkplatform_api.platform.v1.errors_pb2 import ErrorReason
from zkplatform_api.platform.v1.vault_connect import VaultServiceClient
from zkplatform_api.platform.v1.vault_pb2 import (
    Item,
    ItemChange,
    ListChangesRequest,
    ListItemsRequest,
    WatchChangesRequest,
)
from zkplatform_client.errors import error_details, error_reason
from zkplatform_client.state_files import read_state, replace_state

__all__ = [
    "Backoff",
    "CaughtUp",
    "Changes",
    "FileSyncStore",
    "Heartbeat",
    "MemorySyncStore",
    "Reconnecting",
    "Restarting",
    "Resumed",
    "SyncEvent",
    "SyncState",
    "SyncStoppedError",
    "SyncStore",
    "Synced",
    "VaultSync",
    "error_reason",
]

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
TOKEN_EXPIRED: Final = ErrorReason.Name(ErrorReason.TOKEN_EXPIRED)
# The version of the file format FileSyncStore writes (the same as the TypeScript package's).
STATE_FORMAT: Final = 1


@dataclass
class SyncState:
    """Where a sync of `vault_id` stands: every item seen (by id, tombstones included), and the
    cursor (sequence and epoch) it resumes from."""

    vault_id: str
    cursor: int = 0
    epoch: str = ""
    items: dict[str, Item] = field(default_factory=dict)

    def to_json(self) -> str:
        """JSON that `from_json` reads back (and the TypeScript package's SyncState.fromJson): the
        items in the protobuf JSON form, 64-bit integers as strings."""
        return json.dumps(
            {
                "format": STATE_FORMAT,
                "vaultId": self.vault_id,
                "cursor": str(self.cursor),
                "epoch": self.epoch,
                "items": [json_format.MessageToDict(item) for _, item in sorted(self.items.items())],
            }
        )

    @classmethod
    def from_json(cls, text: str) -> SyncState:
        data: dict[str, Any] = json.loads(text)
        if data.get("format") != STATE_FORMAT:
            msg = f"not a sync state of format {STATE_FORMAT}"
            raise ValueError(msg)
        items = [json_format.ParseDict(item, Item(), ignore_unknown_fields=True) for item in data["items"]]
        return cls(str(data["vaultId"]), int(data["cursor"]), str(data["epoch"]), {i.item_id: i for i in items})


class SyncStore(Protocol):
    """Where a VaultSync keeps its state between runs. Either method may be async."""

    def load(self) -> SyncState | Awaitable[SyncState | None] | None:
        """The saved state, or None when there is none yet."""
        ...

    def save(self, state: SyncState) -> Awaitable[None] | None:
        """Keep `state` (a copy the sync will not change) in place of the one before, whole or not at all."""
        ...


class MemorySyncStore:
    """A state kept in memory: for one process's syncs one after the other, and tests."""

    def __init__(self, state: SyncState | None = None) -> None:
        self.state = state

    def load(self) -> SyncState | None:
        return self.state

    def save(self, state: SyncState) -> None:
        self.state = state


class FileSyncStore:
    """A state kept in a JSON file (`SyncState.to_json`), replaced atomically on each save: a
    temporary file in the same directory, flushed to disk, renamed over the old one. The file holds
    the items as the server sent them (encrypted): keep it where the app keeps its own data."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def load(self) -> SyncState | None:
        text = read_state(self.path)
        return None if text is None else SyncState.from_json(text)

    def save(self, state: SyncState) -> None:
        replace_state(self.path, state.to_json())


@dataclass(frozen=True)
class Synced:
    cursor: int
    items: int


@dataclass(frozen=True)
class Resumed:
    """The sync started from a saved state (no listing)."""

    cursor: int
    items: int


@dataclass(frozen=True)
class Changes:
    cursor: int
    changes: Sequence[ItemChange]


@dataclass(frozen=True)
class CaughtUp:
    """The sync's items now hold every change of the vault up to `cursor`, its latest when the
    server read it: the vault is complete. `items` counts the live ones, as Synced's does. Once a
    stream (each reconnect has its own), or once a poll reaches the latest change after a listing
    or a failure."""

    cursor: int
    items: int


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


SyncEvent = Synced | Resumed | Changes | CaughtUp | Heartbeat | Reconnecting | Restarting


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


class VaultSync:
    """Keeps `items` (by id, at the highest version seen, tombstones included) in step with a vault.

    `headers`: what each call carries besides the client's interceptors (a mapping, or a function of
    the RPC), none for a client made with a token (`clients(..., token=...)`). `store`: where the
    state is loaded from when `run()` starts, and saved to as it moves."""

    def __init__(  # noqa: PLR0913 - every knob has a default
        self,
        vault: VaultServiceClient,
        vault_id: str,
        *,
        headers: Headers | None = None,
        store: SyncStore | None = None,
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
        # Whether `items` holds every change up to the vault's latest (see CaughtUp).
        self.caught_up = False
        self._vault = vault
        self._vault_id = vault_id
        self._headers = headers
        self._store = store
        self._expired_once = False
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
        """Sync until cancelled, or until the server refuses for good (SyncStoppedError): from the
        store's state if it has one, else from a listing."""
        listing = not await self._resume()
        while True:
            try:
                if listing:
                    await self._list()
                listing = True
                await (self._poll() if self._mode == "poll" else self._watch())
            except _StartOverError as restart:
                self._emit(Restarting(restart.reason, self.cursor))
                await self._pause(restart.reason, restart.reason)

    async def _resume(self) -> bool:
        """Take the store's state, if there is one: whether there was."""
        if self._store is None:
            return False
        loaded = self._store.load()
        state = await loaded if inspect.isawaitable(loaded) else loaded
        if state is None:
            return False
        if state.vault_id != self._vault_id:
            msg = f"the store holds the state of vault {state.vault_id}, not {self._vault_id}"
            raise ValueError(msg)
        self.items, self.cursor, self.epoch = dict(state.items), state.cursor, state.epoch
        self._emit(Resumed(self.cursor, len(self.live_items())))
        return True

    async def _save(self) -> None:
        if self._store is not None:
            saved = self._store.save(SyncState(self._vault_id, self.cursor, self.epoch, dict(self.items)))
            if inspect.isawaitable(saved):
                await saved

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
            self._succeeded()
            await self._save()
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
                        self._succeeded()
                        cursor = response.cursor.sequence if response.HasField("cursor") else self.cursor
                        # The marker of an empty backlog is no heartbeat: it says CaughtUp once applied.
                        heartbeat = not response.caught_up
                        await self._follow(response.changes, cursor, response.cursor.epoch, heartbeat=heartbeat)
                        if response.caught_up:  # its changes applied: the backlog is
                            self._reached_latest()
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
            self._succeeded()
            cursor = page.cursor.sequence if page.HasField("cursor") else self.cursor
            await self._follow(page.changes, cursor, page.cursor.epoch, heartbeat=False)
            if not page.has_more:
                if not self.caught_up:
                    self._reached_latest()
                await asyncio.sleep(self._poll_interval)

    async def _follow(self, changes: Sequence[ItemChange], cursor: int, epoch: str, *, heartbeat: bool) -> None:
        """Apply an answer's changes (or move to its cursor), and save what moved."""
        before = (self.cursor, self.epoch)
        self._keep_epoch(epoch)
        if changes:
            self._apply(changes, cursor)
        else:
            self.cursor = max(self.cursor, cursor)
        if changes or (self.cursor, self.epoch) != before:
            await self._save()
        if changes:
            self._emit(Changes(self.cursor, changes))
        elif heartbeat:
            self._emit(Heartbeat(self.cursor))

    def _succeeded(self) -> None:
        self._attempt = 0
        self._expired_once = False

    def _reached_latest(self) -> None:
        self.caught_up = True
        self._emit(CaughtUp(self.cursor, len(self.live_items())))

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

    async def _retry_or_raise(self, error: Exception) -> None:
        """Wait and return when retrying may help (the caller resumes from its cursor); raise otherwise."""
        # Changes may be made while the sync is not following: it is behind until it catches up again.
        self.caught_up = False
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
        details = error_details(error)
        reason = details.reason
        if reason in START_OVER:
            raise _StartOverError(reason)
        if error.code == Code.UNAUTHENTICATED and reason == TOKEN_EXPIRED and not self._expired_once:
            # The auth interceptor asked its provider for a new token as the call failed: at once,
            # once; a second expiry before anything arrived means no new token came.
            self._expired_once = True
            self._emit(Reconnecting(error.code.value, reason, self._attempt, 0.0, self.cursor))
            return
        if error.code in TRANSIENT:
            await self._pause(error.code.value, reason or error.message, details.retry_after)
            return
        raise SyncStoppedError(self._vault_id, error.code, reason, error.message) from None

    async def _pause(self, code: str, reason: str, retry_after: float | None = None) -> None:
        """The backoff's jittered delay, or the server's RetryInfo delay when that is longer."""
        self._attempt += 1
        delay = max(self._backoff.delay(self._attempt), retry_after or 0.0)
        self._emit(Reconnecting(code, reason, self._attempt, delay, self.cursor))
        await asyncio.sleep(delay)

    def _headers_for(self, rpc: Rpc) -> Mapping[str, str] | None:
        if self._headers is None:
            return None
        return self._headers(rpc) if callable(self._headers) else self._headers

    def _emit(self, event: SyncEvent) -> None:
        if self._on_event is not None:
            self._on_event(event)
