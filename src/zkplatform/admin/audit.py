"""`audit export` and `audit verify`: the audit trail as stored, read page by page.

Export writes NDJSON to standard output itself, a page at a time, rather than
returning its output like the other commands: a long trail is never held in
memory, and standard output stays pure NDJSON. Verify recomputes each tenant's
hash chain (domain/audit.py) and names the first event where it stops matching.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import AsyncIterator
from typing import Protocol

from zkplatform.domain.audit import BEFORE_ALL, AuditRecord, ChainCheck, UnreadableRecord
from zkplatform.domain.models import Tenant
from zkplatform.domain.ports.audit import AuditRepository

PAGE = 1000


class Finding(Exception):
    """What a read-only audit command refuses or finds: its one line, exit code 1 (nothing
    was ever going to be changed, so the line does not say so)."""


async def export(args: argparse.Namespace, store: AuditRepository) -> str:
    out = sys.stdout  # looked up now: whatever standard output is for this run
    try:
        for tenant_id in await _tenants(store, args.tenant):
            async for page in _pages(store, tenant_id, after=args.since):
                out.write("".join(json.dumps(record.exported(), separators=(",", ":")) + "\n" for record in page))
                out.flush()  # each page as it comes: a reader sees the export progress
    except UnreadableRecord as error:
        raise Finding(str(error)) from None
    except BrokenPipeError:
        # The reader has stopped reading (`export | head`): its choice, not a failure. What
        # is still buffered goes nowhere, so that the interpreter's last flush cannot fail too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out.fileno())
        os.close(devnull)
    return ""


class _Trails(AuditRepository, Protocol):
    """The trail, and the directory's tenants: every one of them has a trail."""

    async def list_tenants(self) -> list[Tenant]: ...


async def verify(args: argparse.Namespace, store: _Trails) -> str:
    tenants = await _tenants(store, args.tenant, directory=[t.tenant_id for t in await store.list_tenants()])
    events = 0
    try:
        for tenant_id in tenants:
            events += await _verify_tenant(store, tenant_id)
    except UnreadableRecord as error:
        raise Finding(str(error)) from None
    return f"verified {events} event(s) in {len(tenants)} tenant(s)"


async def _verify_tenant(store: AuditRepository, tenant_id: str) -> int:
    """The tenant's chain from its first event to its head; Finding at the first break."""
    check = ChainCheck(tenant_id)
    # From below 1: an event numbered 0 or below, which no store writes, is found too.
    await _check(store, check, after=BEFORE_ALL, up_to=None)
    # The head is read after the events: every event read was committed with a head at
    # least as far, so an event beyond this head was added behind the store's back.
    head = await store.audit_head(tenant_id)
    if head is None and check.sequence == 0:
        # A tenant's trail starts with its creation (tenant.added, in the same transaction),
        # so a tenant of the directory with neither events nor a head has lost its whole trail.
        msg = f"tenant {tenant_id}: has no audit trail (no events and no chain head), though it exists"
        raise Finding(msg)
    if head is not None and head.sequence > check.sequence:
        # Events appended (by a running server) while the trail was read, or removed from
        # its end: check on to this head, and no further, where appends may still be landing.
        await _check(store, check, after=check.sequence, up_to=head.sequence)
    broken = check.finish(head)
    if broken is not None:
        raise Finding(str(broken))
    return check.sequence


async def _check(store: AuditRepository, check: ChainCheck, after: int, up_to: int | None) -> None:
    async for page in _pages(store, check.tenant_id, after=after):
        for record in page:
            if up_to is not None and record.sequence > up_to:
                return
            broken = check.check(record)
            if broken is not None:
                raise Finding(str(broken))


async def _tenants(store: AuditRepository, tenant_id: str | None, directory: list[str] | None = None) -> list[str]:
    """Every tenant with a trail, and every tenant of the `directory` (which must have one), or
    only the one named, which must have a trail or be in the directory."""
    known = directory or []
    if tenant_id is None:
        return sorted(set(await store.audit_tenants()).union(known))
    if (
        tenant_id not in known
        and await store.audit_head(tenant_id) is None
        and not await store.audit_records(tenant_id, BEFORE_ALL, 1)
    ):
        msg = f"no audit events for tenant {tenant_id}"
        raise Finding(msg)
    return [tenant_id]


async def _pages(store: AuditRepository, tenant_id: str, after: int) -> AsyncIterator[list[AuditRecord]]:
    """The tenant's events with a sequence above `after`, ascending, a page at a time."""
    while True:
        page = await store.audit_records(tenant_id, after, PAGE)
        if page:
            yield page
        if len(page) < PAGE:
            return
        after = page[-1].sequence
