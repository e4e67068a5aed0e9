"""The TypeScript package's sealing, devices and key directory as a consumer installs them (the npm
tarball in an empty project, tests/e2e/test_client_packages.py's `project`):
tests/e2e/clients/sealing_checks.ts offline (the format of docs/sealing.md, the limits, share and
unshare, every clients/testdata sealed-*.json vector whichever package sealed it, devices' keys and
statements, the key log state file both packages read, no private key in what a key or an error
shows) and against a --dev server (the cosigned log verified; seal by alice for the verified
devices, open by bob; an endorsed second device shared with, then revoked; a reset surfaced,
alerted and refused until acknowledged; a server that lies: a forked, truncated, gapped or
rewritten log, a device the log does not hold, a stale checkpoint, an unknown witness or log key,
another tenant's log); and the sealing example docs/clients.md shows."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from tests.clients.conftest import PY_CLIENT  # noqa: F401 # the Python package's sources on the path
from tests.e2e.server import serving
from tests.e2e.test_client_packages import packages, project, run, tokens  # noqa: F401 # fixtures
from zkplatform_client.key_log import LogUpdate, Me, TrustPolicy, state_document, verify_update
from zkplatform_client.key_log_store import format_state, parse_state

TESTDATA = Path(__file__).resolve().parents[2] / "clients" / "testdata"
VECTORS = json.loads((TESTDATA / "key-transparency.json").read_text())


def checks(project: Path, *args: str) -> dict[str, Any]:  # noqa: F811
    result = run(["node", str(project / "out" / "sealing_checks.js"), *args], project)
    assert result.stderr == ""
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def expected_openings(path: Path) -> dict[str, str]:
    """What each vector of a sealed-*.json file must come to: "ok" (its plaintext), or its error."""
    vectors = json.loads(path.read_text())["vectors"]
    return {v["name"]: "ok" if "plaintext" in v else v["error"] for v in vectors}


def python_state() -> str:
    """A key log state file the Python package writes: the vectors' first case in one update, as
    bob's device verified it (the TypeScript checks read it)."""
    case = next(c for c in VECTORS["cases"] if c["name"].startswith("happy: the same log in one update"))
    step = case["steps"][0]
    update = LogUpdate(
        step["update"]["checkpoint"],
        step["update"]["startIndex"],
        [(entry["index"], entry["data"]) for entry in step["update"]["entries"]],
        [base64.b64decode(proof) for proof in step["update"]["consistencyProof"]],
    )
    document = VECTORS["policy"]
    policy = TrustPolicy(document["logKeys"], document["witnesses"], document["quorum"], document["maxAgeSeconds"])
    state, _ = verify_update(None, update, policy, VECTORS["tenantId"], step["now"], Me("bob", ["an id"], []))
    return format_state(state)


@pytest.fixture(scope="module")
def offline_work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The offline checks' directory: the Python package's state file in it; theirs written to it."""
    work = tmp_path_factory.mktemp("offline")
    (work / "python-state.json").write_text(python_state())
    return work


@pytest.fixture(scope="module")
def offline(project: Path, offline_work: Path) -> dict[str, Any]:  # noqa: F811
    """The offline checks' report."""
    return checks(project, "offline", str(TESTDATA), str(offline_work))


def test_sealing_offline(offline: dict[str, Any]) -> None:
    report = offline

    keys = ["crv", "d", "kty", "x"]
    assert report["roundTrip"] == {
        "X25519": {"opens": True, "reloadedOpens": True, "sameKeyId": True, "privateJwkMembers": keys},
        "P-256": {"opens": True, "reloadedOpens": True, "sameKeyId": True, "privateJwkMembers": [*keys, "y"]},
    }
    assert report["format"] == {
        "alg": "A256GCM",
        "version": 1,
        "nonceBytes": 12,
        "aad": '{"itemId":"checks-1","kind":"note","tenantId":"acme","v":1,"vaultId":"acme-shared"}',
        "ciphertextBytes": len("format") + 16,
        "recipientIdIsHexKeyId": True,
        "wrapAlg": "ECDH-ES+A256KW",
        "header": {
            "alg": "ECDH-ES+A256KW",
            "enc": "A256GCM",
            "kidIsKeyId": True,
            "epk": ["crv", "kty", "x", "y"],
            "members": ["alg", "enc", "epk", "kid"],
        },
    }
    assert report["recipients"] == {
        "wrappedKeys": 3,  # seven recipients given, three keys among them
        "opened": [True, True, True],
        "none": "NO_RECIPIENTS",
        "max": 256,
        "tooMany": "TOO_LARGE",
        "largest": "ok",
        "tooLarge": "TOO_LARGE",
        "privateAsRecipient": "UNSUPPORTED",
        "unknownCurve": "UNSUPPORTED",
        "notOnCurve": "UNSUPPORTED",
        "badContext": "TypeError",
    }
    assert report["sharing"] == {
        "shareKeepsExisting": True,  # an unknown wrap_alg's key too
        "shareAdds": 1,
        "friendOpensShared": True,
        "shareByNonRecipient": "NOT_A_RECIPIENT",
        "removedAfterUnshare": "NOT_A_RECIPIENT",
        "keptAfterUnshare": True,
        "addedByUnshare": True,
        "unsharedWrappedKeys": 3,
        "newNonce": True,
        "oldContentKey": "DECRYPTION_FAILED",
    }
    assert report["secrets"]["secretsShown"] == 0
    assert report["secrets"]["checked"] > 40
    key_id = "tZsee3qIMrOJPFQ9SPHRunnC23pe8zhCleNWHPULEu4"  # x25519-a's
    assert report["secrets"]["inspected"] == f"RecipientKeyPair {{ curve: 'X25519', keyId: '{key_id}' }}"


def test_every_sealed_vector_opens_as_it_says(offline: dict[str, Any]) -> None:
    files = sorted(TESTDATA.glob("sealed-*.json"))

    report = offline["vectors"]

    assert "sealed-ts.json" in report
    assert report == {path.name: expected_openings(path) for path in files}
    reasons = {reason for path in files for reason in expected_openings(path).values()}
    assert reasons >= {"ok", "UNSUPPORTED", "BINDING_MISMATCH", "NOT_A_RECIPIENT", "DECRYPTION_FAILED"}


def test_devices_keys_and_statements(offline: dict[str, Any]) -> None:
    report = offline["devices"]

    device_keys = ["agreementKey", "created", "endorser", "format", "principalId", "signingKey", "tenantId", "type"]
    assert report == {
        "readBack": True,
        "signingKeyJwk": ["crv", "d", "kty", "x"],  # the names and order of the credentials file's
        "privateKeyJwk": ["crv", "d", "kty", "x", "y"],
        "first": {"members": device_keys, "endorser": "", "verifies": True, "parsesToItself": True, "request": True},
        "endorsed": {"endorser": True, "byDevice": True, "byEndorser": True, "endorsementLength": 86},
        "endorsedByAnother": "TypeError",  # the statement names another endorser
        "endorsedNotSigned": "TypeError",  # the new device's signature is not of this statement
        "revocation": {
            "members": ["created", "device", "format", "principalId", "revoker", "tenantId", "type"],
            "revoker": True,
            "verifies": True,
        },
        "mismatchedSigningKey": "TypeError",
        "notCanonical": "ENTRY_MALFORMED",
        "unknownType": "ENTRY_UNSUPPORTED",
    }


def test_the_key_log_state_file_is_the_python_packages(offline: dict[str, Any], offline_work: Path) -> None:
    report = offline["stateFile"]
    written = (offline_work / "ts-state.json").read_text()

    read_by_python = parse_state(written)

    assert report["emptyBefore"]
    assert report["sameState"]
    assert (report["loadedSize"], report["loadedLive"]) == (4, 1)  # bob's endorsed device, then revoked
    assert report["leftovers"] == []
    assert report["file"]["format"] == "zkplatform.key-log-state"
    assert report["file"]["version"] == 2
    # Each package reads the other's file as the other wrote it.
    assert report["python"] == state_document(parse_state((offline_work / "python-state.json").read_text()))
    assert {k: v for k, v in json.loads(written).items() if k not in {"format", "version"}} == state_document(
        read_by_python
    )
    assert read_by_python.me is not None
    assert (read_by_python.size, read_by_python.me.principal_id, read_by_python.me.statements) == (
        4,
        "alice",
        ("a statement alice made",),
    )
    # Another version (1: the hash chain of packages 1.1), another format, entries that do not
    # make the checkpoint, and what is not JSON are refused, not read as an empty state.
    refusals = ("versionOne", "otherFormat", "rewritten", "notJson")
    assert [report[name] for name in refusals] == ["Error"] * len(refusals)


def test_the_key_directory_over_a_server(project: Path, tmp_path: Path) -> None:  # noqa: F811
    work = tmp_path / "work"
    work.mkdir()
    with serving(tmp_path, "--dev") as server:
        credentials = server.log_path.parent / "var" / "dev-credentials.json"
        report = checks(project, "server", str(credentials), str(work))
        log = server.log()
    document = json.loads(credentials.read_text())
    demo = {p["principalId"]: p for t in document["tenants"] for p in t["principals"]}
    ids = report["ids"]

    assert (ids["alice"], ids["bob"]) == (demo["alice"]["deviceId"], demo["bob"]["deviceId"])
    # The development data set's log: alice's and bob's demo devices, cosigned by the witness.
    assert report["demo"] == {"size": 2, "alice": [ids["alice"]], "devices": ["alice", "bob"]}
    assert report["found"] == {"alice": [ids["alice"]], "bob": [ids["bob"]]}
    assert report["bobOpens"]
    # bob's phone, endorsed by his demo device: in the log alice verifies, shared with, opens.
    assert report["added"]
    assert report["phone"] == {"found": 1, "opens": True, "live": True}
    assert report["afterUnshare"] == {
        "bob": "NOT_A_RECIPIENT",
        "phone": "NOT_A_RECIPIENT",
        "alice": True,
        "version": "3",
    }
    assert report["afterRevocation"] == [ids["bob"]]
    # Entries: 0 alice, 1 bob, 2 the phone, 3 its revocation, 4 bob's reset, 5 his laptop.
    assert report["reset"] == {
        "index": 4,
        "afterReset": [],  # no live device of bob's: nothing to seal for, nothing refused
        "republished": True,
        "refusedBeforeAcknowledged": "RESET_UNACKNOWLEDGED",
        "aliceAloneMeanwhile": [ids["alice"]],
        "pendingResets": [{"principalId": "bob", "index": 4}],
        "afterAcknowledged": [ids["laptop"]],
    }
    assert report["alerts"] == {
        # bob's demo device: the reset, then the laptop it did not endorse (not the phone it did)
        "bob": [
            {"index": 4, "kind": "PRINCIPAL_RESET", "deviceId": ""},
            {"index": 5, "kind": "DEVICE_ADDED", "deviceId": ids["laptop"]},
        ],
        "phone": [{"index": 3, "kind": "DEVICE_REVOKED", "deviceId": ids["phone"]}],  # not what came before it
        "laptop": [],  # a first device after a reset: not the history it starts over from
    }
    assert report["aliceAlerts"] == []  # another principal's devices and resets are not alice's alerts
    assert report["reloaded"] == {"size": 6, "sameAsSaved": True}
    assert report["savedFile"] == {
        "format": "zkplatform.key-log-state",
        "version": 2,
        "size": 6,
        "me": {"principalId": "alice", "deviceIds": [ids["alice"]], "statements": []},
    }
    assert report["lies"] == {
        "forked": {"reason": "LOG_FORKED", "kept": True},  # the held root is not the server's
        "truncated": {"reason": "LOG_TRUNCATED", "kept": True},  # the held size is past the server's
        "entryDropped": {"reason": "LOG_GAP", "kept": True},
        "entryRewritten": {"reason": "LOG_FORKED", "kept": True},
        "deviceAdded": {"reason": "KEY_NOT_LIVE", "kept": False},  # the log verified (and kept) first
        "deviceTwice": {"reason": "KEY_NOT_LIVE", "kept": False},
        "emptyPage": {"reason": "LOG_GAP", "kept": True},  # pages that would never end are not followed
        "pastCheckpoint": {"reason": "LOG_GAP", "kept": True},
        "stale": {"reason": "CHECKPOINT_STALE", "kept": True},  # two hours on, no fresh cosignature
        "unknownWitness": {"reason": "BELOW_QUORUM", "kept": True},
        "unknownLogKey": {"reason": "CHECKPOINT_UNSIGNED", "kept": True},
        "otherTenant": {"reason": "CHECKPOINT_ORIGIN", "kept": True},
    }
    # globex's log: carol's demo device only; acme's principals have none there.
    assert report["carol"] == {"keys": {"alice": [], "bob": [], "carol": [demo["carol"]["keyId"]]}, "size": 1}
    assert not [token for token in tokens(server).values() if token in log]


def test_the_sealing_example(project: Path, tmp_path: Path) -> None:  # noqa: F811
    state = tmp_path / "state"
    state.mkdir()
    with serving(tmp_path, "--dev") as server:
        credentials = server.log_path.parent / "var" / "dev-credentials.json"
        result = run(["node", str(project / "out" / "sealing.js"), str(credentials), str(state)], project)
        principals = [p for t in json.loads(credentials.read_text())["tenants"] for p in t["principals"]]
    secrets = [p["token"] for p in principals]
    secrets += [json.loads(p[name])["d"] for p in principals for name in ("signingKeyJwk", "privateKeyJwk")]

    assert result.stderr == ""
    # alice's and bob's demo devices, as alice's device verified the log
    assert json.loads(result.stdout) == {"recipients": 2, "opened": "door code: 4711", "afterwards": "NOT_A_RECIPIENT"}
    assert not [secret for secret in secrets if secret in result.stdout]
    saved = parse_state((state / "alice-key-log.json").read_text())
    assert (saved.tenant_id, saved.size, [d.principal_id for d in saved.devices.values()]) == (
        "acme",
        2,
        ["alice", "bob"],
    )
