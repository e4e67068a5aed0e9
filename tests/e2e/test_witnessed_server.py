"""The key log as an operator deploys it: `zkplatform serve` (two workers, SQLite) with a log key
made by `zkplatform log-key generate` and a real `zkplatform witness serve` named in its
witnesses file. A change's answer carries the checkpoint the witness cosigned; while the
witness is down the served checkpoint stays where it was; once it is back, the server's pusher
(its loop in the app's lifespan) gets the new checkpoint cosigned, and the entry shows."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.server import eventually, free_port, serving, zkplatform_command
from tests.rpc.devices import TestDevice, Trust
from tests.witness import serving as witnesses
from zkplatform_api.platform.v1 import directory_pb2
from zkplatform_tlog.note import CosignatureVerifier, NoteVerifier

SERVICE = "/platform.v1.DirectoryService"


def run(tmp_path: Path, *args: str) -> str:
    """A `zkplatform` command run to its end in `tmp_path` (the server's state directory is there)."""
    done = subprocess.run(
        [zkplatform_command(), *args], capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def call(base_url: str, token: str, method: str, body: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(
        f"{base_url}{SERVICE}/{method}",
        json=body,
        headers={"Authorization": f"Bearer {token}", "Connect-Protocol-Version": "1"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def publish(request: directory_pb2.PublishDeviceRequest) -> dict[str, str]:
    return {"statement": request.statement, "signature": request.signature, "endorsement": request.endorsement}


def whole_log(base_url: str, token: str) -> list[bytes]:
    entries: list[bytes] = []
    page_token = ""
    while True:
        page = call(base_url, token, "ListKeyLog", {"pageToken": page_token})
        entries += [entry["data"].encode() for entry in page.get("entries", [])]
        if not (page_token := page.get("nextPageToken", "")):
            return entries


def test_a_witness_cosigns_the_log_and_a_witness_down_holds_new_entries_back(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/zk.db"
    log_vkey = run(tmp_path, "log-key", "generate", "--name", "log.e2e.test", "--out", str(tmp_path / "log.key"))
    witness_key, witness_vkey = witnesses.keygen(tmp_path)
    witness_port = free_port()
    (tmp_path / "witnesses").write_text(f"# the one witness\n{witness_vkey} http://127.0.0.1:{witness_port}\n")
    for args in (
        ("migrate",),
        ("tenant", "add", "acme"),
        ("principal", "add", "bob", "--tenant", "acme", "--role", "member"),
    ):
        run(tmp_path, "admin", "--store", store, *args)
    token = json.loads(run(tmp_path, "admin", "--store", store, "token", "issue", "--principal", "bob"))["accessToken"]
    trust = Trust([NoteVerifier.from_vkey(log_vkey.strip())], [CosignatureVerifier.from_vkey(witness_vkey)], 1)
    phone, laptop = TestDevice(), TestDevice()
    state = tmp_path / "witness-state.db"
    server_args = ("--store", store, "--workers", "2", "--witness-interval", "1", "--witness-timeout", "2")
    files = ("--log-key-files", str(tmp_path / "log.key"), "--witnesses-file", str(tmp_path / "witnesses"))

    with serving(tmp_path, *server_args, *files) as server:
        with witnesses.serving(tmp_path, witness_key, state, log_vkey.strip(), port=witness_port):
            first = call(server.base_url, token, "PublishDevice", publish(phone.publish("bob", int(time.time()))))
            cosigned = trust.open(first["checkpoint"]["note"], "acme", whole_log(server.base_url, token)).size
        request = laptop.publish("bob", int(time.time()), endorser=phone)
        second = call(server.base_url, token, "PublishDevice", publish(request))
        held_back = trust.open(second["checkpoint"]["note"], "acme", whole_log(server.base_url, token)).size
        listed_while_down = whole_log(server.base_url, token)
        with witnesses.serving(tmp_path, witness_key, state, log_vkey.strip(), port=witness_port):

            def both_found() -> bool:
                found = call(server.base_url, token, "GetRecipientKeys", {"principalIds": ["bob"]})
                return len(found.get("devices", [])) == 2  # the phone and the laptop

            assert eventually(both_found)
            found = call(server.base_url, token, "GetRecipientKeys", {"principalIds": ["bob"]})
            log = whole_log(server.base_url, token)

    assert cosigned == 1  # the first answer waited for the witness's cosignature
    assert second["entry"]["index"] == "1"
    assert held_back == 1
    assert len(listed_while_down) == 1
    assert trust.open(found["checkpoint"]["note"], "acme", log).size == 2
    assert [d["deviceId"] for d in found["devices"]] == [phone.device_id, laptop.device_id]
    assert "PRIVATE+KEY" not in server.log()
