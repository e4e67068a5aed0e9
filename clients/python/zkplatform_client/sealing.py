"""End-to-end encryption of items, in the format of docs/sealing.md (the TypeScript package's too).

`seal` encrypts an item's content under a fresh content key (AES-256-GCM under a key derived
from it, which the payload commits to, with additional authenticated data that binds it to its
tenant, vault, item and kind), wraps that key for each recipient key with HPKE (RFC 9180, bound
to the item and the recipient), and signs the payload, the recipient list and the item version
the write creates with the sealing device's Ed25519 key. `open_item` checks all of it against
a key directory the reader verified itself and answers the plaintext with who sealed it;
`share` wraps the same content key for more recipients and signs again, `unshare` seals the
content again, under a new content key, for fewer. A recipient key is X25519, P-256 or X-Wing
(the hybrid ML-KEM-768 + X25519 KEM, xwing.py), one HPKE suite each (`SUITES`). Version 1 payloads (JWE-wrapped keys,
unsigned) still open, read only (sealed_v1.py); every write is version 2.

Recipient keys come from the tenant's key directory: take them from `KeyDirectory.recipient_keys`
(key_directory.py), the agreement keys of the live devices of the log it verified itself, never
from an unchecked answer; open against the same verified state (`KeyLogState`).

Nothing here is a primitive made by hand: HPKE, HKDF, AES-GCM and Ed25519 are cryptography's.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeVar

from cryptography.exceptions import InvalidTag, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, hpke
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from joserfc import jwk
from joserfc.errors import JoseError

from zkplatform_api.platform.v1.vault_pb2 import EncryptedPayload, Item, WrappedKey
from zkplatform_client.xwing import XWING, XWingPrivateKey, XWingPublicKey, public_jwk
from zkplatform_tlog import ed25519
from zkplatform_tlog.statements import StatementError, b64url, b64url_decode, canonical_json, canonical_public_jwk

if TYPE_CHECKING:
    from zkplatform_client.devices import DeviceKeyPair

__all__ = [
    "ALG",
    "FORMAT_VERSION",
    "MAX_PLAINTEXT",
    "MAX_RECIPIENTS",
    "SUITES",
    "VERSION_WINDOW",
    "Curve",
    "Opened",
    "RecipientKey",
    "RecipientPrivateKey",
    "SealContext",
    "Sealed",
    "SealedBy",
    "SealingError",
    "SealingReason",
    "SignerDevice",
    "SignerDirectory",
    "Suite",
    "open_item",
    "payload_statement",
    "seal",
    "share",
    "unshare",
]

ALG: Final = "A256GCM"
# The payload format every write makes; version 1 is read only.
FORMAT_VERSION: Final = 2
# The ciphertext (plaintext and 16-byte tag) must stay within the 49,152 base64url characters
# EncryptedPayload.ciphertext takes: 36,864 bytes.
MAX_PLAINTEXT: Final = 36_848
# What CreateItem and UpdateItem take in wrapped_keys.
MAX_RECIPIENTS: Final = 256
# How many lower versions a signature that does not verify is tried with (VERSION_MISMATCH).
VERSION_WINDOW: Final = 64
CONTENT_KEY_BYTES: Final = 32
NONCE_BYTES: Final = 12
_COMMITMENT_BYTES: Final = 32
_SIGNATURE_BYTES: Final = 64
_KDF_INFO: Final = b"zkplatform sealed item v2"
_SEALED_ITEM: Final = "zkplatform.sealed-item"
_ITEM_KEY: Final = "zkplatform.item-key"

# A recipient key's type: a JWK's `crv` (X25519, P-256), or X-Wing's `alg`.
Curve = Literal["X25519", "P-256", "X-Wing"]
PublicAgreementKey = X25519PublicKey | ec.EllipticCurvePublicKey | hpke.MLKEM768X25519PublicKey
PrivateAgreementKey = X25519PrivateKey | ec.EllipticCurvePrivateKey | hpke.MLKEM768X25519PrivateKey
SealingReason = Literal[
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
    "TOO_LARGE",
    "NO_RECIPIENTS",
    "WRONG_PASSPHRASE",
]


@dataclass(frozen=True)
class Suite:
    """How items' keys are wrapped for one key type: the `wrap_alg` name and its HPKE suite."""

    wrap_alg: str
    hpke: hpke.Suite = field(repr=False, compare=False)


# One entry a key type (a JWK's `crv`, or X-Wing's `alg`): a new KEM is an entry here, with its
# keys' import and export in RecipientPrivateKey and _public_key.
SUITES: Final[Mapping[str, Suite]] = {
    "X25519": Suite(
        "HPKE-Base-X25519-SHA256-A256GCM", hpke.Suite(hpke.KEM.X25519, hpke.KDF.HKDF_SHA256, hpke.AEAD.AES_256_GCM)
    ),
    "P-256": Suite(
        "HPKE-Base-P256-SHA256-A256GCM", hpke.Suite(hpke.KEM.P256, hpke.KDF.HKDF_SHA256, hpke.AEAD.AES_256_GCM)
    ),
    XWING: Suite(
        "HPKE-Base-XWing-SHA256-A256GCM",
        hpke.Suite(hpke.KEM.MLKEM768_X25519, hpke.KDF.HKDF_SHA256, hpke.AEAD.AES_256_GCM),
    ),
}

_T = TypeVar("_T")
_KEY_TYPES: Final = "recipient keys are X25519 (kty OKP), P-256 (kty EC) or X-Wing (kty AKP, alg X-Wing)"
# The key types of each curve, and the members its RFC 7638 thumbprint covers.
_CURVES: Final[dict[str, tuple[str, tuple[str, ...]]]] = {
    "X25519": ("OKP", ("crv", "kty", "x")),
    "P-256": ("EC", ("crv", "kty", "x", "y")),
}
# Ids and kinds as the API takes them (vault.proto): within these, the aad's JSON needs no escaping.
_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")
_KIND: Final = re.compile(r"[a-z][a-z0-9._-]{0,31}")


class SealingError(Exception):
    """Content that cannot be sealed or opened; `reason` says why, as docs/sealing.md names it
    (the TypeScript package's names): opening refuses a deleted item (a tombstone) with DELETED,
    and any other with the first of MALFORMED, UNSUPPORTED, BINDING_MISMATCH, SIGNER_UNKNOWN,
    SIGNATURE_INVALID, RECIPIENTS_MISMATCH, VERSION_MISMATCH, NOT_A_RECIPIENT, DECRYPTION_FAILED
    and COMMITMENT_MISMATCH that applies;
    sealing refuses with TOO_LARGE (more than MAX_PLAINTEXT bytes or MAX_RECIPIENTS keys) or
    NO_RECIPIENTS, or UNSUPPORTED for a key of another type; a key file that does not open
    with its passphrase is WRONG_PASSPHRASE (key_files.py).

    The message never holds a key or content."""

    def __init__(self, reason: SealingReason, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason: SealingReason = reason


class SignerDevice(Protocol):
    """A device as a verified key directory knows it (key_log.py's `LoggedDevice` is one)."""

    @property
    def principal_id(self) -> str: ...
    @property
    def signing_jwk(self) -> str: ...
    @property
    def live(self) -> bool: ...


class SignerDirectory(Protocol):
    """What `open_item` checks a signer against: the verified key directory (`KeyLogState`),
    or for tests any map of device ids to devices. None for a device it does not hold."""

    def device(self, device_id: str) -> SignerDevice | None: ...


@dataclass(frozen=True)
class SealedBy:
    """Who sealed an item (or last shared it): the signing device, its principal, and whether
    the directory holds that device live still (a revoked device's writes still open)."""

    principal_id: str
    device_id: str
    live: bool


@dataclass(frozen=True)
class Opened:
    """An opened item: its content, its payload's format version, and who sealed it (None for
    version 1, which is unsigned: anyone with write access could have written it)."""

    plaintext: bytes = field(repr=False)
    format_version: int
    sealed_by: SealedBy | None


@dataclass(frozen=True)
class RecipientKey:
    """A public key to seal for: its RFC 7638 thumbprint (`key_id`) and canonical JWK text, and
    whose it is (a device of a principal, as the verified key log has it; "" when unknown)."""

    key_id: str
    jwk: str
    principal_id: str = ""
    device_id: str = ""


class RecipientPrivateKey:
    """A recipient's key pair (X25519, P-256 or X-Wing): what items are opened with.

    A device's agreement key (devices.py, `DeviceKeyPair.recipient_key()`); keep it in the
    device's key file (`DeviceKeyPair.to_key_file`), encrypted under a passphrase."""

    def __init__(self, key: jwk.OKPKey | jwk.ECKey | XWingPrivateKey) -> None:
        if isinstance(key, XWingPrivateKey):
            self._key: jwk.OKPKey | jwk.ECKey | XWingPrivateKey = key
            self._public_jwk = _canonical_public(public_jwk(key.public_bytes))
            self._curve = XWING
            self._thumbprint = hashlib.sha256(self._public_jwk.encode()).digest()
            return
        if not key.is_private:
            raise ValueError("a recipient's private key needs its private part (d)")
        public = _canonical_public(dict(key.as_dict(private=False)))
        # joserfc keeps the public members it is given as they are: x (or y) that is not d's
        # would publish a key id this key opens nothing for.
        if public != _public_of(key):
            raise ValueError("the JWK's public members are not those of its private key")
        self._key = key
        self._public_jwk = public
        self._curve = str(key.as_dict(private=False)["crv"])
        self._thumbprint = hashlib.sha256(public.encode()).digest()

    @classmethod
    def generate(cls, curve: Curve = "X25519") -> RecipientPrivateKey:
        if curve == "X25519":
            return cls(jwk.OKPKey.generate_key("X25519", private=True))
        if curve == "P-256":
            return cls(jwk.ECKey.generate_key("P-256", private=True))
        if curve == XWING:
            return cls(_xwing(XWingPrivateKey.generate))
        raise SealingError("UNSUPPORTED", f"recipient keys are X25519, P-256 or X-Wing, not {curve}")

    @classmethod
    def from_jwk(cls, private_jwk: str | Mapping[str, Any]) -> RecipientPrivateKey:
        """A private JWK (the JSON text, or the parsed object) of X25519 (`kty` OKP) or P-256
        (`kty` EC), with `d`, or of X-Wing (`kty` AKP, `alg` X-Wing), with `priv` (its seed)."""
        members = dict(json.loads(private_jwk) if isinstance(private_jwk, str) else private_jwk)
        if (members.get("kty"), members.get("alg")) == ("AKP", XWING):
            return cls._from_xwing_jwk(members)
        kty, _ = _CURVES.get(str(members.get("crv")), (None, ()))
        if kty is None or members.get("kty") != kty:
            raise SealingError("UNSUPPORTED", _KEY_TYPES)
        if "d" not in members:
            raise ValueError("a recipient's private key needs its private part (d)")
        key_type = jwk.OKPKey if kty == "OKP" else jwk.ECKey
        try:
            key = key_type.import_key(members)
        except (JoseError, ValueError, TypeError):
            raise ValueError(f"not a usable {members['crv']} private key") from None
        return cls(key)

    @classmethod
    def _from_xwing_jwk(cls, members: Mapping[str, Any]) -> RecipientPrivateKey:
        seed = members.get("priv")
        if not isinstance(seed, str):
            raise ValueError("a recipient's private key needs its private part (priv)")  # noqa: TRY004 - JSON given
        try:
            key = cls(_xwing(lambda: XWingPrivateKey(b64url_decode(seed, 32))))
        except ValueError:
            raise ValueError("not a usable X-Wing private key (priv is its 32-byte seed)") from None
        # The public member as given must be the seed's: another would publish a key id this key
        # opens nothing for.
        if key.public_jwk != _canonical_public({name: members.get(name) for name in ("alg", "kty", "pub")}):
            raise ValueError("the JWK's public members are not those of its private key")
        return key

    def to_jwk(self) -> str:
        """The private key as JWK text, with `d` (X-Wing: `priv`, its seed; a secret: store it like one)."""
        if isinstance(self._key, XWingPrivateKey):
            members = {**public_jwk(self._key.public_bytes), "priv": b64url(self._key.seed)}
            return json.dumps(members, sort_keys=True, separators=(",", ":"))
        return json.dumps(dict(self._key.as_dict(private=True)), sort_keys=True, separators=(",", ":"))

    @property
    def public_jwk(self) -> str:
        """The public key's canonical JWK text (RFC 7638): a device statement's `agreementKey`."""
        return self._public_jwk

    @property
    def curve(self) -> str:
        return self._curve

    @property
    def key_id(self) -> str:
        """The RFC 7638 thumbprint, base64url: a device's `agreement_key_id`."""
        return b64url(self._thumbprint)

    @property
    def recipient_id(self) -> str:
        """The thumbprint in 64 lowercase hex digits: a wrapped key's `recipient_id`."""
        return self._thumbprint.hex()

    @property
    def agreement_key(self) -> PrivateAgreementKey:
        """The private key as cryptography's HPKE holds it (it opens wrapped keys with it)."""
        if isinstance(self._key, XWingPrivateKey):
            return self._key.hpke_key
        private = self._key.private_key
        if not isinstance(private, X25519PrivateKey | ec.EllipticCurvePrivateKey):  # X25519 or P-256 only
            raise TypeError(private)
        return private

    @property
    def jwk_key(self) -> jwk.OKPKey | jwk.ECKey:
        """The key as joserfc holds it (version 1's JWEs are opened with it): X25519 and P-256
        only, the key types of version 1."""
        if isinstance(self._key, XWingPrivateKey):
            raise TypeError("an X-Wing key opens no version 1 item")
        return self._key

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
    """A sealed content: CreateItem's (or UpdateItem's) `encrypted_payload` and `wrapped_keys`,
    signed for `version`, the item version the write creates."""

    encrypted_payload: EncryptedPayload
    wrapped_keys: list[WrappedKey] = field(default_factory=list)
    version: int = 1


@dataclass(frozen=True)
class _Recipient:
    key_id: str
    recipient_id: str
    curve: str
    jwk: str
    public: PublicAgreementKey


def seal(
    plaintext: bytes,
    recipients: Iterable[RecipientKey | str],
    context: SealContext,
    signer: DeviceKeyPair,
    *,
    version: int = 1,
) -> Sealed:
    """`plaintext` (at most MAX_PLAINTEXT bytes) sealed for the item `context` names, for each of
    `recipients` (RecipientKeys, as `KeyDirectory.recipient_keys` answers them, or public JWK
    texts; the same key given twice is wrapped for once): 1 to MAX_RECIPIENTS keys; signed by
    the device `signer` for `version`, the item version the write creates (1 for CreateItem,
    base_version + 1 for UpdateItem)."""
    if len(plaintext) > MAX_PLAINTEXT:
        raise SealingError("TOO_LARGE", f"the plaintext is {len(plaintext)} bytes, more than {MAX_PLAINTEXT}")
    keys = _recipients(recipients)
    if not keys:
        raise SealingError("NO_RECIPIENTS", "an item is sealed for at least one recipient key")
    if len(keys) > MAX_RECIPIENTS:
        raise SealingError("TOO_LARGE", f"{len(keys)} recipient keys, more than {MAX_RECIPIENTS}")
    content_key = secrets.token_bytes(CONTENT_KEY_BYTES)
    nonce = secrets.token_bytes(NONCE_BYTES)
    aad = _aad(context.tenant_id, context.vault_id, context.item_id, context.kind, FORMAT_VERSION)
    aes_key, commitment = _derive(content_key)
    payload = EncryptedPayload(
        alg=ALG,
        version=FORMAT_VERSION,
        nonce=b64url(nonce),
        aad=b64url(aad),
        ciphertext=b64url(AESGCM(aes_key).encrypt(nonce, plaintext, aad)),
        commitment=b64url(commitment),
    )
    wrapped = [_wrap(content_key, key, payload.aad) for key in keys]
    return _signed(payload, wrapped, version, signer)


def open_item(item: Item, private_key: RecipientPrivateKey, directory: SignerDirectory) -> Opened:
    """The content of `item` opened with `private_key`, and who sealed it, checked against
    `directory` (the verified `KeyLogState`); SealingError with the reason otherwise
    (docs/sealing.md, "Opening", in its order)."""
    return _open(item, private_key, directory)[1]


def share(  # noqa: PLR0913 - docs/sealing.md's parameters, the version by name
    item: Item,
    private_key: RecipientPrivateKey,
    recipients: Iterable[RecipientKey | str],
    signer: DeviceKeyPair,
    directory: SignerDirectory,
    *,
    version: int | None = None,
) -> Sealed:
    """`item` shared with `recipients` too, once it opened with `private_key` (every check of
    `open_item`): its content key wrapped for each recipient key that has no usable wrapped key
    yet (one of another `wrap_alg` is replaced), the other keys kept, signed by `signer` for
    `version` (the item's version plus 1 unless given). With no new recipient it only signs
    again: what an update that leaves the content alone sends. A version 1 item is sealed again
    in version 2, under a new content key, for `recipients` and `private_key`'s own key: it
    names its recipients by id only, so give every recipient it should keep. Send it with
    UpdateItem, update_mask `encrypted_payload,wrapped_keys`, base_version the item's version."""
    signed_for = item.version + 1 if version is None else version
    content_key, opened = _open(item, private_key, directory)
    keys = _recipients(recipients)
    if opened.format_version == 1:
        everyone = [private_key.public_jwk, *(key.jwk for key in keys)]
        return seal(opened.plaintext, everyone, SealContext.of(item), signer, version=signed_for)
    new = {key.recipient_id: key for key in keys}
    kept = [
        WrappedKey(recipient_id=k.recipient_id, wrap_alg=k.wrap_alg, wrapped_key=k.wrapped_key)
        for k in item.wrapped_keys
        if k.recipient_id not in new or k.wrap_alg == SUITES[new[k.recipient_id].curve].wrap_alg
    ]
    present = {k.recipient_id for k in kept}
    added = [_wrap(content_key, key, item.encrypted_payload.aad) for key in keys if key.recipient_id not in present]
    if len(kept) + len(added) > MAX_RECIPIENTS:
        raise SealingError("TOO_LARGE", f"{len(kept) + len(added)} recipient keys, more than {MAX_RECIPIENTS}")
    payload = EncryptedPayload()
    payload.CopyFrom(item.encrypted_payload)
    return _signed(payload, kept + added, signed_for, signer)


def unshare(  # noqa: PLR0913 - docs/sealing.md's parameters, the version by name
    item: Item,
    private_key: RecipientPrivateKey,
    recipients: Iterable[RecipientKey | str],
    signer: DeviceKeyPair,
    directory: SignerDirectory,
    *,
    version: int | None = None,
) -> Sealed:
    """`item`'s content (opened with `private_key`, every check of `open_item`) sealed again,
    under a new content key, for exactly `recipients` (include your own key to keep reading
    it), signed by `signer` for `version` (the item's version plus 1 unless given): who is
    left out cannot open what is written from now on. Send it with UpdateItem, update_mask
    `encrypted_payload,wrapped_keys`."""
    opened = open_item(item, private_key, directory)
    signed_for = item.version + 1 if version is None else version
    return seal(opened.plaintext, recipients, SealContext.of(item), signer, version=signed_for)


def payload_statement(payload: EncryptedPayload, recipient_ids: Iterable[str], version: int) -> bytes:
    """The canonical bytes a version 2 payload's signer signs (docs/sealing.md, "The
    signature"): the payload as sent, its recipients in ascending order, and the item version
    the write creates."""
    ciphertext = b64url_decode(payload.ciphertext)
    return canonical_json(
        {
            "aad": payload.aad,
            "ciphertextSha256": b64url(hashlib.sha256(ciphertext).digest()),
            "commitment": payload.commitment,
            "format": FORMAT_VERSION,
            "nonce": payload.nonce,
            "recipients": sorted(recipient_ids),
            "signer": payload.signer,
            "type": _SEALED_ITEM,
            "version": version,
        }
    )


def _signed(payload: EncryptedPayload, wrapped: list[WrappedKey], version: int, signer: DeviceKeyPair) -> Sealed:
    if version < 1:
        raise ValueError("the item version a write creates is 1 or more")
    wrapped = sorted(wrapped, key=lambda k: k.recipient_id)
    payload.signer = signer.device_id
    statement = payload_statement(payload, (k.recipient_id for k in wrapped), version)
    payload.signature = b64url(signer.sign_sealed_item(statement))
    return Sealed(payload, wrapped, version)


@dataclass(frozen=True)
class DecodedPayload:
    """A payload's fields, decoded once they passed step 1 (MALFORMED)."""

    nonce: bytes
    aad: bytes
    ciphertext: bytes
    commitment: bytes
    signature: bytes
    own: WrappedKey | None
    own_wrapped: bytes


def _open(item: Item, private_key: RecipientPrivateKey, directory: SignerDirectory) -> tuple[bytes, Opened]:
    """The content key and the opened item: docs/sealing.md, "Opening", step by step."""
    if item.deleted:  # a tombstone keeps no content: say so, not what its empty fields look like
        raise SealingError("DELETED", f"the item was deleted (its tombstone is version {item.version})")
    payload = item.encrypted_payload
    fields = _decoded(item, private_key)
    if payload.alg != ALG or payload.version not in {1, 2}:
        raise SealingError("UNSUPPORTED", f"a payload of alg {payload.alg[:16]!r} version {payload.version}")
    if fields.aad != _aad(item.tenant_id, item.vault_id, item.item_id, item.kind, payload.version):
        raise SealingError("BINDING_MISMATCH", "the payload was sealed for another item, vault, tenant or kind")
    if payload.version == 1:
        # Only here: a version 1 item needs joserfc's JWE, which nothing else does any more.
        from zkplatform_client.sealed_v1 import open_v1  # noqa: PLC0415

        content_key, plaintext = open_v1(fields.own, fields, private_key)
        return content_key, Opened(plaintext, 1, None)
    sealed_by = _check_signature(item, fields.signature, private_key, directory)
    suite = SUITES[private_key.curve]
    if fields.own is None or fields.own.wrap_alg != suite.wrap_alg:
        raise SealingError("NOT_A_RECIPIENT", f"no wrapped key of {suite.wrap_alg} for key {private_key.key_id}")
    info = _key_info(payload.aad, private_key.key_id)
    try:
        content_key = suite.hpke.decrypt(fields.own_wrapped, private_key.agreement_key, info=info)
    except (InvalidTag, ValueError):
        content_key = b""
    if len(content_key) != CONTENT_KEY_BYTES:
        raise SealingError("DECRYPTION_FAILED", "the wrapped key does not open with this key")
    aes_key, commitment = _derive(content_key)
    if not hmac.compare_digest(commitment, fields.commitment):
        raise SealingError("COMMITMENT_MISMATCH", "the content key is not the one the payload commits to")
    try:
        plaintext = AESGCM(aes_key).decrypt(fields.nonce, fields.ciphertext, fields.aad)
    except InvalidTag:
        raise SealingError("DECRYPTION_FAILED", "the ciphertext does not decrypt (tampered)") from None
    return content_key, Opened(plaintext, 2, sealed_by)


def _decoded(item: Item, private_key: RecipientPrivateKey) -> DecodedPayload:
    """Step 1: every field the reader reads is canonical base64url of the right length, and
    each recipient id is there once; another recipient's wrapped key is not decoded."""
    payload = item.encrypted_payload
    nonce = _field(payload.nonce, "nonce", NONCE_BYTES)
    aad = _field(payload.aad, "aad")
    ciphertext = _field(payload.ciphertext, "ciphertext")
    commitment = signature = b""
    if payload.version == FORMAT_VERSION:
        commitment = _field(payload.commitment, "commitment", _COMMITMENT_BYTES)
        signature = _field(payload.signature, "signature", _SIGNATURE_BYTES)
    ids = [k.recipient_id for k in item.wrapped_keys]
    if len(set(ids)) != len(ids):
        raise SealingError("MALFORMED", "two wrapped keys have one recipient id")
    own = next((k for k in item.wrapped_keys if k.recipient_id == private_key.recipient_id), None)
    own_wrapped = b"" if own is None else _field(own.wrapped_key, "wrapped_key")
    return DecodedPayload(nonce, aad, ciphertext, commitment, signature, own, own_wrapped)


def _field(text: str, name: str, length: int | None = None) -> bytes:
    try:
        return b64url_decode(text, length)
    except ValueError:
        size = "" if length is None else f" of {length} bytes"
        raise SealingError("MALFORMED", f"{name} is not canonical base64url{size}") from None


def _check_signature(
    item: Item, signature: bytes, private_key: RecipientPrivateKey, directory: SignerDirectory
) -> SealedBy:
    """Step 4: the signer is a device of the directory, and its signature verifies over the
    statement rebuilt from the item; otherwise the first rebuilding that verifies names the
    reason (the payload carries neither the signed recipients nor the signed version)."""
    payload = item.encrypted_payload
    device = directory.device(payload.signer)
    if device is None:
        raise SealingError("SIGNER_UNKNOWN", "the signer is not a device of the verified key directory")
    public = b64url_decode(json.loads(device.signing_jwk)["x"], 32)

    def signed(recipients: Iterable[str], version: int) -> bool:
        return ed25519.verify(public, payload_statement(payload, recipients, version), signature)

    recipients = sorted(k.recipient_id for k in item.wrapped_keys)
    if signed(recipients, item.version):
        return SealedBy(device.principal_id, payload.signer, device.live)
    fewer = ([r for r in recipients if r != left_out] for left_out in recipients)
    if any(signed(candidate, item.version) for candidate in fewer) or (
        private_key.recipient_id not in recipients and signed([*recipients, private_key.recipient_id], item.version)
    ):
        raise SealingError("RECIPIENTS_MISMATCH", "the item's recipients are not those its sealer signed")
    lower = range(item.version - 1, max(0, item.version - 1 - VERSION_WINDOW), -1)
    if any(signed(recipients, version) for version in lower):
        raise SealingError("VERSION_MISMATCH", "the payload was signed for an older version of the item")
    raise SealingError("SIGNATURE_INVALID", "the signature does not verify with the signer's key")


def _derive(content_key: bytes) -> tuple[bytes, bytes]:
    """The AES-256-GCM key and the key commitment, both derived from the content key."""
    derived = HKDF(algorithm=hashes.SHA256(), length=64, salt=None, info=_KDF_INFO).derive(content_key)
    return derived[:32], derived[32:]


def _key_info(aad: str, key_id: str) -> bytes:
    """HPKE's `info`: the wrapped key bound to this item (its aad as sent) and this recipient."""
    return canonical_json({"aad": aad, "keyId": key_id, "type": _ITEM_KEY})


def _wrap(content_key: bytes, recipient: _Recipient, aad: str) -> WrappedKey:
    suite = SUITES[recipient.curve]
    wrapped = suite.hpke.encrypt(content_key, recipient.public, info=_key_info(aad, recipient.key_id))
    return WrappedKey(recipient_id=recipient.recipient_id, wrap_alg=suite.wrap_alg, wrapped_key=b64url(wrapped))


def _recipients(recipients: Iterable[RecipientKey | str]) -> list[_Recipient]:
    """Each distinct key once, in the order given."""
    found: dict[str, _Recipient] = {}
    for recipient in recipients:
        text = recipient.jwk if isinstance(recipient, RecipientKey) else recipient
        members = _public_members(text)
        curve, canonical, public = _public_key(members)
        digest = hashlib.sha256(canonical.encode()).digest()
        key_id = b64url(digest)
        if isinstance(recipient, RecipientKey) and recipient.key_id != key_id:
            raise ValueError(f"recipient key {recipient.key_id} is not the thumbprint of its jwk")
        found.setdefault(key_id, _Recipient(key_id, digest.hex(), curve, canonical, public))
    return list(found.values())


def _public_members(text: str) -> dict[str, Any]:
    try:
        members = json.loads(text)
    except ValueError:
        members = None
    if not isinstance(members, dict):
        raise ValueError("a recipient is a public JWK's JSON text")  # noqa: TRY004 - the text given, not its type
    for private in ("d", "priv"):
        if private in members:
            raise ValueError(f"a recipient is a public key: this JWK has a private part ({private})")
    return members


def _canonical_public(members: Mapping[str, Any]) -> str:
    return _public_key(members)[1]


def _public_key(members: Mapping[str, Any]) -> tuple[str, str, PublicAgreementKey]:
    """The key type, the RFC 7638 text (its required members, sorted, no whitespace) and the key
    of an X25519, P-256 or X-Wing public key, once joserfc (X25519, P-256) has taken its
    coordinates for a usable key as they are written, or the key directory's reader has checked
    an X-Wing key as it checks a device's."""
    if (members.get("kty"), members.get("alg")) == ("AKP", XWING):
        return _xwing_public_key(members)
    kty, required = _CURVES.get(str(members.get("crv")), (None, ()))
    if kty is None or members.get("kty") != kty:
        raise SealingError("UNSUPPORTED", _KEY_TYPES)
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
    public = key.public_key
    if not isinstance(public, X25519PublicKey | ec.EllipticCurvePublicKey):  # the types of _CURVES
        raise TypeError(public)
    return str(members["crv"]), json.dumps(canonical, sort_keys=True, separators=(",", ":")), public


def _xwing_public_key(members: Mapping[str, Any]) -> tuple[str, str, PublicAgreementKey]:
    """An X-Wing public key: its members checked as a device statement's (statements.py:
    FIPS 203's checks of the ML-KEM-768 part, an X25519 part of no small order)."""
    try:
        canonical = canonical_public_jwk({name: members.get(name) for name in ("alg", "kty", "pub")}, signing=False)
    except StatementError as error:  # ENTRY_UNSUPPORTED: no ML-KEM in this cryptography's backend
        raise SealingError("UNSUPPORTED", str(error)) from None
    except ValueError as error:
        raise ValueError(f"not a usable X-Wing public key: {error}") from None
    public = _xwing(lambda: XWingPublicKey(b64url_decode(json.loads(canonical)["pub"])))
    return XWING, canonical, public.hpke_key


def _xwing(make: Callable[[], _T]) -> _T:
    """`make()`, an X-Wing key, or UNSUPPORTED where cryptography's backend has no ML-KEM."""
    try:
        return make()
    except UnsupportedAlgorithm as error:
        raise SealingError("UNSUPPORTED", str(error)) from None


def _aad(tenant_id: str, vault_id: str, item_id: str, kind: str, version: int) -> bytes:
    """The additional authenticated data: these members, in this order, no whitespace."""
    document = {"itemId": item_id, "kind": kind, "tenantId": tenant_id, "v": version, "vaultId": vault_id}
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()


# `sealing.open(item, key, directory)`, the TypeScript package's name, for a module-qualified
# call; the package exports `open_item`, which shadows no builtin.
open = open_item  # noqa: A001
