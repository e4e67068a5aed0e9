"""The Python package's VaultSync against a real `zkplatform serve --dev`: it tells when it holds
the whole vault (a CaughtUp event, and `caught_up`), after the watch's caught-up marker or a poll
with nothing more to come; after a backlog, once its changes are in; behind again after a dropped
stream until the new one catches up. Every run is bounded: a sync that never says so fails."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

import httpx
import pytest

from tests.clients.conftest import dev_principals
from tests.connect import JSON, headers
from tests.e2e.server import Server, serving
from zkplatform_client import (
    Backoff,
    CaughtUp,
    Changes,
    MemorySyncStore,
    Reconnecting,
    Synced,
    SyncEvent,
    SyncState,
    VaultSync,
    clients,
)

pytestmark = pytest.mark.e2e  # starts a server (tests/conftest.py marks only tests/e2e by place)

VAULT = "acme-shared"
WITHIN = 20.0  # seconds a sync has to reach what each test waits for (it takes well under one)
Mode = Literal["watch", "poll"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("sync"), "--dev") as server:
        yield server


@pytest.fixture(scope="module")
def bob(server: Server) -> str:
    token: str = dev_principals(server.log_path.parent / "var" / "dev-credentials.json")["bob"]["token"]
    return token


@pytest.fixture(scope="module")
def live(server: Server, bob: str) -> int:
    """The vault's live items, as ListItems counts them."""
    answer = httpx.post(
        f"{server.base_url}/platform.v1.VaultService/ListItems",
        json={"vaultId": VAULT, "pageSize": 1000},
        headers=headers(JSON, bob),
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return len(answer.json()["items"])


async def run_until(
    server: Server,
    token: str,
    mode: Mode,
    until: Callable[[list[SyncEvent]], bool],
    *,
    saved: SyncState | None = None,
    watch_timeout_ms: int | None = None,
) -> list[tuple[SyncEvent, bool]]:
    """The sync's events (each with its `caught_up` then) until `until` holds of them."""
    seen: list[tuple[SyncEvent, bool]] = []
    done = asyncio.Event()
    platform = clients(server.base_url, token=token)
    sync: VaultSync

    def on_event(event: SyncEvent) -> None:
        seen.append((event, sync.caught_up))
        if until([e for e, _ in seen]):
            done.set()

    sync = VaultSync(
        platform.vault,
        VAULT,
        store=MemorySyncStore(saved),
        mode=mode,
        poll_interval=0.05,
        backoff=Backoff(initial=0.01, maximum=0.05),
        watch_timeout_ms=watch_timeout_ms,
        on_event=on_event,
    )
    task = asyncio.ensure_future(sync.run())
    try:
        async with asyncio.timeout(WITHIN):
            await done.wait()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return seen


def caught_up_times(count: int) -> Callable[[list[SyncEvent]], bool]:
    return lambda events: sum(isinstance(e, CaughtUp) for e in events) >= count


@pytest.mark.parametrize("mode", ["watch", "poll"])
async def test_a_listed_vault_is_caught_up_once_the_changes_after_its_cursor_are_in(
    server: Server, bob: str, live: int, mode: Mode
) -> None:
    seen = await run_until(server, bob, mode, caught_up_times(1))

    events = [event for event, _ in seen]
    assert [type(e) for e in events] == [Synced, CaughtUp]
    assert isinstance(events[0], Synced)
    assert events[1] == CaughtUp(events[0].cursor, live)
    assert [caught_up for _, caught_up in seen] == [False, True]


@pytest.mark.parametrize("mode", ["watch", "poll"])
async def test_a_backlog_is_caught_up_after_its_changes(server: Server, bob: str, live: int, mode: Mode) -> None:
    seen = await run_until(server, bob, mode, caught_up_times(1), saved=SyncState(VAULT))

    events = [event for event, _ in seen]
    assert [type(e).__name__ for e in events] == ["Resumed", "Changes", "CaughtUp"]
    changes, caught_up = events[1], events[2]
    assert isinstance(changes, Changes)
    assert caught_up == CaughtUp(changes.cursor, live)


async def test_a_reconnected_watch_is_behind_until_its_marker(server: Server, bob: str) -> None:
    """Each watch ends after 300 ms (its deadline) and is opened again from the cursor."""
    seen = await run_until(server, bob, "watch", caught_up_times(2), watch_timeout_ms=300)

    kinds = [(type(event).__name__, caught_up) for event, caught_up in seen]
    assert kinds == [
        ("Synced", False),
        ("CaughtUp", True),
        ("Reconnecting", False),
        ("CaughtUp", True),
    ]
    reconnecting = seen[2][0]
    assert isinstance(reconnecting, Reconnecting)
    assert reconnecting.code == "deadline_exceeded"


async def test_a_change_after_the_marker_arrives_as_changes_and_leaves_it_caught_up(
    server: Server, bob: str, tmp_path: Path
) -> None:
    alice = dev_principals(server.log_path.parent / "var" / "dev-credentials.json")["alice"]["token"]

    def after_a_change(events: list[SyncEvent]) -> bool:
        if any(isinstance(e, CaughtUp) for e in events) and len(events) == 2:
            body = {
                "vaultId": VAULT,
                "itemId": f"caught-up-{tmp_path.name}",
                "kind": "note",
                "encryptedPayload": {"alg": "A256GCM", "nonce": "bm9uY2U", "ciphertext": "Yw"},
                "wrappedKeys": [{"recipientId": "bob", "wrapAlg": "A256KW", "wrappedKey": "aw"}],
            }
            created = httpx.post(
                f"{server.base_url}/platform.v1.VaultService/CreateItem",
                json=body,
                headers=headers(JSON, alice),
                timeout=30,
            )
            assert created.status_code == 200, created.text
        return any(isinstance(e, Changes) for e in events)

    seen = await run_until(server, bob, "watch", after_a_change)

    assert [(type(event).__name__, caught_up) for event, caught_up in seen] == [
        ("Synced", False),
        ("CaughtUp", True),
        ("Changes", True),
    ]
