"""The TypeScript package's sealing and key directory as a consumer installs them (the npm tarball in
an empty project, tests/e2e/test_client_packages.py's `project`): tests/e2e/clients/sealing_checks.ts
offline (the format of docs/sealing.md, the limits, share and unshare, every clients/testdata
sealed-*.json vector whichever package sealed it, every key-log.json case and answer, the file
store, no private key in what a key pair or an error shows) and against a --dev server (publish,
recipientKeys, seal and CreateItem by alice, GetItem and open by bob, share, unshare, a revoked key,
a forked or truncated log, another tenant); and the sealing example docs/clients.md shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.server import serving
from tests.e2e.test_client_packages import packages, project, run, tokens  # noqa: F401 # fixtures

TESTDATA = Path(__file__).resolve().parents[2] / "clients" / "testdata"


def checks(project: Path, *args: str) -> dict[str, Any]:  # noqa: F811
    result = run(["node", str(project / "out" / "sealing_checks.js"), *args], project)
    assert result.stderr == ""
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def expected_openings(path: Path) -> dict[str, str]:
    """What each vector of a sealed-*.json file must come to: "ok" (its plaintext), or its error."""
    vectors = json.loads(path.read_text())["vectors"]
    return {v["name"]: "ok" if "plaintext" in v else v["error"] for v in vectors}


@pytest.fixture(scope="module")
def offline(project: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:  # noqa: F811
    """The offline checks' report (they write the file store's state in a directory of their own)."""
    return checks(project, "offline", str(TESTDATA), str(tmp_path_factory.mktemp("offline")))


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


def test_the_key_log_vectors_and_the_file_store(offline: dict[str, Any]) -> None:
    vectors = json.loads((TESTDATA / "key-log.json").read_text())

    report = offline

    assert report["keyLog"]["cases"] == {c["name"]: c["expect"] for c in vectors["cases"]}
    assert report["keyLog"]["answers"] == {
        a["name"]: a["keyIds"] if a["expect"] == "ok" else a["expect"] for a in vectors["answers"]
    }
    verified = report["keyLog"]["verified"]
    assert (verified["size"], verified["hash"]) == (int(vectors["log"]["head"]["size"]), vectors["log"]["head"]["hash"])
    assert {k: v["revoked"] for k, v in verified["keys"].items()} == {
        "tZsee3qIMrOJPFQ9SPHRunnC23pe8zhCleNWHPULEu4": False,
        "JGw1ZdBbYWl02letXRsallKweSjVJec4X9XcN_9teEs": True,
        "5EY5HM2l5_0VGQO-oARcd6WCUtYB7caNuhm1ywjfYZ0": False,
        "QUWDnb4NHoty7E_G8YNTT1uv0i43tnWUDg1zZ1RTdtU": False,
    }
    revoked = vectors["log"]["entries"][3]["keyId"]  # entry 4 revokes bob's X25519 key
    store = report["fileStore"]
    assert store["emptyBefore"]
    assert store["sameJson"]
    assert store["leftovers"] == []
    assert store["loadedSize"] == "5"
    assert store["otherVersion"] == "Error"
    # The file both packages read and write.
    assert store["file"] == {
        "version": 1,
        "tenantId": "acme",
        "size": 5,
        "hash": vectors["log"]["head"]["hash"],
        "keys": {
            entry["keyId"]: {
                "principalId": entry["principalId"],
                "jwk": entry["jwk"],
                "revoked": entry["keyId"] == revoked,
            }
            for entry in vectors["log"]["entries"]
        },
    }


def test_sealing_over_a_server(project: Path, tmp_path: Path) -> None:  # noqa: F811
    with serving(tmp_path, "--dev") as server:
        credentials = server.log_path.parent / "var" / "dev-credentials.json"
        report = checks(project, "server", server.base_url, str(credentials), str(tmp_path))
        log = server.log()

    assert report == {
        "published": {"alice": True, "bob": True},
        "found": True,  # alice's key, then bob's: the live keys of both, checked against the log
        "bobOpens": True,
        "phoneOpens": True,  # shared with bob's second key by wrapped_keys alone
        "afterUnshare": {"bob": "NOT_A_RECIPIENT", "phone": "NOT_A_RECIPIENT", "alice": True, "version": "3"},
        "revoked": {"offered": False, "stillOffered": True, "logged": True},
        # the development data set's two publications, then three, and one revocation
        "aliceLog": {"tenantId": "acme", "size": 6, "savedSize": 6},
        "reloaded": True,
        "forked": "LOG_FORKED",
        "forkedKept": True,
        "truncated": "LOG_TRUNCATED",
        "carol": {"acmeKeys": 0, "logSize": 1},  # globex's log: carol's development key only
    }
    assert not [token for token in tokens(server).values() if token in log]


def test_the_sealing_example(project: Path, tmp_path: Path) -> None:  # noqa: F811
    with serving(tmp_path, "--dev") as server:
        alice, bob = tokens(server)["alice"], tokens(server)["bob"]
        state = tmp_path / "state"
        state.mkdir()
        result = run(["node", str(project / "out" / "sealing.js"), server.base_url, alice, bob, str(state)], project)

    assert result.stderr == ""
    # alice's and bob's keys: the example's and the development data set's
    assert json.loads(result.stdout) == {"recipients": 4, "opened": "door code: 4711", "afterwards": "NOT_A_RECIPIENT"}
    assert alice not in result.stdout
    assert bob not in result.stdout
    saved = json.loads((state / "alice-key-log.json").read_text())
    assert (saved["tenantId"], saved["size"], len(saved["keys"])) == ("acme", 4, 4)
