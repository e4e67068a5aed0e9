"""Write clients/testdata/sealed-python.json: items sealed by the Python package, for both packages to open.

Each vector is an item (platform.v1.Item in proto JSON) and the name of a key of
clients/testdata/recipients.json; opening the item with that key must give `plaintext`
(base64url), or fail with `error`, the reason both packages name (docs/sealing.md). The
TypeScript package writes sealed-ts.json in the same shape, and the tests of each package
open every clients/testdata/sealed-*.json, so each opens what the other sealed.

Sealing is random (content keys, nonces, ephemeral keys): run once and commit the result.

    PYTHONPATH=clients/python .venv/bin/python -m scripts.make_sealed_vectors
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from google.protobuf.timestamp_pb2 import Timestamp

from zkplatform_api.platform.v1.vault_pb2 import Item, WrappedKey
from zkplatform_client.sealing import RecipientPrivateKey, SealContext, seal

TESTDATA = Path(__file__).resolve().parents[1] / "clients" / "testdata"
TENANT, VAULT, KIND = "acme", "acme-shared", "note"
UPDATED_AT = 1_800_000_000


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def sealed_item(item_id: str, plaintext: bytes, recipients: list[RecipientPrivateKey]) -> Item:
    sealed = seal(plaintext, [key.public_jwk for key in recipients], SealContext(TENANT, VAULT, item_id, KIND))
    return Item(
        item_id=item_id,
        tenant_id=TENANT,
        vault_id=VAULT,
        version=1,
        kind=KIND,
        updated_at=Timestamp(seconds=UPDATED_AT),
        encrypted_payload=sealed.encrypted_payload,
        wrapped_keys=sealed.wrapped_keys,
    )


def changed(item: Item, **fields: Any) -> Item:
    """A copy of the item with these fields (and payload fields, `payload_*`) changed."""
    copy = Item()
    copy.CopyFrom(item)
    for name, value in fields.items():
        if name.startswith("payload_"):
            setattr(copy.encrypted_payload, name.removeprefix("payload_"), value)
        else:
            setattr(copy, name, value)
    return copy


def flipped(text: str) -> str:
    """base64url text with its first character changed: other bytes, still base64url."""
    return ("B" if text[0] == "A" else "A") + text[1:]


def opens(name: str, recipient: str, item: Item, plaintext: bytes) -> dict[str, Any]:
    return {"name": name, "recipient": recipient, "item": json_format.MessageToDict(item), "plaintext": b64(plaintext)}


def fails(name: str, recipient: str, item: Item, reason: str) -> dict[str, Any]:
    return {"name": name, "recipient": recipient, "item": json_format.MessageToDict(item), "error": reason}


def main() -> None:
    private = json.loads((TESTDATA / "recipients.json").read_text())["keys"]
    keys = {name: RecipientPrivateKey.from_jwk(jwk) for name, jwk in sorted(private.items())}
    note = "A note for every test key: ünïcödé, and bytes \x00\x01.".encode()
    for_all = sealed_item("sealed-for-all", note, list(keys.values()))
    empty = sealed_item("sealed-empty", b"", [keys["x25519-b"]])
    large_text = bytes(range(256)) * 80  # 20,480 bytes
    large = sealed_item("sealed-large", large_text, [keys["p256-a"]])
    single = sealed_item("sealed-for-one", b"for x25519-a alone", [keys["x25519-a"]])
    besides = changed(single)
    besides.wrapped_keys.append(WrappedKey(recipient_id="device-7", wrap_alg="A256KW", wrapped_key="a2V5"))
    spaced = b'{"itemId": "sealed-for-one", "kind": "note", "tenantId": "acme", "v": 1, "vaultId": "acme-shared"}'
    # The JWE's encrypted key changed, its header left whole: the unwrap itself fails.
    header, encrypted_key, *rest = base64.urlsafe_b64decode(single.wrapped_keys[0].wrapped_key + "==").split(b".")
    jwe = b".".join([header, flipped(encrypted_key.decode()).encode(), *rest])
    tampered_key = changed(single)
    tampered_key.wrapped_keys[0].wrapped_key = b64(jwe)
    tampered = changed(single, payload_ciphertext=flipped(single.encrypted_payload.ciphertext))
    vectors = [
        *(opens(f"sealed for all four keys, opened with {name}", name, for_all, note) for name in keys),
        opens("an empty plaintext", "x25519-b", empty, b""),
        opens("a 20 KB plaintext", "p256-a", large, large_text),
        opens("a key of a wrap_alg the package does not know, besides", "x25519-a", besides, b"for x25519-a alone"),
        fails("moved to another item id", "x25519-a", changed(single, item_id="sealed-other"), "BINDING_MISMATCH"),
        fails("moved to another vault", "x25519-a", changed(single, vault_id="acme-private"), "BINDING_MISMATCH"),
        fails("moved to another tenant", "x25519-a", changed(single, tenant_id="globex"), "BINDING_MISMATCH"),
        fails("its kind changed", "x25519-a", changed(single, kind="login"), "BINDING_MISMATCH"),
        fails("the aad spaced out", "x25519-a", changed(single, payload_aad=b64(spaced)), "BINDING_MISMATCH"),
        fails("the ciphertext tampered", "x25519-a", tampered, "DECRYPTION_FAILED"),
        fails("the wrapped key tampered", "x25519-a", tampered_key, "DECRYPTION_FAILED"),
        fails("a key not among the recipients", "p256-b", single, "NOT_A_RECIPIENT"),
        fails("payload version 2", "x25519-a", changed(single, payload_version=2), "UNSUPPORTED"),
        fails("payload alg A128GCM", "x25519-a", changed(single, payload_alg="A128GCM"), "UNSUPPORTED"),
    ]  # fmt: skip
    document = {"sealedBy": "python", "vectors": vectors}
    (TESTDATA / "sealed-python.json").write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
