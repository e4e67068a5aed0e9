"""SIGTERM: the server stops accepting, lets the calls in flight finish within
--graceful-timeout, ends open streams with `unavailable` at once, and exits 0,
with every worker. What was answered was applied; what was not is safe to repeat."""

from __future__ import annotations

import asyncio
import json
import queue
import signal
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import httpx
import pytest

from tests.actors import OPERATOR
from tests.connect import BROKER_MINT, JSON, VAULT_DELETE, headers
from tests.contract.test_store_contract import item
from tests.e2e.server import Server, eventually, serving
from tests.e2e.test_durable import ENV, seed
from tests.world import World
from zkplatform.store import open_store
from zkplatform_api.grpc.health.v1 import health_pb2

GRACE_S = 20
CLIENTS = 6
ITEMS_PER_CLIENT = 150
# Enough mints for the whole run: the limits are not what this test is about.
LOAD_ENV = {**ENV, "ZKPLATFORM_MINT_RATE_PER_MINUTE": "100000", "ZKPLATFORM_MINT_ACTIVE_CAP": "100000"}


@dataclass
class Outcomes:
    """What each client saw: answers by item (deletes) and minted tokens; the calls left unanswered."""

    deleted: dict[str, dict[str, object]] = field(default_factory=dict)
    minted: list[str] = field(default_factory=list)
    unanswered_deletes: list[str] = field(default_factory=list)
    unanswered_mints: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answered(self) -> int:
        with self.lock:
            return len(self.deleted) + len(self.minted)


def _prepare(url: str) -> World:
    async def prepare() -> World:
        world = await seed(url)
        store = await open_store(url)
        try:
            load = [item(f"load-{n}", "acme-private", "acme") for n in range(CLIENTS * ITEMS_PER_CLIENT)]
            await store.add_items(load, OPERATOR)
        finally:
            await store.close()
        return world

    return asyncio.run(prepare())


def _client(server: Server, token: str, items: list[str], outcomes: Outcomes) -> None:
    """Delete the items one by one, minting a token after each, until the server stops answering."""
    with httpx.Client(base_url=server.base_url, headers=headers(JSON, token), timeout=60) as client:
        for item_id in items:
            body = {"vaultId": "acme-private", "itemId": item_id, "baseVersion": 1}
            try:
                response = client.post(VAULT_DELETE, json=body)
            except httpx.TransportError:  # unanswered: refused, or the connection closed under it
                with outcomes.lock:
                    outcomes.unanswered_deletes.append(item_id)
                return
            assert response.status_code == 200, response.text
            with outcomes.lock:
                outcomes.deleted[item_id] = response.json()
            try:
                minted = client.post(BROKER_MINT, json={"tenantId": "acme", "requestedScopes": ["vault.items.delete"]})
            except httpx.TransportError:
                with outcomes.lock:
                    outcomes.unanswered_mints += 1
                return
            assert minted.status_code == 200, minted.text
            with outcomes.lock:
                outcomes.minted.append(minted.json()["token"]["accessToken"])


@pytest.mark.parametrize("workers", ["1", "2"])
def test_sigterm_under_load_applies_what_it_answered(tmp_path: Path, workers: str) -> None:
    url = f"sqlite:///{tmp_path}/zk.db"
    alice = _prepare(url).token("alice")
    outcomes = Outcomes()
    args = ("--store", url, "--workers", workers, "--graceful-timeout", str(GRACE_S))
    with serving(tmp_path, *args, env=LOAD_ENV) as server:
        shares = [[f"load-{n}" for n in range(c, CLIENTS * ITEMS_PER_CLIENT, CLIENTS)] for c in range(CLIENTS)]
        threads = [threading.Thread(target=_client, args=(server, alice, share, outcomes)) for share in shares]
        for thread in threads:
            thread.start()
        assert eventually(lambda: outcomes.answered() >= 60, 60)  # well under way

        server.process.send_signal(signal.SIGTERM)
        stopped_at = time.monotonic()
        code = server.process.wait(timeout=GRACE_S + 30)
        took = time.monotonic() - stopped_at
        for thread in threads:
            thread.join(timeout=60)
        log = server.log()

    assert code == 0, log
    assert took < GRACE_S, f"took {took:.1f} s"
    assert "Traceback" not in log
    assert all(not thread.is_alive() for thread in threads)
    assert outcomes.deleted
    assert outcomes.minted

    # On the same store, restarted: every answered delete is a tombstone, every answered
    # mint a live token, and the deletes left unanswered answer the tombstone when repeated.
    with serving(tmp_path, "--store", url, env=LOAD_ENV) as server, httpx.Client(timeout=30) as client:

        def delete(token: str, item_id: str) -> httpx.Response:
            body = {"vaultId": "acme-private", "itemId": item_id, "baseVersion": 1}
            return client.post(server.base_url + VAULT_DELETE, json=body, headers=headers(JSON, token))

        repeated = {item_id: delete(alice, item_id).json() for item_id in outcomes.deleted}
        retried = {item_id: delete(alice, item_id) for item_id in outcomes.unanswered_deletes}
        again = {item_id: delete(alice, item_id).json() for item_id in outcomes.unanswered_deletes}
        sample = next(iter(outcomes.deleted))  # an item any delete-scoped token of alice may delete again
        by_minted = [delete(token, sample).status_code for token in outcomes.minted]
        mint_retried = client.post(
            server.base_url + BROKER_MINT,
            json={"tenantId": "acme", "requestedScopes": ["vault.items.delete"]},
            headers=headers(JSON, alice),
        )

    assert repeated == outcomes.deleted  # the same tombstone and cursor: it was applied, once
    for item_id, answer in retried.items():
        assert answer.status_code == 200, answer.text
        assert answer.json()["item"]["deleted"] is True
        assert answer.json()["item"]["version"] == "2"  # deleted once, whether before the stop or now
        assert again[item_id] == answer.json()
    assert by_minted == [200] * len(outcomes.minted)
    # A mint left unanswered may or may not have made a token no one holds: asking again is safe.
    assert mint_retried.status_code == 200, mint_retried.text


def _watch(channel: grpc.Channel) -> Iterator[health_pb2.HealthCheckResponse]:
    watch = channel.unary_stream(
        "/grpc.health.v1.Health/Watch",
        request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
        response_deserializer=health_pb2.HealthCheckResponse.FromString,
    )
    answers: Iterator[health_pb2.HealthCheckResponse] = watch(health_pb2.HealthCheckRequest(), timeout=120)
    return answers


# grpc.reflection.v1.ServerReflectionRequest{list_services: "*"}, as bytes: field 7, length 1
LIST_SERVICES = b"\x3a\x01*"


@pytest.mark.parametrize("workers", ["1", "2"])
def test_open_streams_end_with_unavailable_at_once(tmp_path: Path, workers: str) -> None:
    with serving(tmp_path, "--store", "memory:", "--workers", workers) as server:
        address = server.base_url.removeprefix("http://")
        requests: queue.Queue[bytes | None] = queue.Queue()
        with grpc.insecure_channel(address) as watch_channel, grpc.insecure_channel(address) as reflection_channel:
            watching = _watch(watch_channel)
            first = next(watching)
            reflect = reflection_channel.stream_stream(
                "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
                request_serializer=bytes,
                response_deserializer=bytes,
            )
            requests.put(LIST_SERVICES)
            reflecting = reflect(iter(requests.get, None), timeout=120)
            listed = next(reflecting)

            server.process.send_signal(signal.SIGTERM)
            stopped_at = time.monotonic()
            with pytest.raises(grpc.RpcError) as watch_ended:
                next(watching)
            with pytest.raises(grpc.RpcError) as reflection_ended:
                next(reflecting)
            ended_after = time.monotonic() - stopped_at
            requests.put(None)
        code = server.process.wait(timeout=60)
        took = time.monotonic() - stopped_at
        log = server.log()

    assert first.status == health_pb2.HealthCheckResponse.SERVING
    assert b"grpc.health.v1.Health" in listed
    assert watch_ended.value.code() == grpc.StatusCode.UNAVAILABLE, watch_ended.value
    assert reflection_ended.value.code() == grpc.StatusCode.UNAVAILABLE, reflection_ended.value
    assert "shutting down" in (watch_ended.value.details() or "")
    assert ended_after < 5  # at once, not after the grace period (30 s)
    assert code == 0
    assert took < 10
    assert "Traceback" not in log
    if workers == "1":  # the stopping line counts what it ends
        assert "stopping: 0 call(s) in flight finish within 30 s; 2 open stream(s) end now" in log, log


def test_a_call_in_flight_at_sigterm_is_answered_and_its_connection_closed(tmp_path: Path) -> None:
    """Its answer says `Connection: close`, so the client sends nothing more on a connection the
    stopping server is about to close (a request sent there would be lost unanswered)."""
    with serving(tmp_path, "--dev") as server:
        credentials = json.loads((server.log_path.parent / "var" / "dev-credentials.json").read_text())
        alice = next(p["token"] for p in credentials["tenants"][0]["principals"] if p["principalId"] == "alice")
        body = json.dumps({"vaultId": "acme-private", "itemId": "item-1", "baseVersion": "1"}).encode()
        head = (
            f"POST {VAULT_DELETE} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
            f"Connect-Protocol-Version: 1\r\nAuthorization: Bearer {alice}\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        host, port = server.base_url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=GRACE_S) as sock:
            sock.sendall(head.encode() + body[:10])  # in flight: its body has not all arrived
            server.process.send_signal(signal.SIGTERM)
            assert eventually(lambda: "stopping:" in server.log(), GRACE_S)
            sock.sendall(body[10:])
            answer = b""
            while chunk := sock.recv(65536):  # until the server closes the connection
                answer += chunk
        code = server.process.wait(timeout=GRACE_S)

    head_of_answer = answer.split(b"\r\n\r\n", 1)[0].lower()
    assert head_of_answer.startswith(b"http/1.1 200"), answer
    assert b"\r\nconnection: close" in head_of_answer, answer
    assert code == 0
