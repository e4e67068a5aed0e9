"""Every case of clients/testdata/key-transparency.json (scripts/make_key_transparency_vectors.py),
step by step, through the Python package's pure core (zkplatform_client.key_log): what the
TypeScript package runs too. The count is pinned, so that a case lost or skipped fails."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from zkplatform_client import (
    Alert,
    KeyLogError,
    KeyLogState,
    LogUpdate,
    Me,
    TrustPolicy,
    acknowledge_reset,
    recipient_keys,
    verify_update,
)

VECTORS: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[2] / "clients" / "testdata" / "key-transparency.json").read_text()
)
CASES: list[dict[str, Any]] = VECTORS["cases"]
CASE_COUNT = 87  # what the script writes: change both together


def policy_of(document: dict[str, Any]) -> TrustPolicy:
    return TrustPolicy(
        log_keys=document["logKeys"],
        witnesses=document["witnesses"],
        quorum=document["quorum"],
        max_age_seconds=document["maxAgeSeconds"],
        allow_no_witnesses=document.get("allowNoWitnesses", False),
    )


def me_of(document: dict[str, Any] | None) -> Me | None:
    if document is None:
        return None
    return Me(document["principalId"], document["deviceIds"], document["statements"])


def update_of(document: dict[str, Any]) -> LogUpdate:
    return LogUpdate(
        checkpoint=document["checkpoint"],
        start_index=document["startIndex"],
        entries=[(entry["index"], entry["data"]) for entry in document["entries"]],
        consistency_proof=[base64.b64decode(proof, validate=True) for proof in document["consistencyProof"]],
    )


def outcome(state: KeyLogState, alerts: list[Alert]) -> dict[str, Any]:
    resets = state.unacknowledged_resets
    return {
        "ok": True,
        "size": state.size,
        "alerts": [{"index": a.index, "kind": a.kind, "deviceId": a.device_id} for a in alerts],
        "live": {p: [d.agreement_key_id for d in state.live_devices(p)] for p in state.principals()},
        "unacknowledgedResets": [{"principalId": r.principal_id, "index": r.index} for r in resets],
    }


def updated(
    state: KeyLogState | None, step: dict[str, Any], policy: TrustPolicy, me: Me | None
) -> tuple[KeyLogState | None, dict[str, Any]]:
    """The state after the step's update and what it concluded; on a refusal, the state before."""
    try:
        verified, alerts = verify_update(state, update_of(step["update"]), policy, VECTORS["tenantId"], step["now"], me)
    except KeyLogError as error:
        return state, {"ok": False, "reason": error.reason}
    return verified, outcome(verified, alerts)


def asked(state: KeyLogState, principals: list[str]) -> dict[str, Any]:
    try:
        keys = recipient_keys(state, principals)
    except KeyLogError as error:
        return {"ok": False, "reason": error.reason}
    return {"ok": True, "keys": {p: [key.key_id for key in found] for p, found in keys.items()}}


def test_the_vectors_hold_every_case() -> None:
    assert len(CASES) == CASE_COUNT
    assert len({case["name"] for case in CASES}) == CASE_COUNT
    reasons = {step["expect"].get("reason") for case in CASES for step in case["steps"] if "expect" in step}
    assert reasons >= {
        "CHECKPOINT_MALFORMED",
        "CHECKPOINT_UNSIGNED",
        "CHECKPOINT_ORIGIN",
        "BELOW_QUORUM",
        "CHECKPOINT_STALE",
        "LOG_TRUNCATED",
        "LOG_FORKED",
        "LOG_GAP",
        "ENTRY_MALFORMED",
        "ENTRY_UNSUPPORTED",
        "SIGNATURE_INVALID",
        "NOT_ENDORSED",
        "RESET_UNACKNOWLEDGED",
    }


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_every_case_concludes_as_the_vectors_say(case: dict[str, Any]) -> None:
    policy = policy_of(case.get("policy", VECTORS["policy"]))
    me = me_of(case["me"])
    state: KeyLogState | None = None
    for number, step in enumerate(case["steps"]):
        if "update" in step:
            before = state
            state, concluded = updated(state, step, policy, me)
            assert concluded == step["expect"], f"step {number}"
            assert concluded["ok"] or state is before
        elif "me" in step:
            me = me_of(step["me"])
        elif "acknowledgeReset" in step:
            assert state is not None
            state = acknowledge_reset(state, step["acknowledgeReset"]["principalId"], step["acknowledgeReset"]["index"])
        else:
            assert state is not None
            assert asked(state, step["recipientKeys"]) == step["expect"], f"step {number}"
