"""The PostgreSQL store's items: their changes, pages, purges and the store's epoch."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from psycopg import errors

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
from zkplatform.store.postgres.connection import Conn
from zkplatform.store.postgres.database import Database, _claim, _fetchone, _record, _settle
from zkplatform.store.statements import POSTGRESQL as SQL

# How long a worker answers with the epoch it last read (the cursor of a create, an update, a
# delete; a watch's check at its heartbeat): a round trip saved on every change, for an epoch
# that changes only with a restore. Pages, and the checks of cursors against them, read it in
# their own snapshot instead.
_EPOCH_TTL_SECONDS = 1.0


class PostgresItems(Database):
    async def add_items(self, items: Iterable[Item], actor: Actor) -> None:
        async def add(conn: Conn) -> None:
            known: set[tuple[str, str]] = set()  # (vault, tenant) pairs checked: one query per vault, not per item
            for chunk in rows.chunks(items):
                await _add_chunk(conn, chunk, known)
                await _record(conn, [audit.item_event(actor, Action.ITEM_CREATED, item) for item in chunk])

        await self._tx(add)

    async def get_item(self, vault_id: str, item_id: str) -> Item | None:
        row = await self._one(SQL.get_item, (vault_id, item_id))
        return None if row is None else rows.item_from_row(row)[0]

    async def delete_item(
        self, vault_id: str, item_id: str, base_version: int, actor: Actor, *, request: RequestId | None = None
    ) -> DeleteOutcome:
        # The compare-and-set, its audit event and the erasure of the item's recorded answers
        # run in the database (migrations 0005, 0007), one statement in its own transaction: one
        # round trip instead of eight. The function appends the event to the chain of the
        # vault's tenant. With a request id, the same statement between the claim of the id
        # and its settlement, in one transaction.
        params = (
            vault_id,
            item_id,
            base_version,
            actor.at,
            actor.event_bytes(Action.ITEM_DELETED, vault=vault_id, item=item_id),
            oldest_kept(actor.at),
        )
        if request is None:
            return _deleted(await self._one(_DELETE_ITEM, params))

        async def delete(conn: Conn) -> DeleteOutcome:
            if (earlier := await _claim(conn, actor, request, ItemChange)) is not None:
                return earlier
            outcome = _deleted(await _fetchone(conn, _DELETE_ITEM, params))
            await _settle(conn, actor, request, outcome if isinstance(outcome, ItemChange) else None)
            return outcome

        return await self._tx(delete)

    async def create_item(self, item: Item, actor: Actor, *, request: RequestId | None = None) -> CreateOutcome:
        # The insert that takes the sequence number in one statement, in its own transaction:
        # a duplicate id fails the statement, which rolls back the number it took. Concurrent
        # creates in one vault queue on the vault's row; of one id, the first commits and the
        # others then fail on the primary key.
        params = (
            item.vault_id,
            item.tenant_id,
            *rows.item_params(item, 0)[:-1],
            audit.item_event(actor, Action.ITEM_CREATED, item).canonical(),
        )
        if request is None:
            for _ in range(_ATTEMPTS):
                try:
                    row = await self._one(_CREATE_ITEM, params)
                except errors.UniqueViolation:
                    existing = await self._one(SQL.get_item, (item.vault_id, item.item_id))
                    if existing is not None:
                        return Existing(ItemChange(*rows.item_from_row(existing)))
                    continue  # its tombstone was purged in between: the id is free again
                return _created(item, row)
            raise _contended(item.vault_id, item.item_id)

        async def create(conn: Conn) -> CreateOutcome:
            # The same, between the claim of the id and its settlement: the insert in a
            # savepoint, so that a duplicate fails it alone.
            if (earlier := await _claim(conn, actor, request, ItemChange)) is not None:
                return earlier
            for _ in range(_ATTEMPTS):
                try:
                    async with conn.transaction():
                        row = await _fetchone(conn, _CREATE_ITEM, params)
                except errors.UniqueViolation:
                    existing = await _fetchone(conn, SQL.get_item, (item.vault_id, item.item_id))
                    if existing is None:
                        continue
                    await _settle(conn, actor, request, None)
                    return Existing(ItemChange(*rows.item_from_row(existing)))
                outcome = _created(item, row)
                await _settle(conn, actor, request, outcome.change)
                return outcome
            raise _contended(item.vault_id, item.item_id)

        return await self._tx(create)

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
        event = actor.event_bytes(Action.ITEM_UPDATED, vault=vault_id, item=item_id)  # the vault's tenant's
        params = (vault_id, item_id, base_version, *_patch_params(patch), actor.at, vault_id, item_id, event)

        async def update(fetch: Callable[[str, Sequence[object]], Awaitable[tuple[Any, ...] | None]]) -> UpdateOutcome:
            for _ in range(_ATTEMPTS):
                row = await fetch(_UPDATE_ITEM, params)
                if row is not None:
                    return ItemChange(*rows.item_from_row(row[:-1]))
                # Not applied: the item as committed now says why. Versions only grow, so it is
                # at base_version again only if it was purged and created anew in between: then retry.
                current = await fetch(SQL.get_item, (vault_id, item_id))
                if current is None:
                    return Missing()
                change = ItemChange(*rows.item_from_row(current))
                if change.item.deleted or change.item.version != base_version:
                    return Conflict(change)
            raise _contended(vault_id, item_id)

        if request is None:  # each statement in its own transaction
            return await update(self._one)

        async def update_once(conn: Conn) -> UpdateOutcome:
            if (earlier := await _claim(conn, actor, request, ItemChange)) is not None:
                return earlier
            outcome = await update(lambda query, query_params: _fetchone(conn, query, query_params))
            await _settle(conn, actor, request, outcome if isinstance(outcome, ItemChange) else None)
            return outcome

        return await self._tx(update_once)

    async def record_answer(self, actor: Actor, request: RequestId, answer: ItemChange) -> RecordOutcome:
        async def record(conn: Conn) -> RecordOutcome:
            if (earlier := await _claim(conn, actor, request, ItemChange)) is not None:
                return earlier
            # The item's row is locked from here to the commit: a delete of it waits, and then
            # erases this record; one that committed first leaves it deleted, and then nothing is
            # recorded.
            live = await _fetchone(
                conn,
                "SELECT 1 FROM items WHERE vault_id = %s AND item_id = %s AND NOT deleted FOR SHARE",
                (answer.item.vault_id, answer.item.item_id),
            )
            await _settle(conn, actor, request, None if live is None else answer)
            return None

        return await self._tx(record)

    async def list_items(self, vault_id: str, after_item_id: str, limit: int, *, show_deleted: bool) -> ItemPage:
        # One statement, so one snapshot: the sequence is the one the items are at.
        async with self._connection() as conn:
            cursor = await conn.execute(
                _LIST_ITEMS if show_deleted else _LIST_LIVE_ITEMS, (vault_id, vault_id, after_item_id, limit)
            )
            found = await cursor.fetchall()
        # The sequence and the epoch come with every row, and alone (items all NULL) when the page is empty.
        sequence, epoch = int(found[0][0]), self._saw_epoch(str(found[0][1]))
        return ItemPage(tuple(rows.item_from_row(r[2:])[0] for r in found if r[2] is not None), sequence, epoch)

    async def vault_sequence(self, vault_id: str) -> int:
        row = await self._one(SQL.vault_sequence, (vault_id,))
        return 0 if row is None else int(row[0])

    async def epoch(self) -> str:
        """The store's epoch, as read within the last _EPOCH_TTL_SECONDS by this worker."""
        if self._epoch is not None and time.monotonic() - self._epoch[1] < _EPOCH_TTL_SECONDS:
            return self._epoch[0]
        row = await self._one(SQL.epoch)
        assert row is not None  # one row, made by the migration
        return self._saw_epoch(str(row[0]))

    def _saw_epoch(self, epoch: str) -> str:
        self._epoch = (epoch, time.monotonic())
        return epoch

    async def rotate_epoch(self, actor: Actor) -> str:
        epoch = new_epoch()

        async def rotate(conn: Conn) -> None:
            await conn.execute(SQL.set_epoch, (epoch,))
            tenants = [row[0] for row in await (await conn.execute(SQL.list_tenants)).fetchall()]
            await _record(conn, audit.epoch_events(actor, tenants, epoch))

        await self._tx(rotate)
        return self._saw_epoch(epoch)

    async def purge_tombstones(self, deleted_before: int, actor: Actor) -> int:
        async def purge(conn: Conn) -> int:
            # One statement for the rows purged and the horizons they raise; then their events.
            purged = await (await conn.execute(_PURGE, (deleted_before,))).fetchall()
            await _record(conn, [actor.event(t, Action.ITEM_PURGED, vault=v, item=i) for t, v, i in purged])
            await conn.execute(SQL.forget_request_ids, (oldest_kept(actor.at),))
            return len(purged)

        return await self._tx(purge)

    async def list_changes(self, vault_id: str, since: int, limit: int) -> ChangePage:
        # One statement, so one snapshot: the vault's state is the one its changes are at.
        async with self._connection() as conn:
            found = await (await conn.execute(_LIST_CHANGES, (vault_id, since, limit))).fetchall()
        # The vault's state and the epoch come with every row, and alone (items all NULL) when
        # there is no change; 0 for a vault the store does not have.
        sequence, horizon, epoch = int(found[0][0]), int(found[0][1]), self._saw_epoch(str(found[0][2]))
        changes = tuple(ItemChange(*rows.item_from_row(r[3:])) for r in found if r[3] is not None)
        return ChangePage(changes, sequence, horizon, epoch)


# Attempts of a create or an update that meets a purge of its item in between (each a
# race with a purge, which forgets a tombstone once in 90 days): then it says so.
_ATTEMPTS = 3
_ITEM_INSERT_COLUMNS = rows.ITEM_COLUMNS.removesuffix(", sequence")
# (vault, tenant, the item's columns but its sequence) -> the sequence taken; no row when the
# vault is not in that tenant. The vault's row is locked first, then the item inserted.
_CREATE_ITEM = (
    "WITH taken AS (" + SQL.take_tenant_sequence + "),"
    f" added AS (INSERT INTO items ({_ITEM_INSERT_COLUMNS}, sequence)"
    f" SELECT {', '.join(['%s'] * len(_ITEM_INSERT_COLUMNS.split(', ')))}, taken.sequence FROM taken"
    " RETURNING sequence, tenant_id)"
    " SELECT sequence, zk_audit_append(tenant_id, %s) FROM added"  # the event, only for an item added
)
# The compare-and-set of an update, in one statement: (vault, item, base_version, kind, title
# hash, payload, keys, now, vault, item) -> the item changed; no row when it did not apply.
# Each of kind to keys is NULL when the patch leaves it alone: the column then keeps its value.
# The item's row is locked first, and only if it is live at base_version (a concurrent update
# that committed first makes this re-check fail: READ COMMITTED re-reads a locked row's latest
# version), then the vault's, to take the next number; so exactly one of concurrent updates at
# one base_version changes the item and takes a number, and the order of locks is the delete's.
_UPDATE_ITEM = (
    "WITH target AS (SELECT vault_id FROM items"
    " WHERE vault_id = %s AND item_id = %s AND version = %s AND NOT deleted FOR UPDATE),"
    " taken AS (UPDATE vaults SET sequence = vaults.sequence + 1 FROM target"
    " WHERE vaults.vault_id = target.vault_id RETURNING vaults.sequence),"
    " changed AS (UPDATE items SET kind = coalesce(%s, kind), title_hash = coalesce(%s, title_hash),"
    " payload = coalesce(%s, payload), wrapped_keys = coalesce(%s, wrapped_keys),"
    " version = version + 1, updated_at = %s, sequence = taken.sequence FROM taken"
    " WHERE items.vault_id = %s AND items.item_id = %s"
    " RETURNING " + ", ".join(f"items.{c}" for c in rows.ITEM_COLUMNS.split(", ")) + ")"
    " SELECT changed.*, zk_audit_append(changed.tenant_id, %s) FROM changed"  # the event, only for a change made
)


def _list_in_snapshot(page: str) -> str:
    """(vault, vault, after item_id, limit) -> rows of (the vault's sequence, the store's epoch,
    the page's item columns), or one row of (sequence, epoch, NULLs) for an empty page. Its ORDER
    BY sorts the page's rows only (at most a page and one): below it runs the keyset scan of
    statements.py."""
    return (
        "SELECT s.sequence, s.epoch, p.* FROM (SELECT coalesce((SELECT sequence FROM vaults WHERE vault_id = %s), 0)"
        f" AS sequence, ({SQL.epoch}) AS epoch) s LEFT JOIN LATERAL ({page}) p ON TRUE ORDER BY p.item_id"
    )


_LIST_ITEMS = _list_in_snapshot(SQL.list_items)
# (vault, since, limit) -> rows of (the vault's sequence, its purge horizon, the store's epoch, a
# change's item columns), or one row with NULL items when there is no change (and 0, 0 for no
# such vault): the epoch's one row, the vault's if any, its changes if any.
_LIST_CHANGES = (
    "SELECT coalesce(v.sequence, 0), coalesce(v.purge_horizon, 0), e.epoch, c.* FROM store_epoch e"
    " LEFT JOIN vaults v ON v.vault_id = %s LEFT JOIN LATERAL"
    f" ({SQL.list_changes.replace('vault_id = %s', 'vault_id = v.vault_id', 1)}) c ON TRUE"
    " ORDER BY c.sequence"
)
_PURGE = (
    "WITH purged AS (DELETE FROM items WHERE deleted AND updated_at < %s"
    " RETURNING tenant_id, vault_id, item_id, sequence),"
    " horizons AS (SELECT vault_id, max(sequence) AS horizon FROM purged GROUP BY vault_id),"
    " raised AS (UPDATE vaults SET purge_horizon = greatest(vaults.purge_horizon, h.horizon)"
    " FROM horizons h WHERE vaults.vault_id = h.vault_id)"
    " SELECT tenant_id, vault_id, item_id FROM purged ORDER BY tenant_id, vault_id, sequence"
)
_LIST_LIVE_ITEMS = _list_in_snapshot(SQL.list_live_items)
_DELETE_ITEM = f"SELECT {rows.ITEM_COLUMNS} FROM zk_delete_item(%s, %s, %s, %s, %s, %s)"


def _deleted(row: tuple[Any, ...] | None) -> DeleteOutcome:
    """What zk_delete_item's row says."""
    if row is None:
        return Missing()
    item, sequence = rows.item_from_row(row)
    return ItemChange(item, sequence) if item.deleted else Stale(item.version)


def _created(item: Item, row: tuple[Any, ...] | None) -> Created:
    """What _CREATE_ITEM's row says: no row, no such vault in the item's tenant."""
    if row is None:
        raise UnknownReference(rows.unknown_vault(item))
    return Created(ItemChange(item, int(row[0])))


def _patch_params(patch: ItemPatch) -> tuple[object, ...]:
    """The patch's columns; None (SQL NULL) for a column it leaves as it is, which the update coalesces."""
    return (
        patch.kind,
        patch.title_hash,
        rows.payload_to_text(patch.payload),
        None if patch.wrapped_keys is None else rows.keys_to_text(patch.wrapped_keys),
    )


def _contended(vault_id: str, item_id: str) -> RuntimeError:
    return RuntimeError(f"item {item_id} in vault {vault_id} was purged and created again during every attempt")


async def _add_chunk(conn: Conn, chunk: list[Item], known: set[tuple[str, str]]) -> None:
    if unchecked := list({(i.vault_id, i.tenant_id) for i in chunk} - known):
        cursor = await conn.execute(
            "SELECT vault_id, tenant_id FROM vaults WHERE (vault_id, tenant_id) IN"
            " (SELECT * FROM unnest(%s::text[], %s::text[]))",
            ([vault_id for vault_id, _ in unchecked], [tenant_id for _, tenant_id in unchecked]),
        )
        known.update(await cursor.fetchall())
    addable, refused = rows.until_unknown_vault(chunk, known)
    # One statement per vault for the sequence numbers and one batch for the rows.
    first = {
        vault_id: await _take_sequences(conn, vault_id, count) for vault_id, count in rows.per_vault(addable).items()
    }
    try:
        async with conn.transaction(), conn.cursor() as cursor:  # a savepoint: see the store without the chunk
            await cursor.executemany(
                SQL.add_item,
                rows.numbered_items(addable, first),
            )
    except errors.UniqueViolation:
        cursor = await conn.execute(
            "SELECT vault_id, item_id FROM items WHERE (vault_id, item_id) IN"
            " (SELECT * FROM unnest(%s::text[], %s::text[]))",
            ([i.vault_id for i in addable], [i.item_id for i in addable]),
        )
        stored = set(await cursor.fetchall())
        duplicate = rows.first_duplicate(addable, lambda i: (i.vault_id, i.item_id) in stored)
        raise AlreadyExists(f"{duplicate} already exists") from None
    if refused is not None:
        raise UnknownReference(rows.unknown_vault(refused))


async def _take_sequences(conn: Conn, vault_id: str, count: int) -> int:
    """Take the vault's next `count` sequence numbers; the first of them."""
    row = await _fetchone(
        conn,
        SQL.take_sequences,
        (count, vault_id, count),
    )
    assert row is not None  # the vault exists: checked in this transaction
    return int(row[0])
