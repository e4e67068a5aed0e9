"""The audit chains on PostgreSQL: a change holds its tenant's chain until it commits, and
only that one, so the changes of different tenants never wait for each other."""

from __future__ import annotations

import asyncio

import psycopg

from tests.actors import OPERATOR
from tests.store.stores import closing
from zkplatform.domain.models import Principal, Role, Tenant
from zkplatform.store.postgres import PostgresStore

BOUND_S = 30  # far beyond any wait but one for a lock that is never released


def member(principal_id: str, tenant_id: str) -> Principal:
    return Principal.new(principal_id, tenant_id, Role.MEMBER)


async def test_a_change_waits_for_its_own_tenants_chain_only(migrated_url: str) -> None:
    async with closing(PostgresStore.open(migrated_url)) as store:
        await store.add_tenant(Tenant("t1"), OPERATOR)
        await store.add_tenant(Tenant("t2"), OPERATOR)
        async with await psycopg.AsyncConnection.connect(migrated_url) as holder:
            # A transaction that appended to t1's chain and has not committed yet.
            await holder.execute("SELECT zk_audit_append('t1', 'held')")
            waiting = asyncio.ensure_future(store.add_principal(member("p1", "t1"), OPERATOR))

            await asyncio.wait_for(store.add_principal(member("p2", "t2"), OPERATOR), BOUND_S)

            assert not waiting.done()  # t1's chain is held: its change cannot have committed
            await holder.rollback()
            await asyncio.wait_for(waiting, BOUND_S)
        t1, t2 = await store.audit_head("t1"), await store.audit_head("t2")
        assert (t1 and t1.sequence, t2 and t2.sequence) == (2, 2)
        assert b"held" not in [r.event for r in await store.audit_records("t1", 0, 10)]  # rolled back
