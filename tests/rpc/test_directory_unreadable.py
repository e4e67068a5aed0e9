"""The key directory's reads over stored data changed behind the store's back (as someone with
access to the database could): an entry that is no UTF-8 text, a device's row whose text is none
either. The answer is INTERNAL with the generic message, as for any failure the caller can do
nothing about; the server's log names the tenant and the entry in one line, with no traceback,
for the operator (`zkplatform admin keys log` names the same entry)."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from google.protobuf.message import Message

from tests.connect import JSON, detail, error_of, headers
from tests.rpc.devices import TestDevice
from tests.store.stores import closing, migrated
from tests.world import BASE_URL, PEPPER, FakeClock, World
from zkplatform.app import create_app
from zkplatform.config import Settings
from zkplatform.store import open_store
from zkplatform.wiring import Platform
from zkplatform_api.platform.v1 import directory_pb2

SERVICE = "/platform.v1.DirectoryService"
# Bob's entry with a byte before it that no UTF-8 text holds.
NO_TEXT_SQLITE = "UPDATE key_log_entries SET data = CAST(X'FF' || data AS BLOB) WHERE tenant_id = 'acme' AND idx = 1"
NO_TEXT_POSTGRESQL = "UPDATE key_log_entries SET data = '\\xff'::bytea || data WHERE tenant_id = 'acme' AND idx = 1"


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/store.db"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
async def world(url: str, clock: FakeClock) -> AsyncIterator[World]:
    await migrated(url)
    async with closing(open_store(url)) as store:
        yield await World.seed(Platform.build(store, PEPPER, clock), keys=False)


@pytest.fixture
async def client(world: World) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(Settings(), platform=world.platform)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as client:
        yield client


def sql(url: str, statement: str) -> None:
    """One statement on the store's database, behind the store's back."""
    if url.startswith("sqlite:///"):
        with contextlib.closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as lite, lite:
            lite.execute(statement)
        return
    with psycopg.connect(url, autocommit=True) as pg:
        pg.execute(statement)


async def call(client: httpx.AsyncClient, method: str, request: Message, token: str) -> httpx.Response:
    return await client.post(f"{SERVICE}/{method}", content=JSON.encode(request), headers=headers(JSON, token))


def internal(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 500, response.text
    error = error_of(response)
    assert (error["code"], error["message"]) == ("internal", "internal error")
    info: dict[str, Any] = detail(error, "google.rpc.ErrorInfo")
    return info


def logged(caplog: pytest.LogCaptureFixture) -> list[tuple[str, bool]]:
    """The error lines of the server's log: their text, and whether a traceback came with them."""
    return [(r.getMessage(), r.exc_info is not None) for r in caplog.records if r.levelno >= logging.ERROR]


async def published(client: httpx.AsyncClient, clock: FakeClock, world: World) -> directory_pb2.PublishDeviceRequest:
    """Alice's first device (entry 0) and bob's (entry 1): the request that published bob's."""
    await call(client, "PublishDevice", TestDevice().publish("alice", clock.now), world.token("alice"))
    bobs = TestDevice().publish("bob", clock.now)
    assert (await call(client, "PublishDevice", bobs, world.token("bob"))).status_code == 200
    return bobs


async def test_an_entry_that_is_no_text_answers_internal_and_is_named_in_the_log(
    client: httpx.AsyncClient, world: World, clock: FakeClock, url: str, caplog: pytest.LogCaptureFixture
) -> None:
    bobs = await published(client, clock, world)
    sql(url, NO_TEXT_SQLITE if url.startswith("sqlite:") else NO_TEXT_POSTGRESQL)
    caplog.clear()

    listed = await call(client, "ListKeyLog", directory_pb2.ListKeyLogRequest(), world.token("alice"))
    repeated = await call(client, "PublishDevice", bobs, world.token("bob"))  # answers with its entry
    keys = await call(
        client, "GetRecipientKeys", directory_pb2.GetRecipientKeysRequest(principal_ids=["bob"]), world.token("alice")
    )

    assert internal(listed)["reason"] == "INTERNAL"
    assert internal(repeated)["reason"] == "INTERNAL"
    named = "stored data cannot be read: tenant acme: key log entry 1 cannot be read: its data is not UTF-8 text"
    assert logged(caplog) == [(f"ListKeyLog: {named}", False), (f"PublishDevice: {named}", False)]
    assert keys.status_code == 200, keys.text  # the devices' rows are as they were


async def test_a_device_row_whose_text_is_none_answers_internal_and_is_named_in_the_log(
    client: httpx.AsyncClient, world: World, clock: FakeClock, url: str, caplog: pytest.LogCaptureFixture
) -> None:
    if not url.startswith("sqlite:"):
        pytest.skip("PostgreSQL keeps only UTF-8 in a text column")
    await published(client, clock, world)
    sql(url, "UPDATE devices SET agreement_jwk = CAST(X'FF' AS TEXT) WHERE tenant_id = 'acme' AND principal_id = 'bob'")
    caplog.clear()

    keys = await call(
        client, "GetRecipientKeys", directory_pb2.GetRecipientKeysRequest(principal_ids=["bob"]), world.token("alice")
    )

    assert internal(keys)["reason"] == "INTERNAL"
    named = "tenant acme: the device of key log entry 1 cannot be read: its agreement_jwk is not UTF-8 text"
    assert logged(caplog) == [(f"GetRecipientKeys: stored data cannot be read: {named}", False)]
