"""WatchChanges on durable stores with two workers: a watch on one worker sees a delete made
through the other (SQLite by polling, PostgreSQL by LISTEN/NOTIFY), and an operator removing
the member ends the watch PERMISSION_DENIED; with a heartbeat of ten minutes, an operator's
command in another process (a member removed, a principal disabled) ends a quiet watch at once."""

from __future__ import annotations

import asyncio
import time
from contextlib import AsyncExitStack
from pathlib import Path

import httpx
import pytest

from tests.connect import JSON, VAULT_DELETE, headers
from tests.e2e.server import serving
from tests.e2e.test_durable import ENV, _established, _workers, seed, store_url  # noqa: F401 # a fixture
from tests.e2e.test_token_tree import admin
from tests.e2e.test_watch import HEARTBEAT, LATENCY, STEP, end_of, next_change, next_message
from tests.e2e.watch_client import Ended, Watch, watching

WATCHERS = 10  # per principal: the default limit
SEEDED = 6
WATCH_ENV = {**ENV, "ZKPLATFORM_WATCH_HEARTBEAT_SECONDS": str(HEARTBEAT)}
QUIET_ENV = {**ENV, "ZKPLATFORM_WATCH_HEARTBEAT_SECONDS": "600"}  # no heartbeat re-check within a test
ENDS_WITHIN = 20.0  # seconds: bounds a failure; the wake-up comes within a poll interval (0.2 s)


async def test_a_watch_on_one_worker_sees_a_delete_made_through_the_other(tmp_path: Path, store_url: str) -> None:  # noqa: F811
    world = await seed(store_url)
    with serving(tmp_path, "--store", store_url, "--workers", "2", env=WATCH_ENV) as server:
        port = int(server.base_url.rsplit(":", 1)[1])
        async with AsyncExitStack() as stack:
            watches: list[Watch] = []
            for principal in ("alice", "bob"):
                for _ in range(WATCHERS):
                    # A client of its own: one connection, which the kernel gives either worker.
                    client = await stack.enter_async_context(httpx.AsyncClient(base_url=server.base_url, timeout=30))
                    watch = await stack.enter_async_context(
                        watching(client, world.token(principal), "acme-shared", SEEDED)
                    )
                    watches.append(watch)
            await asyncio.gather(*(next_message(w) for w in watches))  # the caught-up marker each: all live
            held = [len(_established(worker, port)) for worker in _workers(server.process.pid)]
            # Each worker holds watches (all 20 on one: odds of 1 in 500,000), so whichever
            # worker the delete reaches, watches on the other see it.
            assert len(held) == 2
            assert min(held) > 0, held

            sent = time.monotonic()
            async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as other:
                body = {"vaultId": "acme-shared", "itemId": "item-3", "baseVersion": 1}
                deleted = await other.post(VAULT_DELETE, json=body, headers=headers(JSON, world.token("alice")))
            assert deleted.status_code == 200, deleted.text
            seen = await asyncio.gather(*(next_change(w) for w in watches))

    assert {(c.item.item_id, c.item.deleted, c.sequence) for c, _ in seen} == {("item-3", True, SEEDED + 1)}
    slowest = max(arrived for _, arrived in seen) - sent
    assert slowest < LATENCY, slowest


async def test_removing_the_member_ends_the_watch_permission_denied(tmp_path: Path, store_url: str) -> None:  # noqa: F811
    world = await seed(store_url)
    with serving(tmp_path, "--store", store_url, "--workers", "2", env=WATCH_ENV) as server:
        async with (
            httpx.AsyncClient(base_url=server.base_url, timeout=30) as client,
            watching(client, world.token("bob"), "acme-shared", SEEDED) as watch,
        ):
            await next_message(watch)
            removed = await asyncio.to_thread(admin, store_url, "vault", "member", "remove", "acme-shared", "bob")
            assert removed.returncode == 0, removed.stderr
            ended = await asyncio.wait_for(end_of(watch), STEP)

    assert ended == Ended("permission_denied", "the caller is not a member of this vault")


@pytest.mark.parametrize(
    ("command", "ending"),
    [
        (
            ("vault", "member", "remove", "acme-shared", "bob"),
            Ended("permission_denied", "the caller is not a member of this vault"),
        ),
        (("principal", "disable", "bob"), Ended("unauthenticated", "token revoked")),
    ],
    ids=["member removed", "principal disabled"],
)
async def test_an_operators_command_ends_a_quiet_watch_at_once(
    tmp_path: Path,
    store_url: str,  # noqa: F811
    command: tuple[str, ...],
    ending: Ended,
) -> None:
    world = await seed(store_url)
    with serving(tmp_path, "--store", store_url, env=QUIET_ENV) as server:
        async with (
            httpx.AsyncClient(base_url=server.base_url, timeout=30) as client,
            watching(client, world.token("bob"), "acme-shared", SEEDED - 1) as watch,
        ):
            backlog = await next_message(watch)
            assert len(backlog.changes) == 1  # the watch is live, and quiet from here on
            done = await asyncio.to_thread(admin, store_url, *command)
            assert done.returncode == 0, done.stderr
            async with asyncio.timeout(ENDS_WITHIN):
                ended = await watch.next()

    assert ended == ending
