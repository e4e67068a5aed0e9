"""The client's address, in the access line's `peer` and in the audit events, through the whole
app in-process: the connection's peer, or, when that peer is a proxy named by
`--forwarded-allow-ips`, the address it forwarded (`X-Forwarded-For`, or `Forwarded`'s `for`);
forwarded headers from anyone else are ignored."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import httpx
import pytest

from tests.connect import JSON, VAULT_DELETE, headers
from tests.world import BASE_URL, World
from zkplatform.app import create_app
from zkplatform.config import Settings, parse_networks
from zkplatform.wiring import Platform

PROXY = ("10.0.0.5", 40000)
TRUSTED = "10.0.0.0/24"  # the proxies: the server's --forwarded-allow-ips

Connect = Callable[[tuple[str, int]], AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture(autouse=True)
def _capture_info(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)


@pytest.fixture
def connect(platform: Platform, world: World) -> Connect:
    """Clients of one app trusting the proxies in TRUSTED, each connecting from the given peer."""
    app = create_app(Settings(forwarded_allow_ips=parse_networks(TRUSTED)), platform=platform)

    @asynccontextmanager
    async def client(peer: tuple[str, int]) -> AsyncIterator[httpx.AsyncClient]:
        transport = httpx.ASGITransport(app=app, client=peer)
        async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
            yield client

    return client


async def delete(client: httpx.AsyncClient, world: World, item_id: str, request_id: str, **extra: str) -> None:
    body = {"vaultId": "acme-private", "itemId": item_id, "baseVersion": "1"}
    response = await client.post(
        VAULT_DELETE, json=body, headers=headers(JSON, world.token("alice"), **{"X-Request-Id": request_id}, **extra)
    )
    assert response.status_code == 200, response.text


def peer_of(caplog: pytest.LogCaptureFixture, request_id: str) -> str:
    [line] = [
        record.__dict__["access"]
        for record in caplog.records
        if record.name == "zkplatform.access" and record.__dict__["access"]["request_id"] == request_id
    ]
    return str(line["peer"])


async def audited_address(world: World, request_id: str) -> str:
    records = await world.platform.store.audit_records("acme", 0, 10_000)
    [event] = [event for record in records if (event := record.exported())["requestId"] == request_id]
    return str(event["clientAddress"])


@pytest.mark.parametrize(
    ("forwarded", "peer", "address"),
    [
        # the nearest proxy appended the address it saw; the one before could be anything the client sent
        ({"X-Forwarded-For": "198.51.100.66, 203.0.113.7"}, "203.0.113.7", "203.0.113.7"),
        # a chain of trusted proxies: past each address that is itself a proxy
        ({"X-Forwarded-For": "198.51.100.66, 203.0.113.7, 10.0.0.9"}, "203.0.113.7", "203.0.113.7"),
        ({"Forwarded": 'for="[2001:db8::7]:4711";proto=https'}, "[2001:db8::7]:4711", "2001:db8::7"),
        ({"Forwarded": "for=198.51.100.66, for=203.0.113.7:5000"}, "203.0.113.7:5000", "203.0.113.7"),
        # Forwarded wins over X-Forwarded-For, as for the origin
        ({"Forwarded": "for=203.0.113.7", "X-Forwarded-For": "198.51.100.66"}, "203.0.113.7", "203.0.113.7"),
        # what names no address leaves the proxy's: never half-used
        ({"Forwarded": "for=unknown"}, "10.0.0.5:40000", "10.0.0.5"),
        ({"Forwarded": "for=_hidden, for=203.0.113.7"}, "203.0.113.7", "203.0.113.7"),
        ({"Forwarded": "for=203.0.113.7, for=_hidden"}, "10.0.0.5:40000", "10.0.0.5"),
        ({"Forwarded": "proto=https"}, "10.0.0.5:40000", "10.0.0.5"),
        ({"X-Forwarded-For": "203.0.113.7, proxy.internal"}, "10.0.0.5:40000", "10.0.0.5"),
        ({"X-Forwarded-For": "203.0.113.7,"}, "10.0.0.5:40000", "10.0.0.5"),
        ({}, "10.0.0.5:40000", "10.0.0.5"),
    ],
)
async def test_behind_a_trusted_proxy_the_client_is_the_forwarded_address(
    connect: Connect,
    world: World,
    caplog: pytest.LogCaptureFixture,
    forwarded: dict[str, str],
    peer: str,
    address: str,
) -> None:
    async with connect(PROXY) as client:
        await delete(client, world, "item-1", "behind-proxy", **forwarded)

    assert peer_of(caplog, "behind-proxy") == peer
    assert await audited_address(world, "behind-proxy") == address


@pytest.mark.parametrize(
    "forwarded",
    [{"X-Forwarded-For": "203.0.113.7"}, {"Forwarded": "for=203.0.113.7"}, {"X-Forwarded-For": "10.0.0.9"}],
)
async def test_forwarded_headers_from_an_untrusted_peer_are_ignored(
    connect: Connect, world: World, caplog: pytest.LogCaptureFixture, forwarded: dict[str, str]
) -> None:
    async with connect(("192.0.2.1", 5555)) as client:
        await delete(client, world, "item-1", "direct", **forwarded)

    assert peer_of(caplog, "direct") == "192.0.2.1:5555"
    assert await audited_address(world, "direct") == "192.0.2.1"


async def test_without_trusted_proxies_forwarded_headers_are_ignored(
    client: httpx.AsyncClient, world: World, caplog: pytest.LogCaptureFixture
) -> None:
    await delete(client, world, "item-1", "untrusting", **{"X-Forwarded-For": "203.0.113.7"})

    assert peer_of(caplog, "untrusting") == "127.0.0.1:123"  # httpx's in-process client address
    assert await audited_address(world, "untrusting") == "127.0.0.1"


async def test_a_token_seen_in_a_url_is_revoked_in_an_event_naming_the_client(connect: Connect, world: World) -> None:
    async with connect(PROXY) as client:
        await client.post(
            f"{VAULT_DELETE}?access_token={world.token('bob')}",
            json={},
            headers=headers(JSON, **{"X-Request-Id": "leaked", "X-Forwarded-For": "203.0.113.7"}),
        )

    assert await audited_address(world, "leaked") == "203.0.113.7"
