"""Write clients/testdata/sealed-v2-python.json and key-file-python.jwe: items sealed in version 2 by
the Python package, every way a reader must refuse one, and a device key file, for both packages.

Each vector is an item (platform.v1.Item in proto JSON) and the name of a key of
clients/testdata/recipients.json; opening the item with that key against the vectors' directory
(the signers of clients/testdata/signers.json whose inDirectory is true, live as their `live`
says) must answer `expect`: the plaintext (base64url), the format version and the signer's name
and liveness, or the reason docs/sealing.md names. The TypeScript package writes sealed-v2-ts.json
in the same shape, and the tests of each package open both, so each opens what the other sealed.
The version 1 vectors (sealed-python.json, sealed-ts.json) were written by the packages' earlier
releases, which sealed version 1, and stay as they are: version 1 is read only now.

One vector is an attack no library helps with, built here and nowhere in the package: one
nonce, ciphertext and tag that AES-GCM opens under two keys, to two plaintexts (the
"invisible salamanders" of Dodis, Grubbs, Ristenpart and Woodage, "Fast Message Franking: From
Invisible Salamanders to Encryptment", CRYPTO 2018; used against real systems in Len, Grubbs and
Ristenpart, "Partitioning Oracle Attacks", USENIX Security 2021). GCM's tag is linear in each
ciphertext block over GF(2^128), so one block left free solves the equation that makes both
keys' tags equal. Sealing version 2 commits to the content key, so the recipient given the
second key is refused (COMMITMENT_MISMATCH) where plain AES-GCM would have opened it.

Every key type is sealed for: X25519, P-256 and X-Wing (recipients.json's xwing-a, the hybrid
ML-KEM-768 + X25519 KEM), with X-Wing's own bad cases (a wrapped key of another suite's label, an
encapsulation cut short, a version 1 entry planted for it).

Sealing is random (content keys, nonces, HPKE's ephemeral keys): run by hand, commit the result.

    PYTHONPATH=clients/python .venv/bin/python -m scripts.make_sealed_vectors
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import hashes, hpke
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from google.protobuf import json_format
from google.protobuf.timestamp_pb2 import Timestamp

from scripts.ed25519_cofactored import cofactored_only_signature
from zkplatform_api.platform.v1.vault_pb2 import EncryptedPayload, Item, WrappedKey
from zkplatform_client import DeviceKeyPair, RecipientPrivateKey, SealContext, seal, share, unshare
from zkplatform_client.sealing import SUITES, payload_statement
from zkplatform_tlog.statements import b64url, b64url_decode, canonical_json

TESTDATA = Path(__file__).resolve().parents[1] / "clients" / "testdata"
XWING_ENC_BYTES = 1120  # X-Wing's encapsulation: ML-KEM-768's ciphertext (1088 bytes), then X25519's (32)
TENANT, VAULT, KIND = "acme", "acme-shared", "note"
UPDATED_AT = 1_800_000_000
# The key file's passphrase: public by being committed, for this test file only.
KEY_FILE_PASSPHRASE = "correct horse battery staple (python)"  # noqa: S105


# The directory of the vectors


class Signers:
    """clients/testdata/signers.json: each signer as a DeviceKeyPair (its signing key; an
    agreement key of no use here), and the vectors' directory of those in it."""

    def __init__(self) -> None:
        document = json.loads((TESTDATA / "signers.json").read_text())["signers"]
        self.entries: dict[str, dict[str, Any]] = document
        self.keys = {
            name: DeviceKeyPair(
                Ed25519PrivateKey.from_private_bytes(b64url_decode(entry["privateJwk"]["d"], 32)),
                X25519PrivateKey.generate(),
            )
            for name, entry in document.items()
        }
        for name, keys in self.keys.items():
            assert keys.device_id == document[name]["deviceId"], name

    def name_of(self, device_id: str) -> str:
        return next(name for name, entry in self.entries.items() if entry["deviceId"] == device_id)


# Items


def item_of(item_id: str, sealed_payload: EncryptedPayload, wrapped: list[WrappedKey], version: int = 1) -> Item:
    return Item(
        item_id=item_id,
        tenant_id=TENANT,
        vault_id=VAULT,
        version=version,
        kind=KIND,
        updated_at=Timestamp(seconds=UPDATED_AT),
        encrypted_payload=sealed_payload,
        wrapped_keys=wrapped,
    )


def sealed_item(
    item_id: str, plaintext: bytes, recipients: list[RecipientPrivateKey], signer: DeviceKeyPair, version: int = 1
) -> Item:
    context = SealContext(TENANT, VAULT, item_id, KIND)
    sealed = seal(plaintext, [key.public_jwk for key in recipients], context, signer, version=version)
    return item_of(item_id, sealed.encrypted_payload, sealed.wrapped_keys, version)


def changed(item: Item, change: Callable[[Item], object]) -> Item:
    """A copy of the item, `change` applied to it."""
    copy = Item()
    copy.CopyFrom(item)
    change(copy)
    return copy


def re_signed(item: Item, signer: DeviceKeyPair) -> Item:
    """The item with its payload signed again, as it now is, by `signer`: what a sealer (or a
    member holding the content key) could sign, never the server."""
    copy = changed(item, lambda _: None)
    copy.encrypted_payload.signer = signer.device_id
    statement = payload_statement(copy.encrypted_payload, [k.recipient_id for k in copy.wrapped_keys], copy.version)
    copy.encrypted_payload.signature = b64url(signer.sign_sealed_item(statement))
    return copy


def non_canonical(text: str) -> str:
    """The same bytes in base64url that is not canonical: the unused low bits of the last
    character set when there are some, else a padding character."""
    if len(text) % 4 in {2, 3}:
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
        last = alphabet.index(text[-1]) | (0b1111 if len(text) % 4 == 2 else 0b11)
        return text[:-1] + alphabet[last]
    return text + "="


def flipped(text: str, at: int = 0) -> str:
    """base64url text with one character changed: other bytes, still canonical (not the last)."""
    return text[:at] + ("B" if text[at] == "A" else "A") + text[at + 1 :]


def own_of(item: Item, key: RecipientPrivateKey) -> WrappedKey:
    """The item's wrapped key for `key`."""
    return next(k for k in item.wrapped_keys if k.recipient_id == key.recipient_id)


def version_1_planted_for(key: RecipientPrivateKey) -> Item:
    """sealed-python.json's first version 1 item with an entry of version 1's wrap_alg added for
    `key` (a version 1 item is unsigned: anyone who can write it can add one)."""
    first = json.loads((TESTDATA / "sealed-python.json").read_text())["vectors"][0]
    item = json_format.ParseDict(first["item"], Item())
    item.wrapped_keys.append(
        WrappedKey(
            recipient_id=key.recipient_id, wrap_alg="ECDH-ES+A256KW", wrapped_key=item.wrapped_keys[0].wrapped_key
        )
    )
    return item


def hpke_wrap(content_key: bytes, recipient: RecipientPrivateKey, aad: str) -> WrappedKey:
    """A content key wrapped as docs/sealing.md says, by hand: for keys the package would never wrap."""
    suite = SUITES[recipient.curve]
    info = canonical_json({"aad": aad, "keyId": recipient.key_id, "type": "zkplatform.item-key"})
    wrapped = suite.hpke.encrypt(content_key, recipient.agreement_key.public_key(), info=info)
    return WrappedKey(recipient_id=recipient.recipient_id, wrap_alg=suite.wrap_alg, wrapped_key=b64url(wrapped))


# The two-key ciphertext (the module's docstring): GHASH over GF(2^128), NIST SP 800-38D


_R = 0xE1 << 120  # x^128 = x^7 + x^2 + x + 1, in GCM's reflected bit order


def gf_mul(x: int, y: int) -> int:
    """Multiplication in GCM's GF(2^128) (SP 800-38D, algorithm 1): bit 0 is the leftmost."""
    z, v = 0, y
    for i in range(127, -1, -1):
        if (x >> i) & 1:
            z ^= v
        v = (v >> 1) ^ _R if v & 1 else v >> 1
    return z


def gf_pow(x: int, n: int) -> int:
    result = 1 << 127  # the field's 1 in GCM's bit order
    while n:
        if n & 1:
            result = gf_mul(result, x)
        x = gf_mul(x, x)
        n >>= 1
    return result


def gf_inverse(x: int) -> int:
    return gf_pow(x, 2**128 - 2)


def blocks(data: bytes) -> list[int]:
    padded = data + bytes(-len(data) % 16)
    return [int.from_bytes(padded[i : i + 16], "big") for i in range(0, len(padded), 16)]


def aes_block(key: bytes, block: bytes) -> bytes:
    # One block of the raw cipher: GHASH's H, the tag's mask and CTR's keystream are made of them.
    encryptor = Cipher(algorithms.AES(key), modes.ECB()).encryptor()  # noqa: S305
    return encryptor.update(block) + encryptor.finalize()


def keystream(key: bytes, nonce: bytes, length: int) -> bytes:
    """GCM's CTR keystream from inc32(J0) on, for a 96-bit nonce."""
    counter = int.from_bytes(nonce + b"\x00\x00\x00\x01", "big")
    stream = b"".join(aes_block(key, (counter + 1 + i).to_bytes(16, "big")) for i in range(-(-length // 16)))
    return stream[:length]


def two_key_ciphertext(  # noqa: PLR0913, PLR0917 - two keys, the nonce, the aad and two texts
    k1: bytes, k2: bytes, nonce: bytes, aad: bytes, first: bytes, second: bytes
) -> tuple[bytes, bytes, bytes]:
    """A ciphertext with its tag that AES-GCM opens under k1 and under k2, with `nonce` and `aad`:
    under k1 its first block is `first` (16 bytes), under k2 its second and third are `second`
    (32 bytes); the fourth block is solved for so that both tags are one. Answers the
    ciphertext with the tag, and the plaintexts under k1 and k2."""
    assert len(first) == 16
    assert len(second) == 32
    ks1, ks2 = keystream(k1, nonce, 64), keystream(k2, nonce, 64)
    head = bytes(a ^ b for a, b in zip(first, ks1[:16], strict=True))
    middle = bytes(a ^ b for a, b in zip(second, ks2[16:48], strict=True))
    h1 = int.from_bytes(aes_block(k1, bytes(16)), "big")
    h2 = int.from_bytes(aes_block(k2, bytes(16)), "big")
    j0 = nonce + b"\x00\x00\x00\x01"
    s1, s2 = int.from_bytes(aes_block(k1, j0), "big"), int.from_bytes(aes_block(k2, j0), "big")
    length_block = ((len(aad) * 8) << 64) | (64 * 8)
    sequence = [*blocks(aad), *blocks(head + middle), 0, length_block]  # the free block as 0
    count = len(sequence)

    def ghash(h: int) -> int:
        total = 0
        for position, block in enumerate(sequence):
            total ^= gf_mul(block, gf_pow(h, count - position))
        return total

    free_power = 2  # the free block is the one before the length block: H^2
    # tag1 == tag2  <=>  X·(H1^2 + H2^2) = S1 + S2 + GHASH1(rest) + GHASH2(rest)
    free = gf_mul(s1 ^ s2 ^ ghash(h1) ^ ghash(h2), gf_inverse(gf_pow(h1, free_power) ^ gf_pow(h2, free_power)))
    ciphertext = head + middle + free.to_bytes(16, "big")
    tag = (s1 ^ ghash(h1) ^ gf_mul(free, gf_pow(h1, free_power))).to_bytes(16, "big")
    sealed = ciphertext + tag
    plain1, plain2 = AESGCM(k1).decrypt(nonce, sealed, aad), AESGCM(k2).decrypt(nonce, sealed, aad)
    return sealed, plain1, plain2


def derived_aes_key(content_key: bytes) -> tuple[bytes, bytes]:
    derived = HKDF(hashes.SHA256(), 64, None, b"zkplatform sealed item v2").derive(content_key)
    return derived[:32], derived[32:]


def two_key_item(keys: dict[str, RecipientPrivateKey], signer: DeviceKeyPair) -> tuple[Item, bytes, bytes]:
    """The two-key ciphertext as an item: K1 wrapped for x25519-a, K2 for p256-a, committed to K1,
    signed by its sealer. Answers the item and the plaintexts under K1 and K2."""
    k1, k2 = hashlib.sha256(b"salamander K1").digest(), hashlib.sha256(b"salamander K2").digest()
    nonce = hashlib.sha256(b"salamander nonce").digest()[:12]
    item = sealed_item("two-keys", b"placeholder", [keys["x25519-a"], keys["p256-a"]], signer)
    aad = b64url_decode(item.encrypted_payload.aad)
    (aes1, commitment1), (aes2, _) = derived_aes_key(k1), derived_aes_key(k2)
    ciphertext, plain1, plain2 = two_key_ciphertext(
        aes1, aes2, nonce, aad, b"PAY 100 TO ALICE", b"PAY 999 TO MALLORY".ljust(32, b".")
    )
    payload = item.encrypted_payload
    payload.nonce, payload.ciphertext, payload.commitment = b64url(nonce), b64url(ciphertext), b64url(commitment1)
    del item.wrapped_keys[:]
    item.wrapped_keys.extend(
        sorted(
            [hpke_wrap(k1, keys["x25519-a"], payload.aad), hpke_wrap(k2, keys["p256-a"], payload.aad)],
            key=lambda k: k.recipient_id,
        )
    )
    return re_signed(item, signer), plain1, plain2


# The vectors


class Vectors:
    def __init__(self, signers: Signers) -> None:
        self.signers = signers
        self.written: list[dict[str, Any]] = []

    def opens(self, name: str, recipient: str, item: Item, plaintext: bytes) -> None:
        signer = self.signers.name_of(item.encrypted_payload.signer)
        expect = {
            "ok": True,
            "plaintext": b64url(plaintext),
            "formatVersion": 2,
            "signer": signer,
            "signerLive": self.signers.entries[signer]["live"],
        }
        self.written.append(self._vector(name, recipient, item, expect))

    def fails(self, name: str, recipient: str, item: Item, reason: str) -> None:
        self.written.append(self._vector(name, recipient, item, {"ok": False, "reason": reason}))

    @staticmethod
    def _vector(name: str, recipient: str, item: Item, expect: dict[str, Any]) -> dict[str, Any]:
        return {"name": name, "item": json_format.MessageToDict(item), "recipient": recipient, "expect": expect}


def main() -> None:  # noqa: C901, PLR0915 - one vector a line, in the order of docs/sealing.md's reasons
    private = json.loads((TESTDATA / "recipients.json").read_text())["keys"]
    keys = {name: RecipientPrivateKey.from_jwk(jwk) for name, jwk in sorted(private.items())}
    signers = Signers()
    alice, bob, carol_old, mallory = (signers.keys[n] for n in ("alice-laptop", "bob-phone", "carol-old", "mallory"))
    directory = Directory(signers)
    v = Vectors(signers)

    note = "A note for every test key: ünïcödé, and bytes \x00\x01.".encode()
    for_all = sealed_item("sealed-for-all", note, list(keys.values()), alice)
    xwing = sealed_item("sealed-for-xwing", b"for xwing-a and x25519-b", [keys["xwing-a"], keys["x25519-b"]], bob)
    single = sealed_item("sealed-for-one", b"for x25519-a alone", [keys["x25519-a"]], alice)
    pair = sealed_item("sealed-for-two", b"for x25519-a and p256-b", [keys["x25519-a"], keys["p256-b"]], alice)
    large_text = bytes(range(256)) * 80  # 20,480 bytes
    later = sealed_item("sealed-at-5", b"written at version 5", [keys["p256-a"]], bob, version=5)

    # What opens
    for name in keys:
        v.opens(f"sealed for every test key, opened with {name}", name, for_all, note)
    v.opens("sealed for xwing-a and x25519-b by bob's phone, opened with xwing-a", "xwing-a", xwing,
            b"for xwing-a and x25519-b")  # fmt: skip
    v.opens("sealed for xwing-a and x25519-b by bob's phone, opened with x25519-b", "x25519-b", xwing,
            b"for xwing-a and x25519-b")  # fmt: skip
    v.opens("an empty plaintext", "x25519-b", sealed_item("sealed-empty", b"", [keys["x25519-b"]], alice), b"")
    v.opens(
        "a 20 KiB plaintext", "p256-a", sealed_item("sealed-large", large_text, [keys["p256-a"]], alice), large_text
    )
    v.opens("signed for version 5 by bob's phone", "p256-a", later, b"written at version 5")
    v.opens(
        "signed by a device revoked since (opens, answered as revoked)",
        "x25519-b",
        sealed_item("sealed-by-revoked", b"from carol's old device", [keys["x25519-b"]], carol_old),
        b"from carol's old device",
    )
    shared = share(single, keys["x25519-a"], [keys["p256-b"].public_jwk], bob, directory)
    shared_item = item_of(single.item_id, shared.encrypted_payload, shared.wrapped_keys, 2)
    v.opens("shared by bob's phone with p256-b (version 2)", "p256-b", shared_item, b"for x25519-a alone")
    v.opens("shared by bob's phone with p256-b, opened by x25519-a", "x25519-a", shared_item, b"for x25519-a alone")
    to_xwing = share(single, keys["x25519-a"], [keys["xwing-a"].public_jwk], alice, directory)
    v.opens(
        "shared by alice's laptop with xwing-a (version 2)",
        "xwing-a",
        item_of(single.item_id, to_xwing.encrypted_payload, to_xwing.wrapped_keys, 2),
        b"for x25519-a alone",
    )
    from_xwing = unshare(xwing, keys["xwing-a"], [keys["xwing-a"].public_jwk, keys["p256-a"].public_jwk], alice,
                         directory)  # fmt: skip
    from_xwing_item = item_of(xwing.item_id, from_xwing.encrypted_payload, from_xwing.wrapped_keys, 2)
    v.opens("unshared by xwing-a's holder to xwing-a and p256-a, opened with p256-a", "p256-a", from_xwing_item,
            b"for xwing-a and x25519-b")  # fmt: skip
    v.fails("unshared by xwing-a's holder, x25519-b left out", "x25519-b", from_xwing_item, "NOT_A_RECIPIENT")
    unshared = unshare(shared_item, keys["p256-b"], [keys["p256-b"].public_jwk], alice, directory)
    unshared_item = item_of(single.item_id, unshared.encrypted_payload, unshared.wrapped_keys, 3)
    v.opens("unshared to p256-b alone (version 3)", "p256-b", unshared_item, b"for x25519-a alone")
    v.fails("unshared to p256-b alone, x25519-a left out", "x25519-a", unshared_item, "NOT_A_RECIPIENT")

    # A planted entry of an unknown wrap_alg for p256-b: the signature holds (its id is there),
    # p256-b cannot open, share replaces it with a usable one.
    def plant(item: Item) -> None:
        entry = next(k for k in item.wrapped_keys if k.recipient_id == keys["p256-b"].recipient_id)
        entry.wrap_alg, entry.wrapped_key = "ECDH-ES+A256KW", "a2V5"

    planted = changed(pair, plant)
    v.opens(
        "an entry of another wrap_alg planted for p256-b, opened by x25519-a",
        "x25519-a",
        planted,
        b"for x25519-a and p256-b",
    )
    v.fails("an entry of another wrap_alg planted for p256-b", "p256-b", planted, "NOT_A_RECIPIENT")
    replaced = share(planted, keys["x25519-a"], [keys["p256-b"].public_jwk], alice, directory)
    v.opens(
        "the planted entry replaced by share",
        "p256-b",
        item_of(pair.item_id, replaced.encrypted_payload, replaced.wrapped_keys, 2),
        b"for x25519-a and p256-b",
    )

    # Before step 1, DELETED: a tombstone, which has no content
    def deleted(item: Item) -> None:
        item.version, item.deleted = 2, True
        item.ClearField("encrypted_payload")
        del item.wrapped_keys[:]

    v.fails(
        "a deleted item (its tombstone: no payload, no wrapped keys)", "x25519-a", changed(single, deleted), "DELETED"
    )

    # 1. MALFORMED
    def payload(**fields: Any) -> Callable[[Item], None]:
        def change(item: Item) -> None:
            for name, value in fields.items():
                setattr(item.encrypted_payload, name, value)

        return change

    p = single.encrypted_payload
    v.fails("a nonce of 8 bytes", "x25519-a", changed(single, payload(nonce=b64url(bytes(8)))), "MALFORMED")
    v.fails("a nonce of 16 bytes", "x25519-a", changed(single, payload(nonce=b64url(bytes(16)))), "MALFORMED")
    v.fails("the nonce padded", "x25519-a", changed(single, payload(nonce=non_canonical(p.nonce))), "MALFORMED")
    v.fails(
        "the nonce in base64's alphabet", "x25519-a", changed(single, payload(nonce="+/" + p.nonce[2:])), "MALFORMED"
    )
    for name in ("aad", "ciphertext", "commitment", "signature"):
        text = non_canonical(getattr(p, name))
        v.fails(
            f"the {name} not canonical base64url", "x25519-a", changed(single, payload(**{name: text})), "MALFORMED"
        )
    v.fails("a commitment of 31 bytes", "x25519-a", changed(single, payload(commitment=b64url(bytes(31)))), "MALFORMED")
    v.fails("a signature of 63 bytes", "x25519-a", changed(single, payload(signature=b64url(bytes(63)))), "MALFORMED")

    def own_key_non_canonical(item: Item) -> None:
        item.wrapped_keys[0].wrapped_key = non_canonical(item.wrapped_keys[0].wrapped_key)

    v.fails(
        "the reader's wrapped key not canonical base64url",
        "x25519-a",
        changed(single, own_key_non_canonical),
        "MALFORMED",
    )
    v.fails(
        "two wrapped keys with one recipient id",
        "x25519-a",
        changed(single, lambda item: item.wrapped_keys.append(item.wrapped_keys[0])),
        "MALFORMED",
    )
    v.fails("no payload", "x25519-a", changed(single, lambda item: item.ClearField("encrypted_payload")), "MALFORMED")

    # 2. UNSUPPORTED
    v.fails("payload version 9", "x25519-a", changed(single, payload(version=9)), "UNSUPPORTED")
    v.fails("payload version 0 (unset)", "x25519-a", changed(single, payload(version=0)), "UNSUPPORTED")
    v.fails("payload alg A128GCM", "x25519-a", changed(single, payload(alg="A128GCM")), "UNSUPPORTED")

    # 3. BINDING_MISMATCH
    v.fails(
        "moved to another item id",
        "x25519-a",
        changed(single, lambda i: setattr(i, "item_id", "sealed-other")),
        "BINDING_MISMATCH",
    )
    v.fails(
        "moved to another vault",
        "x25519-a",
        changed(single, lambda i: setattr(i, "vault_id", "acme-private")),
        "BINDING_MISMATCH",
    )
    v.fails(
        "moved to another tenant",
        "x25519-a",
        changed(single, lambda i: setattr(i, "tenant_id", "globex")),
        "BINDING_MISMATCH",
    )
    v.fails("its kind changed", "x25519-a", changed(single, lambda i: setattr(i, "kind", "login")), "BINDING_MISMATCH")
    v.fails("served as version 1 (a downgrade)", "x25519-a", changed(single, payload(version=1)), "BINDING_MISMATCH")

    # 4. SIGNER_UNKNOWN, SIGNATURE_INVALID, RECIPIENTS_MISMATCH, VERSION_MISMATCH
    v.fails(
        "signed by a device not in the directory (mallory)",
        "x25519-a",
        sealed_item("sealed-by-mallory", b"from mallory", [keys["x25519-a"]], mallory),
        "SIGNER_UNKNOWN",
    )
    v.fails(
        "the signature changed",
        "x25519-a",
        changed(single, payload(signature=flipped(p.signature, 10))),
        "SIGNATURE_INVALID",
    )
    v.fails(
        "another device named as the signer",
        "x25519-a",
        changed(single, payload(signer=bob.device_id)),
        "SIGNATURE_INVALID",
    )
    v.fails(
        "the ciphertext changed after signing",
        "x25519-a",
        changed(single, payload(ciphertext=flipped(p.ciphertext))),
        "SIGNATURE_INVALID",
    )
    v.fails(
        "the commitment changed after signing",
        "x25519-a",
        changed(single, payload(commitment=flipped(p.commitment))),
        "SIGNATURE_INVALID",
    )
    alice_signing = Ed25519PrivateKey.from_private_bytes(
        b64url_decode(signers.entries["alice-laptop"]["privateJwk"]["d"], 32)
    )
    statement = payload_statement(p, [k.recipient_id for k in single.wrapped_keys], single.version)
    v.fails(
        "signed again so that only a cofactored check accepts it (R moved by the point of order 2)",
        "x25519-a",
        changed(single, payload(signature=b64url(cofactored_only_signature(alice_signing, statement)))),
        "SIGNATURE_INVALID",
    )

    def add_third(item: Item) -> None:
        item.wrapped_keys.append(hpke_wrap(bytes(32), keys["x25519-b"], item.encrypted_payload.aad))

    v.fails(
        "a wrapped key added for a third recipient after signing",
        "x25519-a",
        changed(pair, add_third),
        "RECIPIENTS_MISMATCH",
    )

    def remove(name: str) -> Callable[[Item], None]:
        def change(item: Item) -> None:
            kept = [k for k in item.wrapped_keys if k.recipient_id != keys[name].recipient_id]
            del item.wrapped_keys[:]
            item.wrapped_keys.extend(kept)

        return change

    v.fails("the reader's wrapped key removed", "x25519-a", changed(pair, remove("x25519-a")), "RECIPIENTS_MISMATCH")
    v.fails(
        "another recipient's wrapped key removed (no reader can tell which)",
        "x25519-a",
        changed(pair, remove("p256-b")),
        "SIGNATURE_INVALID",
    )
    v.fails(
        "a version 1 payload served as version 9",
        "x25519-a",
        changed(single, lambda i: setattr(i, "version", 9)),
        "VERSION_MISMATCH",
    )
    v.fails(
        "a version 5 payload served as version 4",
        "p256-a",
        changed(later, lambda i: setattr(i, "version", 4)),
        "SIGNATURE_INVALID",
    )

    # 5. NOT_A_RECIPIENT
    v.fails("a key not among the recipients", "p256-b", single, "NOT_A_RECIPIENT")
    v.fails("a key not among the recipients (X25519)", "x25519-b", pair, "NOT_A_RECIPIENT")

    def wrong_suite(item: Item) -> None:
        item.wrapped_keys[0].wrap_alg = SUITES["P-256"].wrap_alg

    v.fails(
        "an X25519 key's wrapped key labelled with the P-256 suite",
        "x25519-a",
        changed(single, wrong_suite),
        "NOT_A_RECIPIENT",
    )

    def labelled(name: str, suite: str) -> Callable[[Item], None]:
        def change(item: Item) -> None:
            entry = next(k for k in item.wrapped_keys if k.recipient_id == keys[name].recipient_id)
            entry.wrap_alg = SUITES[suite].wrap_alg

        return change

    v.fails(
        "an X-Wing key's wrapped key labelled with the X25519 suite",
        "xwing-a",
        changed(xwing, labelled("xwing-a", "X25519")),
        "NOT_A_RECIPIENT",
    )
    v.fails(
        "an X25519 key's wrapped key labelled with the X-Wing suite",
        "x25519-b",
        changed(xwing, labelled("x25519-b", "X-Wing")),
        "NOT_A_RECIPIENT",
    )
    v.fails("a key not among the recipients (X-Wing)", "xwing-a", single, "NOT_A_RECIPIENT")
    v.fails(
        "a version 1 item with an ECDH-ES+A256KW entry planted for an X-Wing key",
        "xwing-a",
        version_1_planted_for(keys["xwing-a"]),
        "NOT_A_RECIPIENT",
    )

    # 6. DECRYPTION_FAILED (the wrapped key), 7. COMMITMENT_MISMATCH, 8. DECRYPTION_FAILED (the content)
    def own(item: Item) -> WrappedKey:
        return next(k for k in item.wrapped_keys if k.recipient_id == keys["x25519-a"].recipient_id)

    v.fails(
        "the reader's wrapped key changed",
        "x25519-a",
        changed(pair, lambda i: setattr(own(i), "wrapped_key", flipped(own(i).wrapped_key, 40))),
        "DECRYPTION_FAILED",
    )
    v.fails(
        "the reader's wrapped key taken from another item (bound to that item)",
        "x25519-a",
        changed(pair, lambda i: setattr(own(i), "wrapped_key", own(for_all).wrapped_key)),
        "DECRYPTION_FAILED",
    )
    v.fails(
        "a wrapped content key of 16 bytes",
        "x25519-a",
        changed(
            single,
            lambda i: i.wrapped_keys[0].CopyFrom(hpke_wrap(bytes(16), keys["x25519-a"], i.encrypted_payload.aad)),
        ),
        "DECRYPTION_FAILED",
    )

    def xwing_wrapped(change: Callable[[bytes], bytes]) -> Callable[[Item], None]:
        def apply(item: Item) -> None:
            entry = next(k for k in item.wrapped_keys if k.recipient_id == keys["xwing-a"].recipient_id)
            entry.wrapped_key = b64url(change(b64url_decode(entry.wrapped_key)))

        return apply

    enc = hpke.KEM.MLKEM768_X25519.enc_length()
    assert enc == XWING_ENC_BYTES
    for label, cut in (
        ("an X-Wing encapsulation cut short (1119 of its 1120 bytes, nothing after)", lambda b: b[: enc - 1]),
        ("an X-Wing wrapped key cut to its encapsulation", lambda b: b[:enc]),
        ("an X-Wing wrapped key a byte short", lambda b: b[:-1]),
        ("an X-Wing encapsulation's ML-KEM ciphertext changed", lambda b: bytes([b[0] ^ 1]) + b[1:]),
        (
            "an X-Wing encapsulation's X25519 part changed",
            lambda b: b[: enc - 1] + bytes([b[enc - 1] ^ 1]) + b[enc:],
        ),
    ):
        v.fails(label, "xwing-a", changed(xwing, xwing_wrapped(cut)), "DECRYPTION_FAILED")
    v.fails(
        "an X-Wing wrapped key taken from another item (bound to that item)",
        "xwing-a",
        changed(xwing, xwing_wrapped(lambda _: b64url_decode(own_of(for_all, keys["xwing-a"]).wrapped_key))),
        "DECRYPTION_FAILED",
    )
    v.fails(
        "an X-Wing wrapped key of another content key",
        "xwing-a",
        changed(
            xwing,
            lambda i: own_of(i, keys["xwing-a"]).CopyFrom(
                hpke_wrap(hashlib.sha256(b"another content key").digest(), keys["xwing-a"], i.encrypted_payload.aad)
            ),
        ),
        "COMMITMENT_MISMATCH",
    )
    two_keys, plain1, plain2 = two_key_item(keys, alice)
    assert plain1 != plain2
    v.opens("one ciphertext under two keys: x25519-a's key is the committed one", "x25519-a", two_keys, plain1)
    v.fails(
        "one ciphertext under two keys: p256-a's key opens it to another text without the commitment",
        "p256-a",
        two_keys,
        "COMMITMENT_MISMATCH",
    )
    v.fails(
        "a ciphertext changed before it was signed",
        "x25519-a",
        re_signed(changed(single, payload(ciphertext=flipped(p.ciphertext))), alice),
        "DECRYPTION_FAILED",
    )

    document = {
        "about": "Items sealed in version 2 by the Python package (scripts/make_sealed_vectors.py), and ways a "
        "reader must refuse one: open `item` with the key `recipient` of recipients.json against the directory of "
        "signers.json's signers whose inDirectory is true (live as `live` says), and expect `expect`. "
        "Not deterministic (HPKE's ephemeral keys): written by hand and committed.",
        "sealedBy": "python",
        "vectors": v.written,
    }
    (TESTDATA / "sealed-v2-python.json").write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    write_key_file(signers, keys)


class Directory:
    """The vectors' directory (the module's docstring), as `open_item` takes one."""

    def __init__(self, signers: Signers) -> None:
        self._devices = {
            entry["deviceId"]: _Device(entry["principalId"], entry["signingJwk"], entry["live"])
            for entry in signers.entries.values()
            if entry["inDirectory"]
        }

    def device(self, device_id: str) -> _Device | None:
        return self._devices.get(device_id)


class _Device:
    def __init__(self, principal_id: str, signing_jwk: str, live: bool) -> None:
        self.principal_id, self.signing_jwk, self.live = principal_id, signing_jwk, live


def write_key_file(signers: Signers, keys: dict[str, RecipientPrivateKey]) -> None:
    """key-file-python.jwe: alice-laptop's signing key with x25519-a as its agreement key, and
    key-files.json saying what it holds and its passphrase."""
    signing = Ed25519PrivateKey.from_private_bytes(b64url_decode(signers.entries["alice-laptop"]["privateJwk"]["d"]))
    agreement = X25519PrivateKey.from_private_bytes(b64url_decode(json.loads(keys["x25519-a"].to_jwk())["d"]))
    device = DeviceKeyPair(signing, agreement)
    (TESTDATA / "key-file-python.jwe").write_text(
        device.to_key_file(KEY_FILE_PASSPHRASE, tenant_id=TENANT, principal_id="alice") + "\n"
    )
    path = TESTDATA / "key-files.json"
    document = json.loads(path.read_text()) if path.exists() else {"files": {}}
    document["about"] = (
        "Device key files (docs/sealing.md, 'Device keys at rest') each package wrote, for the other to open: "
        "the file's passphrase (public by being committed: test keys only), and what it holds, by the names of "
        "signers.json (the signing key) and recipients.json (the agreement key)."
    )
    document["files"]["key-file-python.jwe"] = {
        "passphrase": KEY_FILE_PASSPHRASE,
        "tenantId": TENANT,
        "principalId": "alice",
        "deviceId": device.device_id,
        "signer": "alice-laptop",
        "agreementKey": "x25519-a",
    }
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")  # as the TypeScript script writes it


if __name__ == "__main__":
    main()
