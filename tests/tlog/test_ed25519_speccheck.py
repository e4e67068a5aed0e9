"""The Python packages' one Ed25519 check (zkplatform_tlog.ed25519.verify: statements, notes,
cosignatures and, through `cryptography` as it does, sealed items) against the 12 cases of "Taming
the Many EdDSAs" (clients/testdata/ed25519-speccheck.json): OpenSSL's published verdict on each,
which the TypeScript package must give too (tests/e2e/test_ts_tlog.py compares the two lists). And
a signature that only a cofactored check accepts, refused where each kind of signature is checked."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from scripts.ed25519_cofactored import cofactored_only_signature
from zkplatform_tlog import ed25519
from zkplatform_tlog.errors import NoteError
from zkplatform_tlog.note import (
    CosignatureVerifier,
    NoteSignature,
    NoteSigner,
    NoteVerifier,
    cosignature_message,
    generate_cosigner_key,
    generate_signer_key,
    open_note,
    sign_note,
)
from zkplatform_tlog.statements import DeviceKeys, b64url, canonical_public_jwk, ed25519_jwk, verify_statement

SPECCHECK: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[2] / "clients" / "testdata" / "ed25519-speccheck.json").read_text()
)
CASES: list[dict[str, Any]] = SPECCHECK["cases"]
OPENSSL = "OpenSSL-3.0"
BODY = "log.example/acme/key-log/v1\n3\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
SEED = hashlib.sha256(b"zkplatform ed25519 speccheck test key").digest()
KEY = Ed25519PrivateKey.from_private_bytes(SEED)


def verdicts() -> list[bool]:
    """What the packages' check answers on each case, in the file's order."""
    return [
        ed25519.verify(bytes.fromhex(c["pub_key"]), bytes.fromhex(c["message"]), bytes.fromhex(c["signature"]))
        for c in CASES
    ]


def test_the_file_holds_the_twelve_published_cases() -> None:
    assert len(CASES) == 12
    assert {"repository", "commit", "licence", "paper"} <= set(SPECCHECK["about"]["source"])
    # The table's OpenSSL row, PyCA's (cryptography on OpenSSL 1.1.1g) the same.
    published = [c["verdicts"][OPENSSL] for c in CASES]
    assert published == [True, True, True, True, False, False, False, False, False, False, False, True]
    assert [c["verdicts"]["PyCA"] for c in CASES] == published


def test_every_case_gets_openssls_published_verdict() -> None:
    assert verdicts() == [c["verdicts"][OPENSSL] for c in CASES]


@pytest.mark.parametrize("size", [0, 31, 33])
def test_a_key_of_another_size_is_false_not_an_error(size: int) -> None:
    case = CASES[3]
    assert not ed25519.verify(bytes(size), bytes.fromhex(case["message"]), bytes.fromhex(case["signature"]))


@pytest.mark.parametrize("size", [0, 63, 65])
def test_a_signature_of_another_size_is_false_not_an_error(size: int) -> None:
    message = b"a message"
    signature = KEY.sign(message)
    assert ed25519.verify(KEY.public_key().public_bytes_raw(), message, signature)
    assert not ed25519.verify(KEY.public_key().public_bytes_raw(), message, (signature * 2)[:size])


def test_a_statement_signed_cofactored_only_does_not_verify() -> None:
    agreement = X25519PrivateKey.from_private_bytes(SEED).public_key().public_bytes_raw()
    jwk = canonical_public_jwk({"crv": "X25519", "kty": "OKP", "x": b64url(agreement)}, signing=False)
    statement = DeviceKeys("acme", "bob", ed25519_jwk(KEY.public_key()), jwk, 1_800_000_000, "")

    assert verify_statement(statement.signing_jwk, statement, KEY.sign(statement.canonical()))
    assert not verify_statement(statement.signing_jwk, statement, cofactored_only_signature(KEY, statement.canonical()))


def test_a_note_signed_cofactored_only_is_refused() -> None:
    skey, vkey = generate_signer_key("log.example", seed=SEED)
    verifier = NoteVerifier.from_vkey(vkey)
    forged = cofactored_only_signature(KEY, BODY.encode())

    assert open_note(sign_note(BODY, [NoteSigner.from_skey(skey)]), [verifier]).text == BODY
    assert not verifier.verify(BODY, forged)
    with pytest.raises(NoteError) as refused:
        open_note(f"{BODY}\n{NoteSignature(verifier.name, verifier.key_id, forged).line()}", [verifier])
    assert refused.value.reason == "bad-signature"


def test_a_cosignature_made_cofactored_only_is_refused() -> None:
    _, vkey = generate_cosigner_key("witness.example", seed=SEED)
    verifier = CosignatureVerifier.from_vkey(vkey)
    timestamp = 1_800_000_000
    stamp = timestamp.to_bytes(8, "big")
    message = cosignature_message(BODY, timestamp)

    assert verifier.verify(BODY, stamp + KEY.sign(message))
    forged = NoteSignature(verifier.name, verifier.key_id, stamp + cofactored_only_signature(KEY, message))
    assert not verifier.verify(BODY, forged.signature)
    with pytest.raises(NoteError) as refused:
        verifier.verify_line(BODY, forged.line())
    assert refused.value.reason == "bad-signature"
