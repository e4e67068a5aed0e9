"""The key directory's use cases: publishing and revoking recipient keys, finding them, and
reading the key log that lets clients trust them.

Each checks the token's scope first. A key or a principal of another tenant is never found:
it answers as one that does not exist, so nothing leaks across tenants.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from zkplatform.domain.auth import Caller
from zkplatform.domain.clock import Clock
from zkplatform.domain.errors import (
    FieldViolation,
    InvalidArgument,
    KeyAccessDenied,
    KeyExists,
    KeyNotFound,
    KeyRevoked,
    RequestIdReused,
)
from zkplatform.domain.key_log import KeyLogEntry, KeyLogHead
from zkplatform.domain.models import Role, Scope
from zkplatform.domain.paging import PageTokens, Position
from zkplatform.domain.recipient_keys import RecipientKey, public_key
from zkplatform.domain.request_ids import RequestId, Reused
from zkplatform.repository import KeyDirectoryRepository

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
MAX_PRINCIPALS = 100
# Roles that may revoke any key of their tenant, not only their own principal's.
KEY_MANAGERS = frozenset({Role.OWNER, Role.ADMIN})
_LISTING = "key log"  # what a ListKeyLog page token is bound to, besides the tenant and since_index


@dataclass(frozen=True, slots=True)
class KeyAnswer:
    """A key, and the tenant's key log head in the same snapshot."""

    key: RecipientKey
    head: KeyLogHead


@dataclass(frozen=True, slots=True)
class RecipientKeys:
    keys: tuple[RecipientKey, ...]
    head: KeyLogHead


@dataclass(frozen=True, slots=True)
class IndexedEntry:
    """An entry of the key log with its place and its hash, as a client is answered it."""

    index: int
    entry: KeyLogEntry
    hash: bytes


@dataclass(frozen=True, slots=True)
class KeyLogPage:
    entries: tuple[IndexedEntry, ...]
    head: KeyLogHead
    next_page_token: str  # "" on the last page


class KeyDirectory:
    def __init__(self, keys: KeyDirectoryRepository, clock: Clock, page_tokens: PageTokens) -> None:
        self._keys = keys
        self._clock = clock
        self._page_tokens = page_tokens

    async def publish(self, caller: Caller, jwk_text: str, *, request: RequestId | None = None) -> KeyAnswer:
        """Publish the caller's key, or answer it as published when it already is; with a
        request id, answer a repeat of the call that used it with the key as it is now."""
        caller.require_scope(Scope.DIRECTORY_KEYS_PUBLISH)
        public = public_key(jwk_text)
        now = self._clock()
        key = RecipientKey(public.key_id, caller.tenant_id, caller.principal.principal_id, public.jwk, now)
        change = await self._keys.publish_key(key, caller.actor(now), request)
        if isinstance(change, Reused):
            raise RequestIdReused
        held = change.key
        if change.repeated and held.principal_id == key.principal_id:
            return KeyAnswer(held, change.head)  # what that call published, revoked since or not
        if held.principal_id != key.principal_id:
            raise KeyExists
        if not held.live:
            raise KeyRevoked(held.key_id)
        return KeyAnswer(held, change.head)

    async def revoke(self, caller: Caller, key_id: str) -> KeyAnswer:
        """Revoke a key of the caller's (any of its tenant's, for an owner or an admin); a revoked
        key is answered as it was revoked."""
        caller.require_scope(Scope.DIRECTORY_KEYS_PUBLISH)
        key = await self._keys.get_key(caller.tenant_id, key_id)
        if key is None:
            raise KeyNotFound(key_id)
        if key.principal_id != caller.principal.principal_id and caller.principal.role not in KEY_MANAGERS:
            raise KeyAccessDenied(key_id)
        change = await self._keys.revoke_key(caller.tenant_id, key_id, caller.actor(self._clock()))
        if change is None:  # keys are never deleted: only a store changed behind our back gets here
            raise KeyNotFound(key_id)
        return KeyAnswer(change.key, change.head)

    async def recipient_keys(self, caller: Caller, principal_ids: Iterable[str]) -> RecipientKeys:
        """The live keys of those principals of the caller's tenant (of any other: none)."""
        caller.require_scope(Scope.DIRECTORY_KEYS_READ)
        wanted = sorted(set(principal_ids))
        if not 1 <= len(wanted) <= MAX_PRINCIPALS:
            raise InvalidArgument([FieldViolation("principalIds", f"must name 1 to {MAX_PRINCIPALS} principals")])
        keys, head = await self._keys.live_keys(caller.tenant_id, wanted)
        return RecipientKeys(tuple(keys), head)

    async def key_log(self, caller: Caller, since_index: int, page_size: int, page_token: str) -> KeyLogPage:
        """A page of the tenant's key log after `since_index`, or after where `page_token` says the
        listing stands, with the log's head."""
        caller.require_scope(Scope.DIRECTORY_KEYS_READ)
        if not 0 <= page_size <= MAX_PAGE_SIZE:
            raise InvalidArgument([FieldViolation("pageSize", f"must be within 0..{MAX_PAGE_SIZE} (0 means 100)")])
        if since_index < 0:
            raise InvalidArgument([FieldViolation("sinceIndex", "must be at least 0")])
        size = page_size or DEFAULT_PAGE_SIZE
        listing = (caller.tenant_id, _LISTING, str(since_index))
        after = self._page_tokens.read(page_token, *listing).number if page_token else since_index
        # One more than the page: a next page token only when there is something after it.
        records, head = await self._keys.key_log(caller.tenant_id, after, size + 1)
        page = tuple(IndexedEntry(r.index, r.entry, r.hash) for r in records[:size])
        next_page_token = ""
        if len(records) > size:
            next_page_token = self._page_tokens.issue(Position(page[-1].index, ""), *listing)
        return KeyLogPage(page, head, next_page_token)
