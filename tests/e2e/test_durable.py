"""Durable stores under a real `zkplatform serve`: restarts, several workers, kill -9."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import http.client
import json
import os
import signal
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from tests.actors import OPERATOR
from tests.connect import BROKER_MINT, JSON, VAULT_DELETE, brief, error_of, headers
from tests.contract.test_store_contract import item
from tests.e2e.server import Server, run_serve, serving
from tests.world import PEPPER, World
from zkplatform.store import open_store
from zkplatform.wiring import Platform

ENV = {"ZKPLATFORM_TOKEN_PEPPER": base64.urlsafe_b64encode(PEPPER).decode().rstrip("=")}


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/zk.db"
    url: str = request.getfixturevalue("postgres_url")
    return url


async def seed(url: str) -> World:
    """Migrate and fill the store with the development data set, as an operator would."""
    store = await open_store(url, check_schema=False)
    await store.migrate()
    try:
        return await World.seed(Platform.build(store, PEPPER))
    finally:
        await store.close()


def seeded(url: str) -> World:
    return asyncio.run(seed(url))


def delete(server: Server, token: str, vault_id: str, item_id: str, version: int = 1) -> httpx.Response:
    body = {"vaultId": vault_id, "itemId": item_id, "baseVersion": version}
    return httpx.post(server.base_url + VAULT_DELETE, json=body, headers=headers(JSON, token), timeout=30)


def test_serve_refuses_a_store_without_the_schema(tmp_path: Path) -> None:
    result = run_serve(tmp_path, "--store", f"sqlite:///{tmp_path}/empty.db")

    assert result.returncode == 2
    assert "zkplatform admin --store" in result.stderr
    assert "migrate" in result.stderr
    assert "Traceback" not in result.stderr


def test_tokens_revocations_and_tombstones_survive_a_restart(tmp_path: Path, store_url: str) -> None:
    world = seeded(store_url)
    alice, bob = world.token("alice"), world.token("bob")
    with serving(tmp_path, "--store", store_url, env=ENV) as server:
        first = delete(server, alice, "acme-private", "item-1")
        minted = httpx.post(
            server.base_url + BROKER_MINT,
            json={"tenantId": "acme", "requestedScopes": ["vault.items.delete"]},
            headers=headers(JSON, alice),
            timeout=30,
        ).json()["token"]["accessToken"]
        leaked = httpx.post(
            f"{server.base_url}{VAULT_DELETE}?access_token={bob}", json={}, headers=headers(JSON), timeout=30
        )
    with serving(tmp_path, "--store", store_url, env=ENV) as server:
        repeat = delete(server, alice, "acme-private", "item-1", version=1)
        by_minted = delete(server, minted, "acme-shared", "item-2")
        revoked = delete(server, bob, "acme-shared", "item-3")

    assert first.status_code == 200, first.text
    assert error_of(leaked)["code"] == "invalid_argument"
    assert repeat.content == first.content
    assert by_minted.status_code == 200, by_minted.text
    assert brief(error_of(revoked)) == {
        "code": "unauthenticated",
        "message": "token revoked",
        "reason": "TOKEN_REVOKED",
    }


def test_two_workers_make_exactly_one_change_per_item(tmp_path: Path, store_url: str) -> None:
    world = seeded(store_url)
    alice = world.token("alice")
    items = [(vault, f"item-{n}") for vault in ("acme-private", "acme-shared") for n in range(1, 7)]
    items += [("acme-private", f"item-{n}") for n in range(7, 15)]  # 20 items in all
    asyncio.run(_add_items(store_url, "acme-private", range(7, 15)))
    before = {v: asyncio.run(_sequence(store_url, v)) for v in ("acme-private", "acme-shared")}

    with serving(tmp_path, "--store", store_url, "--workers", "2", env=ENV) as server:
        workers = _workers(server.process.pid)
        answers = asyncio.run(_delete_concurrently(server.base_url, alice, items, repeats=10))

    assert len(workers) == 2  # hypercorn really ran two worker processes
    by_item: dict[tuple[str, str], set[bytes]] = {}
    for (key, _), (status, body) in answers.items():
        assert status == 200, body
        by_item.setdefault(key, set()).add(body)
    assert all(len(bodies) == 1 for bodies in by_item.values())  # every caller got the same answer
    sequences = [int(json.loads(next(iter(b)))["cursor"]["sequence"]) for b in by_item.values()]
    assert len(by_item) == 20
    after = {v: asyncio.run(_sequence(store_url, v)) for v in before}
    assert sum(after.values()) - sum(before.values()) == 20  # exactly 20 changes
    assert len(set(zip([k[0] for k in by_item], sequences, strict=True))) == 20  # no sequence number twice


def test_workers_share_the_connections(tmp_path: Path) -> None:
    """Each worker listens on a socket of its own (SO_REUSEPORT), so a client's few keep-alive
    connections spread over the workers instead of all landing on the one that accepted first.
    serving() returns once the server says every worker listens: a worker still starting
    would get no connection at all."""
    store_url = f"sqlite:///{tmp_path}/zk.db"
    seeded(store_url)
    with serving(tmp_path, "--store", store_url, "--workers", "2", env=ENV) as server:
        port = int(server.base_url.rsplit(":", 1)[1])
        connections = [http.client.HTTPConnection("127.0.0.1", port, timeout=10) for _ in range(20)]
        try:
            for connection in connections:
                connection.request("GET", "/healthz")
                assert connection.getresponse().read() == b"ok\n"
            held = [len(_established(worker, port)) for worker in _workers(server.process.pid)]
        finally:
            for connection in connections:
                connection.close()

    assert len(held) == 2
    assert sum(held) == 20
    # The kernel hashes each connection to one of the two listening sockets: all 20
    # on the same one has odds of 2 x (1/2)^20, about 1 in 500,000.
    assert min(held) > 0, held


def _established(pid: int, port: int) -> set[int]:
    """Inodes of the process's TCP sockets that are connected on its side of `port`."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = str(fd.readlink())
            if target.startswith("socket:["):
                inodes.add(int(target[8:-1]))
    connected = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local_port, state, inode = int(fields[1].rsplit(":", 1)[1], 16), fields[3], int(fields[9])
            if local_port == port and state == "01" and inode in inodes:  # 01: ESTABLISHED
                connected.add(inode)
    return connected


def test_answered_deletes_survive_kill_9(tmp_path: Path, store_url: str) -> None:
    world = seeded(store_url)
    alice = world.token("alice")
    asyncio.run(_add_items(store_url, "acme-shared", range(7, 400)))
    items = [("acme-shared", f"item-{n}") for n in range(7, 400)]
    with serving(tmp_path, "--store", store_url, env=ENV) as server:
        answered = asyncio.run(_delete_until_killed(server, alice, items))
    with serving(tmp_path, "--store", store_url, env=ENV) as server:
        repeats = asyncio.run(_delete_concurrently(server.base_url, alice, list(answered), repeats=1))

    assert answered, "no delete was answered before the kill"
    sequences = []
    for key, body in answered.items():
        status, again = repeats[(key, 0)]
        assert status == 200
        assert again == body  # the answered tombstone is still there, unchanged
        sequences.append(json.loads(body)["cursor"]["sequence"])
    assert len(set(sequences)) == len(sequences)


async def _add_items(url: str, vault_id: str, numbers: range) -> None:
    store = await open_store(url)
    try:
        await store.add_items([item(f"item-{n}", vault_id=vault_id, tenant_id="acme") for n in numbers], OPERATOR)
    finally:
        await store.close()


async def _sequence(url: str, vault_id: str) -> int:
    store = await open_store(url)
    try:
        return await store.vault_sequence(vault_id)
    finally:
        await store.close()


async def _delete_concurrently(
    base_url: str, token: str, items: list[tuple[str, str]], repeats: int
) -> dict[tuple[tuple[str, str], int], tuple[int, bytes]]:
    limits = httpx.Limits(max_connections=40)
    async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits) as client:

        async def one(key: tuple[str, str]) -> tuple[int, bytes]:
            body = {"vaultId": key[0], "itemId": key[1], "baseVersion": 1}
            response = await client.post(VAULT_DELETE, json=body, headers=headers(JSON, token))
            return response.status_code, response.content

        calls = [(key, n) for n in range(repeats) for key in items]
        results = await asyncio.gather(*(one(key) for key, _ in calls))
    return dict(zip(calls, results, strict=True))


async def _delete_until_killed(
    server: Server, token: str, items: list[tuple[str, str]]
) -> dict[tuple[str, str], bytes]:
    """Delete items 8 at a time; kill -9 the server midway; what was answered 200."""
    answered: dict[tuple[str, str], bytes] = {}
    async with httpx.AsyncClient(base_url=server.base_url, timeout=10) as client:

        async def one(key: tuple[str, str]) -> None:
            body = {"vaultId": key[0], "itemId": key[1], "baseVersion": 1}
            try:
                response = await client.post(VAULT_DELETE, json=body, headers=headers(JSON, token))
            except httpx.TransportError:
                return
            if response.status_code == 200:
                answered[key] = response.content

        tasks = [asyncio.create_task(one(key)) for key in items[:8]]
        for index, key in enumerate(items[8:]):
            if index == len(items) // 2:
                os.kill(server.process.pid, signal.SIGKILL)
            tasks.append(asyncio.create_task(one(key)))
            await asyncio.sleep(0.002)
        await asyncio.gather(*tasks)
    server.process.wait(timeout=10)
    return answered


def _children(pid: int) -> list[int]:
    """The live child processes of pid (Linux /proc)."""
    children = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line)
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(pid):
            children.append(int(status.parent.name))
    return children


def _workers(pid: int) -> list[int]:
    """The worker processes (multiprocessing also starts a resource tracker)."""
    return [c for c in _children(pid) if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]


def test_the_store_url_is_logged_without_its_password(tmp_path: Path, postgres_url: str) -> None:
    parts = urlsplit(postgres_url)
    secret = parts.password or "s3cret-never-logged"  # a trust-authenticated server ignores a password it never asks
    user, host = parts.username or "postgres", parts.netloc.rpartition("@")[2]
    url = urlunsplit(parts._replace(netloc=f"{user}:{secret}@{host}"))
    with serving(tmp_path, "--store", url, "--migrate", env=ENV) as server:
        pass
    log = server.log()

    assert f"store postgresql://{user}:***@{host}" in log
    assert secret not in log
