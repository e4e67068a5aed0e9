"""The ports: what the domain needs from storage.

Every method that changes state takes the `Actor` of the change and appends the
change's audit events (domain/audit.py) in the same transaction: a change whose
events cannot be written is not made. Recording a token's last use, counting
mint attempts and remembering DPoP proofs are bookkeeping, not changes: they
are not audited.

Each method is one atomic step of the store, so that a SQL store can implement
it as one transaction and stay correct across processes and hosts. In
particular the delete is a single compare-and-set on (item, version) that also
takes the vault's next sequence number: never a read followed by a write.

The five writes a client may name with a request id (domain/request_ids.py) take it as
`request`. With one, the method first looks for the principal's record of that id made within
the retention period: found, it changes nothing and answers Repeated (the same fingerprint) or
Reused (another); else it runs as without, and when it succeeds it records its answer under
the id in the same transaction as its change. A failure records nothing. Concurrent calls with
one id, from any process, apply at most once: the others wait for its commit and answer from its
record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from zkplatform.domain.audit import Action, Actor, AuditRecord, Head
from zkplatform.domain.key_log import Cosignature, Device, Leaf, LogChange
from zkplatform.domain.models import (
    ChangePage,
    Item,
    ItemChange,
    ItemPage,
    ItemPatch,
    Principal,
    ScopeChange,
    Tenant,
    TokenRecord,
    Tombstone,
    Vault,
)
from zkplatform.domain.request_ids import Repeated, RequestId, Reused


class AlreadyExists(ValueError):
    """An add for a key that is taken; the message names it."""


class UnknownReference(ValueError):
    """An add that refers to something the store does not have (a vault, a principal)."""


class PrincipalDisabled(ValueError):
    """A token for a disabled principal: none is added until an operator enables it again."""


class ParentRevoked(ValueError):
    """A mint whose parent token was revoked before the new token could be stored: none is."""


@dataclass(frozen=True, slots=True)
class Missing:
    """No such item in that vault (or its tombstone was purged)."""


@dataclass(frozen=True, slots=True)
class Stale:
    """The item is live at another version."""

    current_version: int


DeleteOutcome = Tombstone | Stale | Missing | Repeated[ItemChange] | Reused


@dataclass(frozen=True, slots=True)
class Created:
    """The item was stored: its creation."""

    change: ItemChange


@dataclass(frozen=True, slots=True)
class Existing:
    """The vault already holds an item of that id (maybe a tombstone): it, as of its latest change."""

    change: ItemChange


CreateOutcome = Created | Existing | Repeated[ItemChange] | Reused


@dataclass(frozen=True, slots=True)
class Conflict:
    """The update did not apply: the item, maybe a tombstone, as of its latest change."""

    current: ItemChange


UpdateOutcome = ItemChange | Conflict | Missing | Repeated[ItemChange] | Reused
# The answer of an answer's record: None when it was recorded now, or what a record made first says.
RecordOutcome = Repeated[ItemChange] | Reused | None
# A mint's: None when added, when the first live minted token expires when the cap is reached.
MintOutcome = int | None | Repeated[tuple[str, ...]] | Reused
# A revocation's: the ids revoked, or None when there is no such token.
RevokeOutcome = list[str] | None | Repeated[tuple[str, ...]] | Reused


class DirectoryRepository(Protocol):
    """Tenants, principals and vaults."""

    async def add_tenant(self, tenant: Tenant, actor: Actor) -> None: ...

    async def add_principal(self, principal: Principal, actor: Actor) -> None: ...

    async def add_vault(self, vault: Vault, actor: Actor) -> None: ...

    async def get_principal(self, principal_id: str) -> Principal | None: ...

    async def get_vault(self, vault_id: str) -> Vault | None: ...

    async def list_tenants(self) -> list[Tenant]:
        """Every tenant, by id."""
        ...

    async def list_principals(self, tenant_id: str) -> list[Principal]:
        """The tenant's principals, by id."""
        ...

    async def list_vaults(self, tenant_id: str) -> list[Vault]:
        """The tenant's vaults with their members, by id."""
        ...

    async def list_member_vaults(self, principal_id: str, after: str, limit: int) -> list[Vault]:
        """The vaults the principal is a member of, by id, those after `after` ("" from the first),
        at most `limit`, each with all its members; read in one snapshot."""
        ...

    async def add_vault_member(self, vault_id: str, principal_id: str, actor: Actor) -> bool:
        """Make the principal a member of the vault; False when it already is.
        UnknownReference when there is no such vault, or no such principal in its tenant."""
        ...

    async def remove_vault_member(self, vault_id: str, principal_id: str, actor: Actor) -> bool:
        """The principal is no longer a member: refused on the vault from its next call.
        False when it was not one; UnknownReference when there is no such vault."""
        ...

    async def set_principal_disabled(self, principal_id: str, actor: Actor, *, disabled: bool) -> list[str] | None:
        """Disable (or enable) the principal. Disabling also revokes every token of it,
        in the same transaction, and answers their ids (enabling revives none: an empty
        list); from then on, add_token and add_minted_token refuse it with
        PrincipalDisabled until it is enabled. None when there is no such principal."""
        ...

    async def change_principal_scopes(
        self, tenant_id: str, principal_id: str, change: ScopeChange, actor: Actor
    ) -> tuple[Principal, Principal]:
        """Atomically: apply `change` to the principal as this transaction reads it
        (ScopeChange.applied), store its new grant and audit it (scopes_event); the principal
        before and after. A change that leaves the grant as it was writes nothing, no event
        either. A narrowing holds for its existing tokens from their next call, and wakes
        their open watches, which check their scope again (as a revocation does). Refused, with
        nothing changed: ScopesBeyondRole (the role's bound), UnknownReference (no such tenant,
        or no such principal in it)."""
        ...


class ItemRepository(Protocol):
    async def add_items(self, items: Iterable[Item], actor: Actor) -> None:
        """Store new items in one transaction, all or none; each takes its
        vault's next sequence number, in the order given.

        `items` may be any iterable, a generator of an import of any length
        included: it is consumed exactly once, and the SQL stores hold one chunk
        of it in memory at a time. AlreadyExists or UnknownReference names the
        first item, in the order given, that cannot be added, and then nothing is
        stored and no sequence number taken; an error raised by `items` itself
        propagates, with the same effect."""
        ...

    async def get_item(self, vault_id: str, item_id: str) -> Item | None:
        """The item as last committed, a tombstone included (deleted, no payload
        and no keys); None when the vault holds no such item or its tombstone
        was purged. Not authorised here: the caller checks the vault."""
        ...

    async def delete_item(
        self, vault_id: str, item_id: str, base_version: int, actor: Actor, *, request: RequestId | None = None
    ) -> DeleteOutcome:
        """Atomically: if the item is live at base_version, make it a tombstone
        at `actor.at` with the vault's next sequence number. A tombstone answers as
        it was first deleted, whatever base_version says (a success: recorded under
        `request`). The delete also forgets every recorded answer that holds the
        item's content (a create's, an update's): nothing decryptable stays."""
        ...

    async def create_item(self, item: Item, actor: Actor, *, request: RequestId | None = None) -> CreateOutcome:
        """Atomically: store the new item with the vault's next sequence number,
        unless the vault holds an item of that id (a tombstone included): then
        change nothing and answer that item (not recorded: whether it is a repeat is
        the domain's to say). Concurrent creates of one id store exactly one.
        UnknownReference when the store has no such vault in the item's tenant."""
        ...

    async def update_item(  # noqa: PLR0913 # the update's parts, and the request id naming it
        self,
        vault_id: str,
        item_id: str,
        base_version: int,
        patch: ItemPatch,
        actor: Actor,
        *,
        request: RequestId | None = None,
    ) -> UpdateOutcome:
        """Atomically: if the item is live at base_version, write what `patch` holds
        (the other fields kept as they are), one version later, at `actor.at`, with the vault's next sequence number. A
        compare-and-set: of concurrent updates at one base_version exactly one
        applies, and the others answer Conflict with the item as it then is (not
        recorded, as a create's Existing)."""
        ...

    async def record_answer(self, actor: Actor, request: RequestId, answer: ItemChange) -> RecordOutcome:
        """Record `answer` under the request id, for a call that succeeded without a change (a
        repeat the domain recognised by its content), unless the principal has a record of that
        id within the retention period: then change nothing and answer Repeated or Reused. Nor is
        anything recorded once the item is deleted (None): its content must not outlive it."""
        ...

    async def list_items(self, vault_id: str, after_item_id: str, limit: int, *, show_deleted: bool) -> ItemPage:
        """At most `limit` items of the vault with an item_id after `after_item_id`
        ("" for the first), in item_id order, tombstones only if show_deleted; and
        the vault's sequence number (0 for a vault the store does not have) and the
        store's epoch, read in the same snapshot as those items. A keyset scan of the
        primary key: any page costs what the first costs."""
        ...

    async def vault_sequence(self, vault_id: str) -> int:
        """The sequence number of the vault's latest change: an add, a create,
        an update or a delete (purges are not changes): 0 before any, and for a vault the store does
        not have. Every change takes the next one, so it counts the changes."""
        ...

    async def purge_tombstones(self, deleted_before: int, actor: Actor) -> int:
        """Forget tombstones deleted before that time (they answer NOT_FOUND
        from then on); the number purged. In the same transaction, each vault's
        purge horizon rises to the highest sequence purged from it (never falls):
        a changes cursor below it may have missed one of those deletes. The records
        of request ids past the retention period at `actor.at` are forgotten too (they
        answer nothing already; not audited: bookkeeping, not changes)."""
        ...

    async def list_changes(self, vault_id: str, since: int, limit: int) -> ChangePage:
        """At most `limit` items of the vault whose latest change is after `since`, in
        ascending sequence, each once (tombstones included), with the vault's sequence and
        purge horizon and the store's epoch, all in one snapshot. A range scan of an index on
        (vault_id, sequence): a page at the end of a long history costs what the first page
        costs."""
        ...

    async def epoch(self) -> str:
        """The store's epoch: an opaque string naming its history of changes (domain.models.
        new_epoch), made with the store (its schema's migrations, a memory store's start) and
        kept until rotate_epoch. A store restored from a backup gets a new one, so that cursors
        of the history the restore undid are refused instead of read as its own. It may be as
        this worker read it up to a second ago (list_items and list_changes read it in their
        snapshot, for the checks of cursors)."""
        ...

    async def rotate_epoch(self, actor: Actor) -> str:
        """Replace the store's epoch with a new one (new_epoch), and record it in every tenant's
        audit trail in the same transaction; the new epoch. Nothing else changes."""
        ...


class ChangeSubscription(Protocol):
    """One watch's interest in a vault's changes and in its caller's access. Notifications
    coalesce: one wake-up may stand for any number of changes, so the watcher reads what is
    new itself."""

    async def wait(self) -> bool:
        """Return once the vault may have changed since the last return (or the subscription);
        True when the watch's token may have been revoked, its principal's scopes narrowed or a
        member removed from the vault since then too (the watcher checks them again: the
        wake-up does not say whose)."""
        ...

    def close(self) -> None: ...


class ChangeFeed(Protocol):
    """Wakes the watches of a vault when it changes, and those whose access may have changed
    (the token revoked, its principal's scopes narrowed, a member removed from the vault),
    whichever worker or host changed it. One per worker and store, shared by all its watches."""

    def subscribe(self, vault_id: str, token_id: str) -> ChangeSubscription: ...

    def on_lost(self, callback: Callable[[], None]) -> None:
        """Have `callback` called whenever what carries other processes' changes to this feed
        loses its connection to the store (PostgreSQL's LISTEN connection): the store may be down.
        A feed that holds no connection never calls it."""
        ...


class TokenRepository(Protocol):
    async def add_token(self, token: TokenRecord, actor: Actor) -> None:
        """Add a token; UnknownReference without its principal, PrincipalDisabled
        when the principal is disabled."""
        ...

    async def add_minted_token(
        self, token: TokenRecord, cap: int, actor: Actor, *, request: RequestId | None = None
    ) -> MintOutcome:
        """Atomically add a minted token unless its principal already has `cap`
        live minted tokens at `actor.at`; then add nothing and return when the first
        of those expires. ParentRevoked when its parent is revoked, PrincipalDisabled when
        its principal is disabled: checked in the same transaction, so that a
        revocation or a disable that commits first is never outlived by a child. The
        answer recorded under `request` is the token's id (never its secret), and a
        repeat is looked for before anything else, the cap included."""
        ...

    async def get_token(self, token_id: str) -> TokenRecord | None:
        """The token with that public id, live or not."""
        ...

    async def get_token_with_principal(self, token_id: str) -> tuple[TokenRecord, Principal] | None:
        """The token with that public id, live or not, and its principal as it is now, in one
        lookup: what an open watch checks again (the token revoked or expired, the principal's
        scopes narrowed)."""
        ...

    async def find_token(self, secret_hash: bytes) -> TokenRecord | None: ...

    async def find_token_with_principal(self, secret_hash: bytes) -> tuple[TokenRecord, Principal] | None:
        """The token with that HMAC and the principal it was issued to, in one
        lookup: every call authenticates, so this is the hottest read there is."""
        ...

    async def revoke_token_tree(
        self, token_id: str, actor: Actor, action: Action = Action.TOKEN_REVOKED, *, audited: bool = True
    ) -> list[str] | None:
        """Revoke the token and every token minted from it, transitively, in one
        transaction; the ids revoked by this call, sorted (already revoked ones are
        not repeated). Each revoked token's event is `action`, with the token and
        the tree's root as its target. None when there is no such token.

        `audited=False` records no event: only for a leaked token whose audited revocation
        failed, where leaving the token live would be worse than a gap in the trail."""
        ...

    async def revoke_token_tree_once(self, token_id: str, actor: Actor, request: RequestId | None) -> RevokeOutcome:
        """RevokeToken's revocation: revoke_token_tree (TOKEN_REVOKED, audited), its answer
        recorded under `request`, unless it repeats a call of the principal's with that id."""
        ...

    async def list_tokens(
        self,
        tenant_id: str,
        principal_id: str | None,
        *,
        live_at: int | None,
        after: tuple[int, str] | None,
        limit: int,
    ) -> list[tuple[TokenRecord, Principal]]:
        """At most `limit` tokens of the tenant (of one principal, unless None), with
        their principals, newest first: by (issued_at, token_id) descending, below
        `after` when given. Only those live at `live_at`, unless it is None."""
        ...

    async def touch_token(self, token_id: str, now: int, stale_before: int) -> None:
        """Record `now` as the token's last use, unless its stored last use is at or
        after `stale_before`. Best effort, and it may return before the write is
        durable: it must never make a call wait (a failure is logged, not raised)."""
        ...


class LimitsRepository(Protocol):
    """State that limits abuse, shared by every worker that uses the store."""

    async def record_mint_attempt(self, principal_id: str, now: int, window_seconds: int, limit: int) -> int | None:
        """Count an attempt; when the window now holds more than `limit`,
        return the seconds until one more attempt would be within it."""
        ...

    async def remember_proof(self, key_thumbprint: str, jti: str, now: int, expires_at: int) -> bool:
        """Record a DPoP proof's jti until `expires_at`; False when that key
        already used it and the record has not lapsed by `now` (a replay)."""
        ...


class AuditRepository(Protocol):
    """The audit trail as stored, to export and verify it."""

    async def audit_tenants(self) -> list[str]:
        """Every tenant with an event or a chain head, sorted."""
        ...

    async def audit_head(self, tenant_id: str) -> Head | None:
        """Where the store last wrote the tenant's chain; None before its first event."""
        ...

    async def audit_records(self, tenant_id: str, after: int, limit: int) -> list[AuditRecord]:
        """At most `limit` of the tenant's events with a sequence above `after`, ascending."""
        ...


class KeyLogRepository(Protocol):
    """Each tenant's key log (domain/key_log.py): its entries with their leaf hashes, the
    devices they made, and the witnesses' cosignatures of its checkpoints.

    Entries are only ever appended, by compare-and-set on the log's size (`append_key_log`),
    in one transaction with the devices they add or revoke and their audit event."""

    async def key_log_size(self, tenant_id: str) -> int:
        """The number of entries in the tenant's log (0 for none)."""
        ...

    async def devices(self, tenant_id: str, principal_id: str | None = None) -> list[Device]:
        """The tenant's devices (one principal's, unless None), live and revoked, by principal,
        then by log_index."""
        ...

    async def find_device_key(self, tenant_id: str, key_id: str) -> Device | None:
        """The tenant's device whose device id or agreement key id is `key_id`, live or revoked."""
        ...

    async def append_key_log(  # noqa: PLR0913 # the entry, its change and event, and the request id naming it
        self,
        tenant_id: str,
        expected_size: int,
        entry: bytes,
        *,
        change: LogChange,
        event: tuple[Action, dict[str, str]],
        actor: Actor,
        request: RequestId | None = None,
    ) -> int | Repeated[tuple[str, ...]] | Reused | None:
        """Atomically, if the tenant's log holds `expected_size` entries: append `entry` at that
        index (its leaf hash with it), apply `change` (AddDevice stores the device with that
        log_index; RevokeDevices sets revoked_at and revoked_index on those of the principal's
        devices that are live) and record the audit event (action, details); answer the new
        size. None, changing nothing, when the log's size is not `expected_size`: the caller
        reads again and decides again. AlreadyExists when AddDevice's device id or agreement
        key id is taken in the tenant (a concurrent publication won).

        With a request id: its record answers a repeat (Repeated, whose answer is the entry's
        index as its one string) or a reuse (Reused), changing nothing; a success records the
        entry's index under it in the same transaction."""
        ...

    async def key_log_leaves(self, tenant_id: str, start: int, limit: int, size: int) -> list[Leaf]:
        """At most `limit` of the tenant's entries from index `start`, below `size`, ascending."""
        ...

    async def key_log_hashes(self, tenant_id: str, size: int) -> list[bytes]:
        """The leaf hashes of the tenant's first `size` entries (fewer if the log is shorter)."""
        ...

    async def live_devices(
        self, tenant_id: str, principal_ids: Iterable[str], size: int, after: tuple[str, int] | None, limit: int
    ) -> list[Device]:
        """At most `limit` devices of those principals live in the log's first `size` entries
        (Device.live_at), by principal, then log_index, after the (principal_id, log_index)
        `after` when given."""
        ...

    async def key_log_tenants(self) -> list[str]:
        """Every tenant whose log has an entry, sorted."""
        ...

    async def save_cosignature(self, cosignature: Cosignature) -> None:
        """Keep a witness's cosignature of a tenant's checkpoint, replacing an older one of the
        same witness for the same size (a newer time wins; an older one changes nothing)."""
        ...

    async def served_checkpoint(
        self, tenant_id: str, witnesses: Iterable[str], quorum: int
    ) -> tuple[int, list[Cosignature]]:
        """The size of the tenant's newest checkpoint that at least `quorum` of the named
        witnesses cosigned, and their cosignatures of it; (0, []) when none has. With a quorum
        of 0: the log's current size, and whatever cosignatures of it the witnesses made.
        Cosignatures of sizes below the answered one may be forgotten."""
        ...

    async def witness_sizes(self, tenant_id: str) -> dict[str, int]:
        """For each witness that cosigned a checkpoint of the tenant: the largest size it cosigned."""
        ...


class Store(
    DirectoryRepository,
    ItemRepository,
    TokenRepository,
    LimitsRepository,
    AuditRepository,
    KeyLogRepository,
    Protocol,
):
    """Everything a store adapter provides."""

    def change_feed(self) -> ChangeFeed:
        """This worker's feed of the store's changes (the same one on every call)."""
        ...

    async def ping(self) -> None:
        """One cheap round trip to the store (PostgreSQL: `SELECT 1` on a pooled connection;
        SQLite: a read of the file), bounded in time: StoreUnavailable when it cannot be
        reached now. What readiness asks (domain/readiness.py), never more than its cache lets."""
        ...

    async def close(self) -> None: ...
