"""`key list`, `key revoke` and `key log`: the recipient key directory, for an operator.

`key log` recomputes the tenant's whole key log (domain/key_log.py) before it prints any of
it, as `audit verify` does for the audit trail: a log that does not match its hashes or its
head is named at its first bad entry (exit code 1), never printed as if it were sound.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator
from typing import Any

from google.protobuf import json_format

from zkplatform.admin import listing
from zkplatform.admin.audit import Finding
from zkplatform.admin.commands import Refused
from zkplatform.domain.audit import BEFORE_ALL, Actor
from zkplatform.domain.clock import system_clock
from zkplatform.domain.key_directory import IndexedEntry
from zkplatform.domain.key_log import KeyLogCheck, KeyLogHead, KeyLogRecord, UnreadableEntry
from zkplatform.domain.recipient_keys import RecipientKey
from zkplatform.messages.directory import b64url, entry_to_proto, key_to_proto
from zkplatform.store import MigratableStore
from zkplatform_api.platform.v1 import directory_pb2

PAGE = 1000
KEY_COLUMNS = ["keyId", "principalId", "tenantId", "createdAt", "revokedAt", "state"]
ENTRY_COLUMNS = ["index", "action", "principalId", "keyId", "time", "hash"]


async def list_keys(args: argparse.Namespace, store: MigratableStore) -> str:
    await _require_tenant(store, args.tenant)
    found = await store.list_keys(args.tenant, args.principal)
    return listing.render(map(_key_row, found), table=args.table, columns=KEY_COLUMNS)


async def revoke_key(args: argparse.Namespace, store: MigratableStore) -> str:
    held = [key for key in await store.find_keys(args.key_id) if args.tenant in (None, key.tenant_id)]
    if not held:
        where = f" in tenant {args.tenant}" if args.tenant else ""
        msg = f"no key {args.key_id}{where}"
        raise Refused(msg)
    if len(held) > 1:
        tenants = ", ".join(key.tenant_id for key in held)
        msg = f"key {args.key_id} is published in several tenants ({tenants}): name one with --tenant"
        raise Refused(msg)
    key = held[0]
    change = await store.revoke_key(key.tenant_id, key.key_id, Actor.operator(system_clock()))
    if change is None:  # keys are never deleted
        msg = f"no key {args.key_id} in tenant {key.tenant_id}"
        raise Refused(msg)
    whose = f"key {key.key_id} of principal {key.principal_id} in tenant {key.tenant_id}"
    if not change.changed:
        return f"{whose} was already revoked; nothing was changed"
    return f"{whose} revoked; the tenant's key log is at entry {change.head.size}"


async def key_log(args: argparse.Namespace, store: MigratableStore) -> str:
    await _require_tenant(store, args.tenant)
    check = KeyLogCheck(args.tenant)
    head = None
    async for records, page_head in _pages(store, args.tenant, after=BEFORE_ALL):
        for record in records:
            if (broken := check.check(record)) is not None:
                raise Finding(str(broken))
        # The last page's: it holds every entry up to the head read with it (one snapshot).
        head = page_head
    assert head is not None  # the first page always comes, empty or not
    if (broken := check.finish(head)) is not None:
        raise Finding(str(broken))
    # Sound up to its head: what follows is what was verified (entries appended since are not shown).
    rows: list[dict[str, Any]] = []
    async for records, _ in _pages(store, args.tenant, after=args.since):
        rows.extend(_entry_row(record) for record in records if record.index <= check.head.size)
    print(
        f"zkplatform admin: the key log of tenant {args.tenant} is sound: {check.head.size} entries,"
        f" head hash {b64url(check.head.hash)}",
        file=sys.stderr,
    )
    return listing.render(rows, table=args.table, columns=ENTRY_COLUMNS)


async def _require_tenant(store: MigratableStore, tenant_id: str) -> None:
    if tenant_id not in {tenant.tenant_id for tenant in await store.list_tenants()}:
        msg = f"no tenant {tenant_id}"
        raise Refused(msg)


async def _pages(
    store: MigratableStore, tenant_id: str, after: int
) -> AsyncIterator[tuple[list[KeyLogRecord], KeyLogHead]]:
    """The tenant's entries above `after`, ascending, a page at a time, each with the head read with it."""
    while True:
        records, head = await store.key_log(tenant_id, after, PAGE)
        yield records, head
        if len(records) < PAGE:
            return
        after = records[-1].index


def _key_row(key: RecipientKey) -> dict[str, Any]:
    message = directory_pb2.RecipientKey()
    key_to_proto(key, message)
    return {**json_format.MessageToDict(message), "state": "live" if key.live else "revoked"}


def _entry_row(record: KeyLogRecord) -> dict[str, Any]:
    message = directory_pb2.KeyLogEntry()
    try:
        entry_to_proto(IndexedEntry(record.index, record.entry, record.hash), message)
    except UnreadableEntry:  # verified above: only a log changed since then gets here
        msg = f"tenant {record.tenant_id}: key log entry {record.index} is not an entry in canonical form"
        raise Finding(msg) from None
    return json_format.MessageToDict(message)
