"""Recipient keys a client can trust: the tenant's key log, verified (docs/sealing.md, "Trusting
a recipient's key").

Every publication and revocation of a key is an entry of the tenant's key log, a SHA-256 hash
chain (directory.proto, KeyLogEntry, has the canonical bytes). A client keeps the last head it
verified and the keys the log holds up to it (`KeyLogState`, through a `KeyLogStore`); it
accepts a longer log only when each new entry follows on from that head (`extend_key_log`),
and a key GetRecipientKeys answers only when that log has its publication by its principal
and no revocation (`check_recipient_keys`). A server that swaps, hides or rewrites a key then
has to fork or rewrite the log, which `KeyLogError` reports; the state is saved only after a
whole verification succeeded, so that the next call refuses the same log again.

`extend_key_log` and `check_recipient_keys` are the pure core (no I/O); `KeyDirectory` runs
them over DirectoryService calls. The first verification of a tenant's log can only trust what
it is given: keep the store, so that every later one is checked against it.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import inspect
import json
import os
from collections.abc import Awaitable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal, Protocol

from zkplatform_api.platform.v1.directory_connect import DirectoryServiceClient
from zkplatform_api.platform.v1.directory_pb2 import (
    GetRecipientKeysRequest,
    GetRecipientKeysResponse,
    KeyLogAction,
    KeyLogEntry,
    KeyLogHead,
    ListKeyLogRequest,
    PublishKeyRequest,
    RecipientKey,
)
from zkplatform_client.sealing import RecipientPrivateKey
from zkplatform_client.state_files import read_state, replace_state

__all__ = [
    "EMPTY_LOG_HASH",
    "FileKeyLogStore",
    "KeyDirectory",
    "KeyLogError",
    "KeyLogReason",
    "KeyLogState",
    "KeyLogStore",
    "LoggedKey",
    "MemoryKeyLogStore",
    "check_recipient_keys",
    "extend_key_log",
]

KeyLogReason = Literal["LOG_TRUNCATED", "LOG_FORKED", "LOG_GAP", "THUMBPRINT_MISMATCH", "KEY_NOT_LIVE", "KEY_HIDDEN"]

# The hash an empty log's head carries (32 zero bytes), which the first entry's hash continues.
EMPTY_LOG_HASH: Final = "A" * 43
# The version of the file format FileKeyLogStore writes (the same as the TypeScript package's).
STATE_FORMAT: Final = 1
# A GetRecipientKeys answer read before a change the log then showed is asked again, this often.
ANSWER_ATTEMPTS: Final = 3


class KeyLogError(Exception):
    """The key log, or an answer checked against it, is not one to trust; `reason` says how:

    - LOG_TRUNCATED: a head below the verified one (or below a head the server answered);
    - LOG_FORKED: an entry or the head does not continue the verified chain (rewritten);
    - LOG_GAP: the entries do not follow on from the verified head, or stop before the answered head;
    - THUMBPRINT_MISMATCH: a key whose key_id is not the SHA-256 of its JWK text;
    - KEY_NOT_LIVE: a key the log does not have published by that principal, or has revoked
      (or a key of a principal that was not asked for);
    - KEY_HIDDEN: a live key of the principals asked for, left out of an answer at the verified head."""

    def __init__(self, reason: KeyLogReason, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason: KeyLogReason = reason


@dataclass(frozen=True)
class LoggedKey:
    """A key as the log has it: its principal and canonical JWK text, and whether it was revoked."""

    principal_id: str
    jwk: str
    revoked: bool = False


@dataclass(frozen=True)
class KeyLogState:
    """The last verified head of a tenant's key log (`size`, `hash` in base64url) and every key
    the log holds up to it, by key id. `tenant_id` is "" until the first entry names it."""

    tenant_id: str = ""
    size: int = 0
    hash: str = EMPTY_LOG_HASH
    keys: Mapping[str, LoggedKey] = field(default_factory=dict)

    def to_json(self) -> str:
        """JSON that `from_json` reads back (and the TypeScript package's KeyLogState)."""
        return json.dumps(
            {
                "version": STATE_FORMAT,
                "tenantId": self.tenant_id,
                "size": self.size,
                "hash": self.hash,
                "keys": {
                    key_id: {"principalId": key.principal_id, "jwk": key.jwk, "revoked": key.revoked}
                    for key_id, key in sorted(self.keys.items())
                },
            }
        )

    @classmethod
    def from_json(cls, text: str) -> KeyLogState:
        data: dict[str, Any] = json.loads(text)
        if data.get("version") != STATE_FORMAT:
            msg = f"not a key log state of version {STATE_FORMAT}"
            raise ValueError(msg)
        keys = {
            str(key_id): LoggedKey(str(key["principalId"]), str(key["jwk"]), bool(key["revoked"]))
            for key_id, key in data["keys"].items()
        }
        return cls(str(data["tenantId"]), int(data["size"]), str(data["hash"]), keys)


def extend_key_log(state: KeyLogState, entries: Iterable[KeyLogEntry], head: KeyLogHead) -> KeyLogState:
    """The state after `entries` (ListKeyLog's, after `state.size`, all pages) up to `head` (the
    last page's), each checked to continue the chain; KeyLogError when they do not."""
    if head.size < state.size:
        raise KeyLogError("LOG_TRUNCATED", f"the log's head is at {head.size}, below the verified {state.size}")
    tenant_id, size, previous = state.tenant_id, state.size, _b64decode(state.hash)
    keys = dict(state.keys)
    for entry in entries:
        if entry.index != size + 1:
            raise KeyLogError("LOG_GAP", f"entry {entry.index} where entry {size + 1} was due")
        if tenant_id and entry.tenant_id != tenant_id:
            raise KeyLogError("LOG_FORKED", f"entry {entry.index} is of tenant {entry.tenant_id}, not {tenant_id}")
        previous = hashlib.sha256(previous + _canonical(entry)).digest()
        if _b64encode(previous) != entry.hash:
            raise KeyLogError("LOG_FORKED", f"entry {entry.index} does not continue the verified chain")
        tenant_id, size = entry.tenant_id, entry.index
        _record(keys, entry)
    if size != head.size:
        raise KeyLogError("LOG_GAP", f"the entries end at {size}, not at the log's head ({head.size})")
    if _b64encode(previous) != head.hash:
        raise KeyLogError("LOG_FORKED", f"the log's head ({head.size}) is not where the verified chain ends")
    return KeyLogState(tenant_id, size, head.hash, keys)


def check_recipient_keys(
    state: KeyLogState, principal_ids: Iterable[str], answer: GetRecipientKeysResponse
) -> list[RecipientKey]:
    """The keys of `answer` (GetRecipientKeys for `principal_ids`), each checked against the
    verified log `state` (which must reach the answer's head); KeyLogError when one is not
    to trust, or, at the verified head, when a live key of those principals is left out."""
    asked = set(principal_ids)
    head = answer.log_head
    if head.size > state.size:
        raise KeyLogError("LOG_TRUNCATED", f"the answer's head is at {head.size}, the log shown stops at {state.size}")
    at_head = head.size == state.size
    if at_head and head.hash != state.hash:
        raise KeyLogError("LOG_FORKED", f"the answer's head at {head.size} is not the verified one")
    for key in answer.keys:
        if _b64encode(hashlib.sha256(key.jwk.encode()).digest()) != key.key_id:
            raise KeyLogError("THUMBPRINT_MISMATCH", f"key {key.key_id} is not the thumbprint of its JWK")
        logged = state.keys.get(key.key_id)
        if key.principal_id not in asked:
            raise KeyLogError("KEY_NOT_LIVE", f"key {key.key_id} is of {key.principal_id}, who was not asked for")
        if logged is None or logged.revoked or logged.principal_id != key.principal_id or logged.jwk != key.jwk:
            raise KeyLogError("KEY_NOT_LIVE", f"the log has no live key {key.key_id} of {key.principal_id}")
    if at_head:
        answered = {key.key_id for key in answer.keys}
        hidden = sorted(
            key_id
            for key_id, logged in state.keys.items()
            if logged.principal_id in asked and not logged.revoked and key_id not in answered
        )
        if hidden:
            raise KeyLogError(
                "KEY_HIDDEN", f"the live key {hidden[0]} of {state.keys[hidden[0]].principal_id} is left out"
            )
    return list(answer.keys)


def _record(keys: dict[str, LoggedKey], entry: KeyLogEntry) -> None:
    """A publication adds the key (its first principal stays its principal); a revocation is for
    good. An action this client does not know changes no key (its chain was checked all the same)."""
    known = keys.get(entry.key_id)
    if entry.action == KeyLogAction.KEY_LOG_ACTION_PUBLISHED and known is None:
        keys[entry.key_id] = LoggedKey(entry.principal_id, entry.jwk)
    elif entry.action == KeyLogAction.KEY_LOG_ACTION_REVOKED:
        keys[entry.key_id] = replace(known or LoggedKey(entry.principal_id, entry.jwk), revoked=True)


def _canonical(entry: KeyLogEntry) -> bytes:
    """The entry's canonical bytes (directory.proto, KeyLogEntry): its members sorted, compact."""
    try:
        action = KeyLogAction.Name(entry.action)
        jwk = json.loads(entry.jwk)
    except ValueError:
        # An action known only by its number (a newer server's, over the binary protocol) has no
        # name to hash here; a JWK that is not JSON has no canonical form. Neither chains on.
        raise KeyLogError("LOG_FORKED", f"entry {entry.index} cannot be put in canonical form") from None
    document = {
        "action": action,
        "jwk": jwk,
        "keyId": entry.key_id,
        "principalId": entry.principal_id,
        "tenantId": entry.tenant_id,
        "time": entry.time.seconds,
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


class KeyLogStore(Protocol):
    """Where a KeyDirectory keeps its verified state between runs. Either method may be async."""

    def load(self) -> KeyLogState | Awaitable[KeyLogState | None] | None:
        """The saved state, or None when there is none yet."""
        ...

    def save(self, state: KeyLogState) -> Awaitable[None] | None:
        """Keep `state` in place of the one before, whole or not at all."""
        ...


class MemoryKeyLogStore:
    """A state kept in memory: for one process, and tests."""

    def __init__(self, state: KeyLogState | None = None) -> None:
        self.state = state

    def load(self) -> KeyLogState | None:
        return self.state

    def save(self, state: KeyLogState) -> None:
        self.state = state


class FileKeyLogStore:
    """A state kept in a JSON file (`KeyLogState.to_json`), replaced atomically on each save: a
    temporary file in the same directory, flushed to disk, renamed over the old one. It holds
    public keys only, but what it says is what the client trusts: keep it where the app keeps
    its own data."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def load(self) -> KeyLogState | None:
        text = read_state(self.path)
        return None if text is None else KeyLogState.from_json(text)

    def save(self, state: KeyLogState) -> None:
        replace_state(self.path, state.to_json())


class KeyDirectory:
    """The tenant's recipient keys, each checked against the verified key log before it is answered.

    `directory`: a DirectoryService client that authorizes its calls (`clients(...).directory`);
    `store`: where the verified state is kept (in memory by default: keep a FileKeyLogStore
    across runs, so that a rewritten log is caught against what was verified before)."""

    def __init__(
        self, directory: DirectoryServiceClient, store: KeyLogStore | None = None, *, page_size: int = 1000
    ) -> None:
        self._directory = directory
        self._store: KeyLogStore = store if store is not None else MemoryKeyLogStore()
        self._page_size = page_size
        self._lock = asyncio.Lock()

    async def state(self) -> KeyLogState:
        """The last verified state (an empty one before the first verification)."""
        loaded = self._store.load()
        state = await loaded if inspect.isawaitable(loaded) else loaded
        return state if state is not None else KeyLogState()

    async def verify(self) -> KeyLogHead:
        """Read the log after the verified head (ListKeyLog, every page), check it, save the new
        state and answer its head; KeyLogError, with the state left as it was, when it does not check."""
        async with self._lock:
            state = await self._verify(await self.state())
        return KeyLogHead(size=state.size, hash=state.hash)

    async def recipient_keys(self, principal_ids: Iterable[str]) -> list[RecipientKey]:
        """The live keys of `principal_ids` (GetRecipientKeys), once the log is verified up to the
        answer's head and each key checked against it: what `seal` may wrap for."""
        asked = list(dict.fromkeys(principal_ids))
        async with self._lock:
            state = await self.state()
            known = state.size
            attempts = 0
            while True:
                attempts += 1
                answer = await self._directory.get_recipient_keys(GetRecipientKeysRequest(principal_ids=asked))
                head = answer.log_head
                if head.size < known:  # behind a head verified before this call: the log was cut
                    extend_key_log(state, [], head)
                if head.size != state.size or head.hash != state.hash:
                    state = await self._verify(state)
                # An answer behind the verified head was read before a change the listing then
                # showed (a key published or revoked meanwhile): one read at the new head can be
                # checked whole, hidden keys included.
                if head.size >= state.size or attempts == ANSWER_ATTEMPTS:
                    return check_recipient_keys(state, asked, answer)

    async def publish(self, private_key: RecipientPrivateKey) -> RecipientKey:
        """Publish the key's public half (PublishKey; a repeat changes nothing): the key as stored."""
        answer = await self._directory.publish_key(PublishKeyRequest(public_key_jwk=private_key.public_jwk))
        if answer.key.key_id != private_key.key_id or answer.key.jwk != private_key.public_jwk:
            raise KeyLogError("THUMBPRINT_MISMATCH", f"the server stored {answer.key.key_id} for {private_key.key_id}")
        return answer.key

    async def _verify(self, state: KeyLogState) -> KeyLogState:
        entries: list[KeyLogEntry] = []
        page_token = ""
        while True:
            page = await self._directory.list_key_log(
                ListKeyLogRequest(since_index=state.size, page_size=self._page_size, page_token=page_token)
            )
            if page.log_head.size < state.size:
                # Said at once, whatever the pages after it would show.
                extend_key_log(state, [], page.log_head)
            entries.extend(page.entries)
            page_token = page.next_page_token
            if not page_token:
                break
        verified = extend_key_log(state, entries, page.log_head)
        if verified != state:
            saved = self._store.save(verified)
            if inspect.isawaitable(saved):
                await saved
        return verified


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
