"""A PostgreSQL outage under a real `zkplatform serve`, on a server the test starts and stops itself.

While PostgreSQL is down, calls answer 503 `unavailable` with a RetryInfo and the reason
STORE_UNAVAILABLE, `/readyz` answers 503 and gRPC health NOT_SERVING (its Watch says so), and
`/healthz` (liveness) still answers ok; once it is back, readiness says so and the very next
call succeeds: no stale pooled connection fails it.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path
from typing import Any

import grpc
import httpx
import psycopg
import pytest

from tests.connect import JSON, brief, detail, error_of, headers
from tests.e2e.server import Server, serving, zkplatform_command
from tests.e2e.test_durable import ENV
from tests.pg import ThrowawayCluster
from tests.world import PEPPER, World
from zkplatform.store import open_store
from zkplatform.wiring import Platform
from zkplatform_api.grpc.health.v1.health_pb2 import HealthCheckRequest, HealthCheckResponse

LIST_ITEMS = "/platform.v1.VaultService/ListItems"
WAIT_S = 30.0  # for readiness to follow the store: a cached probe (1 s) and a ping (at most 2 s)
PASSWORD = "pw-never-shown"  # trust authentication takes it and ignores it: it must show nowhere
POOL_SIZE = 2


def migrated_and_seeded(url: str, tmp_path: Path) -> World:
    """`zkplatform admin migrate`, as an operator would, then the development data set."""
    migrated = subprocess.run(
        [zkplatform_command(), "admin", "--store", url, "migrate"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert migrated.returncode == 0, migrated.stderr
    return asyncio.run(seed(url))


async def seed(url: str) -> World:
    store = await open_store(url)
    try:
        return await World.seed(Platform.build(store, PEPPER))
    finally:
        await store.close()


def list_items(server: Server, token: str) -> httpx.Response:
    body = {"vaultId": "acme-shared"}
    return httpx.post(server.base_url + LIST_ITEMS, json=body, headers=headers(JSON, token), timeout=30)


async def list_items_at_once(server: Server, token: str, calls: int) -> list[int]:
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as client:
        body, sent = {"vaultId": "acme-shared"}, headers(JSON, token)
        answers = await asyncio.gather(*(client.post(LIST_ITEMS, json=body, headers=sent) for _ in range(calls)))
    return [answer.status_code for answer in answers]


def client_connections(url: str) -> int:
    """The connections of clients to the server at url, but this one."""
    query = "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
    with psycopg.connect(url, autocommit=True) as admin:
        (count,) = admin.execute(query).fetchone() or (0,)
    return int(count)


def assert_unavailable(answer: httpx.Response) -> None:
    assert answer.status_code == 503, answer.text
    error = error_of(answer)
    assert brief(error) == {
        "code": "unavailable",
        "message": "the store is unavailable; try again later",
        "reason": "STORE_UNAVAILABLE",
    }
    assert detail(error, "google.rpc.RetryInfo")["retryDelay"] == "1s"


def readyz_until(server: Server, status: int) -> httpx.Response:
    """GET /readyz until it answers `status`, for at most WAIT_S."""
    deadline = time.monotonic() + WAIT_S
    while True:
        answer = httpx.get(f"{server.base_url}/readyz", timeout=30)
        if answer.status_code == status or time.monotonic() > deadline:
            return answer


def health_check(channel: grpc.Channel, service: str = "") -> str:
    check = channel.unary_unary(
        "/grpc.health.v1.Health/Check",
        request_serializer=HealthCheckRequest.SerializeToString,
        response_deserializer=HealthCheckResponse.FromString,
    )
    answer: HealthCheckResponse = check(HealthCheckRequest(service=service), timeout=30)
    return HealthCheckResponse.ServingStatus.Name(answer.status)


def health_watch(channel: grpc.Channel) -> Any:
    watch = channel.unary_stream(
        "/grpc.health.v1.Health/Watch",
        request_serializer=HealthCheckRequest.SerializeToString,
        response_deserializer=HealthCheckResponse.FromString,
    )
    return watch(HealthCheckRequest(service=""), timeout=120)


def status_of(answer: HealthCheckResponse) -> str:
    return HealthCheckResponse.ServingStatus.Name(answer.status)


@pytest.mark.postgres
def test_a_postgresql_outage_answers_unavailable_and_not_ready_and_the_first_call_after_it_works(
    tmp_path: Path, own_postgres: ThrowawayCluster
) -> None:
    url = own_postgres.url.replace("postgres@", f"postgres:{PASSWORD}@")
    bob = migrated_and_seeded(url, tmp_path).token("bob")
    env = {**ENV, "ZKPLATFORM_STORE_POOL_SIZE": str(POOL_SIZE)}

    with (
        serving(tmp_path, "--store", url, env=env) as server,
        grpc.insecure_channel(server.base_url.removeprefix("http://")) as channel,
    ):
        before = list_items(server, bob)
        burst = asyncio.run(list_items_at_once(server, bob, 20))
        connections = client_connections(own_postgres.url)
        ready_before = httpx.get(f"{server.base_url}/readyz", timeout=30)
        health_before = health_check(channel), health_check(channel, "platform.v1.VaultService")
        watch = health_watch(channel)
        watched = [status_of(next(watch))]

        own_postgres.halt()
        during = list_items(server, bob)
        not_ready = readyz_until(server, 503)
        health_during = health_check(channel), health_check(channel, "platform.v1.VaultService")
        watched.append(status_of(next(watch)))
        alive = httpx.get(f"{server.base_url}/healthz", timeout=30)

        own_postgres.start()
        ready_again = readyz_until(server, 200)
        health_after = health_check(channel)
        watched.append(status_of(next(watch)))
        after = list_items(server, bob)
        burst_after = asyncio.run(list_items_at_once(server, bob, 20))
        watch.cancel()

        # A restart nothing noticed (no call, no health check meanwhile): every pooled connection
        # is one the server ended, and the pool's check replaces it before a call gets it.
        own_postgres.halt()
        own_postgres.start()
        after_restart = list_items(server, bob)
    log = server.log()

    assert before.status_code == 200, before.text
    assert burst == [200] * 20
    assert connections == POOL_SIZE  # the setting sizes the pool: 20 calls at once share 2 connections
    assert (ready_before.status_code, ready_before.text) == (200, "ok\n")
    assert health_before == ("SERVING", "SERVING")

    assert_unavailable(during)
    assert (not_ready.status_code, not_ready.text) == (503, "store unavailable\n")
    assert health_during == ("NOT_SERVING", "NOT_SERVING")
    assert (alive.status_code, alive.text) == (200, "ok\n")

    assert (ready_again.status_code, ready_again.text) == (200, "ok\n")
    assert health_after == "SERVING"
    assert watched == ["SERVING", "NOT_SERVING", "SERVING"]
    assert after.status_code == 200, after.text
    assert after.json()["items"] == before.json()["items"]
    assert burst_after == [200] * 20
    assert after_restart.status_code == 200, after_restart.text

    assert "not ready" in log
    assert PASSWORD not in log
    assert "Traceback" not in log
    assert "code=internal" not in log
