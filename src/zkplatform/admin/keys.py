"""`keys list`, `keys reset` and `keys log`: the key directory's devices and key log, for an
operator (docs/key-transparency.md).

`keys reset` appends a principal's reset signed by the server's log keys (as the server finds
them: ZKPLATFORM_LOG_KEY_FILES, or the SQLite store's own key), as ResetPrincipal does; the
server's witness pusher sends the new checkpoint to the witnesses at its next round.

`keys log` checks the tenant's whole log before it prints any of it: every entry in canonical
form, its stored leaf hash its own, and the RFC 9162 root of the leaves; then the devices' rows,
which the server answers GetRecipientKeys and its checks from, against the devices the log's
entries make (each published, revoked or reset as the log says, and no other). A log that fails
is named at its first bad entry or row (exit code 1), never printed as if it were sound. Whether
the log is the one the witnesses cosigned is the clients' and the witnesses' to check, not this
command's.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import secrets
import sys
from collections.abc import AsyncIterator
from typing import Any

from google.protobuf import json_format

from zkplatform.admin import listing
from zkplatform.admin.audit import Finding
from zkplatform.admin.commands import Refused
from zkplatform.config import Settings
from zkplatform.domain.audit import Actor
from zkplatform.domain.checkpoints import Checkpoints, tree_root
from zkplatform.domain.clock import system_clock
from zkplatform.domain.key_directory import KeyDirectory
from zkplatform.domain.key_log import Device, Leaf, UnreadableKeyLog
from zkplatform.domain.paging import PageTokens
from zkplatform.log_keys import log_keys_for
from zkplatform.messages.directory import device_to_proto
from zkplatform.store import MigratableStore
from zkplatform_api.platform.v1 import directory_pb2
from zkplatform_tlog.merkle import leaf_hash
from zkplatform_tlog.statements import (
    DeviceKeys,
    DeviceRevocation,
    Entry,
    StatementError,
    parse_entry,
)

PAGE = 1000
DEVICE_COLUMNS = ["deviceId", "principalId", "agreementKeyId", "endorserDeviceId", "logIndex", "createdAt", "state"]
ENTRY_COLUMNS = ["index", "data"]


async def list_devices(args: argparse.Namespace, store: MigratableStore) -> str:
    await _require_tenant(store, args.tenant)
    try:
        devices = await store.devices(args.tenant, args.principal)
    except UnreadableKeyLog as error:
        raise Finding(str(error)) from None
    return listing.render(map(_device_row, devices), table=args.table, columns=DEVICE_COLUMNS)


async def reset_principal(args: argparse.Namespace, store: MigratableStore) -> str:
    await _require_tenant(store, args.tenant)
    # The server's log keys: as configured, or the SQLite store's own (the one `serve` made).
    keys = log_keys_for(dataclasses.replace(Settings.from_env(), store_url=args.store_url))
    # The reset is the operator's: no page is listed, and no witness is waited for.
    directory = KeyDirectory(
        store, store, Checkpoints(store, keys, (), 0), system_clock, PageTokens(secrets.token_bytes(32))
    )
    answer = await directory.reset(args.tenant, args.principal_id, Actor.operator(system_clock()))
    print(
        f"zkplatform admin: principal {args.principal_id} of tenant {args.tenant} reset: its devices are revoked,"
        f" and its next device publishes as a first device (key log entry {answer.entry.index})",
        file=sys.stderr,
    )
    return listing.render([_entry_row(answer.entry)], table=False, columns=ENTRY_COLUMNS)


async def key_log(args: argparse.Namespace, store: MigratableStore) -> str:
    await _require_tenant(store, args.tenant)
    size = await store.key_log_size(args.tenant)
    hashes = await store.key_log_hashes(args.tenant, size)
    rows: list[dict[str, Any]] = []
    entries: list[Entry] = []
    try:
        async for leaves in _pages(store, args.tenant, size):
            for leaf in leaves:
                entries.append(_check(args.tenant, leaf, hashes))
                if leaf.index >= args.since:
                    rows.append(_entry_row(leaf))
        stored = await store.devices(args.tenant)
    except UnreadableKeyLog as error:
        raise Finding(str(error)) from None
    if len(hashes) != size:
        msg = f"tenant {args.tenant}: the key log has {size} entries but {len(hashes)} leaf hashes"
        raise Finding(msg)
    _check_devices(args.tenant, _devices_of(args.tenant, entries), stored)
    root = base64.b64encode(tree_root(hashes)).decode()
    print(
        f"zkplatform admin: the key log of tenant {args.tenant} is sound: {size} entries, root hash {root}",
        file=sys.stderr,
    )
    return listing.render(rows, table=args.table, columns=ENTRY_COLUMNS)


def _check(tenant_id: str, leaf: Leaf, hashes: list[bytes]) -> Entry:
    """An entry as the log must hold it: canonical, of its tenant, and hashed as its leaf."""
    where = f"tenant {tenant_id}: key log entry {leaf.index}"
    try:
        entry = parse_entry(leaf.data)
    except StatementError as error:
        msg = f"{where} is not an entry ({error})"
        raise Finding(msg) from None
    if entry.statement.tenant_id != tenant_id:
        msg = f"{where} is a statement of tenant {entry.statement.tenant_id}"
        raise Finding(msg)
    if leaf.index >= len(hashes) or hashes[leaf.index] != leaf_hash(leaf.data) or leaf.leaf_hash != hashes[leaf.index]:
        msg = f"{where} does not match its leaf hash: the entry or its hash was changed"
        raise Finding(msg)
    return entry


def _devices_of(tenant_id: str, entries: list[Entry]) -> dict[str, Device]:
    """The devices the log's entries make, by id, as the server stores them when it appends each
    (key_directory.py): published at its entry, revoked at the revocation's or the reset's. An
    entry the server never appends (a device published again, a revocation of a device that is
    not live) is a finding: the clients refuse the log there."""
    devices: dict[str, Device] = {}
    for index, entry in enumerate(entries):
        statement = entry.statement
        where = f"tenant {tenant_id}: key log entry {index}"
        if isinstance(statement, DeviceKeys):
            if statement.device_id in devices:
                msg = f"{where} publishes the device {statement.device_id} again"
                raise Finding(msg)
            devices[statement.device_id] = Device(
                tenant_id=tenant_id,
                principal_id=statement.principal_id,
                device_id=statement.device_id,
                signing_jwk=statement.signing_jwk,
                agreement_key_id=statement.agreement_key_id,
                agreement_jwk=statement.agreement_jwk,
                endorser=statement.endorser,
                created_at=statement.created,
                log_index=index,
            )
            continue
        if isinstance(statement, DeviceRevocation):
            target = devices.get(statement.device)
            if target is None or not target.live or target.principal_id != statement.principal_id:
                msg = f"{where} revokes the device {statement.device}, which is no live device of its principal"
                raise Finding(msg)
            revoked = [target]
        else:  # a PrincipalReset: every live device of its principal
            revoked = [d for d in devices.values() if d.principal_id == statement.principal_id and d.live]
        for device in revoked:
            devices[device.device_id] = dataclasses.replace(device, revoked_at=statement.created, revoked_index=index)
    return devices


def _check_devices(tenant_id: str, made: dict[str, Device], stored: list[Device]) -> None:
    """The devices' rows, the server's answers, must be the devices the log makes: every one of
    them, as it made them, and no other. Named at the first that is not, in log order."""
    rows = {device.device_id: device for device in stored}
    for device in sorted(made.values(), key=lambda d: d.log_index):
        row = rows.get(device.device_id)
        where = f"tenant {tenant_id}: the device {device.device_id} of key log entry {device.log_index}"
        if row is None:
            msg = f"{where} has no row: the server answers as if the log did not publish it"
            raise Finding(msg)
        if row != device:
            differ = [f.name for f in dataclasses.fields(Device) if getattr(row, f.name) != getattr(device, f.name)]
            msg = f"{where} has a row that disagrees with the log ({', '.join(differ)}){_state(row, device)}"
            raise Finding(msg)
    for row in sorted(stored, key=lambda d: d.log_index):
        if row.device_id not in made:
            msg = f"tenant {tenant_id}: the device {row.device_id} has a row that no key log entry publishes"
            raise Finding(msg)


def _state(row: Device, device: Device) -> str:
    """What the server answers of a device whose row is not live as the log has it, if it is not."""
    if row.live and not device.live:
        return f": the log revokes it at entry {device.revoked_index}, its row is live (it is offered to seal for)"
    if device.live and not row.live:
        return ": the log has it live, its row is revoked"
    return ""


async def _require_tenant(store: MigratableStore, tenant_id: str) -> None:
    if tenant_id not in {tenant.tenant_id for tenant in await store.list_tenants()}:
        msg = f"no tenant {tenant_id}"
        raise Refused(msg)


async def _pages(store: MigratableStore, tenant_id: str, size: int) -> AsyncIterator[list[Leaf]]:
    """The tenant's first `size` entries, ascending, a page at a time; a gap is a finding."""
    start = 0
    while start < size:
        leaves = await store.key_log_leaves(tenant_id, start, PAGE, size)
        expected = range(start, min(start + PAGE, size))
        missing = next((index for index, leaf in zip(expected, leaves, strict=False) if leaf.index != index), None)
        if missing is None and len(leaves) < len(expected):
            missing = expected[len(leaves)]
        if missing is not None:
            msg = f"tenant {tenant_id}: key log entry {missing} is missing"
            raise Finding(msg)
        yield leaves
        start = leaves[-1].index + 1


def _device_row(device: Device) -> dict[str, Any]:
    message = directory_pb2.Device()
    device_to_proto(device, message)
    # logIndex always, 0 too (proto3 JSON leaves a zero out): an operator reads it as a column.
    row = {**json_format.MessageToDict(message), "logIndex": str(device.log_index)}
    return {**row, "state": "live" if device.live else "revoked"}


def _entry_row(leaf: Leaf) -> dict[str, Any]:
    # As ListKeyLog's JSON has it, but with index 0 too (proto3 JSON leaves a zero out).
    return {"index": str(leaf.index), "data": leaf.data.decode()}
