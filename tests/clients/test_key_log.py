"""The key log checks of the Python package (zkplatform_client.key_directory), in process: every
case and answer of clients/testdata/key-log.json (made by the server's own code), a few more
the vectors leave out, and the stores that keep a verified state."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from google.protobuf.timestamp_pb2 import Timestamp

from zkplatform.domain.key_log import KeyLogAction as ServerAction
from zkplatform.domain.key_log import KeyLogEntry as ServerEntry
from zkplatform.domain.key_log import KeyLogHead as ServerHead
from zkplatform.domain.key_log import appended
from zkplatform_api.platform.v1.directory_pb2 import GetRecipientKeysResponse, KeyLogAction, KeyLogEntry, KeyLogHead
from zkplatform_client import (
    FileKeyLogStore,
    KeyLogError,
    KeyLogState,
    LoggedKey,
    MemoryKeyLogStore,
    check_recipient_keys,
    extend_key_log,
)

TESTDATA = Path(__file__).resolve().parents[2] / "clients" / "testdata"
VECTORS: dict[str, Any] = json.loads((TESTDATA / "key-log.json").read_text())


def entries(served: list[dict[str, Any]]) -> list[KeyLogEntry]:
    return [json_format.ParseDict(entry, KeyLogEntry()) for entry in served]


def head(served: dict[str, Any]) -> KeyLogHead:
    return json_format.ParseDict(served, KeyLogHead())


def answer(served: dict[str, Any]) -> GetRecipientKeysResponse:
    return json_format.ParseDict(served, GetRecipientKeysResponse())


def verified_log() -> KeyLogState:
    return extend_key_log(KeyLogState(), entries(VECTORS["log"]["entries"]), head(VECTORS["log"]["head"]))


def b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def reason(error: pytest.ExceptionInfo[KeyLogError]) -> str:
    return error.value.reason


# The vectors


@pytest.mark.parametrize("case", VECTORS["cases"], ids=lambda case: case["name"])
def test_every_key_log_case_concludes_as_the_vectors_say(case: dict[str, Any]) -> None:
    known = head(case["known"])
    # What a client knows of a head it verified: its tenant once an entry named it.
    state = KeyLogState(VECTORS["tenantId"] if known.size else "", known.size, known.hash)

    if case["expect"] == "ok":
        extended = extend_key_log(state, entries(case["entries"]), head(case["head"]))
        assert (extended.size, extended.hash) == (head(case["head"]).size, case["head"]["hash"])
    else:
        with pytest.raises(KeyLogError) as raised:
            extend_key_log(state, entries(case["entries"]), head(case["head"]))
        assert reason(raised) == case["expect"]


@pytest.mark.parametrize("case", VECTORS["answers"], ids=lambda case: case["name"])
def test_every_recipient_keys_answer_concludes_as_the_vectors_say(case: dict[str, Any]) -> None:
    state = verified_log()

    if case["expect"] == "ok":
        keys = check_recipient_keys(state, case["principalIds"], answer(case["answer"]))
        assert [key.key_id for key in keys] == case["keyIds"]
    else:
        with pytest.raises(KeyLogError) as raised:
            check_recipient_keys(state, case["principalIds"], answer(case["answer"]))
        assert reason(raised) == case["expect"]


def test_the_verified_log_holds_every_key_with_its_principal_and_revocation() -> None:
    state = verified_log()
    by_id = {e["keyId"]: e for e in VECTORS["log"]["entries"]}

    assert (state.tenant_id, state.size, state.hash) == ("acme", 5, VECTORS["log"]["head"]["hash"])
    assert {key_id: (k.principal_id, k.jwk) for key_id, k in state.keys.items()} == {
        key_id: (e["principalId"], e["jwk"]) for key_id, e in by_id.items()
    }
    assert sorted(key_id for key_id, k in state.keys.items() if k.revoked) == [
        e["keyId"] for e in VECTORS["log"]["entries"] if e["action"] == "KEY_LOG_ACTION_REVOKED"
    ]


# Beyond the vectors


def live_answer() -> dict[str, Any]:
    (ok,) = [case for case in VECTORS["answers"] if case["expect"] == "ok"]
    return dict(ok["answer"])


def test_an_answer_behind_the_verified_head_is_checked_key_by_key_but_may_miss_newer_keys() -> None:
    state = verified_log()
    older = {"size": "4", "hash": VECTORS["log"]["entries"][3]["hash"]}
    only_alice_x = dict(live_answer(), keys=live_answer()["keys"][:1], logHead=older)

    keys = check_recipient_keys(state, ["alice"], answer(only_alice_x))

    assert [k.principal_id for k in keys] == ["alice"]


def test_an_answer_s_head_must_be_one_the_log_shows() -> None:
    state = verified_log()
    beyond = dict(live_answer(), logHead={"size": "6", "hash": state.hash})
    other = dict(live_answer(), logHead={"size": "5", "hash": "B" * 43})

    with pytest.raises(KeyLogError) as truncated:
        check_recipient_keys(state, ["alice", "bob"], answer(beyond))
    with pytest.raises(KeyLogError) as forked:
        check_recipient_keys(state, ["alice", "bob"], answer(other))

    assert (reason(truncated), reason(forked)) == ("LOG_TRUNCATED", "LOG_FORKED")


def test_a_key_of_a_principal_not_asked_for_is_refused() -> None:
    with pytest.raises(KeyLogError) as raised:
        check_recipient_keys(verified_log(), ["alice"], answer(live_answer()))

    assert reason(raised) == "KEY_NOT_LIVE"


def test_entries_of_another_tenant_do_not_extend_it() -> None:
    log = VECTORS["log"]
    acme_at_3 = extend_key_log(
        KeyLogState(), entries(log["entries"][:3]), head({"size": "3", "hash": log["entries"][2]["hash"]})
    )
    globex_state = KeyLogState("globex", acme_at_3.size, acme_at_3.hash)

    with pytest.raises(KeyLogError) as other_tenant:
        extend_key_log(globex_state, entries(log["entries"][3:]), head(log["head"]))

    assert reason(other_tenant) == "LOG_FORKED"


def test_a_revocation_is_for_good() -> None:
    state = verified_log()
    revoked = next(e for e in VECTORS["log"]["entries"] if e["action"] == "KEY_LOG_ACTION_REVOKED")
    # The key published again after its revocation (no server does: KEY_REVOKED), chained by the server's code.
    again = ServerEntry(
        ServerAction.PUBLISHED, "acme", revoked["principalId"], revoked["keyId"], revoked["jwk"], 1_800_003_600
    )
    (record,) = appended(ServerHead(state.size, b64decode(state.hash)), "acme", [again])
    served = KeyLogEntry(
        index=record.index,
        action=KeyLogAction.KEY_LOG_ACTION_PUBLISHED,
        tenant_id="acme",
        principal_id=again.principal_id,
        key_id=again.key_id,
        jwk=again.jwk,
        time=Timestamp(seconds=again.time),
        hash=b64encode(record.hash),
    )

    extended = extend_key_log(state, [served], KeyLogHead(size=record.index, hash=served.hash))

    assert extended.size == 6
    assert extended.keys[revoked["keyId"]].revoked


# The stores


def test_a_state_s_json_is_the_shape_both_packages_write() -> None:
    state = verified_log()

    document = json.loads(state.to_json())

    assert document["version"] == 1
    assert (document["tenantId"], document["size"], document["hash"]) == ("acme", 5, state.hash)
    assert document["keys"][VECTORS["log"]["entries"][1]["keyId"]] == {
        "principalId": "bob",
        "jwk": VECTORS["log"]["entries"][1]["jwk"],
        "revoked": True,
    }
    assert KeyLogState.from_json(state.to_json()) == state


def test_a_state_of_another_format_is_refused() -> None:
    with pytest.raises(ValueError, match="version 1"):
        KeyLogState.from_json(json.dumps({"version": 2, "tenantId": "acme", "size": 0, "hash": "", "keys": {}}))


def test_the_memory_store_keeps_the_last_state() -> None:
    store = MemoryKeyLogStore()
    assert store.load() is None

    store.save(verified_log())

    assert store.load() == verified_log()


def test_the_file_store_round_trips_and_replaces_the_file_whole(tmp_path: Path) -> None:
    store = FileKeyLogStore(tmp_path / "key-log.json")
    assert store.load() is None
    first = KeyLogState("acme", 1, "A" * 43, {"k": LoggedKey("alice", "{}")})
    store.save(first)
    reader = (tmp_path / "key-log.json").open(encoding="utf-8")  # the file as it was when opened

    store.save(verified_log())

    with reader:
        assert KeyLogState.from_json(reader.read()) == first  # renamed over, never rewritten in place
    assert FileKeyLogStore(tmp_path / "key-log.json").load() == verified_log()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["key-log.json"]


def test_a_save_that_fails_leaves_the_last_state_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileKeyLogStore(tmp_path / "key-log.json")
    store.save(verified_log())

    def disk_error(_fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", disk_error)
    with pytest.raises(OSError, match="Input/output"):
        store.save(KeyLogState())

    assert store.load() == verified_log()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["key-log.json"]
