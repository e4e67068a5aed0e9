"""End-to-end encryption of items, in the format of docs/sealing.md (the TypeScript package's too).

`seal` encrypts an item's content under a fresh content key (AES-256-GCM, with additional
authenticated data that binds it to its tenant, vault, item and kind) and wraps that key for
each recipient key in a compact JWE (ECDH-ES+A256KW); `open_item` undoes it with one
recipient's private key; `share` wraps the same content key for more recipients, `unshare`
seals the content again, under a new content key, for fewer.

Recipient keys come from the tenant's key directory: take them from `KeyDirectory.recipient_keys`
(key_directory.py), the agreement keys of the live devices of the log it verified itself, never
from an unchecked answer.

Nothing here is a primitive made by hand: AES-GCM is cryptography's, the JWE joserfc's.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from joserfc import jwe, jwk
from joserfc.errors import JoseError

from zkplatform_api.platform.v1.vault_pb2 import EncryptedPayload, Item, WrappedKey

__all__ = [
    "ALG",
    "MAX_PLAINTEXT",
    "MAX_RECIPIENTS",
    "VERSION",
    "WRAP_ALG",
    "Curve",
    "RecipientKey",
    "RecipientPrivateKey",
    "SealContext",
    "Sealed",
    "SealingError",
    "SealingReason",
    "open_item",
    "seal",
    "share",
    "unshare",
]

ALG: Final = "A256GCM"
VERSION: Final = 1
WRAP_ALG: Final = "ECDH-ES+A256KW"
# The ciphertext (plaintext and 16-byte tag) must stay within the 49,152 base64url characters
# EncryptedPayload.ciphertext takes: 36,864 bytes.
MAX_PLAINTEXT: Final = 36_848
# What CreateItem and UpdateItem take in wrapped_keys.
MAX_RECIPIENTS: Final = 256
CONTENT_KEY_BYTES: Final = 32
NONCE_BYTES: Final = 12

Curve = Literal["X25519", "P-256"]
SealingReason = Literal[
    "UNSUPPORTED", "BINDING_MISMATCH", "NOT_A_RECIPIENT", "DECRYPTION_FAILED", "TOO_LARGE", "NO_RECIPIENTS"
]

# The key types of each curve, and the members its RFC 7638 thumbprint covers.
_CURVES: Final[dict[str, tuple[str, tuple[str, ...]]]] = {
    "X25519": ("OKP", ("crv", "kty", "x")),
    "P-256": ("EC", ("crv", "kty", "x", "y")),
}
# Only what this format uses, so that a JWE of another algorithm is refused, never tried.
_JWE_REGISTRY: Final = jwe.JWERegistry(algorithms=[WRAP_ALG, ALG])
# Ids and kinds as the API takes them (vault.proto): within these, the aad's JSON needs no escaping.
_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")
_KIND: Final = re.compile(r"[a-z][a-z0-9._-]{0,31}")
_BASE64URL: Final = re.compile(r"[A-Za-z0-9_-]*")


class SealingError(Exception):
    """Content that cannot be sealed or opened; `reason` says why (the TypeScript package's names):

    - UNSUPPORTED: a payload of another `alg` or `version`, or a key of another type or curve;
    - BINDING_MISMATCH: the payload was sealed for another item, vault, tenant or kind;
    - NOT_A_RECIPIENT: no wrapped key (of `ECDH-ES+A256KW`) is for this private key;
    - DECRYPTION_FAILED: the wrapped key or the ciphertext does not decrypt (tampered, or not ours);
    - TOO_LARGE: more than MAX_PLAINTEXT bytes, or more than MAX_RECIPIENTS recipient keys;
    - NO_RECIPIENTS: nobody to seal for.

    The message never holds a key or content."""

    def __init__(self, reason: SealingReason, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason: SealingReason = reason


@dataclass(frozen=True)
class RecipientKey:
    """A public key to seal for: its RFC 7638 thumbprint (`key_id`) and canonical JWK text, and
    whose it is (a device of a principal, as the verified key log has it; "" when unknown)."""

    key_id: str
    jwk: str
    principal_id: str = ""
    device_id: str = ""


class RecipientPrivateKey:
    """A recipient's key pair (X25519 or P-256): what items are opened with.

    A device's agreement key (devices.py, `DeviceKeyPair.recipient_key()`); keep `to_jwk()`, the
    private key, where the app keeps its secrets, and load it again with `from_jwk()`."""

    def __init__(self, key: jwk.OKPKey | jwk.ECKey) -> None:
        if not key.is_private:
            raise ValueError("a recipient's private key needs its private part (d)")
        public = _canonical_public(dict(key.as_dict(private=False)))
        # joserfc keeps the public members it is given as they are: x (or y) that is not d's
        # would publish a key id this key opens nothing for.
        if public != _public_of(key):
            raise ValueError("the JWK's public members are not those of its private key")
        self._key = key
        self._public_jwk = public
        self._thumbprint = hashlib.sha256(public.encode()).digest()

    @classmethod
    def generate(cls, curve: Curve = "X25519") -> RecipientPrivateKey:
        if curve == "X25519":
            return cls(jwk.OKPKey.generate_key("X25519", private=True))
        if curve == "P-256":
            return cls(jwk.ECKey.generate_key("P-256", private=True))
        raise SealingError("UNSUPPORTED", f"recipient keys are X25519 or P-256, not {curve}")

    @classmethod
    def from_jwk(cls, private_jwk: str | Mapping[str, Any]) -> RecipientPrivateKey:
        """A key saved with `to_jwk()` (the JSON text, or the parsed object): a private JWK of
        X25519 (`kty` OKP) or P-256 (`kty` EC), with `d`."""
        members = dict(json.loads(private_jwk) if isinstance(private_jwk, str) else private_jwk)
        kty, _ = _CURVES.get(str(members.get("crv")), (None, ()))
        if kty is None or members.get("kty") != kty:
            raise SealingError("UNSUPPORTED", "recipient keys are X25519 (kty OKP) or P-256 (kty EC)")
        if "d" not in members:
            raise ValueError("a recipient's private key needs its private part (d)")
        key_type = jwk.OKPKey if kty == "OKP" else jwk.ECKey
        try:
            key = key_type.import_key(members)
        except (JoseError, ValueError, TypeError):
            raise ValueError(f"not a usable {members['crv']} private key") from None
        return cls(key)

    def to_jwk(self) -> str:
        """The private key as JWK text, with `d` (a secret: store it like one)."""
        return json.dumps(dict(self._key.as_dict(private=True)), sort_keys=True, separators=(",", ":"))

    @property
    def public_jwk(self) -> str:
        """The public key's canonical JWK text (RFC 7638): a device statement's `agreementKey`."""
        return self._public_jwk

    @property
    def key_id(self) -> str:
        """The RFC 7638 thumbprint, base64url: a device's `agreement_key_id`, the JWE's `kid`."""
        return _b64encode(self._thumbprint)

    @property
    def recipient_id(self) -> str:
        """The thumbprint in 64 lowercase hex digits: a wrapped key's `recipient_id`."""
        return self._thumbprint.hex()

    def __repr__(self) -> str:  # never the private part
        return f"RecipientPrivateKey(key_id={self.key_id!r})"

    __str__ = __repr__


def _public_of(key: jwk.OKPKey | jwk.ECKey) -> str:
    """The canonical JWK text of the public key derived from the private one (through its PEM,
    which every joserfc since 1.0 imports)."""
    pem = key.public_key.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    return _canonical_public(dict(type(key).import_key(pem).as_dict(private=False)))


@dataclass(frozen=True)
class SealContext:
    """The item a payload is sealed for: its aad binds the payload to exactly these."""

    tenant_id: str
    vault_id: str
    item_id: str
    kind: str

    def __post_init__(self) -> None:
        for name in ("tenant_id", "vault_id", "item_id"):
            if not _ID.fullmatch(getattr(self, name)):
                raise ValueError(f"{name} must be 1 to 64 characters of [A-Za-z0-9._:-], the first alphanumeric")
        if not _KIND.fullmatch(self.kind):
            raise ValueError("kind must be 1 to 32 characters of [a-z0-9._-], the first a letter")

    @classmethod
    def of(cls, item: Item) -> SealContext:
        return cls(item.tenant_id, item.vault_id, item.item_id, item.kind)


@dataclass(frozen=True)
class Sealed:
    """A sealed content: CreateItem's (or UpdateItem's) `encrypted_payload` and `wrapped_keys`."""

    encrypted_payload: EncryptedPayload
    wrapped_keys: list[WrappedKey] = field(default_factory=list)


@dataclass(frozen=True)
class _Recipient:
    key_id: str
    recipient_id: str
    key: jwk.OKPKey | jwk.ECKey


def seal(plaintext: bytes, recipients: Iterable[RecipientKey | str], context: SealContext) -> Sealed:
    """`plaintext` (at most MAX_PLAINTEXT bytes) sealed for the item `context` names, for each of
    `recipients` (RecipientKeys, as `KeyDirectory.recipient_keys` answers them, or public JWK
    texts; the same key given twice is wrapped for once): 1 to MAX_RECIPIENTS keys."""
    if len(plaintext) > MAX_PLAINTEXT:
        raise SealingError("TOO_LARGE", f"the plaintext is {len(plaintext)} bytes, more than {MAX_PLAINTEXT}")
    keys = _recipients(recipients)
    if not keys:
        raise SealingError("NO_RECIPIENTS", "an item is sealed for at least one recipient key")
    if len(keys) > MAX_RECIPIENTS:
        raise SealingError("TOO_LARGE", f"{len(keys)} recipient keys, more than {MAX_RECIPIENTS}")
    content_key = AESGCM.generate_key(bit_length=256)
    nonce = secrets.token_bytes(NONCE_BYTES)
    aad = _aad(context.tenant_id, context.vault_id, context.item_id, context.kind)
    payload = EncryptedPayload(
        alg=ALG,
        version=VERSION,
        nonce=_b64encode(nonce),
        aad=_b64encode(aad),
        ciphertext=_b64encode(AESGCM(content_key).encrypt(nonce, plaintext, aad)),
    )
    return Sealed(payload, [_wrap(content_key, key) for key in keys])


def open_item(item: Item, private_key: RecipientPrivateKey) -> bytes:
    """The content of `item`, opened with `private_key`: SealingError when it is not sealed in
    this format, not for this item, not for this key, or does not decrypt."""
    return _open(item, private_key)[1]


def share(item: Item, private_key: RecipientPrivateKey, recipients: Iterable[RecipientKey | str]) -> list[WrappedKey]:
    """`item`'s wrapped keys followed by its content key wrapped for each of `recipients` it has
    no wrapped key for yet (opened with `private_key`, the payload checked as `open_item` does).
    Keys already there, and keys of a wrap_alg this package does not know, are kept unchanged.
    Send them with UpdateItem, update_mask `wrapped_keys`, base_version the item's version."""
    content_key, _ = _open(item, private_key)
    present = {wrapped.recipient_id for wrapped in item.wrapped_keys}
    added = [_wrap(content_key, key) for key in _recipients(recipients) if key.recipient_id not in present]
    if len(present) + len(added) > MAX_RECIPIENTS:
        raise SealingError("TOO_LARGE", f"{len(present) + len(added)} recipient keys, more than {MAX_RECIPIENTS}")
    kept = [
        WrappedKey(recipient_id=k.recipient_id, wrap_alg=k.wrap_alg, wrapped_key=k.wrapped_key)
        for k in item.wrapped_keys
    ]
    return kept + added


def unshare(item: Item, private_key: RecipientPrivateKey, recipients: Iterable[RecipientKey | str]) -> Sealed:
    """`item`'s content sealed again, under a new content key, for exactly `recipients` (include
    your own key to keep reading it): who is left out cannot open what is written from now on.
    Send it with UpdateItem, update_mask `encrypted_payload,wrapped_keys`."""
    return seal(open_item(item, private_key), recipients, SealContext.of(item))


def _open(item: Item, private_key: RecipientPrivateKey) -> tuple[bytes, bytes]:
    """The content key and the content: docs/sealing.md, "Opening", step by step."""
    payload = item.encrypted_payload
    if payload.alg != ALG or payload.version != VERSION:
        raise SealingError("UNSUPPORTED", f"a payload of alg {payload.alg!r} version {payload.version}")
    aad = _aad(item.tenant_id, item.vault_id, item.item_id, item.kind)
    if payload.aad != _b64encode(aad):
        raise SealingError("BINDING_MISMATCH", "the payload was sealed for another item, vault, tenant or kind")
    wrapped = next(
        (k for k in item.wrapped_keys if k.recipient_id == private_key.recipient_id and k.wrap_alg == WRAP_ALG),
        None,
    )
    if wrapped is None:
        raise SealingError("NOT_A_RECIPIENT", f"no wrapped key for key {private_key.key_id}")
    try:
        token = _b64decode(wrapped.wrapped_key).decode("ascii")
        content_key = jwe.decrypt_compact(token, private_key._key, registry=_JWE_REGISTRY).plaintext  # noqa: SLF001
    except Exception:  # noqa: BLE001 - a hostile JWE makes joserfc raise JoseError, ValueError, KeyError...
        content_key = None
    if content_key is None or len(content_key) != CONTENT_KEY_BYTES:
        raise SealingError("DECRYPTION_FAILED", "the wrapped key does not decrypt with this key")
    try:
        plaintext = AESGCM(content_key).decrypt(_b64decode(payload.nonce), _b64decode(payload.ciphertext), aad)
    except (InvalidTag, ValueError):
        raise SealingError("DECRYPTION_FAILED", "the ciphertext does not decrypt (tampered)") from None
    return content_key, plaintext


def _wrap(content_key: bytes, recipient: _Recipient) -> WrappedKey:
    header = {"alg": WRAP_ALG, "enc": ALG, "kid": recipient.key_id}
    token = jwe.encrypt_compact(header, content_key, recipient.key, registry=_JWE_REGISTRY)
    return WrappedKey(recipient_id=recipient.recipient_id, wrap_alg=WRAP_ALG, wrapped_key=_b64encode(token.encode()))


def _recipients(recipients: Iterable[RecipientKey | str]) -> list[_Recipient]:
    """Each distinct key once, in the order given."""
    found: dict[str, _Recipient] = {}
    for recipient in recipients:
        text = recipient.jwk if isinstance(recipient, RecipientKey) else recipient
        canonical, key = _public_key(_public_members(text))
        digest = hashlib.sha256(canonical.encode()).digest()
        key_id = _b64encode(digest)
        if isinstance(recipient, RecipientKey) and recipient.key_id != key_id:
            raise ValueError(f"recipient key {recipient.key_id} is not the thumbprint of its jwk")
        found.setdefault(key_id, _Recipient(key_id, digest.hex(), key))
    return list(found.values())


def _public_members(text: str) -> dict[str, Any]:
    try:
        members = json.loads(text)
    except ValueError:
        members = None
    if not isinstance(members, dict):
        raise ValueError("a recipient is a public JWK's JSON text")  # noqa: TRY004 - the text given, not its type
    if "d" in members:
        raise ValueError("a recipient is a public key: this JWK has a private part (d)")
    return members


def _canonical_public(members: Mapping[str, Any]) -> str:
    return _public_key(members)[0]


def _public_key(members: Mapping[str, Any]) -> tuple[str, jwk.OKPKey | jwk.ECKey]:
    """The RFC 7638 text of an X25519 or P-256 public key (its required members, sorted, no
    whitespace), and the key, once joserfc has taken its coordinates for a usable key as they
    are written."""
    kty, required = _CURVES.get(str(members.get("crv")), (None, ()))
    if kty is None or members.get("kty") != kty:
        raise SealingError("UNSUPPORTED", "recipient keys are X25519 (kty OKP) or P-256 (kty EC)")
    canonical: dict[str, str | list[str]] = {}
    for name in required:
        value = members.get(name)
        if not isinstance(value, str):
            raise ValueError(f"a {members['crv']} public key has {name} as a string")  # noqa: TRY004 - JSON given
        canonical[name] = value
    key_type = jwk.OKPKey if kty == "OKP" else jwk.ECKey
    try:
        key = key_type.import_key(dict(canonical))
    except (JoseError, ValueError, TypeError):
        raise ValueError(f"not a usable {members['crv']} public key") from None
    exported = key.as_dict(private=False)
    if any(exported.get(name) != canonical[name] for name in required):
        raise ValueError(f"not a usable {members['crv']} public key (a coordinate is not canonical base64url)")
    return json.dumps(canonical, sort_keys=True, separators=(",", ":")), key


def _aad(tenant_id: str, vault_id: str, item_id: str, kind: str) -> bytes:
    """The additional authenticated data: these members, in this order, no whitespace."""
    document = {"itemId": item_id, "kind": kind, "tenantId": tenant_id, "v": VERSION, "vaultId": vault_id}
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64decode(text: str) -> bytes:
    """Strict base64url without padding: a character outside the alphabet is an error, not skipped."""
    if not _BASE64URL.fullmatch(text) or len(text) % 4 == 1:
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


# `sealing.open(item, key)`, the TypeScript package's name, for a module-qualified call; the
# package exports `open_item`, which shadows no builtin.
open = open_item  # noqa: A001
