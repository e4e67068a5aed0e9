"""The SQLite store: the embedded default.

The SQL of each use case, run by SQLiteEngine (sqlite_engine.py): every write
use case is one synchronous function of the connection, in a transaction that
commits (to disk) before it is answered; reads see the last committed state.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from zkplatform.domain import audit
from zkplatform.domain.audit import Action, Actor, AuditRecord, Event, Head
from zkplatform.domain.key_log import AddDevice, Cosignature, Device, Leaf, LogChange
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
    Vault,
    new_epoch,
)
from zkplatform.domain.ports.items import (
    Conflict,
    Created,
    CreateOutcome,
    DeleteOutcome,
    Existing,
    Missing,
    RecordOutcome,
    Stale,
    UpdateOutcome,
)
from zkplatform.domain.ports.refusals import AlreadyExists, ParentRevoked, PrincipalDisabled, UnknownReference
from zkplatform.domain.ports.tokens import MintOutcome, RevokeOutcome
from zkplatform.domain.request_ids import A, Answer, Repeated, RequestId, Reused, oldest_kept
from zkplatform.store import StoreOpenError, key_rows, rows
from zkplatform.store.background import Background
from zkplatform.store.key_rows import SQLITE as KEYS
from zkplatform.store.migrations import check_version, migrations
from zkplatform.store.notify import ChangeFeed, Marks, Poller
from zkplatform.store.sqlite_engine import BUSY_TIMEOUT_MS, SQLiteEngine
from zkplatform.store.statements import SQLITE as SQL
from zkplatform.store.statements import token_listing
from zkplatform_tlog.merkle import leaf_hash

DIALECT = "sqlite"
T = TypeVar("T")


class SQLiteStore:
    def __init__(self, path: Path, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
        self._path = path
        self._engine = SQLiteEngine(path, busy_timeout_ms)
        self._read = self._engine.read
        self._lookup = self._engine.lookup  # a few rows by key: on the event loop (sqlite_engine.py)
        self._write = self._engine.write
        self._background = Background("recording a token's last use")
        # Other processes on the file are seen by polling, only while watches are open.
        self._poller = Poller(lambda: self._feed, self._marks_if_changed)
        self._feed = ChangeFeed(on_first=self._poller.start, on_last=self._poller.stop)
        self._data_version: int | None = None

    @classmethod
    async def open(
        cls, path: Path, *, check_schema: bool = True, busy_timeout_ms: int = BUSY_TIMEOUT_MS
    ) -> SQLiteStore:
        """Open the store at path; StoreOpenError when that cannot be a SQLite
        database, SchemaError (unless told not to check) when it is not at this
        build's schema. A refused open leaves the disk as it found it."""
        with _unavailable(path):
            if check_schema:
                # Before the engine, which creates the directory and the file and turns on WAL.
                check_version(await asyncio.to_thread(_stored_version, path), DIALECT, _url(path))
            store = cls(path, busy_timeout_ms)
            try:
                await store._engine.open()
            except BaseException:
                await store.close()
                raise
        return store

    async def close(self) -> None:
        await self._poller.stop()
        await self._background.drain()
        await self._engine.close()

    def change_feed(self) -> ChangeFeed:
        return self._feed

    async def ping(self) -> None:
        """A read of the file on the reader connection (StoreUnavailable when it cannot be read)."""
        await self._read(_ping)

    def _changed(self, vault_id: str, sequence: int) -> None:
        """This worker's watches learn of its own changes at once, not at the next poll (which
        then leaves them be)."""
        self._feed.notify(vault_id)
        self._poller.saw(vault_id, sequence)

    async def _marks_if_changed(self, vault_ids: list[str]) -> Marks | None:
        """The marks of these vaults and the count of revocations (migration 0005), if anything
        committed to the file since the last call (None otherwise): `PRAGMA data_version` of
        the read connection moves with every commit of another connection, this process's
        writer included, and costs no I/O."""

        def check(conn: sqlite3.Connection) -> Marks | None:
            (version,) = conn.execute("PRAGMA data_version").fetchone()
            if version == self._data_version:
                return None
            self._data_version = version
            conn.execute("BEGIN")  # the vaults and the revocations from one snapshot
            try:
                among = ", ".join("?" * len(vault_ids))
                found = conn.execute(
                    f"SELECT vault_id, sequence, membership_mark FROM vaults WHERE vault_id IN ({among})", vault_ids
                ).fetchall()
                (revocations,) = conn.execute("SELECT total FROM token_revocations").fetchone()
            finally:
                conn.execute("COMMIT")
            return Marks({str(v): (int(seq), int(mark)) for v, seq, mark in found}, int(revocations))

        return await self._read(check)

    # schema

    async def schema_version(self) -> int | None:
        return await self._read(_schema_version)

    async def migrate(self) -> list[int]:
        """Apply the missing migrations, each in its own transaction; the versions applied."""

        def apply(conn: sqlite3.Connection) -> list[int]:
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL) STRICT")
            row = conn.execute(SQL.schema_version).fetchone()
            current = 0 if row is None else int(row[0])
            applied = []
            for migration in migrations(DIALECT):
                if migration.version <= current:
                    continue
                for statement in _statements(migration.sql):
                    conn.execute(statement)
                conn.execute(SQL.clear_schema_version)
                conn.execute(SQL.set_schema_version, (migration.version,))
                applied.append(migration.version)
            check_version(applied[-1] if applied else current, DIALECT, _url(self._path))
            return applied

        return await self._write(apply)

    # directory

    async def add_tenant(self, tenant: Tenant, actor: Actor) -> None:
        def add(conn: sqlite3.Connection) -> None:
            _insert(conn, SQL.add_tenant, (tenant.tenant_id,), f"tenant {tenant.tenant_id}")
            _record(conn, [actor.event(tenant.tenant_id, Action.TENANT_ADDED, tenant=tenant.tenant_id)])

        await self._write(add)

    async def add_principal(self, principal: Principal, actor: Actor) -> None:
        def add(conn: sqlite3.Connection) -> None:
            _require(
                conn,
                SQL.tenant_exists,
                (principal.tenant_id,),
                f"no tenant {principal.tenant_id}",
            )
            _insert(
                conn,
                SQL.add_principal,
                (
                    principal.principal_id,
                    principal.tenant_id,
                    principal.role.value,
                    rows.scopes_to_text(principal.allowed_scopes),
                ),
                f"principal {principal.principal_id}",
            )
            _record(conn, [actor.event(principal.tenant_id, Action.PRINCIPAL_ADDED, principal=principal.principal_id)])

        await self._write(add)

    async def add_vault(self, vault: Vault, actor: Actor) -> None:
        def add(conn: sqlite3.Connection) -> None:
            _require(conn, SQL.tenant_exists, (vault.tenant_id,), f"no tenant {vault.tenant_id}")
            for member in sorted(vault.members):
                _require(
                    conn,
                    SQL.principal_in_tenant,
                    (member, vault.tenant_id),
                    f"no principal {member} in tenant {vault.tenant_id}",
                )
            _insert(
                conn,
                SQL.add_vault,
                (vault.vault_id, vault.tenant_id),
                f"vault {vault.vault_id}",
            )
            conn.executemany(SQL.add_vault_member, [(vault.vault_id, m) for m in sorted(vault.members)])
            _record(conn, audit.vault_events(actor, vault))

        await self._write(add)

    async def get_principal(self, principal_id: str) -> Principal | None:
        row = self._lookup(
            lambda c: c.execute(
                SQL.get_principal,
                (principal_id,),
            ).fetchone()
        )
        return None if row is None else rows.principal_from_row(row)

    async def get_vault(self, vault_id: str) -> Vault | None:
        def get(conn: sqlite3.Connection) -> Vault | None:
            row = conn.execute("SELECT tenant_id FROM vaults WHERE vault_id = ?", (vault_id,)).fetchone()
            if row is None:
                return None
            members = conn.execute("SELECT principal_id FROM vault_members WHERE vault_id = ?", (vault_id,)).fetchall()
            return Vault(vault_id, row[0], frozenset(m[0] for m in members))

        return self._lookup(get)

    async def list_tenants(self) -> list[Tenant]:
        found = await self._read(lambda c: c.execute(SQL.list_tenants).fetchall())
        return [Tenant(row[0]) for row in found]

    async def list_principals(self, tenant_id: str) -> list[Principal]:
        found = await self._read(lambda c: c.execute(SQL.list_principals, (tenant_id,)).fetchall())
        return [rows.principal_from_row(row) for row in found]

    async def list_vaults(self, tenant_id: str) -> list[Vault]:
        def listed(conn: sqlite3.Connection) -> list[Vault]:
            conn.execute("BEGIN")  # the vaults and their members from one snapshot
            try:
                vault_ids = [row[0] for row in conn.execute(SQL.list_vaults, (tenant_id,))]
                members = conn.execute(SQL.list_vault_members, (tenant_id,)).fetchall()
            finally:
                conn.execute("COMMIT")
            return rows.vaults(tenant_id, vault_ids, members)

        return await self._read(listed)

    async def list_member_vaults(self, principal_id: str, after: str, limit: int) -> list[Vault]:
        found = await self._read(lambda c: c.execute(SQL.member_vaults, (principal_id, after, limit)).fetchall())
        return rows.member_vaults(found)

    async def add_vault_member(self, vault_id: str, principal_id: str, actor: Actor) -> bool:
        def add(conn: sqlite3.Connection) -> bool:
            tenant_id = _vault_tenant(conn, vault_id)
            missing = f"no principal {principal_id} in tenant {tenant_id}"
            _require(conn, SQL.principal_in_tenant, (principal_id, tenant_id), missing)
            if conn.execute(SQL.is_vault_member, (vault_id, principal_id)).fetchone():
                return False
            conn.execute(SQL.add_vault_member, (vault_id, principal_id))
            _record(conn, [actor.event(tenant_id, Action.VAULT_MEMBER_ADDED, vault=vault_id, principal=principal_id)])
            return True

        return await self._write(add)

    async def remove_vault_member(self, vault_id: str, principal_id: str, actor: Actor) -> bool:
        def remove(conn: sqlite3.Connection) -> bool:
            tenant_id = _vault_tenant(conn, vault_id)
            if conn.execute(SQL.remove_vault_member, (vault_id, principal_id)).rowcount == 0:
                return False
            event = actor.event(tenant_id, Action.VAULT_MEMBER_REMOVED, vault=vault_id, principal=principal_id)
            _record(conn, [event])
            return True

        removed = await self._write(remove)
        if removed:  # this worker's watches at once; the poller wakes the others' (and these again)
            self._feed.access_changed(vault_id)
        return removed

    async def set_principal_disabled(self, principal_id: str, actor: Actor, *, disabled: bool) -> list[str] | None:
        def update(conn: sqlite3.Connection) -> list[str] | None:
            if conn.execute(SQL.set_principal_disabled, (disabled, principal_id)).rowcount == 0:
                return None
            revoked = []
            if disabled:
                revoked = sorted(row[0] for row in conn.execute(SQL.revoke_principal_tokens, (principal_id,)))
            (tenant_id,) = conn.execute(SQL.principal_tenant, (principal_id,)).fetchone()
            _record(conn, audit.disable_events(actor, tenant_id, principal_id, revoked, disabled=disabled))
            return revoked

        revoked = await self._write(update)
        self._feed.revoked(revoked or ())
        return revoked

    async def change_principal_scopes(
        self, tenant_id: str, principal_id: str, change: ScopeChange, actor: Actor
    ) -> tuple[Principal, Principal]:
        def update(conn: sqlite3.Connection) -> tuple[Principal, Principal, list[str]]:
            row = conn.execute(SQL.principal_of_tenant, (principal_id, tenant_id)).fetchone()
            if row is None:
                _require(conn, SQL.tenant_exists, (tenant_id,), f"no tenant {tenant_id}")
                raise UnknownReference(f"no principal {principal_id} in tenant {tenant_id}")
            before = rows.principal_from_row(row)
            after = change.applied(before)
            if after.allowed_scopes == before.allowed_scopes:
                return before, after, []
            conn.execute(SQL.set_principal_scopes, (rows.scopes_to_text(after.allowed_scopes), principal_id))
            _record(conn, [audit.scopes_event(actor, before, after)])
            if not before.scopes - after.scopes:
                return before, after, []
            # A narrowing: the open watches of the principal's tokens check their scope again. Other
            # processes' pollers wake every watch when the count of revocations moves (migration
            # 0005); no token is revoked, but that count is only their mark of "access may have
            # changed", and moving it needs no schema of its own.
            conn.execute("UPDATE token_revocations SET total = total + 1")
            return before, after, [r[0] for r in conn.execute(SQL.live_principal_tokens, (principal_id, actor.at))]

        before, after, tokens = await self._write(update)
        self._feed.revoked(tokens)  # this worker's watches at once
        return before, after

    # items

    async def add_items(self, items: Iterable[Item], actor: Actor) -> None:
        def add(conn: sqlite3.Connection) -> None:
            known: set[tuple[str, str]] = set()  # (vault, tenant) pairs checked: one query per vault, not per item
            for chunk in rows.chunks(items):
                _add_chunk(conn, chunk, known)
                _record(conn, (audit.item_event(actor, Action.ITEM_CREATED, item) for item in chunk))

        await self._write(add)

    async def get_item(self, vault_id: str, item_id: str) -> Item | None:
        row = self._lookup(lambda c: _item_row(c, vault_id, item_id))
        return None if row is None else rows.item_from_row(row)[0]

    async def delete_item(
        self, vault_id: str, item_id: str, base_version: int, actor: Actor, *, request: RequestId | None = None
    ) -> DeleteOutcome:
        def delete(conn: sqlite3.Connection) -> DeleteOutcome:
            if (earlier := _earlier(conn, actor, request, ItemChange)) is not None:
                return earlier
            # The compare-and-set: only a live item at base_version changes.
            changed = conn.execute(
                "UPDATE items SET deleted = 1, version = version + 1, updated_at = ?, title_hash = '',"
                " payload = NULL, wrapped_keys = '[]'"
                " WHERE vault_id = ? AND item_id = ? AND version = ? AND deleted = 0",
                (actor.at, vault_id, item_id, base_version),
            ).rowcount
            if changed:
                conn.execute(
                    "UPDATE items SET sequence = ? WHERE vault_id = ? AND item_id = ?",
                    (_next_sequence(conn, vault_id), vault_id, item_id),
                )
                conn.execute(SQL.forget_item_answers, (vault_id, item_id))
            row = _item_row(conn, vault_id, item_id)
            if row is None:
                return Missing()
            item, sequence = rows.item_from_row(row)
            if changed:
                _record(conn, [audit.item_event(actor, Action.ITEM_DELETED, item)])
            if not item.deleted:
                return Stale(item.version)
            _remember(conn, actor, request, ItemChange(item, sequence))
            return ItemChange(item, sequence)

        outcome = await self._write(delete)
        if isinstance(outcome, ItemChange):
            self._changed(vault_id, outcome.sequence)
        return outcome

    async def create_item(self, item: Item, actor: Actor, *, request: RequestId | None = None) -> CreateOutcome:
        def create(conn: sqlite3.Connection) -> CreateOutcome:
            # Read, then write: the transaction holds the file's write lock from BEGIN IMMEDIATE
            # on, so nothing can add the item (or record the request id) in between, in this
            # process or another.
            if (earlier := _earlier(conn, actor, request, ItemChange)) is not None:
                return earlier
            if (row := _item_row(conn, item.vault_id, item.item_id)) is not None:
                return Existing(ItemChange(*rows.item_from_row(row)))
            taken = conn.execute(SQL.take_tenant_sequence, (item.vault_id, item.tenant_id)).fetchone()
            if taken is None:
                raise UnknownReference(rows.unknown_vault(item))
            conn.execute(SQL.add_item, rows.item_params(item, taken[0]))
            _record(conn, [audit.item_event(actor, Action.ITEM_CREATED, item)])
            change = ItemChange(item, int(taken[0]))
            _remember(conn, actor, request, change)
            return Created(change)

        outcome = await self._write(create)
        if isinstance(outcome, Created):
            self._changed(item.vault_id, outcome.change.sequence)
        return outcome

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
        def update(conn: sqlite3.Connection) -> UpdateOutcome:
            if (earlier := _earlier(conn, actor, request, ItemChange)) is not None:
                return earlier
            # The compare-and-set: only a live item at base_version changes, and only then does
            # the vault's sequence move (writes are serialised, so "its sequence + 1" is the next).
            # A column the patch leaves alone is NULL here and keeps its value, in the same statement.
            row = conn.execute(
                "UPDATE items SET kind = coalesce(?, kind), title_hash = coalesce(?, title_hash),"
                " payload = coalesce(?, payload), wrapped_keys = coalesce(?, wrapped_keys), version = version + 1,"
                " updated_at = ?, sequence = (SELECT sequence + 1 FROM vaults WHERE vault_id = items.vault_id)"
                f" WHERE vault_id = ? AND item_id = ? AND version = ? AND deleted = 0 RETURNING {rows.ITEM_COLUMNS}",
                (*_patch_params(patch), actor.at, vault_id, item_id, base_version),
            ).fetchone()
            if row is not None:
                _next_sequence(conn, vault_id)
                change = ItemChange(*rows.item_from_row(row))
                _record(conn, [audit.item_event(actor, Action.ITEM_UPDATED, change.item)])
                _remember(conn, actor, request, change)
                return change
            if (row := _item_row(conn, vault_id, item_id)) is None:
                return Missing()
            return Conflict(ItemChange(*rows.item_from_row(row)))

        outcome = await self._write(update)
        if isinstance(outcome, ItemChange):
            self._changed(vault_id, outcome.sequence)
        return outcome

    async def record_answer(self, actor: Actor, request: RequestId, answer: ItemChange) -> RecordOutcome:
        def record(conn: sqlite3.Connection) -> RecordOutcome:
            if (earlier := _earlier(conn, actor, request, ItemChange)) is not None:
                return earlier
            row = _item_row(conn, answer.item.vault_id, answer.item.item_id)
            if row is not None and not rows.item_from_row(row)[0].deleted:
                _remember(conn, actor, request, answer)
            return None

        return await self._write(record)

    async def list_items(self, vault_id: str, after_item_id: str, limit: int, *, show_deleted: bool) -> ItemPage:
        def page(conn: sqlite3.Connection) -> ItemPage:
            # One read transaction: WAL gives the reads the same snapshot, so the sequence and the
            # epoch are the ones the items are at, whatever the writer commits meanwhile.
            conn.execute("BEGIN")
            try:
                row = conn.execute(SQL.vault_sequence, (vault_id,)).fetchone()
                (epoch,) = conn.execute(SQL.epoch).fetchone()
                found = conn.execute(
                    SQL.list_items if show_deleted else SQL.list_live_items, (vault_id, after_item_id, limit)
                ).fetchall()
            finally:
                conn.execute("COMMIT")
            items = tuple(rows.item_from_row(r)[0] for r in found)
            return ItemPage(items, 0 if row is None else int(row[0]), str(epoch))

        return await self._read(page)

    async def vault_sequence(self, vault_id: str) -> int:
        row = self._lookup(lambda c: c.execute(SQL.vault_sequence, (vault_id,)).fetchone())
        return 0 if row is None else int(row[0])

    async def epoch(self) -> str:
        (epoch,) = self._lookup(lambda c: c.execute(SQL.epoch).fetchone())
        return str(epoch)

    async def rotate_epoch(self, actor: Actor) -> str:
        epoch = new_epoch()

        def rotate(conn: sqlite3.Connection) -> None:
            conn.execute(SQL.set_epoch, (epoch,))
            tenants = [row[0] for row in conn.execute(SQL.list_tenants)]
            _record(conn, audit.epoch_events(actor, tenants, epoch))

        await self._write(rotate)
        return epoch

    async def purge_tombstones(self, deleted_before: int, actor: Actor) -> int:
        def purge(conn: sqlite3.Connection) -> int:
            purged = conn.execute(
                "DELETE FROM items WHERE deleted = 1 AND updated_at < ?"
                " RETURNING vault_id, sequence, tenant_id, item_id",
                (deleted_before,),
            ).fetchall()
            horizons: dict[str, int] = {}
            for vault_id, sequence, _, _ in purged:
                horizons[vault_id] = max(horizons.get(vault_id, 0), int(sequence))
            _record(conn, (actor.event(t, Action.ITEM_PURGED, vault=v, item=i) for v, _, t, i in purged))
            for vault_id, horizon in horizons.items():
                conn.execute(SQL.raise_purge_horizon, (horizon, vault_id, horizon))
            conn.execute(SQL.forget_request_ids, (oldest_kept(actor.at),))
            return len(purged)

        return await self._write(purge)

    async def list_changes(self, vault_id: str, since: int, limit: int) -> ChangePage:
        def page(conn: sqlite3.Connection) -> ChangePage:
            conn.execute("BEGIN")  # one snapshot for the vault's state, the epoch and the changes (WAL)
            try:
                state = conn.execute(SQL.vault_change_state, (vault_id,)).fetchone()
                (epoch,) = conn.execute(SQL.epoch).fetchone()
                found = conn.execute(SQL.list_changes, (vault_id, since, limit)).fetchall()
            finally:
                conn.execute("COMMIT")
            sequence, horizon = (0, 0) if state is None else (int(state[0]), int(state[1]))
            changes = tuple(ItemChange(*rows.item_from_row(r)) for r in found)
            return ChangePage(changes, sequence, horizon, str(epoch))

        return await self._read(page)

    # tokens

    async def add_token(self, token: TokenRecord, actor: Actor) -> None:
        def add(conn: sqlite3.Connection) -> None:
            _add_token(conn, token)
            _record(conn, [actor.event(token.tenant_id, Action.TOKEN_ISSUED, token=token.token_id)])

        await self._write(add)

    async def add_minted_token(
        self, token: TokenRecord, cap: int, actor: Actor, *, request: RequestId | None = None
    ) -> MintOutcome:
        def add(conn: sqlite3.Connection) -> MintOutcome:
            if (earlier := _earlier(conn, actor, request, tuple)) is not None:
                return earlier
            # In the writer's transaction: a revocation committed before this is seen here.
            parent = conn.execute(SQL.parent_revoked, (token.parent_token_id,)).fetchone()
            if parent is not None and parent[0]:
                raise ParentRevoked(f"token {token.parent_token_id} was revoked")
            count, first_expiry = conn.execute(
                "SELECT count(*), min(expires_at) FROM tokens"
                " WHERE principal_id = ? AND minted = 1 AND revoked = 0 AND expires_at > ?",
                (token.principal_id, actor.at),
            ).fetchone()
            if count >= cap:
                return int(first_expiry)
            _add_token(conn, token)
            _record(conn, [actor.event(token.tenant_id, Action.TOKEN_MINTED, token=token.token_id)])
            _remember(conn, actor, request, (token.token_id,))
            return None

        return await self._write(add)

    async def find_token(self, secret_hash: bytes) -> TokenRecord | None:
        row = self._lookup(lambda c: c.execute(SQL.find_token, (secret_hash,)).fetchone())
        return None if row is None else rows.token_from_row(row)

    async def find_token_with_principal(self, secret_hash: bytes) -> tuple[TokenRecord, Principal] | None:
        row = self._lookup(lambda c: c.execute(SQL.find_token_with_principal, (secret_hash,)).fetchone())
        return None if row is None else rows.token_with_principal_from_row(row)

    async def get_token(self, token_id: str) -> TokenRecord | None:
        row = self._lookup(lambda c: c.execute(SQL.get_token, (token_id,)).fetchone())
        return None if row is None else rows.token_from_row(row)

    async def get_token_with_principal(self, token_id: str) -> tuple[TokenRecord, Principal] | None:
        row = self._lookup(lambda c: c.execute(SQL.get_token_with_principal, (token_id,)).fetchone())
        return None if row is None else rows.token_with_principal_from_row(row)

    async def revoke_token_tree(
        self, token_id: str, actor: Actor, action: Action = Action.TOKEN_REVOKED, *, audited: bool = True
    ) -> list[str] | None:
        revoked = await self._write(lambda conn: _revoke_tree(conn, token_id, actor, action, audited=audited))
        self._feed.revoked(revoked or ())
        return revoked

    async def revoke_token_tree_once(self, token_id: str, actor: Actor, request: RequestId | None) -> RevokeOutcome:
        def revoke(conn: sqlite3.Connection) -> RevokeOutcome:
            if (earlier := _earlier(conn, actor, request, tuple)) is not None:
                return earlier
            revoked = _revoke_tree(conn, token_id, actor, Action.TOKEN_REVOKED, audited=True)
            if revoked is not None:
                _remember(conn, actor, request, tuple(revoked))
            return revoked

        outcome = await self._write(revoke)
        if isinstance(outcome, list):
            self._feed.revoked(outcome)
        return outcome

    async def list_tokens(
        self,
        tenant_id: str,
        principal_id: str | None,
        *,
        live_at: int | None,
        after: tuple[int, str] | None,
        limit: int,
    ) -> list[tuple[TokenRecord, Principal]]:
        query = token_listing(
            one_principal=principal_id is not None, live_only=live_at is not None, after=after is not None
        )
        params = rows.listing_params(tenant_id, principal_id, live_at, after, limit)
        found = await self._read(lambda c: c.execute(query, params).fetchall())
        return [rows.token_with_principal_from_row(row) for row in found]

    async def touch_token(self, token_id: str, now: int, stale_before: int) -> None:
        # Through the group-commit writer, not waited for: the call that authenticated goes on
        # at once (its answer never waits for this fsync), and the write joins whatever
        # transaction the writer commits next.
        self._background.start(self._write(lambda c: c.execute(SQL.touch_token, (now, token_id, stale_before))))

    # audit trail

    async def audit_tenants(self) -> list[str]:
        return [row[0] for row in await self._read(lambda c: c.execute(SQL.audit_tenants).fetchall())]

    async def audit_head(self, tenant_id: str) -> Head | None:
        row = await self._read(_as_stored(lambda c: c.execute(SQL.audit_head, (tenant_id,)).fetchone()))
        return _head(row, tenant_id)

    async def audit_records(self, tenant_id: str, after: int, limit: int) -> list[AuditRecord]:
        found = await self._read(
            _as_stored(lambda c: c.execute(SQL.audit_records, (tenant_id, after, limit)).fetchall())
        )
        return [rows.audit_record_from_row(row) for row in found]

    # key log

    async def key_log_size(self, tenant_id: str) -> int:
        row = self._lookup(lambda c: c.execute(KEYS.size, (tenant_id,)).fetchone())
        return 0 if row is None else int(row[0])

    async def devices(self, tenant_id: str, principal_id: str | None = None) -> list[Device]:
        query, params = (
            (KEYS.tenant_devices, (tenant_id,))
            if principal_id is None
            else (KEYS.principal_devices, (tenant_id, principal_id))
        )
        found = await self._read(_as_stored(lambda c: c.execute(query, params).fetchall()))
        return [key_rows.device_from_row(row) for row in found]

    async def find_device_key(self, tenant_id: str, key_id: str) -> Device | None:
        params = (tenant_id, key_id, tenant_id, key_id)
        row = self._lookup(_as_stored(lambda c: c.execute(KEYS.find_device, params).fetchone()))
        return None if row is None else key_rows.device_from_row(row)

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
        def append(conn: sqlite3.Connection) -> int | Repeated[tuple[str, ...]] | Reused | None:
            # The writer holds the file's write lock from BEGIN IMMEDIATE on: no other append of
            # any tenant, in this process or another, comes between the compare and the set.
            if (earlier := _earlier(conn, actor, request, tuple)) is not None:
                return earlier
            if expected_size == 0:
                conn.execute(KEYS.new_head, (tenant_id,))
            if conn.execute(KEYS.move_head, (tenant_id, expected_size)).fetchone() is None:
                return None
            conn.execute(KEYS.add_entry, (tenant_id, expected_size, entry, leaf_hash(entry)))
            if isinstance(change, AddDevice):
                _add_device(conn, tenant_id, expected_size, change)
            else:
                revoked = (change.at, expected_size, tenant_id, change.principal_id)
                conn.executemany(KEYS.revoke_device, [(*revoked, device_id) for device_id in change.device_ids])
            action, details = event
            _record(conn, [actor.event(tenant_id, action, **details)])
            _remember(conn, actor, request, (str(expected_size),))
            return expected_size + 1

        return await self._write(append)

    async def key_log_leaves(self, tenant_id: str, start: int, limit: int, size: int) -> list[Leaf]:
        found = await self._read(lambda c: c.execute(KEYS.leaves, (tenant_id, start, size, limit)).fetchall())
        return [key_rows.leaf_from_row(tenant_id, row) for row in found]

    async def key_log_hashes(self, tenant_id: str, size: int) -> list[bytes]:
        found = await self._read(lambda c: c.execute(KEYS.hashes, (tenant_id, size)).fetchall())
        return [bytes(row[0]) for row in found]

    async def live_devices(
        self, tenant_id: str, principal_ids: Iterable[str], size: int, after: tuple[str, int] | None, limit: int
    ) -> list[Device]:
        wanted, params = key_rows.live_devices_params(tenant_id, principal_ids, size, after, limit)
        query = KEYS.live_devices_of(len(wanted), "?")
        found = await self._read(_as_stored(lambda c: c.execute(query, params).fetchall()))
        return [key_rows.device_from_row(row) for row in found]

    async def key_log_tenants(self) -> list[str]:
        found = await self._read(lambda c: c.execute(KEYS.tenants).fetchall())
        return [str(row[0]) for row in found]

    async def save_cosignature(self, cosignature: Cosignature) -> None:
        await self._write(lambda c: c.execute(KEYS.save_cosignature, key_rows.cosignature_params(cosignature)))

    async def served_checkpoint(
        self, tenant_id: str, witnesses: Iterable[str], quorum: int
    ) -> tuple[int, list[Cosignature]]:
        named = sorted(set(witnesses))
        params: tuple[object, ...]
        if quorum <= 0:
            query, params = KEYS.current_cosignatures_of(len(named), "?"), (tenant_id, tenant_id, *named)
        else:
            query, params = KEYS.quorum_cosignatures_of(len(named), "?"), (tenant_id, *named, tenant_id, *named, quorum)
        found = await self._read(lambda c: c.execute(query, params).fetchall())
        return key_rows.served(tenant_id, found)

    async def witness_sizes(self, tenant_id: str) -> dict[str, int]:
        found = await self._read(lambda c: c.execute(KEYS.witness_sizes, (tenant_id,)).fetchall())
        return {str(witness): int(size) for witness, size in found}

    # limits

    async def record_mint_attempt(self, principal_id: str, now: int, window_seconds: int, limit: int) -> int | None:
        def record(conn: sqlite3.Connection) -> int | None:
            conn.execute(SQL.forget_mint_attempts, (principal_id, now - window_seconds))
            conn.execute(SQL.add_mint_attempt, (principal_id, now))
            attempts = [r[0] for r in conn.execute(SQL.mint_attempts, (principal_id,))]
            if len(attempts) <= limit:
                return None
            return max(1, int(attempts[len(attempts) - limit]) + window_seconds - now)

        return await self._write(record)

    async def remember_proof(self, key_thumbprint: str, jti: str, now: int, expires_at: int) -> bool:
        def remember(conn: sqlite3.Connection) -> bool:
            conn.execute(SQL.forget_lapsed_proofs, (now,))
            inserted = conn.execute(SQL.remember_proof, (key_thumbprint, jti, expires_at)).rowcount
            return inserted > 0

        return await self._write(remember)


def _as_stored(fn: Callable[[sqlite3.Connection], T]) -> Callable[[sqlite3.Connection], T]:
    """fn with text read as stored, for the rows whose columns' types are checked: a text that is
    no UTF-8 (written behind the store's back, SQLite keeping whatever a column is given) is read
    with its bytes escaped, for the check to name, where the driver would refuse the whole read."""

    def run(conn: sqlite3.Connection) -> T:
        conn.text_factory = _stored_text
        try:
            return fn(conn)
        finally:
            conn.text_factory = str

    return run


def _stored_text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _ping(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA schema_version").fetchone()  # the database header, read from the file


def _url(path: Path) -> str:
    """The store URL of path, absolute: what to type whatever the working directory."""
    return f"sqlite:///{path.absolute()}"


@contextmanager
def _unavailable(path: Path) -> Iterator[None]:
    """Errors that say the store cannot be opened at all, as StoreOpenError."""
    try:
        yield
    except OSError as error:  # creating the directory
        msg = (
            f"cannot create the directory of the SQLite store {path.absolute()} ({error.strerror}): choose another path"
        )
        raise StoreOpenError(msg) from None
    except sqlite3.DatabaseError as error:
        if error.sqlite_errorcode == sqlite3.SQLITE_NOTADB:
            msg = f"{path.absolute()} is not a SQLite database: choose another path, or move that file away"
        else:
            msg = f"cannot open the SQLite store {path.absolute()} ({error}): check the path and its permissions"
        raise StoreOpenError(msg) from None


def _stored_version(path: Path) -> int | None:
    """The schema version of the database at path, creating nothing: None when there is none."""
    if not path.exists():
        for parent in path.absolute().parents:  # what migrate would have to create, it must be able to
            if parent.exists():
                if not parent.is_dir():
                    msg = f"cannot create the directory of the SQLite store {path.absolute()}: {parent} is a file"
                    raise StoreOpenError(msg)
                break
        return None
    conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=rw", uri=True)  # rw: never creates the file
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        return _schema_version(conn)
    finally:
        conn.close()


def _schema_version(conn: sqlite3.Connection) -> int | None:
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'schema_version'").fetchone():
        return None
    row = conn.execute(SQL.schema_version).fetchone()
    return None if row is None else int(row[0])


def _statements(sql: str) -> list[str]:
    """The statements of a migration file, each with its comments, in order.

    A `;` ends a statement only where SQLite says one is complete: not inside a
    string literal, a comment or a trigger's body.
    """
    *pieces, last = sql.split(";")
    statements: list[str] = []
    current = ""
    for piece in pieces:
        current += piece + ";"
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    if (current + last).strip():  # a last statement without its `;`; comments alone execute as nothing
        statements.append((current + last).strip())
    return statements


def _add_chunk(conn: sqlite3.Connection, chunk: list[Item], known: set[tuple[str, str]]) -> None:
    for vault_id, tenant_id in {(i.vault_id, i.tenant_id) for i in chunk} - known:
        if conn.execute("SELECT 1 FROM vaults WHERE vault_id = ? AND tenant_id = ?", (vault_id, tenant_id)).fetchone():
            known.add((vault_id, tenant_id))
    addable, refused = rows.until_unknown_vault(chunk, known)
    # One statement per vault for the sequence numbers and one for the rows.
    first = {vault_id: _take_sequences(conn, vault_id, count) for vault_id, count in rows.per_vault(addable).items()}
    conn.execute("SAVEPOINT add_items")  # to name a duplicate, look at the store without this chunk
    try:
        conn.executemany(
            SQL.add_item,
            rows.numbered_items(addable, first),
        )
    except sqlite3.IntegrityError:
        conn.execute("ROLLBACK TO add_items")
        what = rows.first_duplicate(addable, lambda i: _item_row(conn, i.vault_id, i.item_id) is not None)
        raise AlreadyExists(f"{what} already exists") from None
    conn.execute("RELEASE add_items")
    if refused is not None:
        raise UnknownReference(rows.unknown_vault(refused))


def _item_row(conn: sqlite3.Connection, vault_id: str, item_id: str) -> tuple[object, ...] | None:
    row: tuple[object, ...] | None = conn.execute(SQL.get_item, (vault_id, item_id)).fetchone()
    return row


def _patch_params(patch: ItemPatch) -> tuple[object, ...]:
    """The patch's columns; None (SQL NULL) for a column it leaves as it is, which the update coalesces."""
    return (
        patch.kind,
        patch.title_hash,
        rows.payload_to_text(patch.payload),
        None if patch.wrapped_keys is None else rows.keys_to_text(patch.wrapped_keys),
    )


def _next_sequence(conn: sqlite3.Connection, vault_id: str) -> int:
    return _take_sequences(conn, vault_id, 1)


def _take_sequences(conn: sqlite3.Connection, vault_id: str, count: int) -> int:
    """Take the vault's next `count` sequence numbers; the first of them."""
    (sequence,) = conn.execute(
        SQL.take_sequences,
        (count, vault_id, count),
    ).fetchone()
    return int(sequence)


def _add_token(conn: sqlite3.Connection, token: TokenRecord) -> None:
    state = conn.execute(SQL.principal_disabled, (token.principal_id,)).fetchone()
    if state is None:
        raise UnknownReference(f"no principal {token.principal_id}")
    if state[0]:
        raise PrincipalDisabled(f"principal {token.principal_id} is disabled")
    _insert(
        conn,
        SQL.add_token,
        rows.token_params(token),
        "token",
    )


def _revoke_tree(
    conn: sqlite3.Connection, token_id: str, actor: Actor, action: Action, *, audited: bool
) -> list[str] | None:
    found = conn.execute(SQL.token_tenant, (token_id,)).fetchone()
    if found is None:
        return None
    revoked = sorted(row[0] for row in conn.execute(SQL.revoke_tree, (token_id,)))
    if audited:
        _record(conn, audit.revoke_events(actor, action, found[0], token_id, revoked))
    return revoked


def _earlier(
    conn: sqlite3.Connection, actor: Actor, request: RequestId | None, kind: type[A]
) -> Repeated[A] | Reused | None:
    """What the principal's record of the request id says, if it made one still kept. In the
    writer's transaction: a record committed by any process before it is seen here."""
    if request is None:
        return None
    row = conn.execute(SQL.request_record, (actor.principal_id, request.value, oldest_kept(actor.at))).fetchone()
    return None if row is None else rows.repeat_of(row, request, kind)


def _remember(conn: sqlite3.Connection, actor: Actor, request: RequestId | None, answer: Answer) -> None:
    """Record the answer of a call that succeeded under its request id (over a record past the
    retention period: _earlier found none kept)."""
    if request is not None:
        params = (actor.principal_id, request.value, request.fingerprint, actor.at, *rows.answer_params(answer))
        conn.execute(SQL.record_request, (*params, oldest_kept(actor.at))).fetchall()


def _record(conn: sqlite3.Connection, events: Iterable[Event]) -> None:
    """Append the events to their tenants' chains, in the use case's transaction (the writer
    holds the file's write lock, so no other process appends in between)."""
    for tenant_id, appended in audit.by_tenant(events):
        head = _head(conn.execute(SQL.audit_head, (tenant_id,)).fetchone(), tenant_id)
        records = list(audit.appended(head, tenant_id, appended))
        conn.executemany(SQL.add_audit_record, [rows.audit_record_params(r) for r in records])
        last = records[-1]
        conn.execute(SQL.set_audit_head, (tenant_id, last.sequence, last.hash))


def _add_device(conn: sqlite3.Connection, tenant_id: str, index: int, added: AddDevice) -> None:
    """Store the device an entry of the tenant's log at `index` adds; UnknownReference when its
    principal is not of the tenant, AlreadyExists when either of its key ids names a device."""
    principal_id = added.device.principal_id
    _require(
        conn, KEYS.principal_in_tenant, (principal_id, tenant_id), f"no principal {principal_id} in tenant {tenant_id}"
    )
    for key_id in (added.device.device_id, added.device.agreement_key_id):
        if conn.execute(KEYS.find_device, (tenant_id, key_id, tenant_id, key_id)).fetchone() is not None:
            raise AlreadyExists(key_rows.taken(tenant_id, key_id))
    conn.execute(KEYS.add_device, key_rows.device_params(tenant_id, index, added))


def _head(row: tuple[object, ...] | None, tenant_id: str) -> Head | None:
    return rows.audit_head_from_row(row, tenant_id)


def _vault_tenant(conn: sqlite3.Connection, vault_id: str) -> str:
    row = conn.execute(SQL.vault_tenant, (vault_id,)).fetchone()
    if row is None:
        raise UnknownReference(f"no vault {vault_id}")
    return str(row[0])


def _require(conn: sqlite3.Connection, query: str, params: tuple[object, ...], missing: str) -> None:
    if conn.execute(query, params).fetchone() is None:
        raise UnknownReference(missing)


def _insert(conn: sqlite3.Connection, statement: str, params: tuple[object, ...], what: str) -> None:
    try:
        conn.execute(statement, params)
    except sqlite3.IntegrityError as error:
        if "UNIQUE" in str(error) or "PRIMARY KEY" in str(error):
            raise AlreadyExists(f"{what} already exists") from None
        raise UnknownReference(f"{what} refers to something that does not exist") from None
