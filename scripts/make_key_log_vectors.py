"""Write clients/testdata/key-log.json: the key log test vectors both client packages verify.

The log is made by the server's own code (domain/key_log.py), so the vectors hold what a
real server answers; the cases then serve it honestly, cut short, forked, tampered or
with a gap, and answer GetRecipientKeys truthfully or not. Each case says what a client
that verifies the log must conclude: `ok` with the live keys, or the reason it refuses.
Run once and commit the result; the keys are clients/testdata/recipients.json's.
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from google.protobuf.timestamp_pb2 import Timestamp

from zkplatform.domain.key_log import EMPTY, KeyLogEntry, KeyLogHead, KeyLogRecord, appended
from zkplatform.domain.recipient_keys import RecipientKey, public_key
from zkplatform_api.platform.v1 import directory_pb2

TESTDATA = Path(__file__).resolve().parents[1] / "clients" / "testdata"
TENANT = "acme"
T0 = 1_800_000_000


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def recipient(name: str, principal: str, at: int) -> RecipientKey:
    private = json.loads((TESTDATA / "recipients.json").read_text())["keys"][name]
    public = public_key(json.dumps({k: v for k, v in private.items() if k != "d"}))
    return RecipientKey(public.key_id, TENANT, principal, public.jwk, at)


def served(record: KeyLogRecord, entry: KeyLogEntry | None = None) -> dict[str, Any]:
    entry = entry or record.entry
    message = directory_pb2.KeyLogEntry(
        index=record.index,
        action=entry.action.value,  # the enum value's name, which the constructor takes
        tenant_id=entry.tenant_id,
        principal_id=entry.principal_id,
        key_id=entry.key_id,
        jwk=entry.jwk,
        time=Timestamp(seconds=entry.time),
        hash=b64(record.hash),
    )
    return json_format.MessageToDict(message)


def head(value: KeyLogHead) -> dict[str, Any]:
    return {"size": str(value.size), "hash": b64(value.hash)}


def key(value: RecipientKey) -> dict[str, Any]:
    message = directory_pb2.RecipientKey(
        key_id=value.key_id,
        tenant_id=value.tenant_id,
        principal_id=value.principal_id,
        jwk=value.jwk,
        created_at=Timestamp(seconds=value.created_at),
    )
    return json_format.MessageToDict(message)


def main() -> None:
    alice_x = recipient("x25519-a", "alice", T0)
    bob_x = recipient("x25519-b", "bob", T0 + 60)
    bob_p = recipient("p256-a", "bob", T0 + 120)
    alice_p = recipient("p256-b", "alice", T0 + 240)
    entries = [
        KeyLogEntry.published(alice_x),
        KeyLogEntry.published(bob_x),
        KeyLogEntry.published(bob_p),
        KeyLogEntry.revoked(bob_x.revoked(T0 + 180)),
        KeyLogEntry.published(alice_p),
    ]
    log = list(appended(EMPTY, TENANT, entries))
    full = [served(r) for r in log]
    at = {r.index: r.head for r in log}
    at[0] = EMPTY

    # Another history from entry 3 on: bob's P-256 key replaced by alice's, chained correctly.
    forked = list(appended(at[2], TENANT, [KeyLogEntry.published(replace(bob_p, principal_id="carol")), *entries[3:]]))
    tampered = [dict(e) for e in full]
    tampered[3] = dict(tampered[3], principalId="carol")  # hash left as it was

    cases: list[dict[str, Any]] = [
        {
            "name": "the whole log, from nothing known",
            "known": head(at[0]),
            "entries": full,
            "head": head(at[5]),
            "expect": "ok",
        },
        {
            "name": "the log extending a known head",
            "known": head(at[3]),
            "entries": full[3:],
            "head": head(at[5]),
            "expect": "ok",
        },
        {"name": "nothing new", "known": head(at[5]), "entries": [], "head": head(at[5]), "expect": "ok"},
        {
            "name": "a head below the known one (truncated)",
            "known": head(at[5]),
            "entries": [],
            "head": head(at[4]),
            "expect": "LOG_TRUNCATED",
        },
        {
            "name": "another history after the known head's entry 2 (forked)",
            "known": head(at[3]),
            "entries": [served(r) for r in forked[1:]],
            "head": head(forked[-1].head),
            "expect": "LOG_FORKED",
        },
        {
            "name": "the same size with another hash (forked)",
            "known": head(at[5]),
            "entries": [],
            "head": head(forked[-1].head),
            "expect": "LOG_FORKED",
        },
        {
            "name": "an entry changed, its hash left (tampered)",
            "known": head(at[0]),
            "entries": tampered,
            "head": head(at[5]),
            "expect": "LOG_FORKED",
        },
        {
            "name": "an entry missing (gap)",
            "known": head(at[0]),
            "entries": full[:2] + full[3:],
            "head": head(at[5]),
            "expect": "LOG_GAP",
        },
        {
            "name": "entries running past the head (gap)",
            "known": head(at[0]),
            "entries": full,
            "head": head(at[4]),
            "expect": "LOG_GAP",
        },
        {
            "name": "entries ending before the head (gap)",
            "known": head(at[0]),
            "entries": full[:4],
            "head": head(at[5]),
            "expect": "LOG_GAP",
        },
    ]
    live = {"alice": [alice_x, alice_p], "bob": [bob_p]}
    answers: list[dict[str, Any]] = [
        {
            "name": "the live keys, as the log has them",
            "principalIds": ["alice", "bob"],
            "answer": {"keys": [key(k) for k in live["alice"] + live["bob"]], "logHead": head(at[5])},
            "expect": "ok",
            "keyIds": [k.key_id for k in live["alice"] + live["bob"]],
        },
        {
            "name": "a revoked key offered",
            "principalIds": ["bob"],
            "answer": {"keys": [key(bob_x), key(bob_p)], "logHead": head(at[5])},
            "expect": "KEY_NOT_LIVE",
        },
        {
            "name": "a key given to another principal",
            "principalIds": ["carol"],
            "answer": {"keys": [key(replace(bob_p, principal_id="carol"))], "logHead": head(at[5])},
            "expect": "KEY_NOT_LIVE",
        },
        {
            "name": "a key the log never had",
            "principalIds": ["bob"],
            "answer": {"keys": [key(bob_p), key(recipient("x25519-a", "bob", T0))], "logHead": head(at[5])},
            "expect": "KEY_NOT_LIVE",
        },
        {
            "name": "a key id that is not its key's thumbprint",
            "principalIds": ["bob"],
            "answer": {"keys": [dict(key(bob_p), keyId=alice_x.key_id)], "logHead": head(at[5])},
            "expect": "THUMBPRINT_MISMATCH",
        },
        {
            "name": "a live key left out",
            "principalIds": ["alice"],
            "answer": {"keys": [key(alice_x)], "logHead": head(at[5])},
            "expect": "KEY_HIDDEN",
        },
    ]
    document = {
        "about": "Key log vectors (scripts/make_key_log_vectors.py): for each case, a client that knows the "
        "head `known` and is served `entries` (ListKeyLog after known.size) and `head` must conclude `expect`. "
        "For each answer, a client that verified the whole log (`log`) and is answered GetRecipientKeys "
        "`answer` for `principalIds` must conclude `expect` (with `keyIds`, in order, when ok).",
        "tenantId": TENANT,
        "log": {"entries": full, "head": head(at[5])},
        "cases": cases,
        "answers": answers,
    }
    (TESTDATA / "key-log.json").write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    main()
