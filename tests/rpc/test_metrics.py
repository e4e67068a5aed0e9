"""The Prometheus series, read in their text format from the real app in-process."""

from __future__ import annotations

import asyncio
import importlib.metadata
import platform as platform_module
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.connect import JSON, VAULT_DELETE, headers
from tests.world import BASE_URL, PEPPER, World
from zkplatform.app import create_app
from zkplatform.config import Settings
from zkplatform.domain import tokens
from zkplatform.observability.metrics import Metrics
from zkplatform.observability.telemetry import Telemetry
from zkplatform.store import open_store
from zkplatform.wiring import Platform

DELETE = VAULT_DELETE.removeprefix("/")


class Scrape:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.text = generate_latest(registry).decode()
        self.families = list(text_string_to_metric_families(self.text))

    def value(self, name: str, **labels: str) -> float:
        """The sum of the samples named so whose labels include these."""
        return sum(
            sample.value
            for family in self.families
            for sample in family.samples
            if sample.name == name and labels.items() <= sample.labels.items()
        )


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
async def measured(platform: Platform, world: World, registry: CollectorRegistry) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(Settings(), platform=platform, telemetry=Telemetry(metrics=Metrics(registry)))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as client:
        yield client
    Telemetry().install()  # the store probes report nowhere again


async def delete(client: httpx.AsyncClient, token: str | None, item_id: str = "item-1", **extra: str) -> httpx.Response:
    body = {"vaultId": "acme-private", "itemId": item_id, "baseVersion": "1"}
    return await client.post(VAULT_DELETE, json=body, headers=headers(JSON, token, **extra))


async def test_calls_are_counted_by_procedure_protocol_and_code(
    measured: httpx.AsyncClient, world: World, registry: CollectorRegistry
) -> None:
    alice = world.token("alice")
    for _ in range(3):
        await delete(measured, alice)
    await delete(measured, alice, item_id="no-such-item")
    await delete(measured, None)

    scrape = Scrape(registry)
    calls = "zkplatform_rpc_calls_total"
    assert scrape.value(calls, procedure=DELETE, protocol="connect", code="ok") == 3
    assert scrape.value(calls, procedure=DELETE, code="not_found") == 1
    assert scrape.value(calls, procedure=DELETE, code="unauthenticated") == 1
    assert scrape.value("zkplatform_rpc_call_duration_seconds_count", procedure=DELETE, protocol="connect") == 5
    assert scrape.value("zkplatform_rpc_call_duration_seconds_sum", procedure=DELETE) > 0
    assert scrape.value("zkplatform_rpc_calls_in_flight", procedure=DELETE) == 0


async def test_refused_authentications_are_counted_by_reason(
    measured: httpx.AsyncClient, world: World, registry: CollectorRegistry
) -> None:
    await delete(measured, None)
    await delete(measured, "not-a-token")
    await delete(measured, tokens.new_token())
    await delete(measured, tokens.new_token())
    await delete(measured, world.token("alice"))

    scrape = Scrape(registry)
    refusals = "zkplatform_auth_refusals_total"
    assert scrape.value(refusals, reason="missing") == 1
    assert scrape.value(refusals, reason="malformed") == 1
    assert scrape.value(refusals, reason="unknown") == 2
    assert scrape.value(refusals) == 4


async def test_unknown_paths_share_one_label(measured: httpx.AsyncClient, registry: CollectorRegistry) -> None:
    for path in ("/a.B/C", "/x.Y/Z", "/wp-login.php"):
        await measured.post(path, json={}, headers=headers(JSON))

    scrape = Scrape(registry)
    assert scrape.value("zkplatform_rpc_calls_total", procedure="unknown", code="unimplemented") == 3
    assert not [s for f in scrape.families for s in f.samples if "wp-login" in str(s.labels)]


async def test_names_follow_the_prometheus_conventions_and_carry_no_secret(
    measured: httpx.AsyncClient, world: World, registry: CollectorRegistry
) -> None:
    await delete(measured, world.token("alice"))
    await measured.post(f"{VAULT_DELETE}?access_token={world.token('bob')}", json={}, headers=headers(JSON))

    scrape = Scrape(registry)
    for family in scrape.families:
        assert family.name.startswith("zkplatform_")
        if family.type == "counter":
            assert all(s.name.endswith(("_total", "_created")) for s in family.samples)
        if family.type == "histogram" and "duration" in family.name:
            assert family.name.endswith("_seconds")
    for token in world.all_tokens():
        assert token not in scrape.text


async def test_sqlite_group_commits_and_store_latency_are_measured(tmp_path: Path, registry: CollectorRegistry) -> None:
    store = await open_store(f"sqlite:///{tmp_path}/zk.db", check_schema=False)
    await store.migrate()
    try:
        platform = Platform.build(store, PEPPER)
        app = create_app(Settings(), platform=platform, telemetry=Telemetry(metrics=Metrics(registry)))
        world = await World.seed(platform)
        before = Scrape(registry)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as client:
            alice = world.token("alice")
            bodies = [{"vaultId": "acme-private", "itemId": f"item-{n}", "baseVersion": "1"} for n in range(1, 4)]
            answers = await asyncio.gather(
                *(client.post(VAULT_DELETE, json=body, headers=headers(JSON, alice)) for body in bodies)
            )
    finally:
        await store.close()  # first: it waits for the last-use writes the calls did not wait for
        Telemetry().install()

    assert [answer.status_code for answer in answers] == [200, 200, 200]
    after = Scrape(registry)
    writes = after.value("zkplatform_store_operation_duration_seconds_count", store="sqlite", operation="write")
    batched = after.value("zkplatform_sqlite_commit_batch_size_sum")
    assert (
        writes - before.value("zkplatform_store_operation_duration_seconds_count", store="sqlite", operation="write")
        >= 3
    )
    assert batched == writes  # every write was committed in exactly one batch
    assert after.value("zkplatform_sqlite_commit_batch_size_count") <= writes
    assert after.value("zkplatform_store_operation_duration_seconds_count", store="sqlite", operation="read") > 0
    assert "zkplatform_postgres_" not in after.text


async def test_postgresql_pool_use_and_store_latency_are_measured(
    postgres_url: str, registry: CollectorRegistry
) -> None:
    metrics = Metrics(registry)
    Telemetry(metrics=metrics).install()  # before the store opens: it reports its pool then
    store = await open_store(postgres_url, check_schema=False)
    try:
        await store.migrate()
        platform = Platform.build(store, PEPPER)
        world = await World.seed(platform)
        app = create_app(Settings(), platform=platform, telemetry=Telemetry(metrics=metrics))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as client:
            answer = await client.post(
                VAULT_DELETE,
                json={"vaultId": "acme-private", "itemId": "item-1", "baseVersion": "1"},
                headers=headers(JSON, world.token("alice")),
            )
        metrics.refresh_pools(force=True)
    finally:
        Telemetry().install()
        await store.close()

    assert answer.status_code == 200, answer.text
    scrape = Scrape(registry)
    assert scrape.value("zkplatform_postgres_pool_connections", state="max") == 10
    assert scrape.value("zkplatform_postgres_pool_connections", state="open") >= 1
    assert scrape.value("zkplatform_postgres_pool_requests_waiting") == 0
    assert "zkplatform_sqlite_" not in scrape.text  # another store's series are not exported
    assert (
        scrape.value("zkplatform_store_operation_duration_seconds_count", store="postgresql", operation="transaction")
        > 0
    )


async def test_the_build_is_a_series_and_no_store_series_is_exported_without_its_store(
    measured: httpx.AsyncClient, registry: CollectorRegistry
) -> None:
    scrape = Scrape(registry)  # the memory store

    version = importlib.metadata.version("zkplatform")
    assert scrape.value("zkplatform_build_info", version=version, python=platform_module.python_version()) == 1
    assert "zkplatform_sqlite_" not in scrape.text
    assert "zkplatform_postgres_" not in scrape.text
