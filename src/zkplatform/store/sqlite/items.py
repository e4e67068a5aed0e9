"""The SQLite store's items: their changes, pages, purges and the store's epoch."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from zkplatform.domain import audit
from zkplatform.domain.audit import Action, Actor
from zkplatform.domain.models import ChangePage, Item, ItemChange, ItemPage, ItemPatch, new_epoch
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
from zkplatform.domain.ports.refusals import AlreadyExists, UnknownReference
from zkplatform.domain.request_ids import RequestId, oldest_kept
from zkplatform.store import rows
from zkplatform.store.sqlite.database import Database, _earlier, _record, _remember
from zkplatform.store.statements import SQLITE as SQL


class SQLiteItems(Database):
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
