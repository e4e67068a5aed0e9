"""zkplatform_tlog.note against clients/testdata/tlog/note.json (golang.org/x/mod sumdb/note, C2SP,
transparency-dev/formats and a published cosigned checkpoint), and round trips of generated keys."""

from __future__ import annotations

from typing import Any

import pytest

from tests.tlog.vectors import case_id, load, outcome
from zkplatform_tlog.errors import KeyFormatError, NoteError, TlogError
from zkplatform_tlog.note import (
    MAX_SIGNATURES,
    CosignatureVerifier,
    Cosigner,
    NoteSignature,
    NoteSigner,
    NoteVerifier,
    Verifier,
    check_key_name,
    cosignature_timestamp,
    generate_cosigner_key,
    generate_signer_key,
    key_id,
    open_note,
    sign_note,
)

VECTORS = load("note.json")
CHECKPOINT_REASONS = load("checkpoint.json")["about"]["reasons"]
BODY = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"


def verifier(kind: str, vkey: str) -> Verifier:
    return NoteVerifier.from_vkey(vkey) if kind == "note" else CosignatureVerifier.from_vkey(vkey)


@pytest.mark.parametrize("case", VECTORS["keygen"], ids=lambda case: f"{case['kind']}: {case['name']}")
def test_keygen(case: dict[str, Any]) -> None:
    generate = generate_signer_key if case["kind"] == "note" else generate_cosigner_key
    assert generate(case["name"], seed=bytes.fromhex(case["seed"])) == (case["skey"], case["vkey"])


@pytest.mark.parametrize("case", VECTORS["vkeys"], ids=case_id)
def test_vkeys(case: dict[str, Any]) -> None:
    key = outcome(lambda: verifier(case["kind"], case["vkey"]), case["error"])
    if key is not None:
        assert isinstance(key, NoteVerifier | CosignatureVerifier)
        assert (key.name, key.key_id.hex(), key.public_key.hex()) == (case["name"], case["keyId"], case["publicKey"])
        assert key.vkey() == case["vkey"]


@pytest.mark.parametrize("case", VECTORS["skeys"], ids=case_id)
def test_skeys(case: dict[str, Any]) -> None:
    def parse() -> NoteVerifier | CosignatureVerifier:
        if case["kind"] == "note":
            return NoteSigner.from_skey(case["skey"]).verifier()
        return Cosigner.from_skey(case["skey"]).verifier()

    key = outcome(parse, case["error"])
    if key is not None:
        assert key.vkey() == case["vkey"]


@pytest.mark.parametrize("case", VECTORS["keyManglings"], ids=lambda case: case["kind"])
def test_key_manglings(case: dict[str, Any]) -> None:
    key = case["key"]
    parse = NoteVerifier.from_vkey if case["kind"] == "note-vkey" else NoteSigner.from_skey
    parse(key)
    substrings = [key[i:j] for i in range(len(key) + 1) for j in range(i + 1, len(key) + 1) if (i, j) != (0, len(key))]
    increments = [key[:i] + chr(ord(key[i]) + 1) + key[i + 1 :] for i in range(len(key))]
    for mangled in substrings + increments:
        with pytest.raises(KeyFormatError):
            parse(mangled)


@pytest.mark.parametrize("case", VECTORS["sign"], ids=case_id)
def test_sign(case: dict[str, Any]) -> None:
    signers = [NoteSigner.from_skey(skey) for skey in case["skeys"]]
    note = outcome(lambda: sign_note(case["text"], signers), case["error"])
    if note is not None:
        assert note == case["note"]
        assert open_note(note, [signer.verifier() for signer in signers]).text == case["text"]


@pytest.mark.parametrize("case", VECTORS["open"], ids=case_id)
def test_open(case: dict[str, Any]) -> None:
    verifiers = [verifier(key["kind"], key["vkey"]) for key in case["vkeys"]]
    opened = outcome(lambda: open_note(case["note"], verifiers), case["error"])
    if opened is not None:
        assert opened.text == case["text"]
        assert [signature.line() for signature in opened.verified] == case["verified"]
        assert [signature.line() for signature in opened.unverified] == case["unverified"]


@pytest.mark.parametrize("case", VECTORS["cosign"], ids=case_id)
def test_cosign(case: dict[str, Any]) -> None:
    cosigner = Cosigner.from_skey(case["skey"])
    line = outcome(lambda: cosigner.cosign(case["checkpoint"], int(case["timestamp"])), case["error"])
    if line is not None:
        assert line == case["line"]
        assert cosigner.verifier().verify_line(case["checkpoint"], line) == int(case["timestamp"])


@pytest.mark.parametrize("case", VECTORS["cosignatureLines"], ids=case_id)
def test_cosignature_lines(case: dict[str, Any]) -> None:
    key = CosignatureVerifier.from_vkey(case["vkey"])
    timestamp = outcome(lambda: key.verify_line(case["checkpoint"], case["line"]), case["error"])
    if timestamp is not None:
        assert timestamp == int(case["timestamp"])
        signature = NoteSignature.parse_line(case["line"])
        assert cosignature_timestamp(signature.signature) == timestamp
        assert key.verify(case["checkpoint"], signature.signature)


def test_every_reason_is_documented() -> None:
    reasons = VECTORS["about"]["reasons"].keys() | CHECKPOINT_REASONS.keys()
    for section in ("vkeys", "skeys", "sign", "open", "cosign", "cosignatureLines"):
        for case in VECTORS[section]:
            assert case["error"] is None or case["error"] in reasons, case["desc"]


def test_generated_keys_round_trip() -> None:
    skey, vkey = generate_signer_key("log.example/zk")
    signer, note_verifier = NoteSigner.from_skey(skey), NoteVerifier.from_vkey(vkey)
    assert signer.verifier() == note_verifier
    assert note_verifier.key_id == key_id("log.example/zk", 0x01, note_verifier.public_key)
    note = sign_note(BODY, [signer])
    assert open_note(note, [note_verifier]).signed_by("log.example/zk")
    assert not open_note(note, [note_verifier]).signed_by("log.example/other")

    cosigner_skey, cosigner_vkey = generate_cosigner_key("witness.example/w9")
    cosigner = Cosigner.from_skey(cosigner_skey)
    assert cosigner.verifier() == CosignatureVerifier.from_vkey(cosigner_vkey)
    line = cosigner.cosign(BODY, 1)
    assert cosigner.verifier().verify_line(BODY, line) == 1
    assert open_note(note + line, [cosigner.verifier()]).verified == (NoteSignature.parse_line(line),)


def test_private_keys_stay_out_of_reprs() -> None:
    # PRIVATE+KEY+<name>+<hash>+<base64>: the base64 may hold "+" itself, so split from the left.
    skey, _ = generate_signer_key("log.example/zk")
    seed_text = skey.split("+", 4)[4]
    assert seed_text not in repr(NoteSigner.from_skey(skey))
    cosigner_skey, _ = generate_cosigner_key("witness.example/w1")
    assert cosigner_skey.split("+", 4)[4] not in repr(Cosigner.from_skey(cosigner_skey))


@pytest.mark.parametrize(
    "name",
    ["", "a+b", "a b", "a\tb", "a\u00a0b", "a\u2003b", "a\u3000b", "a\u2028b", "a\x85b", "a\x01b", "a\ud800b"],
)
def test_bad_key_names(name: str) -> None:
    with pytest.raises(KeyFormatError) as raised:
        check_key_name(name)
    assert raised.value.reason == "bad-key-name"
    with pytest.raises(KeyFormatError):
        generate_signer_key(name)


@pytest.mark.parametrize(
    "name", ["example.com/foo", "oid/1.3.6.1.4.1.44363.47.1", "PeterNeumann", "ünïcødé", "a\u200bb"]
)
def test_good_key_names(name: str) -> None:
    check_key_name(name)


def test_a_lone_surrogate_makes_a_note_malformed() -> None:
    signer = NoteSigner.from_skey(VECTORS["skeys"][0]["skey"])
    note = sign_note("text\n", [signer])
    with pytest.raises(NoteError) as raised:
        open_note(note.replace("text", "te\ud800xt"), [signer.verifier()])
    assert raised.value.reason == "malformed-note"
    with pytest.raises(NoteError):
        sign_note("te\ud800xt\n", [signer])


def test_signers_are_limited_like_signatures() -> None:
    signers = [NoteSigner.from_skey(generate_signer_key(f"k{i}")[0]) for i in range(MAX_SIGNATURES + 1)]
    with pytest.raises(NoteError) as raised:
        sign_note(BODY, signers)
    assert raised.value.reason == "too-many-signatures"
    note = sign_note(BODY, signers[:MAX_SIGNATURES])
    assert len(open_note(note, [signers[0].verifier()]).unverified) == MAX_SIGNATURES - 1


def test_messages_do_not_quote_the_note() -> None:
    signer = NoteSigner.from_skey(VECTORS["skeys"][0]["skey"])
    note = sign_note("secret-ish text\n" * 200, [signer])
    for tampered in (note.replace("secret", "Secret", 1), note + note.rsplit("\n\n", 1)[1] * 100):
        with pytest.raises(TlogError) as raised:
            open_note(tampered, [signer.verifier()])
        assert "secret" not in str(raised.value)
        assert len(str(raised.value)) < 120


def test_key_objects_made_directly_are_checked() -> None:
    peter = NoteVerifier.from_vkey(VECTORS["vkeys"][0]["vkey"])
    with pytest.raises(KeyFormatError) as raised:
        NoteVerifier(peter.name, bytes(4), peter.public_key)
    assert raised.value.reason == "key-id-mismatch"
    with pytest.raises(KeyFormatError) as raised:
        CosignatureVerifier(peter.name, peter.key_id, peter.public_key)  # the key ID of type 0x01
    assert raised.value.reason == "key-id-mismatch"
    with pytest.raises(KeyFormatError) as raised:
        NoteVerifier("bad name", peter.key_id, peter.public_key)
    assert raised.value.reason == "bad-key-name"
    with pytest.raises(KeyFormatError) as raised:
        NoteVerifier(peter.name, peter.key_id, peter.public_key[:31])
    assert raised.value.reason == "malformed-key"
