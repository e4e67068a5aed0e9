"""Sealed items in the Python package (zkplatform_client.sealing), in process: the format of
docs/sealing.md on both curves, sharing and unsharing, and every committed vector of
clients/testdata/sealed-*.json (the TypeScript package's too, once it has written its own)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from joserfc import jwe, jwk

from zkplatform_api.platform.v1.vault_pb2 import Item, WrappedKey
from zkplatform_client import (
    RecipientKey,
    RecipientPrivateKey,
    SealContext,
    Sealed,
    SealingError,
    open_item,
    seal,
    sealing,
    share,
    unshare,
)
from zkplatform_client.sealing import MAX_PLAINTEXT, MAX_RECIPIENTS, Curve

TESTDATA = Path(__file__).resolve().parents[2] / "clients" / "testdata"
PRIVATE_JWKS: dict[str, dict[str, str]] = json.loads((TESTDATA / "recipients.json").read_text())["keys"]
KEYS = {name: RecipientPrivateKey.from_jwk(private) for name, private in PRIVATE_JWKS.items()}
CONTEXT = SealContext("acme", "acme-shared", "item-1", "note")
CURVES: list[Curve] = ["X25519", "P-256"]


def b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def item_of(sealed: Sealed, context: SealContext = CONTEXT, version: int = 1) -> Item:
    return Item(
        item_id=context.item_id,
        tenant_id=context.tenant_id,
        vault_id=context.vault_id,
        kind=context.kind,
        version=version,
        encrypted_payload=sealed.encrypted_payload,
        wrapped_keys=sealed.wrapped_keys,
    )


def reason_of(item: Item, key: RecipientPrivateKey) -> str:
    with pytest.raises(SealingError) as raised:
        open_item(item, key)
    return raised.value.reason


def jwe_of(wrapped: WrappedKey) -> tuple[dict[str, Any], str]:
    """The wrapped key's JWE: its protected header, and its compact text."""
    token = b64decode(wrapped.wrapped_key).decode("ascii")
    return json.loads(b64decode(token.split(".")[0])), token


def content_key(wrapped: WrappedKey, name: str) -> bytes:
    """The content key a wrapped key holds, unwrapped with joserfc alone (not the package)."""
    _, token = jwe_of(wrapped)
    private = jwk.import_key(PRIVATE_JWKS[name])  # type: ignore[arg-type]
    plaintext = jwe.decrypt_compact(token, private, algorithms=["ECDH-ES+A256KW", "A256GCM"]).plaintext
    assert plaintext is not None
    return plaintext


# The format


@pytest.mark.parametrize("curve", CURVES)
def test_a_sealed_item_opens_with_its_recipient_s_key(curve: Curve) -> None:
    key = RecipientPrivateKey.generate(curve)

    sealed = seal(b"the secret note", [key.public_jwk], CONTEXT)

    payload = sealed.encrypted_payload
    assert (payload.alg, payload.version) == ("A256GCM", 1)
    assert len(b64decode(payload.nonce)) == 12
    aad = b'{"itemId":"item-1","kind":"note","tenantId":"acme","v":1,"vaultId":"acme-shared"}'
    assert b64decode(payload.aad) == aad
    assert len(b64decode(payload.ciphertext)) == len(b"the secret note") + 16
    (wrapped,) = sealed.wrapped_keys
    assert (wrapped.recipient_id, wrapped.wrap_alg) == (key.recipient_id, "ECDH-ES+A256KW")
    header, _ = jwe_of(wrapped)
    assert sorted(header) == ["alg", "enc", "epk", "kid"]
    assert (header["alg"], header["enc"], header["kid"]) == ("ECDH-ES+A256KW", "A256GCM", key.key_id)
    assert header["epk"]["crv"] == curve
    assert open_item(item_of(sealed), key) == b"the secret note"
    assert sealing.open(item_of(sealed), key) == b"the secret note"


def test_every_recipient_opens_it_and_no_one_else() -> None:
    names = ["x25519-a", "p256-a", "p256-b"]
    as_message = RecipientKey(key_id=KEYS["p256-a"].key_id, jwk=KEYS["p256-a"].public_jwk, principal_id="bob")
    # The same key three times (as text, as a message, as text again): wrapped for once.
    recipients: list[RecipientKey | str] = [
        KEYS["x25519-a"].public_jwk,
        as_message,
        KEYS["p256-b"].public_jwk,
        KEYS["p256-a"].public_jwk,
    ]

    item = item_of(seal(b"for three", recipients, CONTEXT))

    assert [k.recipient_id for k in item.wrapped_keys] == [KEYS[name].recipient_id for name in names]
    assert {name: open_item(item, KEYS[name]) for name in names} == dict.fromkeys(names, b"for three")
    assert reason_of(item, KEYS["x25519-b"]) == "NOT_A_RECIPIENT"


def test_each_seal_is_under_a_new_content_key_and_nonce() -> None:
    first = seal(b"same", [KEYS["x25519-a"].public_jwk], CONTEXT)
    second = seal(b"same", [KEYS["x25519-a"].public_jwk], CONTEXT)

    assert first.encrypted_payload.nonce != second.encrypted_payload.nonce
    assert content_key(first.wrapped_keys[0], "x25519-a") != content_key(second.wrapped_keys[0], "x25519-a")


def test_what_cannot_be_sealed() -> None:
    recipient = [KEYS["x25519-a"].public_jwk]

    with pytest.raises(SealingError) as nobody:
        seal(b"x", [], CONTEXT)
    with pytest.raises(SealingError) as too_large:
        seal(bytes(MAX_PLAINTEXT + 1), recipient, CONTEXT)
    with pytest.raises(SealingError) as too_many:
        seal(b"x", [RecipientPrivateKey.generate().public_jwk for _ in range(MAX_RECIPIENTS + 1)], CONTEXT)
    with pytest.raises(SealingError) as unsupported:
        seal(b"x", [json.dumps(jwk.OKPKey.generate_key("Ed25519").as_dict(private=False))], CONTEXT)
    with pytest.raises(ValueError, match="private part"):
        seal(b"x", [KEYS["x25519-a"].to_jwk()], CONTEXT)
    with pytest.raises(ValueError, match="thumbprint"):
        seal(b"x", [RecipientKey(key_id=KEYS["p256-a"].key_id, jwk=KEYS["x25519-a"].public_jwk)], CONTEXT)
    with pytest.raises(ValueError, match="kind"):
        SealContext("acme", "acme-shared", "item-1", "Note")

    assert nobody.value.reason == "NO_RECIPIENTS"
    assert (too_large.value.reason, too_many.value.reason) == ("TOO_LARGE", "TOO_LARGE")
    assert unsupported.value.reason == "UNSUPPORTED"


def test_the_largest_plaintext_fills_the_api_s_ciphertext_exactly() -> None:
    sealed = seal(bytes(MAX_PLAINTEXT), [KEYS["p256-b"].public_jwk], CONTEXT)

    assert len(sealed.encrypted_payload.ciphertext) == 49_152
    assert open_item(item_of(sealed), KEYS["p256-b"]) == bytes(MAX_PLAINTEXT)


# Sharing and unsharing


def test_share_wraps_the_same_content_key_for_a_new_recipient_only() -> None:
    item = item_of(seal(b"shared later", [KEYS["x25519-a"].public_jwk], CONTEXT))
    other = WrappedKey(recipient_id="device-7", wrap_alg="A256KW", wrapped_key="a2V5")
    item.wrapped_keys.append(other)
    before = Item()
    before.CopyFrom(item)

    keys = share(item, KEYS["x25519-a"], [KEYS["x25519-a"].public_jwk, KEYS["p256-a"].public_jwk])

    assert item == before  # the item given is left as it was
    assert list(keys[:2]) == list(before.wrapped_keys)  # kept unchanged, the unknown wrap_alg's too
    assert [k.recipient_id for k in keys[2:]] == [KEYS["p256-a"].recipient_id]
    shared = Item()
    shared.CopyFrom(item)
    del shared.wrapped_keys[:]
    shared.wrapped_keys.extend(keys)
    assert open_item(shared, KEYS["p256-a"]) == b"shared later"
    assert content_key(keys[2], "p256-a") == content_key(keys[0], "x25519-a")


def test_share_checks_the_payload_as_open_does() -> None:
    item = item_of(seal(b"x", [KEYS["x25519-a"].public_jwk], CONTEXT))
    moved = Item()
    moved.CopyFrom(item)
    moved.item_id = "item-2"

    with pytest.raises(SealingError) as outsider:
        share(item, KEYS["p256-a"], [KEYS["p256-a"].public_jwk])
    with pytest.raises(SealingError) as elsewhere:
        share(moved, KEYS["x25519-a"], [KEYS["p256-a"].public_jwk])

    assert (outsider.value.reason, elsewhere.value.reason) == ("NOT_A_RECIPIENT", "BINDING_MISMATCH")


def test_unshare_seals_again_under_a_new_content_key_for_exactly_the_recipients_left() -> None:
    item = item_of(seal(b"no longer for bob", [KEYS["x25519-a"].public_jwk, KEYS["x25519-b"].public_jwk], CONTEXT))
    old_key = content_key(item.wrapped_keys[0], "x25519-a")

    resealed = item_of(unshare(item, KEYS["x25519-a"], [KEYS["x25519-a"].public_jwk, KEYS["p256-a"].public_jwk]))

    assert [k.recipient_id for k in resealed.wrapped_keys] == [
        KEYS["x25519-a"].recipient_id,
        KEYS["p256-a"].recipient_id,
    ]
    assert content_key(resealed.wrapped_keys[0], "x25519-a") != old_key
    assert content_key(resealed.wrapped_keys[1], "p256-a") != old_key
    assert resealed.encrypted_payload.nonce != item.encrypted_payload.nonce
    assert open_item(resealed, KEYS["x25519-a"]) == b"no longer for bob"
    assert open_item(resealed, KEYS["p256-a"]) == b"no longer for bob"
    assert reason_of(resealed, KEYS["x25519-b"]) == "NOT_A_RECIPIENT"


# Private keys


@pytest.mark.parametrize("curve", CURVES)
def test_a_private_key_round_trips_through_its_jwk(curve: Curve) -> None:
    key = RecipientPrivateKey.generate(curve)

    again = RecipientPrivateKey.from_jwk(key.to_jwk())
    from_dict = RecipientPrivateKey.from_jwk(json.loads(key.to_jwk()))

    assert "d" in json.loads(key.to_jwk())
    assert again.key_id == from_dict.key_id == key.key_id
    assert again.to_jwk() == key.to_jwk()
    public = json.loads(key.public_jwk)
    assert key.public_jwk == json.dumps(public, sort_keys=True, separators=(",", ":"))
    assert "d" not in public
    assert key.key_id == jwk.import_key(public).thumbprint()
    assert key.recipient_id == b64decode(key.key_id).hex()
    assert len(key.recipient_id) == 64


@pytest.mark.parametrize("name", sorted(PRIVATE_JWKS))
def test_a_private_key_never_shows_its_private_part(name: str) -> None:
    key = KEYS[name]
    d = PRIVATE_JWKS[name]["d"]

    assert d not in repr(key)
    assert d not in str(key)
    assert d not in f"{key!r} {key}"
    assert d not in key.public_jwk
    assert key.key_id in repr(key)


def test_a_private_jwk_whose_public_part_is_another_key_s_is_refused() -> None:
    mixed = dict(PRIVATE_JWKS["x25519-a"], x=PRIVATE_JWKS["x25519-b"]["x"])

    with pytest.raises(ValueError, match="public members") as raised:
        RecipientPrivateKey.from_jwk(mixed)
    with pytest.raises(ValueError, match="private part"):
        RecipientPrivateKey.from_jwk(KEYS["x25519-a"].public_jwk)
    with pytest.raises(SealingError) as unsupported:
        RecipientPrivateKey.generate("Ed25519")  # type: ignore[arg-type]

    assert mixed["d"] not in str(raised.value)
    assert unsupported.value.reason == "UNSUPPORTED"


# The committed vectors: this package's and the TypeScript package's


def vectors() -> list[Any]:
    documents = [json.loads(path.read_text()) for path in sorted(TESTDATA.glob("sealed-*.json"))]
    return [pytest.param(v, id=f"{d['sealedBy']}: {v['name']}") for d in documents for v in d["vectors"]]


def test_the_vectors_of_this_package_are_committed() -> None:
    sealed_by = {json.loads(path.read_text())["sealedBy"] for path in TESTDATA.glob("sealed-*.json")}

    assert "python" in sealed_by


@pytest.mark.parametrize("vector", vectors())
def test_every_committed_vector_opens_as_it_says(vector: dict[str, Any]) -> None:
    item = json_format.ParseDict(vector["item"], Item())
    key = KEYS[vector["recipient"]]

    if "error" in vector:
        assert reason_of(item, key) == vector["error"]
    else:
        assert open_item(item, key) == b64decode(vector["plaintext"])
