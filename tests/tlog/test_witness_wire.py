"""zkplatform_tlog.witness_wire against clients/testdata/tlog/witness-wire.json, and one
add-checkpoint exchange through every module: log signs, witness checks and cosigns, log checks."""

from __future__ import annotations

from typing import Any

import pytest

from tests.tlog.vectors import case_id, load, outcome
from zkplatform_tlog import witness_wire
from zkplatform_tlog.checkpoint import Checkpoint
from zkplatform_tlog.errors import WireError
from zkplatform_tlog.merkle import consistency_proof, leaf_hash, root_hash, verify_consistency
from zkplatform_tlog.note import (
    CosignatureVerifier,
    Cosigner,
    NoteSigner,
    NoteVerifier,
    cosignature_timestamp,
    generate_cosigner_key,
    generate_signer_key,
    open_note,
    sign_note,
)
from zkplatform_tlog.witness_wire import (
    encode_add_checkpoint,
    encode_cosignatures,
    encode_size,
    parse_add_checkpoint,
    parse_cosignatures,
    parse_size,
)

VECTORS = load("witness-wire.json")


def body_of(case: dict[str, Any]) -> bytes:
    return case["body"].encode() if "body" in case else bytes.fromhex(case["bodyHex"])


def test_constants() -> None:
    constants = VECTORS["constants"]
    assert constants["path"] == witness_wire.ADD_CHECKPOINT_PATH
    assert constants["sizeContentType"] == witness_wire.SIZE_CONTENT_TYPE
    assert constants["maxProofLines"] == witness_wire.MAX_PROOF_LINES
    assert constants["statuses"] == {
        "ok": witness_wire.STATUS_OK,
        "badRequest": witness_wire.STATUS_BAD_REQUEST,
        "forbidden": witness_wire.STATUS_FORBIDDEN,
        "notFound": witness_wire.STATUS_NOT_FOUND,
        "conflict": witness_wire.STATUS_CONFLICT,
        "unprocessable": witness_wire.STATUS_UNPROCESSABLE,
    }


@pytest.mark.parametrize("case", VECTORS["requests"], ids=case_id)
def test_parse_add_checkpoint(case: dict[str, Any]) -> None:
    body = body_of(case)
    request = outcome(lambda: parse_add_checkpoint(body), case["error"])
    if request is not None:
        assert request.old_size == int(case["oldSize"])
        assert [node.hex() for node in request.proof] == case["proof"]
        assert request.note == case["note"]
        assert request.claimed_origin() == case["claimedOrigin"]
        assert encode_add_checkpoint(request.old_size, request.proof, request.note) == body


@pytest.mark.parametrize("case", VECTORS["encode"], ids=case_id)
def test_encode_add_checkpoint(case: dict[str, Any]) -> None:
    proof = [bytes.fromhex(node) for node in case["proof"]]
    body = outcome(lambda: encode_add_checkpoint(int(case["oldSize"]), proof, case["note"]), case["error"])
    if body is not None:
        assert body == case["body"].encode()


@pytest.mark.parametrize("case", VECTORS["responses"], ids=case_id)
def test_cosignature_responses(case: dict[str, Any]) -> None:
    body = body_of(case)
    lines = outcome(lambda: parse_cosignatures(body), case["error"])
    if lines is not None:
        assert list(lines) == case["lines"]
        assert encode_cosignatures(lines) == body


@pytest.mark.parametrize("case", VECTORS["sizes"], ids=case_id)
def test_size_bodies(case: dict[str, Any]) -> None:
    size = outcome(lambda: parse_size(case["body"].encode()), case["error"])
    if size is not None:
        assert size == int(case["size"])
        assert encode_size(size) == case["body"].encode()


def test_every_reason_is_documented() -> None:
    for section in ("requests", "encode", "responses", "sizes"):
        for case in VECTORS[section]:
            assert case["error"] is None or case["error"] in VECTORS["about"]["reasons"]


def test_encoders_refuse_what_would_not_parse() -> None:
    with pytest.raises(WireError, match="at least one"):
        encode_cosignatures([])
    with pytest.raises(WireError, match="line 1"):
        encode_cosignatures(["— witness.example/w1 AAAA\n"])  # a key ID and no signature
    with pytest.raises(WireError, match="size"):
        encode_size(-1)


def test_an_add_checkpoint_exchange() -> None:
    """A log asks a witness to cosign its new checkpoint; the witness checks it as tlog-witness
    says and answers; the log checks the cosignature and attaches it."""
    log_skey, log_vkey = generate_signer_key("log.example/zk")
    witness_skey, witness_vkey = generate_cosigner_key("witness.example/w1")
    leaves = [leaf_hash(bytes([i])) for i in range(11)]
    old = Checkpoint("log.example/zk", 6, root_hash(leaves[:6]))
    new = Checkpoint("log.example/zk", 11, root_hash(leaves))
    note = sign_note(new.body(), [NoteSigner.from_skey(log_skey)])
    request = encode_add_checkpoint(old.size, consistency_proof(leaves, old.size), note)

    # The witness: the origin picks the log's keys, the note must verify, then the proof.
    received = parse_add_checkpoint(request)
    assert received.claimed_origin() == "log.example/zk"
    opened = open_note(received.note, [NoteVerifier.from_vkey(log_vkey)])
    checkpoint = Checkpoint.parse(opened.text)
    verify_consistency(received.old_size, checkpoint.size, old.root_hash, checkpoint.root_hash, received.proof)
    response = encode_cosignatures([Cosigner.from_skey(witness_skey).cosign(opened.text, 1_700_000_000)])

    # The log: appends the lines to its note and opens it with the witness's key.
    lines = parse_cosignatures(response)
    witness = CosignatureVerifier.from_vkey(witness_vkey)
    assert witness.verify_line(new.body(), lines[0]) == 1_700_000_000
    cosigned = open_note(note + "".join(lines), [witness])
    assert cosigned.signed_by("witness.example/w1")
    assert cosignature_timestamp(cosigned.verified[0].signature) == 1_700_000_000
    assert [signature.name for signature in cosigned.unverified] == ["log.example/zk"]

    # A stale old size: the witness answers 409 with its own size.
    assert parse_size(encode_size(checkpoint.size)) == 11
