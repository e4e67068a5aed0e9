"""The TypeScript package's sealing, devices and key directory as a consumer installs them (the npm
tarball in an empty project, tests/e2e/test_client_packages.py's `project`):
tests/e2e/clients/sealing_checks.ts offline (the format of docs/sealing.md version 2, its
signature verified here with cryptography over the statement rebuilt from the doc; the limits,
share and unshare; every clients/testdata sealed-*.json vector of both packages and both versions,
each run and answered as it says; key files both ways; no extractable private key of the
package's own; devices' keys and statements; the key log state file both packages read; no
private key in what a key or an error shows; X-Wing keys read alike by both packages' statement
checks and by the KEM library) and against a --dev server (the cosigned log
verified; seal by alice for the verified devices, open by bob against his verified log, who
sealed; a server that adds a wrapped key or replays a version, a signer the log lacks; an endorsed
second device shared with, then revoked, what it sealed answered as revoked; a reset surfaced,
alerted and refused until acknowledged; a server that lies about the log); and the sealing example
docs/clients.md shows."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from tests.clients.conftest import PY_CLIENT  # noqa: F401 # the Python package's sources on the path
from tests.e2e.server import serving
from tests.e2e.test_client_packages import packages, project, run, tokens  # noqa: F401 # fixtures
from tests.e2e.test_ts_key_transparency import relative_imports
from zkplatform_client import DeviceKeyPair
from zkplatform_client.key_log import LogUpdate, Me, TrustPolicy, state_document, verify_update
from zkplatform_client.key_log_store import format_state, parse_state
from zkplatform_tlog.statements import DeviceKeys, canonical_public_jwk, parse_statement, verify_statement

TESTDATA = Path(__file__).resolve().parents[2] / "clients" / "testdata"
VECTORS = json.loads((TESTDATA / "key-transparency.json").read_text())
SIGNERS: dict[str, Any] = json.loads((TESTDATA / "signers.json").read_text())["signers"]
REASONS = {
    "DELETED",
    "MALFORMED",
    "UNSUPPORTED",
    "BINDING_MISMATCH",
    "SIGNER_UNKNOWN",
    "SIGNATURE_INVALID",
    "RECIPIENTS_MISMATCH",
    "VERSION_MISMATCH",
    "NOT_A_RECIPIENT",
    "DECRYPTION_FAILED",
    "COMMITMENT_MISMATCH",
}
# Version 1 vectors whose expectation version 2 changed (as tests/clients/test_sealing.py has
# it): a version 1 payload relabelled version 2 was UNSUPPORTED when only version 1 was known;
# now it is a version 2 payload without its commitment (docs/sealing.md, step 1).
V1_SUPERSEDED = {"payload version 2": "MALFORMED"}
PYTHON_PASSPHRASE = "the driver's passphrase: pässwörd"  # a test key file's, public by being here


def checks(project: Path, *args: str) -> dict[str, Any]:  # noqa: F811
    result = run(["node", str(project / "out" / "sealing_checks.js"), *args], project)
    assert result.stderr == ""
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def expected_answers(path: Path) -> list[dict[str, Any]]:
    """What each vector of a sealed-*.json file must come to, in the shape of version 2's expect
    (version 1's files say plaintext or error)."""
    answers = []
    for vector in json.loads(path.read_text())["vectors"]:
        if "expect" in vector:
            answers.append(vector["expect"])
        elif "plaintext" in vector:
            answers.append({"ok": True, "plaintext": vector["plaintext"], "formatVersion": 1, "signer": None})
        else:
            answers.append({"ok": False, "reason": V1_SUPERSEDED.get(vector["name"], vector["error"])})
    return answers


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
def python_device() -> DeviceKeyPair:
    return DeviceKeyPair.generate("X-Wing")


def xwing_jwk(public: bytes, **members: str) -> dict[str, str]:
    return {"alg": "X-Wing", "kty": "AKP", "pub": b64url(public), **members}


P25519 = 2**255 - 19
X25519_ORDER_8 = 325606250916557431795983626356110631294008115727848805560023387167927233504
XWING_PUBLIC = b64url_decode(json.loads(DeviceKeyPair.generate("X-Wing").agreement_jwk)["pub"])
MLKEM, X25519 = XWING_PUBLIC[:1184], XWING_PUBLIC[1184:]
# X-Wing public keys, good and not, and whether @hpke/hybridkem-x-wing's encapsulation takes each
# (mlkem checks FIPS 203's coefficients, noble's X25519 refuses an all-zero secret; neither asks
# for a canonical u, which the key directory does, so that one key has one id).
XWING_KEYS: dict[str, tuple[dict[str, str], str]] = {
    "a key": (xwing_jwk(XWING_PUBLIC), "ok"),
    "a coefficient of q": (xwing_jwk(bytes([0x01, 0x0D]) + XWING_PUBLIC[2:]), "refused"),
    "the last coefficient 4095": (xwing_jwk(MLKEM[:1150] + bytes([0xFF, 0xFF]) + MLKEM[1152:] + X25519), "refused"),
    "X25519 part u = 0": (xwing_jwk(MLKEM + bytes(32)), "refused"),
    "X25519 part u = 1": (xwing_jwk(MLKEM + (1).to_bytes(32, "little")), "refused"),
    "X25519 part of order 8": (
        xwing_jwk(MLKEM + X25519_ORDER_8.to_bytes(32, "little")),
        "refused",
    ),
    "X25519 part u = p": (xwing_jwk(MLKEM + P25519.to_bytes(32, "little")), "refused"),
    "X25519 part u = p + 9": (xwing_jwk(MLKEM + (P25519 + 9).to_bytes(32, "little")), "ok"),
    "X25519 part with bit 255 set": (xwing_jwk(MLKEM + X25519[:31] + bytes([X25519[31] | 0x80])), "ok"),
    "a byte short": (xwing_jwk(XWING_PUBLIC[:-1]), "refused"),
    "with a private member": (xwing_jwk(XWING_PUBLIC, priv=b64url(bytes(32))), "ok"),
}


def python_reads(jwk: dict[str, str]) -> str:
    try:
        canonical_public_jwk(jwk, signing=False)
    except ValueError:
        return "refused"
    return "ok"


@pytest.fixture(scope="module")
def offline_work(tmp_path_factory: pytest.TempPathFactory, python_device: DeviceKeyPair) -> Path:
    """The offline checks' directory: the Python package's state file and a key file it wrote in
    it; theirs written to it."""
    work = tmp_path_factory.mktemp("offline")
    (work / "python-state.json").write_text(python_state())
    key_file = python_device.to_key_file(PYTHON_PASSPHRASE, tenant_id="acme", principal_id="bob")
    (work / "python-key-file.jwe").write_text(key_file)
    (work / "python-key-file.json").write_text(
        json.dumps(
            {
                "passphrase": PYTHON_PASSPHRASE,
                "deviceId": python_device.device_id,
                "agreementKeyId": python_device.agreement_key_id,
            }
        )
    )
    cases = [{"name": name, "jwk": jwk} for name, (jwk, _) in XWING_KEYS.items()]
    (work / "python-xwing-keys.json").write_text(json.dumps(cases))
    return work


@pytest.fixture(scope="module")
def offline(project: Path, offline_work: Path) -> dict[str, Any]:  # noqa: F811
    """The offline checks' report."""
    return checks(project, "offline", str(TESTDATA), str(offline_work))


def test_sealing_offline(offline: dict[str, Any]) -> None:
    report = offline

    keys = ["crv", "d", "kty", "x"]
    common = {"opens": True, "formatVersion": 2, "sealedBy": True, "reloadedOpens": True, "sameKeyId": True}
    assert report["roundTrip"] == {
        "X25519": {**common, "privateJwkMembers": keys},
        "P-256": {**common, "privateJwkMembers": [*keys, "y"]},
        "X-Wing": {**common, "privateJwkMembers": ["alg", "kty", "priv", "pub"]},
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
        "noSigner": "TypeError",
        "versionZero": "TypeError",
    }


def test_the_format_is_docs_sealing_md_s(offline: dict[str, Any]) -> None:
    """The payload's fields as the doc says, and its signature verified by cryptography over the
    statement rebuilt from the doc alone (canonical JSON, members sorted, no whitespace)."""
    report = offline["format"]
    payload = report["payload"]
    statement = {
        "aad": payload["aad"],
        "ciphertextSha256": b64url(hashlib.sha256(b64url_decode(payload["ciphertext"])).digest()),
        "commitment": payload["commitment"],
        "format": 2,
        "nonce": payload["nonce"],
        "recipients": sorted(report["recipients"]),
        "signer": payload["signer"],
        "type": "zkplatform.sealed-item",
        "version": 7,  # what seal() was asked to sign for
    }
    signing_key = Ed25519PublicKey.from_public_bytes(b64url_decode(json.loads(report["signingJwk"])["x"]))

    signing_key.verify(
        b64url_decode(payload["signature"]), json.dumps(statement, sort_keys=True, separators=(",", ":")).encode()
    )
    assert {k: v for k, v in report.items() if k not in {"payload", "recipients", "signingJwk"}} == {
        "alg": "A256GCM",
        "version": 2,
        "nonceBytes": 12,
        "aad": '{"itemId":"checks-1","kind":"note","tenantId":"acme","v":2,"vaultId":"acme-shared"}',
        "ciphertextBytes": len("format") + 16,
        "commitmentBytes": 32,
        "signatureBytes": 64,
        "signerIsDevice": True,
        "sortedByRecipientId": True,
        "recipientIdIsHexKeyId": True,
        "wrapAlgs": {
            "X25519": "HPKE-Base-X25519-SHA256-A256GCM",
            "P-256": "HPKE-Base-P256-SHA256-A256GCM",
            "X-Wing": "HPKE-Base-XWing-SHA256-A256GCM",
        },
        # enc || the content key and its tag; X-Wing's enc is ML-KEM-768's ciphertext, then X25519's
        "wrappedKeyBytes": {"X25519": 32 + 32 + 16, "P-256": 65 + 32 + 16, "X-Wing": 1088 + 32 + 32 + 16},
        "xwingJwk": {"members": ["alg", "kty", "pub"], "pubBytes": 1184 + 32},
    }


def test_share_and_unshare(offline: dict[str, Any]) -> None:
    report = offline["sharing"]

    assert report.pop("replantedSignedBy")["principalId"] == "bob"  # signed by the device that shared
    assert report == {
        "plantedRefused": "NOT_A_RECIPIENT",  # an entry of an unknown wrap_alg for it
        "shareKeepsExisting": True,
        "shareKeepsUnknownOfOthers": True,  # one not shared with again is kept as it is
        "shareAdds": 1,
        "sameContent": True,
        "friendOpensShared": True,
        "sharedSignedBy": "alice",
        "sharedServedAsBefore": "SIGNATURE_INVALID",  # signed for version 2, served as 1
        "plantedReplaced": True,  # share put a usable key in the unknown entry's place
        "resignedOnly": {"sameKeys": True, "opens": True, "version": "4"},
        "shareByNonRecipient": "NOT_A_RECIPIENT",
        "removedAfterUnshare": "NOT_A_RECIPIENT",
        "keptAfterUnshare": True,
        "addedByUnshare": True,
        "unsharedWrappedKeys": 3,
        "newNonce": True,
        "oldContentKey": "COMMITMENT_MISMATCH",  # the old content key, wrapped for the right key
        "v1Shared": {"formatVersion": 2, "opener": 2, "added": True, "wrappedKeys": 2, "newNonce": True},
    }


def test_every_sealed_vector_opens_as_it_says(offline: dict[str, Any]) -> None:
    """Every case of every file, both packages' and both versions' (sealed-v2-python.json is the
    Python package's: required, so that its cases are run rather than skipped), in order."""
    files = sorted(TESTDATA.glob("sealed-*.json"))

    report = offline["vectors"]

    assert [path.name for path in files] == [
        "sealed-python.json",
        "sealed-ts.json",
        "sealed-v2-python.json",
        "sealed-v2-ts.json",
    ]
    assert sorted(report) == [path.name for path in files]
    for path in files:
        expected = expected_answers(path)
        assert len(report[path.name]) == len(expected), path.name
        assert report[path.name] == expected, path.name


def test_the_version_2_vectors_cover_every_reason_every_key_type_and_a_revoked_signer() -> None:
    recipients = json.loads((TESTDATA / "recipients.json").read_text())["keys"]
    key_types = {name: jwk.get("crv") or jwk["alg"] for name, jwk in recipients.items()}
    for name in ("sealed-v2-python.json", "sealed-v2-ts.json"):
        vectors = json.loads((TESTDATA / name).read_text())["vectors"]
        expected = [v["expect"] for v in vectors]

        assert {e["reason"] for e in expected if not e["ok"]} == REASONS, name
        assert {key_types[v["recipient"]] for v in vectors if v["expect"]["ok"]} == {"X25519", "P-256", "X-Wing"}, name
        assert {e["signerLive"] for e in expected if e["ok"]} == {True, False}, name


def test_key_files_both_ways(offline: dict[str, Any], offline_work: Path) -> None:
    report = offline["keyFiles"]
    written = json.loads((offline_work / "ts-key-file.json").read_text())

    read_by_python = DeviceKeyPair.from_key_file((offline_work / "ts-key-file.jwe").read_text(), written["passphrase"])

    assert (read_by_python.device_id, read_by_python.agreement_key_id) == (
        written["deviceId"],
        written["agreementKeyId"],
    )
    assert read_by_python.recipient_key().curve == "X-Wing"  # an X-Wing device's key file, both ways
    assert report == {
        "header": {
            "members": ["alg", "enc", "p2c", "p2s"],
            "alg": "PBES2-HS512+A256KW",
            "enc": "A256GCM",
            "p2c": 210_000,
            "p2sBytes": 16,
        },
        "iterations": 210_000,
        "parts": 5,
        "readBack": True,
        "fromKeyFile": True,
        "opensSealed": True,
        "newSaltEachTime": True,
        "wrongPassphrase": "WRONG_PASSPHRASE",
        "damagedCiphertext": "WRONG_PASSPHRASE",
        "damagedKey": "WRONG_PASSPHRASE",
        "notJwe": "MALFORMED",
        "plainWithoutSaying": "MALFORMED",
        "plainSaid": True,
        "plainMembers": ["agreementKeyJwk", "deviceId", "principalId", "signingKeyJwk", "tenantId", "type"],
        "jweAsPlain": "MALFORMED",
        "writePlainWithoutSaying": "TypeError",
        "writeEmptyPassphrase": "TypeError",
        "writeTooFewIterations": "RangeError",
        "tooFewIterations": "UNSUPPORTED",
        "tooManyIterations": "UNSUPPORTED",
        "otherAlg": "UNSUPPORTED",
        "otherEnc": "UNSUPPORTED",
        # Both packages' committed files, with what key-files.json says they hold.
        "committed": {
            name: {"holds": True, "wrongPassphrase": "WRONG_PASSPHRASE"}
            for name in ("key-file-python.jwe", "key-file-ts.jwe")
        },
        # The one the Python package wrote for this run.
        "fromPython": {
            "deviceId": True,
            "agreementKeyId": True,
            "agreementKeyType": "X-Wing",
            "wrongPassphrase": "WRONG_PASSPHRASE",
        },
    }


def test_the_package_makes_no_private_key_extractable(offline: dict[str, Any]) -> None:
    """The WebCrypto keys the package makes itself (agreement keys, AES and HKDF keys) are never
    extractable; the HPKE and JOSE libraries' own keys (HPKE's ephemeral sender keys, PBES2's
    derived keys) are theirs, made and dropped within one call."""
    report = offline["extractable"]

    assert report["packageExtractable"] == 0
    assert report["privateKeys"] >= 4  # two generated, one imported, one from a key file
    assert report["packageKeys"] > report["privateKeys"]


def test_no_private_key_in_what_keys_and_errors_show(offline: dict[str, Any]) -> None:
    report = offline["secrets"]
    recipients = json.loads((TESTDATA / "recipients.json").read_text())["keys"]
    key_files = json.loads((TESTDATA / "key-files.json").read_text())["files"]
    secrets = [jwk.get("d") or jwk["priv"] for jwk in recipients.values()]
    secrets += [s["privateJwk"]["d"] for s in SIGNERS.values()]
    secrets += [about["passphrase"] for about in key_files.values()] + [PYTHON_PASSPHRASE]

    assert report["secretsShown"] == 0
    assert report["checked"] > 400  # every refusal of every vector file among them
    key_id = "tZsee3qIMrOJPFQ9SPHRunnC23pe8zhCleNWHPULEu4"  # x25519-a's
    assert report["inspected"] == f"RecipientKeyPair {{ curve: 'X25519', keyId: '{key_id}' }}"
    assert report["device"]
    # Nor in the whole report.
    assert not [secret for secret in secrets if secret in json.dumps(offline, ensure_ascii=False)]


def test_sealing_devices_and_key_files_import_nothing_of_nodes(project: Path) -> None:  # noqa: F811
    """What a browser entry point will reuse: sealing.js and devices.js, and every module they
    import, reach no node:* module, nor Buffer or process; only these libraries."""
    dist = project / "node_modules" / "zkplatform-client" / "dist"
    pending = [dist / "sealing.js", dist / "devices.js"]
    seen: dict[Path, str] = {}
    outside: set[str] = set()
    while pending:  # every module they import, transitively
        path = pending.pop().resolve()
        if path in seen:
            continue
        seen[path] = path.read_text()
        own, others = relative_imports(seen[path])
        outside |= others
        pending += [path.parent / spec for spec in own]

    assert {"key-wrapping.js", "sealing-statement.js", "sealing-v1.js", "recipient-keys.js", "bytes.js"} <= {
        path.name for path in seen
    }
    assert {spec.split("/")[0] for spec in outside} == {"@bufbuild", "@hpke", "@noble", "jose"}
    assert not [spec for spec in outside if spec.startswith("node:")]
    code = {path.name: re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.DOTALL) for path, text in seen.items()}
    assert not [name for name, text in code.items() if re.search(r"\b(Buffer|process|require)\b", text)]


def test_devices_keys_and_statements(offline: dict[str, Any]) -> None:
    report = offline["devices"]
    xwing = report.pop("xwing")
    statement = parse_statement(xwing["statement"])  # an X-Wing device the TypeScript package made
    assert isinstance(statement, DeviceKeys)

    assert statement.canonical().decode() == xwing["statement"]
    assert len(xwing["statement"]) > 1900  # the 1216-byte key: about 2,000 characters, under PublishDevice's 4096
    assert json.loads(statement.agreement_jwk)["alg"] == "X-Wing"
    assert verify_statement(statement.signing_jwk, statement, b64url_decode(xwing["signature"]))
    assert xwing["parsesToItself"]
    assert xwing["agreementJwkMembers"] == ["alg", "kty", "pub"]

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


def test_x_wing_keys_are_read_alike(offline: dict[str, Any]) -> None:
    """Each package's key directory takes the same X-Wing keys (the TypeScript package compares the
    ML-KEM coefficients itself, the Python package has cryptography import them); where a key's
    content is in question, @hpke/hybridkem-x-wing's encapsulation refuses what they refuse, but for
    an X25519 part not canonical (u = p + 9, bit 255), which only one key id per key requires."""
    report = offline["xwingKeys"]

    assert sorted(report) == sorted(XWING_KEYS)
    for name, (jwk, library) in XWING_KEYS.items():
        python = python_reads(jwk)
        assert report[name]["statement"] == ("ok" if python == "ok" else "RangeError"), name
        assert report[name]["library"] == library, name
        assert report[name]["recipient"] == ("ok" if python == "ok" else "UNSUPPORTED"), name
    assert [name for name, (jwk, _) in XWING_KEYS.items() if python_reads(jwk) == "ok"] == ["a key"]


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
    # The development data set's log: alice's, bob's and dave's demo devices, cosigned by the witness.
    assert report["demo"] == {"size": 3, "alice": [ids["alice"]], "devices": ["alice", "bob", "dave"]}
    assert report["found"] == {"alice": [ids["alice"]], "bob": [ids["bob"]]}
    assert report["bobOpens"]
    # Who sealed, as bob's verified log has it: alice's demo device, live.
    assert report["sealedBy"] == {"principalId": "alice", "deviceId": ids["alice"], "live": True, "formatVersion": 2}
    # The item served changed: a wrapped key the sealer did not sign for, a version it was not.
    assert report["servedChanged"] == {"keyAdded": "RECIPIENTS_MISMATCH", "replayedAsNewer": "VERSION_MISMATCH"}
    assert report["strangerSigned"] == "SIGNER_UNKNOWN"  # a device the log does not hold
    # bob's phone, endorsed by his demo device: in the log alice verifies, shared with (signed
    # again by alice for version 2), opens.
    assert report["added"]
    alice_signed = {"principalId": "alice", "deviceId": ids["alice"], "live": True}
    assert report["phone"] == {"found": 1, "opens": True, "sealedBy": alice_signed, "sharedVersion": "2", "live": True}
    # What the phone sealed: signed by it, live; still opens once it is revoked, answered so.
    phone_signed = {"principalId": "bob", "deviceId": ids["phone"]}
    assert report["byPhone"] == {"before": {**phone_signed, "live": True}, "after": {**phone_signed, "live": False}}
    assert report["afterUnshare"] == {
        "bob": "NOT_A_RECIPIENT",
        "phone": "NOT_A_RECIPIENT",
        "alice": True,
        "version": "3",
    }
    assert report["afterRevocation"] == [ids["bob"]]
    # Entries: 0 alice, 1 bob, 2 dave, 3 the phone, 4 its revocation, 5 bob's reset, 6 his laptop.
    assert report["reset"] == {
        "index": 5,
        "afterReset": [],  # no live device of bob's: nothing to seal for, nothing refused
        "republished": True,
        "refusedBeforeAcknowledged": "RESET_UNACKNOWLEDGED",
        "aliceAloneMeanwhile": [ids["alice"]],
        "pendingResets": [{"principalId": "bob", "index": 5}],
        "afterAcknowledged": [ids["laptop"]],
    }
    assert report["alerts"] == {
        # bob's demo device: the reset, then the laptop it did not endorse (not the phone it did)
        "bob": [
            {"index": 5, "kind": "PRINCIPAL_RESET", "deviceId": ""},
            {"index": 6, "kind": "DEVICE_ADDED", "deviceId": ids["laptop"]},
        ],
        "phone": [{"index": 4, "kind": "DEVICE_REVOKED", "deviceId": ids["phone"]}],  # not what came before it
        "laptop": [],  # a first device after a reset: not the history it starts over from
    }
    assert report["aliceAlerts"] == []  # another principal's devices and resets are not alice's alerts
    assert report["reloaded"] == {"size": 7, "sameAsSaved": True}
    assert report["savedFile"] == {
        "format": "zkplatform.key-log-state",
        "version": 2,
        "size": 7,
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
    # sealed for alice's and bob's demo devices, as alice's device verified the log (which holds
    # dave's too); bob sees alice sealed it
    assert json.loads(result.stdout) == {
        "recipients": 2,
        "opened": "door code: 4711",
        "sealedBy": "alice",
        "afterwards": "NOT_A_RECIPIENT",
    }
    assert not [secret for secret in secrets if secret in result.stdout]
    saved = parse_state((state / "alice-key-log.json").read_text())
    assert (saved.tenant_id, saved.size, [d.principal_id for d in saved.devices.values()]) == (
        "acme",
        3,
        ["alice", "bob", "dave"],
    )
