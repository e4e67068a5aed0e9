"""The sync clients (clients/ts VaultSync, clients/python zkplatform_client) against a real
`zkplatform serve` on SQLite: list, then follow the changes from the cursor; through a server
restart (resume from the last cursor, changes made meanwhile arrive), a purge (CURSOR_EXPIRED:
start over with a fresh listing), a restore from a backup (CURSOR_AHEAD: start over too; and
with the epoch rotated, CURSOR_EXPIRED even once new changes passed the client's cursor) and
refusals (stop with a clear error)."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.connect import JSON, headers
from tests.e2e.server import Server, free_port, serving, stop, zkplatform_command
from tests.e2e.test_durable import ENV, seeded

ROOT = Path(__file__).resolve().parents[2]
TS_CLIENT = ROOT / "clients" / "ts"
PY_CLIENT = ROOT / "clients" / "python"
VAULT = "acme-shared"
EXPECT_TIMEOUT_S = 30.0
Event = dict[str, Any]


class SyncProcess:
    """A sync example running as a process; its JSON lines are read as they come."""

    def __init__(self, command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
            cwd=cwd,
        )
        self.seen: list[Event] = []
        self.stdout: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def expect(self, predicate: Callable[[Event], bool], timeout: float = EXPECT_TIMEOUT_S) -> Event:
        """The first event from now on that matches, within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                line = self._lines.get(timeout=remaining)
            except queue.Empty:
                break
            if line is None:
                msg = f"the sync ended ({self.process.wait(timeout=10)}) first:\n{self.report()}"
                raise AssertionError(msg)
            self.stdout.append(line)
            event: Event = json.loads(line)
            self.seen.append(event)
            if predicate(event):
                return event
        msg = f"no matching event within {timeout}s:\n{self.report()}"
        raise AssertionError(msg)

    def stop(self) -> int:
        """SIGTERM: the example stops its sync and exits 0."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=10)

    def stderr(self) -> str:
        assert self.process.stderr is not None
        return self.process.stderr.read() if self.process.poll() is not None else ""

    def report(self) -> str:
        return "".join(self.stdout[-20:]) + self.stderr()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
        self._reader.join(timeout=10)
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()


@contextlib.contextmanager
def syncing(command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> Iterator[SyncProcess]:
    sync = SyncProcess(command, env, cwd)
    try:
        yield sync
    finally:
        sync.close()


def state(after: str | None = None, versions: dict[str, str] | None = None) -> Callable[[Event], bool]:
    """A state event (after `after`, if given) holding the items at these versions."""

    def matches(event: Event) -> bool:
        if event["event"] != "state" or (after is not None and event["after"] != after):
            return False
        return all(event["items"].get(item_id) == v for item_id, v in (versions or {}).items())

    return matches


def event(name: str) -> Callable[[Event], bool]:
    return lambda e: e["event"] == name


def listed(server: Server, token: str) -> dict[str, str]:
    """The vault's live items and versions, as ListItems answers them."""
    answer = httpx.post(
        f"{server.base_url}/platform.v1.VaultService/ListItems",
        json={"vaultId": VAULT, "pageSize": 1000},
        headers=headers(JSON, token),
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return {i["itemId"]: i["version"] for i in answer.json().get("items", [])}


def call(server: Server, token: str, rpc: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = httpx.post(
        f"{server.base_url}/platform.v1.VaultService/{rpc}",
        json={"vaultId": VAULT, **body},
        headers=headers(JSON, token),
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def content(note: str) -> dict[str, Any]:
    return {
        "kind": "login",
        "titleHash": f"th-{note}",
        "encryptedPayload": {"alg": "A256GCM", "nonce": "bm9uY2U", "ciphertext": "Yw"},
        "wrappedKeys": [{"recipientId": "bob", "wrapAlg": "A256KW", "wrappedKey": "aw"}],
    }


@pytest.fixture(scope="module")
def ts_example(ts_tools: Path) -> Path:
    """The compiled TS example."""
    return ts_tools / "sync-example.js"


def example_command(client: str, ts_example: Path, base_url: str, token: str, mode: str) -> list[str]:
    if client == "ts":
        return ["node", str(ts_example), base_url, token, VAULT, mode]
    return [sys.executable, str(PY_CLIENT / "tools" / "sync_example.py"), base_url, token, VAULT, mode]


PY_ENV = {"PYTHONPATH": str(PY_CLIENT)}


def age_tombstone(db: Path, item_id: str, days: int) -> None:
    """Make a tombstone look deleted `days` ago, as if the retention period had passed."""
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        changed = conn.execute(
            "UPDATE items SET updated_at = updated_at - ? WHERE vault_id = ? AND item_id = ? AND deleted = 1",
            (days * 86_400, VAULT, item_id),
        ).rowcount
    assert changed == 1


@pytest.mark.parametrize(("client", "mode"), [("ts", "watch"), ("python", "watch"), ("ts", "poll"), ("python", "poll")])
def test_sync_through_a_restart_and_a_purge(tmp_path: Path, ts_example: Path, client: str, mode: str) -> None:
    db = tmp_path / "zk.db"
    url = f"sqlite:///{db}"
    bob = seeded(url).token("bob")
    backup = tmp_path / "backup.db"
    shutil.copyfile(db, backup)  # the store as seeded: no server has opened it yet
    port = free_port()
    command = example_command(client, ts_example, f"http://127.0.0.1:{port}", bob, mode)

    with contextlib.ExitStack() as stack:
        server = stack.enter_context(serving(tmp_path, "--store", url, env=ENV, port=port))
        sync = stack.enter_context(syncing(command, PY_ENV))
        first = sync.expect(state(after="synced"))
        assert first["items"] == listed(server, bob)
        call(server, bob, "CreateItem", {"itemId": "sync-1", **content("1")})
        sync.expect(state(after="changes", versions={"sync-1": "1"}))

        # The server dies (kill -9: the stream drops without a word) and comes back on its port; changes
        # made meanwhile through another server arrive after it, from the client's cursor.
        os.killpg(server.process.pid, signal.SIGKILL)
        server.process.wait(timeout=10)
        sync.expect(event("reconnecting"))
        with serving(tmp_path, "--store", url, env=ENV) as elsewhere:
            call(elsewhere, bob, "UpdateItem", {"itemId": "sync-1", "baseVersion": "1", **content("2")})
            call(elsewhere, bob, "CreateItem", {"itemId": "sync-2", **content("1")})
        with serving(tmp_path, "--store", url, env=ENV, port=port) as server:
            resumed = sync.expect(state(versions={"sync-1": "2", "sync-2": "1"}))
            assert resumed["after"] == "changes"
            assert resumed["items"] == listed(server, bob)
        assert not [e for e in sync.seen if e["event"] == "restarting"]

        # A purge of a delete the client never saw: CURSOR_EXPIRED, then a fresh listing without the item.
        with serving(tmp_path, "--store", url, env=ENV) as elsewhere:
            call(elsewhere, bob, "DeleteItem", {"itemId": "sync-2", "baseVersion": "1"})
        age_tombstone(db, "sync-2", days=2)
        purge = subprocess.run(
            [zkplatform_command(), "admin", "--store", url, "purge-tombstones", "--older-than-days", "1"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**os.environ, **ENV},
        )
        assert purge.returncode == 0, purge.stderr
        assert "purged 1 " in purge.stdout
        with serving(tmp_path, "--store", url, env=ENV, port=port) as server:
            restarted = sync.expect(event("restarting"))
            assert restarted["reason"] == "CURSOR_EXPIRED"
            relisted = sync.expect(state(after="synced"))
            assert "sync-2" not in relisted["items"]
            assert relisted["items"] == listed(server, bob)
            # and it follows the vault again
            call(server, bob, "DeleteItem", {"itemId": "sync-1", "baseVersion": "2"})
            final = sync.expect(state(after="changes"))
            assert "sync-1" not in final["items"]
            assert final["items"] == listed(server, bob)

        # A restore from before the client's cursor: CURSOR_AHEAD, then a fresh listing of what was restored.
        for path in tmp_path.glob("zk.db*"):
            path.unlink()
        shutil.copyfile(backup, db)
        with serving(tmp_path, "--store", url, env=ENV, port=port) as server:
            assert sync.expect(event("restarting"))["reason"] == "CURSOR_AHEAD"
            restored = sync.expect(state(after="synced"))
            assert restored["items"] == first["items"] == listed(server, bob)
        assert sync.stop() == 0
    assert bob not in "".join(sync.stdout)


def admin(url: str, *args: str) -> str:
    """`zkplatform admin ARGS` on the store, as an operator types it: what it printed."""
    done = subprocess.run(
        [zkplatform_command(), "admin", "--store", url, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **ENV},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(("client", "mode"), [("ts", "watch"), ("python", "watch"), ("ts", "poll"), ("python", "poll")])
def test_sync_after_a_restore_and_an_epoch_rotation(tmp_path: Path, ts_example: Path, client: str, mode: str) -> None:
    """A restore whose new changes pass the client's cursor before it reconnects: by its sequence
    alone the client would take them for changes it has, and miss them. Its epoch, which the
    restore rotated, makes it start over instead."""
    db = tmp_path / "zk.db"
    url = f"sqlite:///{db}"
    bob = seeded(url).token("bob")
    backup = tmp_path / "backup.db"
    shutil.copyfile(db, backup)  # at sequence 6
    port = free_port()
    command = example_command(client, ts_example, f"http://127.0.0.1:{port}", bob, mode)

    with contextlib.ExitStack() as stack:
        server = stack.enter_context(serving(tmp_path, "--store", url, env=ENV, port=port))
        sync = stack.enter_context(syncing(command, PY_ENV))
        first = sync.expect(state(after="synced"))
        for n in (1, 2, 3):
            call(server, bob, "CreateItem", {"itemId": f"lost-{n}", **content("1")})
        seen = sync.expect(state(versions={"lost-3": "1"}))
        assert (seen["cursor"], seen["epoch"]) == ("9", first["epoch"])

        stop(server)  # the database is lost: the servers stop, the backup is restored, the epoch rotated
        sync.expect(event("reconnecting"))
        for path in tmp_path.glob("zk.db*"):
            path.unlink()
        shutil.copyfile(backup, db)
        assert "the store's epoch is now" in admin(url, "epoch", "rotate")
        with serving(tmp_path, "--store", url, env=ENV) as elsewhere:  # the client cannot reach this one
            for n in (1, 2, 3, 4):  # sequences 7 to 10: past the client's 9
                call(elsewhere, bob, "CreateItem", {"itemId": f"new-{n}", **content("1")})

        with serving(tmp_path, "--store", url, env=ENV, port=port) as server:
            assert sync.expect(event("restarting"))["reason"] == "CURSOR_EXPIRED"
            relisted = sync.expect(state(after="synced"))
            assert relisted["items"] == listed(server, bob)
            assert {f"new-{n}" for n in (1, 2, 3, 4)} <= relisted["items"].keys()
            assert not {f"lost-{n}" for n in (1, 2, 3)} & relisted["items"].keys()
            assert relisted["epoch"] not in ("", first["epoch"])
        assert sync.stop() == 0


@pytest.mark.parametrize("client", ["ts", "python"])
@pytest.mark.parametrize(
    ("principal", "vault", "code"),
    [(None, VAULT, "unauthenticated"), ("bob", "acme-private", "permission_denied")],
)
def test_sync_stops_on_a_refusal(
    tmp_path: Path, ts_example: Path, client: str, principal: str | None, vault: str, code: str
) -> None:
    with serving(tmp_path, "--dev") as server:
        credentials = json.loads((tmp_path / "var" / "dev-credentials.json").read_text())
        tokens = {p["principalId"]: p["token"] for p in credentials["tenants"][0]["principals"]}
        token = tokens[principal] if principal else "zkp_not_a_token"
        command = example_command(client, ts_example, server.base_url, token, "watch")
        command[command.index(VAULT)] = vault
        with syncing(command, PY_ENV) as sync:
            stopped = sync.expect(event("stopped"))
            assert sync.process.wait(timeout=10) == 1

    assert stopped["code"].lower().replace("_", "") == code.replace("_", "")
    assert f"sync of vault {vault} stopped" in stopped["message"]
    assert token not in "".join(sync.stdout)
