"""Sealed items in the Python package (zkplatform_client.sealing), in process: the version 2 format
of docs/sealing.md on every key type (X25519, P-256, X-Wing), checked with cryptography alone; who sealed; sharing and
unsharing; every attack of issue 38 refused with its reason (each test fails without its
defence); and every committed vector of clients/testdata, both packages' and both versions'."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from google.protobuf import json_format

from tests.clients.sealing_support import (
    CONTEXT,
    KEYS,
    PRIVATE_JWKS,
    SIGNERS,
    TESTDATA,
    Directory,
    copy_of,
    item_of,
    signer_keys,
)
from zkplatform_api.platform.v1.vault_pb2 import Item, WrappedKey
from zkplatform_client import (
    DeviceKeyPair,
    Opened,
    RecipientKey,
    RecipientPrivateKey,
    SealContext,
    SealedBy,
    SealingError,
    open_item,
    seal,
    sealing,
    share,
    unshare,
)
from zkplatform_client.sealing import MAX_PLAINTEXT, MAX_RECIPIENTS, SUITES, Curve
from zkplatform_tlog.statements import b64url, b64url_decode, canonical_json

CURVES: list[Curve] = ["X25519", "P-256", "X-Wing"]
# Each key type's test key, the name of its suite in wrap_alg, and its KEM's encapsulation (Nenc).
NAMES: dict[Curve, tuple[str, str, int]] = {
    "X25519": ("x25519-a", "X25519", 32),
    "P-256": ("p256-a", "P256", 65),
    "X-Wing": ("xwing-a", "XWing", 1120),
}
ALICE = signer_keys("alice-laptop")
BOB = signer_keys("bob-phone")
DIRECTORY = Directory.of_vectors()
ALICE_SEALED = SealedBy("alice", ALICE.device_id, live=True)


def reason_of(item: Item, key: RecipientPrivateKey, directory: Directory = DIRECTORY) -> str:
    with pytest.raises(SealingError) as raised:
        open_item(item, key, directory)
    return raised.value.reason


def content_key(item: Item, name: str) -> bytes:
    """The content key a wrapped key holds, unwrapped with cryptography's HPKE alone (not the package)."""
    key = KEYS[name]
    (wrapped,) = [k for k in item.wrapped_keys if k.recipient_id == key.recipient_id]
    info = canonical_json({"aad": item.encrypted_payload.aad, "keyId": key.key_id, "type": "zkplatform.item-key"})
    return SUITES[key.curve].hpke.decrypt(b64url_decode(wrapped.wrapped_key), key.agreement_key, info=info)


def derived(content: bytes) -> tuple[bytes, bytes]:
    """The AES key and the commitment, derived as docs/sealing.md says, with cryptography alone."""
    out = HKDF(hashes.SHA256(), 64, None, b"zkplatform sealed item v2").derive(content)
    return out[:32], out[32:]


def sealed_for(*names: str, text: bytes = b"a note", signer: DeviceKeyPair = ALICE, version: int = 1) -> Item:
    return item_of(seal(text, [KEYS[n].public_jwk for n in names], CONTEXT, signer, version=version))


# The format, checked with cryptography alone


@pytest.mark.parametrize("curve", CURVES)
def test_a_sealed_item_is_the_format_of_docs_sealing_md(curve: Curve) -> None:
    name, suite, enc = NAMES[curve]

    item = sealed_for(name, text=b"the secret note")

    payload = item.encrypted_payload
    assert (payload.alg, payload.version, payload.signer) == ("A256GCM", 2, ALICE.device_id)
    assert len(b64url_decode(payload.nonce)) == 12
    aad = b'{"itemId":"item-1","kind":"note","tenantId":"acme","v":2,"vaultId":"acme-shared"}'
    assert b64url_decode(payload.aad) == aad
    (wrapped,) = item.wrapped_keys
    assert (wrapped.recipient_id, wrapped.wrap_alg) == (KEYS[name].recipient_id, f"HPKE-Base-{suite}-SHA256-A256GCM")
    assert len(b64url_decode(wrapped.wrapped_key)) == enc + 32 + 16  # enc || the sealed 32-byte key
    aes_key, commitment = derived(content_key(item, name))
    assert b64url_decode(payload.commitment) == commitment
    nonce, ciphertext = b64url_decode(payload.nonce), b64url_decode(payload.ciphertext)
    assert AESGCM(aes_key).decrypt(nonce, ciphertext, aad) == b"the secret note"
    statement = {
        "aad": payload.aad,
        "ciphertextSha256": b64url(hashlib.sha256(ciphertext).digest()),
        "commitment": payload.commitment,
        "format": 2,
        "nonce": payload.nonce,
        "recipients": [KEYS[name].recipient_id],
        "signer": ALICE.device_id,
        "type": "zkplatform.sealed-item",
        "version": 1,
    }
    signing_key = Ed25519PublicKey.from_public_bytes(b64url_decode(json.loads(ALICE.signing_jwk)["x"]))
    signing_key.verify(b64url_decode(payload.signature), canonical_json(statement))  # raises if not
    assert open_item(item, KEYS[name], DIRECTORY) == Opened(b"the secret note", 2, ALICE_SEALED)
    assert sealing.open(item, KEYS[name], DIRECTORY).plaintext == b"the secret note"


def test_every_recipient_opens_it_and_no_one_else() -> None:
    names = ["x25519-a", "p256-a", "p256-b"]
    as_message = RecipientKey(key_id=KEYS["p256-a"].key_id, jwk=KEYS["p256-a"].public_jwk, principal_id="bob")
    # The same key three times (as text, as a message, as text again): wrapped for once.
    recipients: list[RecipientKey | str] = [KEYS["x25519-a"].public_jwk, as_message, KEYS["p256-b"].public_jwk,
                                            KEYS["p256-a"].public_jwk]  # fmt: skip

    item = item_of(seal(b"for three", recipients, CONTEXT, ALICE))

    assert [k.recipient_id for k in item.wrapped_keys] == sorted(KEYS[name].recipient_id for name in names)
    assert {name: open_item(item, KEYS[name], DIRECTORY).plaintext for name in names} == dict.fromkeys(
        names, b"for three"
    )
    assert reason_of(item, KEYS["x25519-b"]) == "NOT_A_RECIPIENT"


def test_each_seal_is_under_a_new_content_key_and_nonce() -> None:
    first, second = sealed_for("x25519-a", text=b"same"), sealed_for("x25519-a", text=b"same")

    assert first.encrypted_payload.nonce != second.encrypted_payload.nonce
    assert content_key(first, "x25519-a") != content_key(second, "x25519-a")


def test_what_cannot_be_sealed() -> None:
    recipient = [KEYS["x25519-a"].public_jwk]

    with pytest.raises(SealingError) as nobody:
        seal(b"x", [], CONTEXT, ALICE)
    with pytest.raises(SealingError) as too_large:
        seal(bytes(MAX_PLAINTEXT + 1), recipient, CONTEXT, ALICE)
    with pytest.raises(SealingError) as too_many:
        seal(b"x", [RecipientPrivateKey.generate().public_jwk for _ in range(MAX_RECIPIENTS + 1)], CONTEXT, ALICE)
    with pytest.raises(ValueError, match="private part"):
        seal(b"x", [KEYS["x25519-a"].to_jwk()], CONTEXT, ALICE)
    with pytest.raises(ValueError, match="thumbprint"):
        seal(b"x", [RecipientKey(key_id=KEYS["p256-a"].key_id, jwk=KEYS["x25519-a"].public_jwk)], CONTEXT, ALICE)
    with pytest.raises(ValueError, match="version"):
        seal(b"x", recipient, CONTEXT, ALICE, version=0)

    assert nobody.value.reason == "NO_RECIPIENTS"
    assert (too_large.value.reason, too_many.value.reason) == ("TOO_LARGE", "TOO_LARGE")


def test_the_largest_plaintext_fills_the_api_s_ciphertext_exactly() -> None:
    item = sealed_for("p256-b", text=bytes(MAX_PLAINTEXT))

    assert len(item.encrypted_payload.ciphertext) == 49_152
    assert open_item(item, KEYS["p256-b"], DIRECTORY).plaintext == bytes(MAX_PLAINTEXT)


def test_a_device_signs_only_sealed_item_statements() -> None:
    """The signing key signs the key log's statements too: through sealing it signs nothing else."""
    device_statement = ALICE.first_device_statement("acme", "alice", 1).text.encode()

    with pytest.raises(ValueError, match="sealed item"):
        ALICE.sign_sealed_item(device_statement)
    with pytest.raises(ValueError, match="sealed item"):
        ALICE.sign_sealed_item(b'{ "type": "zkplatform.sealed-item" }')  # not canonical


# Who sealed


def test_the_reader_is_told_who_sealed_and_whether_that_device_is_live() -> None:
    carol_old = signer_keys("carol-old")
    item = sealed_for("x25519-b", signer=carol_old)

    opened = open_item(item, KEYS["x25519-b"], DIRECTORY)

    assert opened.sealed_by == SealedBy("carol", carol_old.device_id, live=False)  # revoked since: still opens


def test_a_verified_key_log_state_is_a_directory() -> None:
    """KeyLogState.device answers the logged device a signer is looked up as."""
    from zkplatform_client.key_log import KeyLogState, LoggedDevice  # noqa: PLC0415

    logged = LoggedDevice(ALICE.device_id, "alice", ALICE.signing_jwk, "{}", "k", "", 0)
    state = KeyLogState("acme", devices={ALICE.device_id: logged})

    assert open_item(sealed_for("p256-a"), KEYS["p256-a"], state).sealed_by == ALICE_SEALED
    assert state.device("no-such-device") is None


# Sharing and unsharing


def test_share_wraps_the_same_content_key_for_a_new_recipient_and_signs_again() -> None:
    item = sealed_for("x25519-a", text=b"shared later")
    before = copy_of(item)

    shared = item_of(share(item, KEYS["x25519-a"], [KEYS["x25519-a"].public_jwk, KEYS["p256-a"].public_jwk], BOB,
                           DIRECTORY))  # fmt: skip

    assert item == before  # the item given is left as it was
    assert shared.version == 2
    assert open_item(shared, KEYS["p256-a"], DIRECTORY) == Opened(b"shared later", 2, SealedBy("bob", BOB.device_id,
                                                                                              live=True))  # fmt: skip
    assert content_key(shared, "p256-a") == content_key(item, "x25519-a")
    own = [k for k in shared.wrapped_keys if k.recipient_id == KEYS["x25519-a"].recipient_id]
    assert own == list(item.wrapped_keys)  # kept as it was
    for name in ("nonce", "aad", "ciphertext", "commitment"):  # sharing sends no new ciphertext
        assert getattr(shared.encrypted_payload, name) == getattr(item.encrypted_payload, name)


def test_share_with_no_new_recipient_signs_again_for_the_next_version() -> None:
    item = sealed_for("p256-b")

    again = item_of(share(item, KEYS["p256-b"], [], ALICE, DIRECTORY))

    assert again.version == 2
    assert list(again.wrapped_keys) == list(item.wrapped_keys)
    assert open_item(again, KEYS["p256-b"], DIRECTORY).plaintext == b"a note"


def test_a_planted_entry_of_another_wrap_alg_no_longer_blocks_share() -> None:
    """Issue 38: an entry of an unknown algorithm planted for carol kept alice from sharing with
    her. share now replaces it (and an entry planted for someone else stops no reader)."""
    item = sealed_for("x25519-a", "x25519-b")
    planted = next(k for k in item.wrapped_keys if k.recipient_id == KEYS["x25519-b"].recipient_id)
    planted.wrap_alg, planted.wrapped_key = "A256KW", "a2V5"

    refused = reason_of(item, KEYS["x25519-b"])
    shared = item_of(share(item, KEYS["x25519-a"], [KEYS["x25519-b"].public_jwk], ALICE, DIRECTORY))

    assert refused == "NOT_A_RECIPIENT"
    assert open_item(shared, KEYS["x25519-b"], DIRECTORY).plaintext == b"a note"
    assert [k.wrap_alg for k in shared.wrapped_keys] == [SUITES["X25519"].wrap_alg] * 2


def test_share_checks_the_item_as_open_does() -> None:
    item = sealed_for("x25519-a")
    moved = copy_of(item)
    moved.item_id = "item-2"

    with pytest.raises(SealingError) as outsider:
        share(item, KEYS["p256-a"], [KEYS["p256-a"].public_jwk], ALICE, DIRECTORY)
    with pytest.raises(SealingError) as elsewhere:
        share(moved, KEYS["x25519-a"], [KEYS["p256-a"].public_jwk], ALICE, DIRECTORY)

    assert (outsider.value.reason, elsewhere.value.reason) == ("NOT_A_RECIPIENT", "BINDING_MISMATCH")


def test_sharing_a_version_1_item_seals_it_again_in_version_2() -> None:
    document = json.loads((TESTDATA / "sealed-python.json").read_text())
    vector = next(v for v in document["vectors"] if v["name"] == "sealed for all four keys, opened with x25519-a")
    item = json_format.ParseDict(vector["item"], Item())

    shared = share(item, KEYS["x25519-a"], [KEYS["p256-b"].public_jwk], ALICE, DIRECTORY)

    again = item_of(shared, SealContext.of(item))
    assert (again.encrypted_payload.version, again.version) == (2, 2)
    assert sorted(k.recipient_id for k in again.wrapped_keys) == sorted([KEYS["x25519-a"].recipient_id,
                                                                          KEYS["p256-b"].recipient_id])  # fmt: skip
    assert open_item(again, KEYS["p256-b"], DIRECTORY).plaintext == base64.urlsafe_b64decode(
        vector["plaintext"] + "=" * (-len(vector["plaintext"]) % 4)
    )


def test_unshare_seals_again_under_a_new_content_key_for_exactly_the_recipients_left() -> None:
    item = sealed_for("x25519-a", "x25519-b", text=b"no longer for x25519-b")

    resealed = item_of(unshare(item, KEYS["x25519-a"], [KEYS["x25519-a"].public_jwk, KEYS["p256-a"].public_jwk], BOB,
                               DIRECTORY))  # fmt: skip

    assert resealed.version == 2
    assert sorted(k.recipient_id for k in resealed.wrapped_keys) == sorted([KEYS["x25519-a"].recipient_id,
                                                                             KEYS["p256-a"].recipient_id])  # fmt: skip
    assert content_key(resealed, "x25519-a") != content_key(item, "x25519-a")
    assert resealed.encrypted_payload.nonce != item.encrypted_payload.nonce
    assert open_item(resealed, KEYS["p256-a"], DIRECTORY).sealed_by == SealedBy("bob", BOB.device_id, live=True)
    assert reason_of(resealed, KEYS["x25519-b"]) == "NOT_A_RECIPIENT"


# The attacks of issue 38, each refused with its reason


def test_one_ciphertext_under_two_keys_is_refused_by_its_commitment_where_aes_gcm_alone_opens_it() -> None:
    """The two-key vector (scripts/make_sealed_vectors.py): one nonce, ciphertext and tag, K1
    wrapped for x25519-a and K2 for p256-a. Plain AES-GCM opens it under K2 to another text:
    the attack is real, and only the commitment to K1 refuses it."""
    document = json.loads((TESTDATA / "sealed-v2-python.json").read_text())
    vectors = [v for v in document["vectors"] if v["name"].startswith("one ciphertext under two keys")]
    item = json_format.ParseDict(vectors[0]["item"], Item())
    payload = item.encrypted_payload
    nonce, ciphertext, aad = (b64url_decode(t) for t in (payload.nonce, payload.ciphertext, payload.aad))

    first = open_item(item, KEYS["x25519-a"], DIRECTORY)
    k2_aes, k2_commitment = derived(content_key(item, "p256-a"))
    second = AESGCM(k2_aes).decrypt(nonce, ciphertext, aad)  # what a reader without the commitment saw
    refused = reason_of(item, KEYS["p256-a"])

    assert first.plaintext.startswith(b"PAY 100 TO ALICE")
    assert first.sealed_by == ALICE_SEALED
    assert b"PAY 999 TO MALLORY" in second
    assert second != first.plaintext
    assert k2_commitment != b64url_decode(payload.commitment)
    assert refused == "COMMITMENT_MISMATCH"


def test_a_recipient_added_behind_the_sealer_s_back_is_refused() -> None:
    item = sealed_for("x25519-a")
    item.wrapped_keys.append(WrappedKey(recipient_id=KEYS["p256-b"].recipient_id, wrap_alg=SUITES["P-256"].wrap_alg,
                                        wrapped_key=b64url(bytes(113))))  # fmt: skip

    assert reason_of(item, KEYS["x25519-a"]) == "RECIPIENTS_MISMATCH"


def test_the_reader_removed_behind_the_sealer_s_back_is_refused() -> None:
    item = sealed_for("x25519-a", "p256-b")
    kept = [k for k in item.wrapped_keys if k.recipient_id != KEYS["x25519-a"].recipient_id]
    del item.wrapped_keys[:]
    item.wrapped_keys.extend(kept)

    assert reason_of(item, KEYS["x25519-a"]) == "RECIPIENTS_MISMATCH"


def test_another_recipient_removed_does_not_open_either() -> None:
    item = sealed_for("x25519-a", "p256-b")
    del item.wrapped_keys[1 if item.wrapped_keys[0].recipient_id == KEYS["x25519-a"].recipient_id else 0]

    assert reason_of(item, KEYS["x25519-a"]) == "SIGNATURE_INVALID"


def test_an_older_payload_served_as_a_newer_version_is_refused() -> None:
    item = sealed_for("p256-a")  # signed for version 1
    item.version = 9

    assert reason_of(item, KEYS["p256-a"]) == "VERSION_MISMATCH"


def test_a_signer_not_in_the_verified_directory_is_refused() -> None:
    mallory = signer_keys("mallory")
    item = sealed_for("x25519-a", signer=mallory)

    assert reason_of(item, KEYS["x25519-a"]) == "SIGNER_UNKNOWN"
    # The same item once mallory's device is in the directory: the check is the directory's.
    with_mallory = Directory.of(("mallory", mallory, True))
    assert open_item(item, KEYS["x25519-a"], with_mallory).sealed_by == SealedBy("mallory", mallory.device_id, True)


@pytest.mark.parametrize("field", ["signature", "ciphertext", "commitment", "nonce", "signer"])
def test_a_payload_changed_after_signing_is_refused(field: str) -> None:
    item = sealed_for("x25519-a")
    value = getattr(item.encrypted_payload, field)
    setattr(item.encrypted_payload, field, BOB.device_id if field == "signer" else ("A" if value[0] != "A" else "B")
            + value[1:])  # fmt: skip

    assert reason_of(item, KEYS["x25519-a"], Directory.of(("alice", ALICE, True), ("bob", BOB, True))) == (
        "SIGNATURE_INVALID"
    )


def test_a_wrapped_key_taken_from_another_item_does_not_open() -> None:
    """HPKE's info binds a wrapped key to its item: the same content key wrapped for the same
    recipient elsewhere does not unwrap here (the JWEs of version 1 bound neither)."""
    item, other = sealed_for("x25519-a", "p256-b"), item_of(
        seal(b"elsewhere", [KEYS["x25519-a"].public_jwk], SealContext("acme", "acme-shared", "item-2", "note"),
             ALICE))  # fmt: skip
    own = next(k for k in item.wrapped_keys if k.recipient_id == KEYS["x25519-a"].recipient_id)
    own.wrapped_key = other.wrapped_keys[0].wrapped_key

    assert reason_of(item, KEYS["x25519-a"]) == "DECRYPTION_FAILED"


@pytest.mark.parametrize("size", [8, 16, 0, 11, 13])
def test_a_nonce_of_another_length_is_malformed(size: int) -> None:
    item = sealed_for("x25519-a")
    item.encrypted_payload.nonce = b64url(bytes(size))

    assert reason_of(item, KEYS["x25519-a"]) == "MALFORMED"


def non_canonical(text: str) -> list[str]:
    """Texts of the same (or nearly the same) bytes that are not canonical base64url: padded,
    base64's alphabet, spare bits set, a space."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    found = [text + "=" * (-len(text) % 4 or 4), "+" + text[1:], " " + text]
    if len(text) % 4 in {2, 3}:
        found.append(text[:-1] + alphabet[alphabet.index(text[-1]) | (0b1111 if len(text) % 4 == 2 else 0b11)])
    return found


@pytest.mark.parametrize("field", ["nonce", "aad", "ciphertext", "commitment", "signature", "wrapped_key"])
def test_every_field_in_non_canonical_base64url_is_malformed(field: str) -> None:
    item = sealed_for("x25519-a")
    target: Any = item.wrapped_keys[0] if field == "wrapped_key" else item.encrypted_payload

    reasons = set()
    for text in non_canonical(getattr(target, field)):
        setattr(target, field, text)
        reasons.add(reason_of(item, KEYS["x25519-a"]))

    assert reasons == {"MALFORMED"}


def test_two_wrapped_keys_for_one_recipient_are_malformed() -> None:
    item = sealed_for("x25519-a")
    item.wrapped_keys.append(item.wrapped_keys[0])

    assert reason_of(item, KEYS["x25519-a"]) == "MALFORMED"


def test_a_deleted_item_says_it_is_deleted() -> None:
    """A tombstone as the server answers it (no payload, no wrapped keys), and one that still
    carried its content: DELETED, before anything else is looked at (MALFORMED before, from the
    tombstone's empty nonce), for open, share and unshare alike."""
    sealed = sealed_for("x25519-a", "p256-a")
    tombstone = Item(item_id="item-1", tenant_id="acme", vault_id="acme-shared", kind="note", version=2, deleted=True)
    still_sealed = copy_of(sealed)
    still_sealed.deleted, still_sealed.version = True, 2
    own = KEYS["x25519-a"].public_jwk
    told = r"^DELETED: the item was deleted \(its tombstone is version 2\)$"

    for item in (tombstone, still_sealed):
        assert reason_of(item, KEYS["x25519-a"]) == "DELETED"
        with pytest.raises(SealingError, match=told) as shared:
            share(item, KEYS["x25519-a"], [KEYS["p256-b"].public_jwk], ALICE, DIRECTORY)
        with pytest.raises(SealingError) as unshared:
            unshare(item, KEYS["x25519-a"], [own], ALICE, DIRECTORY)
        assert (shared.value.reason, unshared.value.reason) == ("DELETED", "DELETED")


def test_a_payload_of_an_unknown_version_or_alg_is_unsupported() -> None:
    for field, value in [("version", 3), ("version", 0), ("alg", "A128GCM"), ("alg", "XC20P")]:
        item = sealed_for("x25519-a")
        setattr(item.encrypted_payload, field, value)
        assert reason_of(item, KEYS["x25519-a"]) == "UNSUPPORTED", (field, value)


@pytest.mark.parametrize("change", ["item_id", "vault_id", "tenant_id", "kind", "payload version 1"])
def test_a_payload_moved_elsewhere_or_downgraded_is_a_binding_mismatch(change: str) -> None:
    item = sealed_for("x25519-a")
    if change == "payload version 1":
        item.encrypted_payload.version = 1  # version 1 is unsigned: its aad says "v":2
    else:
        setattr(item, change, "login" if change == "kind" else "elsewhere")

    assert reason_of(item, KEYS["x25519-a"]) == "BINDING_MISMATCH"


@pytest.mark.parametrize(("curve", "other"), [("X25519", "P-256"), ("X-Wing", "X25519"), ("P-256", "X-Wing")])
def test_a_wrapped_key_of_another_key_type_s_suite_is_not_for_this_key(curve: Curve, other: Curve) -> None:
    name = NAMES[curve][0]
    item = sealed_for(name)
    item.wrapped_keys[0].wrap_alg = SUITES[other].wrap_alg

    assert reason_of(item, KEYS[name]) == "NOT_A_RECIPIENT"


@pytest.mark.parametrize("size", [0, 1119, 1120, 1167])
def test_an_x_wing_wrapped_key_cut_short_does_not_open(size: int) -> None:
    """X-Wing's encapsulation is 1120 bytes and the sealed content key 48 after it: a wrapped key
    cut anywhere (within the encapsulation, at its end, a byte short) is refused, never read past."""
    item = sealed_for("xwing-a", "x25519-a")
    own = next(k for k in item.wrapped_keys if k.recipient_id == KEYS["xwing-a"].recipient_id)
    assert len(b64url_decode(own.wrapped_key)) == 1120 + 32 + 16
    own.wrapped_key = b64url(b64url_decode(own.wrapped_key)[:size])

    assert reason_of(item, KEYS["xwing-a"]) == "DECRYPTION_FAILED"
    assert open_item(item, KEYS["x25519-a"], DIRECTORY).plaintext == b"a note"  # not its key: others open


def test_an_x_wing_key_is_never_a_version_1_recipient() -> None:
    """Version 1 wrapped keys for X25519 and P-256 only: an entry of its wrap_alg planted for an
    X-Wing key (a version 1 item is unsigned) is not for it."""
    document = json.loads((TESTDATA / "sealed-python.json").read_text())
    item = json_format.ParseDict(document["vectors"][0]["item"], Item())
    jwe = item.wrapped_keys[0].wrapped_key
    item.wrapped_keys.append(WrappedKey(recipient_id=KEYS["xwing-a"].recipient_id, wrap_alg="ECDH-ES+A256KW",
                                        wrapped_key=jwe))  # fmt: skip

    assert reason_of(item, KEYS["xwing-a"]) == "NOT_A_RECIPIENT"


def test_an_x_wing_recipient_is_checked_as_a_device_statement_s_key() -> None:
    """A recipient's X-Wing key whose ML-KEM-768 part has a coefficient of q, or whose X25519 part
    is of small order, is no key to seal for."""
    public = b64url_decode(json.loads(KEYS["xwing-a"].public_jwk)["pub"])
    for bad in (bytes([0x01, 0x0D]) + public[2:], public[:1184] + bytes(32)):
        jwk = json.dumps({"alg": "X-Wing", "kty": "AKP", "pub": b64url(bad)})
        with pytest.raises(ValueError, match="not a usable X-Wing public key"):
            seal(b"x", [jwk], CONTEXT, ALICE)


# Private keys


@pytest.mark.parametrize("curve", CURVES)
def test_a_private_key_round_trips_through_its_jwk(curve: Curve) -> None:
    key = RecipientPrivateKey.generate(curve)

    again = RecipientPrivateKey.from_jwk(key.to_jwk())

    assert again.key_id == key.key_id
    assert again.to_jwk() == key.to_jwk()
    assert key.recipient_id == b64url_decode(key.key_id).hex()
    assert key.curve == curve


@pytest.mark.parametrize("name", sorted(PRIVATE_JWKS))
def test_a_private_key_never_shows_its_private_part(name: str) -> None:
    key = KEYS[name]
    d = PRIVATE_JWKS[name].get("d") or PRIVATE_JWKS[name]["priv"]  # X-Wing's is its seed, priv

    assert d not in f"{key!r} {key} {key.public_jwk}"
    assert key.key_id in repr(key)


def test_an_opened_item_does_not_show_its_content_in_its_repr() -> None:
    opened = open_item(sealed_for("x25519-a", text=b"very secret"), KEYS["x25519-a"], DIRECTORY)

    assert opened.plaintext == b"very secret"
    assert "very secret" not in repr(opened)


# The committed vectors: both packages', both versions'

# Version 1 vectors whose expectation version 2 changed: a version 1 payload relabelled version 2
# was UNSUPPORTED when only version 1 was known; now it is a version 2 payload without its
# commitment (docs/sealing.md, step 1).
V1_SUPERSEDED = {"payload version 2": "MALFORMED"}


def vector_files() -> list[str]:
    return sorted(path.name for path in TESTDATA.glob("sealed-*.json"))


def vectors() -> list[Any]:
    documents = [json.loads((TESTDATA / name).read_text()) for name in vector_files()]
    return [
        pytest.param(v, id=f"{d['sealedBy']} v{2 if 'expect' in v else 1}: {v['name']}")
        for d in documents
        for v in d["vectors"]
    ]


def test_both_packages_vectors_of_both_versions_are_committed() -> None:
    """sealed-v2-ts.json is the TypeScript package's (seal-ts writes it): required, so that a
    missing file fails here rather than leaving its cases unrun."""
    assert vector_files() == ["sealed-python.json", "sealed-ts.json", "sealed-v2-python.json", "sealed-v2-ts.json"]


@pytest.mark.parametrize("vector", vectors())
def test_every_committed_vector_opens_as_it_says(vector: dict[str, Any]) -> None:
    item = json_format.ParseDict(vector["item"], Item())
    key = KEYS[vector["recipient"]]
    if "expect" not in vector:  # version 1's shape: plaintext or error
        expect: dict[str, Any] = (
            {"ok": True, "plaintext": vector["plaintext"], "formatVersion": 1, "signer": None, "signerLive": None}
            if "plaintext" in vector
            else {"ok": False, "reason": V1_SUPERSEDED.get(vector["name"], vector["error"])}
        )
    else:
        expect = vector["expect"]

    try:
        opened = open_item(item, key, DIRECTORY)
    except SealingError as error:
        got: dict[str, Any] = {"ok": False, "reason": error.reason}
    else:
        by = opened.sealed_by
        got = {
            "ok": True,
            "plaintext": b64url(opened.plaintext),
            "formatVersion": opened.format_version,
            "signer": None if by is None else next(n for n, s in SIGNERS.items() if s["deviceId"] == by.device_id),
            "signerLive": None if by is None else by.live,
        }
        if by is not None:
            assert by.principal_id == SIGNERS[got["signer"]]["principalId"]

    assert got == expect


@pytest.mark.parametrize("name", ["sealed-v2-python.json", "sealed-v2-ts.json"])
def test_the_v2_vectors_cover_every_reason_and_every_key_type(name: str) -> None:
    reasons = {"DELETED", "MALFORMED", "UNSUPPORTED", "BINDING_MISMATCH", "SIGNER_UNKNOWN", "SIGNATURE_INVALID",
               "RECIPIENTS_MISMATCH", "VERSION_MISMATCH", "NOT_A_RECIPIENT", "DECRYPTION_FAILED",
               "COMMITMENT_MISMATCH"}  # fmt: skip
    vectors = json.loads((TESTDATA / name).read_text())["vectors"]
    expected = [v["expect"] for v in vectors]
    xwing_refused = {v["expect"]["reason"] for v in vectors if v["recipient"] == "xwing-a" and not v["expect"]["ok"]}

    assert {e["reason"] for e in expected if not e["ok"]} == reasons
    assert {KEYS[v["recipient"]].curve for v in vectors if v["expect"]["ok"]} == set(CURVES)
    assert {e["signerLive"] for e in expected if e["ok"]} == {True, False}
    # X-Wing's own: another suite's label, a planted version 1 entry; an encapsulation cut short
    # or changed, a wrapped key of another item; one of another content key.
    assert xwing_refused == {"NOT_A_RECIPIENT", "DECRYPTION_FAILED", "COMMITMENT_MISMATCH"}
    # A signature only a cofactored check accepts (scripts/ed25519_cofactored.py): refused by both.
    assert {e["reason"] for v, e in zip(vectors, expected, strict=True) if "only a cofactored" in v["name"]} == {
        "SIGNATURE_INVALID"
    }
