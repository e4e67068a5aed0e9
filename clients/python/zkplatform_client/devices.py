"""A device's key material and the statements it signs (docs/key-transparency.md, "Devices").

A device holds an Ed25519 signing key, whose RFC 7638 thumbprint is its device id, and an
agreement key (X25519, P-256 or X-Wing, xwing.py) that items' keys are wrapped for. `DeviceKeyPair` makes them
(cryptography's keys), exports and imports them as private JWKs, and signs the statements of
zkplatform_tlog.statements: its publication as a principal's first device, its publication to
be endorsed by a device the principal already has (`endorse`), and revocations.

At rest, a device's keys are a key file (docs/sealing.md, "Device keys at rest"): a compact
JWE encrypted under a passphrase with PBES2-HS512+A256KW (`to_key_file`, `from_key_file`,
`read_key_file`; key_files.py); plain JWKs (`to_jwks`, `from_jwks`) only for an application
that keeps them in a platform key store of its own.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from zkplatform_client.key_files import KeyFile, read_key_file, write_key_file
from zkplatform_client.sealing import RecipientPrivateKey
from zkplatform_client.xwing import XWING, XWingPrivateKey, public_jwk
from zkplatform_tlog.statements import (
    DeviceKeys,
    DeviceRevocation,
    b64url,
    b64url_decode,
    canonical_json,
    canonical_public_jwk,
    ed25519_jwk,
    sign_statement,
    thumbprint,
    verify_statement,
)

__all__ = [
    "AgreementCurve",
    "DeviceKeyPair",
    "DeviceStatement",
    "KeyFile",
    "SignedRevocation",
    "endorse",
    "read_key_file",
]

AgreementCurve = Literal["X25519", "P-256", "X-Wing"]
AgreementPrivateKey = X25519PrivateKey | ec.EllipticCurvePrivateKey | XWingPrivateKey

_P256_BYTES = 32
_XWING_SEED_BYTES = 32
# The members of a private JWK that are the private key: d (X25519, P-256, Ed25519), priv (X-Wing).
_PRIVATE_MEMBERS = frozenset({"d", "priv"})
# The `type` of a sealed item's statement (docs/sealing.md, "The signature").
SEALED_ITEM = "zkplatform.sealed-item"


@dataclass(frozen=True)
class DeviceStatement:
    """A `DeviceKeys` statement as PublishDevice takes it: the statement, the new device's
    signature of it and, for a device that is not its principal's first, the endorser's."""

    statement: DeviceKeys
    signature: bytes
    endorsement: bytes = b""

    @property
    def text(self) -> str:
        """The statement's canonical JSON text: what was signed, and what PublishDevice takes."""
        return self.statement.canonical().decode()

    @property
    def device_id(self) -> str:
        return self.statement.device_id


@dataclass(frozen=True)
class SignedRevocation:
    """A `DeviceRevocation` statement and its revoker's signature, as RevokeDevice takes them."""

    statement: DeviceRevocation
    signature: bytes

    @property
    def text(self) -> str:
        return self.statement.canonical().decode()


class DeviceKeyPair:
    """A device's two private keys: Ed25519 to sign statements, X25519, P-256 or X-Wing to open
    items (X-Wing, the hybrid ML-KEM-768 + X25519 KEM, keeps what is sealed for the device from a
    quantum computer of the future; docs/clients.md says when to choose it).

    `to_jwks()` is secret (both private keys): keep it where the application keeps its secrets.
    The repr names the device id only."""

    def __init__(self, signing: Ed25519PrivateKey, agreement: AgreementPrivateKey) -> None:
        if isinstance(agreement, ec.EllipticCurvePrivateKey) and not isinstance(agreement.curve, ec.SECP256R1):
            raise TypeError("an agreement key is X25519, P-256 or X-Wing")
        self._signing = signing
        self._agreement = agreement
        self._signing_jwk = ed25519_jwk(signing.public_key())
        self._agreement_private = _agreement_private_jwk(agreement)
        public = {name: value for name, value in self._agreement_private.items() if name not in _PRIVATE_MEMBERS}
        self._agreement_jwk = canonical_public_jwk(public, signing=False)

    @classmethod
    def generate(cls, agreement: AgreementCurve = "X25519") -> DeviceKeyPair:
        if agreement == "X25519":
            return cls(Ed25519PrivateKey.generate(), X25519PrivateKey.generate())
        if agreement == "P-256":
            return cls(Ed25519PrivateKey.generate(), ec.generate_private_key(ec.SECP256R1()))
        if agreement == XWING:
            return cls(Ed25519PrivateKey.generate(), XWingPrivateKey.generate())
        raise ValueError(f"an agreement key is X25519, P-256 or X-Wing, not {agreement}")

    @classmethod
    def from_jwks(
        cls, signing_key_jwk: str | Mapping[str, Any], private_key_jwk: str | Mapping[str, Any]
    ) -> DeviceKeyPair:
        """The keys `to_jwks()` exported (each a JWK dict or its JSON text, with its private part):
        an Ed25519 signing key and an X25519, P-256 or X-Wing agreement key. ValueError when one
        is not usable or its public members are not those of its private part."""
        signing_members = _members(signing_key_jwk)
        if (signing_members.get("kty"), signing_members.get("crv")) != ("OKP", "Ed25519"):
            raise ValueError('a signing key is Ed25519 (kty "OKP", crv "Ed25519")')
        signing = Ed25519PrivateKey.from_private_bytes(_decode(signing_members, "d", 32))
        if ed25519_jwk(signing.public_key()) != _public_text(signing_members, signing=True):
            raise ValueError("the signing key's public member x is not that of its private part")
        agreement_members = _members(private_key_jwk)
        agreement: AgreementPrivateKey
        if (agreement_members.get("kty"), agreement_members.get("crv")) == ("OKP", "X25519"):
            agreement = X25519PrivateKey.from_private_bytes(_decode(agreement_members, "d", 32))
        elif (agreement_members.get("kty"), agreement_members.get("crv")) == ("EC", "P-256"):
            scalar = int.from_bytes(_decode(agreement_members, "d", _P256_BYTES), "big")
            agreement = ec.derive_private_key(scalar, ec.SECP256R1())
        elif (agreement_members.get("kty"), agreement_members.get("alg")) == ("AKP", XWING):
            agreement = XWingPrivateKey(_decode(agreement_members, "priv", _XWING_SEED_BYTES))
        else:
            raise ValueError('an agreement key is X25519 (kty "OKP"), P-256 (kty "EC") or X-Wing (kty "AKP")')
        pair = cls(signing, agreement)
        if pair.agreement_jwk != _public_text(agreement_members, signing=False):
            raise ValueError("the agreement key's public members are not those of its private part")
        return pair

    def to_jwks(self) -> dict[str, dict[str, str]]:
        """Both private keys as JWK dicts, under the names the development credentials file
        uses: `signingKeyJwk` (Ed25519) and `privateKeyJwk` (the agreement key). Secret."""
        signing = json.loads(self._signing_jwk)
        signing["d"] = b64url(self._signing.private_bytes_raw())
        return {"signingKeyJwk": dict(sorted(signing.items())), "privateKeyJwk": dict(self._agreement_private)}

    @property
    def device_id(self) -> str:
        """The RFC 7638 thumbprint of the signing key: the device's id in the key log."""
        return thumbprint(self._signing_jwk)

    @property
    def signing_jwk(self) -> str:
        """The public signing key's canonical JWK text."""
        return self._signing_jwk

    @property
    def agreement_jwk(self) -> str:
        """The public agreement key's canonical JWK text: what items are sealed for."""
        return self._agreement_jwk

    @property
    def agreement_key_id(self) -> str:
        """The agreement key's RFC 7638 thumbprint: the recipient key id of sealed items."""
        return thumbprint(self._agreement_jwk)

    def recipient_key(self) -> RecipientPrivateKey:
        """The agreement key as sealing.py opens items with it."""
        return RecipientPrivateKey.from_jwk(self._agreement_private)

    def device_statement(
        self, tenant_id: str, principal_id: str, *, endorser: str = "", created: int | None = None
    ) -> DeviceStatement:
        """This device's `DeviceKeys` statement, signed by itself. With `endorser` (a live
        device of the principal), `endorse` adds that device's signature; without, it is the
        principal's first device."""
        statement = DeviceKeys(tenant_id, principal_id, self._signing_jwk, self._agreement_jwk, _now(created), endorser)
        return DeviceStatement(statement, sign_statement(self._signing, statement))

    def first_device_statement(self, tenant_id: str, principal_id: str, created: int | None = None) -> DeviceStatement:
        """The statement that publishes this device as the principal's first (no endorser)."""
        return self.device_statement(tenant_id, principal_id, created=created)

    def revocation(
        self, tenant_id: str, principal_id: str, device_id: str, created: int | None = None
    ) -> SignedRevocation:
        """A `DeviceRevocation` of `device_id` (this device's own, or another of its principal's),
        signed by this device as the revoker."""
        statement = DeviceRevocation(tenant_id, principal_id, device_id, self.device_id, _now(created))
        return SignedRevocation(statement, sign_statement(self._signing, statement))

    def sign(self, statement: DeviceKeys | DeviceRevocation) -> bytes:
        """This device's Ed25519 signature of a statement's canonical bytes."""
        return sign_statement(self._signing, statement)

    def sign_sealed_item(self, statement: bytes) -> bytes:
        """This device's Ed25519 signature of a sealed item's statement (sealing.py's
        `payload_statement`). Anything else is refused: the key signs the key log's statements
        too, and must never sign one of them through here."""
        try:
            document = json.loads(statement)
        except ValueError:
            document = None
        sealed_item = isinstance(document, dict) and document.get("type") == SEALED_ITEM
        if not sealed_item or canonical_json(document) != statement:
            raise ValueError("not a sealed item's statement in canonical form")
        return self._signing.sign(statement)

    def to_key_file(
        self, passphrase: str | None, *, tenant_id: str, principal_id: str, unencrypted: bool = False
    ) -> str:
        """Both private keys, with the device's tenant and principal, as a key file: a compact
        JWE under `passphrase` (PBES2-HS512+A256KW, A256GCM, 210,000 iterations). The plain
        JSON of the keys only with `unencrypted=True` and no passphrase."""
        return write_key_file(self, passphrase, tenant_id=tenant_id, principal_id=principal_id, unencrypted=unencrypted)

    @classmethod
    def from_key_file(cls, text: str, passphrase: str | None, *, unencrypted: bool = False) -> DeviceKeyPair:
        """The keys of a key file `to_key_file` (or the TypeScript package's `toKeyFile`) wrote;
        SealingError WRONG_PASSPHRASE for a wrong passphrase or a damaged file, MALFORMED for a
        text that is not a key file, UNSUPPORTED for another algorithm or iteration count.
        `read_key_file` answers its tenant and principal too."""
        return read_key_file(text, passphrase, unencrypted=unencrypted).keys

    def __repr__(self) -> str:  # never a private part
        return f"DeviceKeyPair(device_id={self.device_id!r})"

    __str__ = __repr__


def endorse(statement: DeviceStatement, endorser: DeviceKeyPair) -> DeviceStatement:
    """`statement` (a new device's, naming `endorser` as its endorser) with the endorser's
    signature added. Checks first that the statement is what it says: the new device's own
    signature verifies, and it names this endorser (ValueError otherwise), so that a device
    endorses only what the new device really signed."""
    keys = statement.statement
    if keys.endorser != endorser.device_id:
        raise ValueError("the statement does not name this device as its endorser")
    if not verify_statement(keys.signing_jwk, keys, statement.signature):
        raise ValueError("the statement's signature is not the new device's")
    return DeviceStatement(keys, statement.signature, endorser.sign(keys))


def _now(created: int | None) -> int:
    return int(time.time()) if created is None else created


def _members(jwk: str | Mapping[str, Any]) -> dict[str, Any]:
    members = json.loads(jwk) if isinstance(jwk, str) else dict(jwk)
    if not isinstance(members, dict):
        raise ValueError("a JWK is a JSON object")  # noqa: TRY004 - the text given, not its type
    return members


def _decode(members: Mapping[str, Any], name: str, length: int) -> bytes:
    value = members.get(name)
    if not isinstance(value, str):
        raise ValueError(f"the JWK has no {name}")  # noqa: TRY004 - JSON given
    return b64url_decode(value, length)


def _public_text(members: Mapping[str, Any], *, signing: bool) -> str:
    public = {name: value for name, value in members.items() if name not in _PRIVATE_MEMBERS}
    return canonical_public_jwk(public, signing=signing)


def _agreement_private_jwk(key: AgreementPrivateKey) -> dict[str, str]:
    if isinstance(key, XWingPrivateKey):
        return dict(sorted({**public_jwk(key.public_bytes), "priv": b64url(key.seed)}.items()))
    if isinstance(key, X25519PrivateKey):
        return {
            "crv": "X25519",
            "d": b64url(key.private_bytes_raw()),
            "kty": "OKP",
            "x": b64url(key.public_key().public_bytes_raw()),
        }
    numbers = key.private_numbers()
    return {
        "crv": "P-256",
        "d": b64url(numbers.private_value.to_bytes(_P256_BYTES, "big")),
        "kty": "EC",
        "x": b64url(numbers.public_numbers.x.to_bytes(_P256_BYTES, "big")),
        "y": b64url(numbers.public_numbers.y.to_bytes(_P256_BYTES, "big")),
    }
