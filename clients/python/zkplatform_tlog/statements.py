"""The key log's statements and entries (docs/key-transparency.md, "Formats"): their canonical
JSON, strict parsing, key ids, and the Ed25519 signatures over them.

Shared by the server (which checks a statement before it appends it) and the client package
(which checks every entry again when it replays the log), so that both read one definition.
Everything here is pure: no I/O, no clock.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric import ec, mlkem
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from zkplatform_tlog import ed25519

__all__ = [
    "DEVICE_KEYS",
    "DEVICE_REVOCATION",
    "FORMAT",
    "PRINCIPAL_RESET",
    "XWING",
    "XWING_PUBLIC_BYTES",
    "DeviceKeys",
    "DeviceRevocation",
    "Entry",
    "EntrySignature",
    "PrincipalReset",
    "Statement",
    "StatementError",
    "b64url",
    "b64url_decode",
    "canonical_json",
    "canonical_public_jwk",
    "ed25519_jwk",
    "parse_entry",
    "parse_statement",
    "sign_statement",
    "thumbprint",
    "verify_statement",
]

FORMAT: Final = 1
DEVICE_KEYS: Final = "zkplatform.device-keys"
DEVICE_REVOCATION: Final = "zkplatform.device-revocation"
PRINCIPAL_RESET: Final = "zkplatform.principal-reset"

# Ids of tenants and principals, as platform.v1 restricts them; key ids are 43 base64url characters.
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")
_KEY_ID = re.compile(r"[A-Za-z0-9_-]{43}")
_B64URL = re.compile(r"[A-Za-z0-9_-]*")
# The most any Unix-seconds field may hold: what every client language represents exactly.
_MAX_SAFE_INTEGER: Final = 2**53 - 1
# Agreement key types: (kty, crv) and the members RFC 7638 hashes for each.
_AGREEMENT_CURVES: Final = {("OKP", "X25519"): ("crv", "kty", "x"), ("EC", "P-256"): ("crv", "kty", "x", "y")}
# X-Wing, the hybrid ML-KEM-768 + X25519 KEM (draft-connolly-cfrg-xwing-kem), the third agreement
# key type. No JWK form of it is standard: ours is the "AKP" key type of the JOSE/COSE drafts for
# post-quantum keys (draft-ietf-cose-dilithium), {"alg":"X-Wing","kty":"AKP","pub":...}, `pub` the
# 1216-byte public key (ML-KEM-768's encapsulation key, 1184 bytes, then X25519's, 32) and the
# RFC 7638 thumbprint over alg, kty and pub, as those drafts define it for AKP keys.
XWING: Final = "X-Wing"
XWING_PUBLIC_BYTES: Final = 1216
_XWING_MEMBERS: Final = ("alg", "kty", "pub")
_MLKEM768_PUBLIC_BYTES: Final = 1184
# The prime of Curve25519's field (RFC 7748 section 4.1): a coordinate is canonical below it.
_P25519: Final = 2**255 - 19
# The y-coordinates, the sign bit aside, of Ed25519's eight points of small order: the identity
# (1), the point of order 2 (p - 1), the two of order 4 (0) and the four of order 8. libsodium's
# list (ge25519_has_small_order); Chalkias, Garillot, Nikolaenko, "Taming the many EdDSAs" (2020).
# With the sign bit ignored, it holds the "negative zero" encodings of the first two as well.
_ED25519_ORDER_8_Y: Final = 2707385501144840649318225287225658788936804267575313519463743609750303402022
_ED25519_SMALL_ORDER_Y: Final = frozenset({0, 1, _ED25519_ORDER_8_Y, _P25519 - _ED25519_ORDER_8_Y, _P25519 - 1})
# Any fixed private key finds an X25519 point of small order: an exchange with such a point gives
# the all-zero secret whatever the key (the scalar is a multiple of the cofactor), which
# cryptography refuses (RFC 7748 section 6.1), and with no other point of the curve or its twist.
_LOW_ORDER_PROBE: Final = X25519PrivateKey.from_private_bytes(bytes(range(1, 33)))

Reason = Literal["ENTRY_MALFORMED", "ENTRY_UNSUPPORTED"]


class StatementError(ValueError):
    """A statement or an entry that is not well formed (ENTRY_MALFORMED), or of a format or a
    type this code does not know (ENTRY_UNSUPPORTED: the reader needs an update)."""

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(message)
        self.reason: Reason = reason


def canonical_json(value: Any) -> bytes:
    """The canonical bytes of a JSON value: members sorted, no whitespace, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text: str, length: int | None = None) -> bytes:
    """Strict base64url without padding: canonical (re-encoding gives the same text) and, when
    `length` is given, exactly that many bytes; ValueError otherwise."""
    if not _B64URL.fullmatch(text):
        raise ValueError("not base64url")
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error:
        raise ValueError("not base64url") from None
    if b64url(data) != text:
        raise ValueError("not canonical base64url")
    if length is not None and len(data) != length:
        raise ValueError(f"not {length} bytes")
    return data


def thumbprint(canonical_jwk: str) -> str:
    """The RFC 7638 SHA-256 thumbprint of a JWK in canonical form, base64url without padding."""
    return b64url(hashlib.sha256(canonical_jwk.encode()).digest())


def ed25519_jwk(public: Ed25519PublicKey) -> str:
    """The canonical JWK text of an Ed25519 public key."""
    return canonical_json({"crv": "Ed25519", "kty": "OKP", "x": b64url(public.public_bytes_raw())}).decode()


def canonical_public_jwk(members: Mapping[str, Any], *, signing: bool) -> str:
    """The canonical JWK text of a public key given as JWK members: an Ed25519 key when
    `signing`, else an X25519, P-256 or X-Wing agreement key. Exactly the RFC 7638 members, each a
    canonical coordinate of a usable key: no point of small order (Ed25519, X25519), none off the
    curve (P-256, whose points all have its prime order), an X-Wing key whose ML-KEM-768 part passes
    FIPS 203's checks and whose X25519 part is an X25519 key of these; ValueError saying what is
    wrong otherwise (StatementError ENTRY_UNSUPPORTED for an X-Wing key where cryptography's backend
    has no ML-KEM)."""
    kty, crv = members.get("kty"), members.get("crv")
    if signing:
        required: tuple[str, ...] | None = ("crv", "kty", "x") if (kty, crv) == ("OKP", "Ed25519") else None
        if required is None:
            raise ValueError('a signing key must be Ed25519 (kty "OKP", crv "Ed25519")')
    else:
        if (kty, members.get("alg")) == ("AKP", XWING):
            return _xwing_jwk(members)
        required = _AGREEMENT_CURVES.get((kty, crv)) if isinstance(kty, str) and isinstance(crv, str) else None
        if required is None:
            raise ValueError('an agreement key must be X25519 (kty "OKP"), P-256 (kty "EC") or X-Wing (kty "AKP")')
    if set(members) != set(required):
        raise ValueError(f"a {crv} public key has exactly the members {', '.join(required)}")
    if not all(isinstance(members[name], str) for name in required):
        raise ValueError("a JWK's members must be strings")
    x = b64url_decode(members["x"], 32)
    if crv == "Ed25519":
        _require_ed25519(x)
    elif crv == "X25519":
        _require_x25519(x)
    else:
        y = b64url_decode(members["y"], 32)
        try:  # off the curve, or a coordinate not below the field's prime; infinity has no x and y
            ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b"\x04" + x + y)
        except ValueError:
            raise ValueError("the key is not a point of P-256") from None
    return canonical_json({name: members[name] for name in required}).decode()


def _xwing_jwk(members: Mapping[str, Any]) -> str:
    """The canonical JWK text of an X-Wing public key: its ML-KEM-768 part imported by cryptography
    (FIPS 203 section 7.2's checks: its length, and every coefficient below q), its X25519 part as
    any X25519 agreement key (canonical, of no small order)."""
    if set(members) != set(_XWING_MEMBERS):
        raise ValueError(f"an X-Wing public key has exactly the members {', '.join(_XWING_MEMBERS)}")
    if not isinstance(members["pub"], str):
        raise ValueError("a JWK's members must be strings")  # noqa: TRY004 - JSON given
    public = b64url_decode(members["pub"], XWING_PUBLIC_BYTES)
    try:
        mlkem.MLKEM768PublicKey.from_public_bytes(public[:_MLKEM768_PUBLIC_BYTES])
    except UnsupportedAlgorithm:
        raise StatementError(
            "ENTRY_UNSUPPORTED", "X-Wing keys need ML-KEM, which this cryptography backend lacks: update it"
        ) from None
    except ValueError:
        raise ValueError("the X-Wing key's ML-KEM-768 part is no encapsulation key (FIPS 203 section 7.2)") from None
    try:
        _require_x25519(public[_MLKEM768_PUBLIC_BYTES:])
    except ValueError as error:
        raise ValueError(f"the X-Wing key's X25519 part: {error}") from None
    return canonical_json({name: members[name] for name in _XWING_MEMBERS}).decode()


def _require_ed25519(x: bytes) -> None:
    """An Ed25519 public key that a signature can bind: canonical, and of no small order, whose
    "signatures" anyone makes (the identity verifies every message under s*B = R)."""
    y = int.from_bytes(x, "little") & ((1 << 255) - 1)
    if y >= _P25519:
        raise ValueError("an Ed25519 key must be canonical: its y below 2^255 - 19 (RFC 8032 section 5.1.3)")
    if y in _ED25519_SMALL_ORDER_Y:
        raise ValueError("an Ed25519 key must not be a point of small order: anyone can make its signatures")
    Ed25519PublicKey.from_public_bytes(x)


def _require_x25519(x: bytes) -> None:
    """An X25519 public key that items can be sealed for: canonical (so that one key has one id),
    and of no small order (an exchange with it gives the all-zero secret)."""
    if int.from_bytes(x, "little") >= _P25519:  # bit 255 set too: RFC 7748 section 5 masks it
        raise ValueError("an X25519 key must be canonical: below 2^255 - 19, bit 255 clear (RFC 7748 section 5)")
    try:
        _LOW_ORDER_PROBE.exchange(X25519PublicKey.from_public_bytes(x))
    except ValueError:
        msg = "an X25519 key must not be of small order: every exchange with it gives the all-zero secret"
        raise ValueError(f"{msg} (RFC 7748 section 6.1)") from None


@dataclass(frozen=True, slots=True)
class DeviceKeys:
    """A device's publication: its signing and agreement keys (canonical JWK texts), signed by
    itself and, unless it is its principal's first device, endorsed by the device `endorser`."""

    tenant_id: str
    principal_id: str
    signing_jwk: str
    agreement_jwk: str
    created: int
    endorser: str  # a device id, or "" for a first device

    @property
    def device_id(self) -> str:
        return thumbprint(self.signing_jwk)

    @property
    def agreement_key_id(self) -> str:
        return thumbprint(self.agreement_jwk)

    def document(self) -> dict[str, Any]:
        return {
            "agreementKey": json.loads(self.agreement_jwk),
            "created": self.created,
            "endorser": self.endorser,
            "format": FORMAT,
            "principalId": self.principal_id,
            "signingKey": json.loads(self.signing_jwk),
            "tenantId": self.tenant_id,
            "type": DEVICE_KEYS,
        }

    def canonical(self) -> bytes:
        return canonical_json(self.document())


@dataclass(frozen=True, slots=True)
class DeviceRevocation:
    """The revocation of the device `device`, signed by the live device `revoker` of the same principal."""

    tenant_id: str
    principal_id: str
    device: str
    revoker: str
    created: int

    def document(self) -> dict[str, Any]:
        return {
            "created": self.created,
            "device": self.device,
            "format": FORMAT,
            "principalId": self.principal_id,
            "revoker": self.revoker,
            "tenantId": self.tenant_id,
            "type": DEVICE_REVOCATION,
        }

    def canonical(self) -> bytes:
        return canonical_json(self.document())


@dataclass(frozen=True, slots=True)
class PrincipalReset:
    """An operator's reset of a principal: all its devices revoked, signed by the log key."""

    tenant_id: str
    principal_id: str
    created: int

    def document(self) -> dict[str, Any]:
        return {
            "created": self.created,
            "format": FORMAT,
            "principalId": self.principal_id,
            "tenantId": self.tenant_id,
            "type": PRINCIPAL_RESET,
        }

    def canonical(self) -> bytes:
        return canonical_json(self.document())


Statement = DeviceKeys | DeviceRevocation | PrincipalReset


@dataclass(frozen=True, slots=True)
class EntrySignature:
    key_id: str  # a device id, or for a reset the log key's 8-hex-digit key hash
    signature: bytes  # 64 bytes of Ed25519

    def document(self) -> dict[str, str]:
        return {"keyId": self.key_id, "signature": b64url(self.signature)}


@dataclass(frozen=True, slots=True)
class Entry:
    """A leaf of the key log: a statement as signed, with its signatures in the order the
    format fixes (docs/key-transparency.md, "Entries")."""

    statement: Statement
    signatures: tuple[EntrySignature, ...]

    def canonical(self) -> bytes:
        return canonical_json(
            {
                "format": FORMAT,
                "signatures": [signature.document() for signature in self.signatures],
                "statement": self.statement.document(),
            }
        )


def sign_statement(key: Ed25519PrivateKey, statement: Statement) -> bytes:
    return key.sign(statement.canonical())


def verify_statement(signing_jwk: str, statement: Statement, signature: bytes) -> bool:
    """Whether `signature` is the Ed25519 signature of the statement by the key `signing_jwk`
    (a canonical Ed25519 JWK text)."""
    return ed25519.verify(b64url_decode(json.loads(signing_jwk)["x"], 32), statement.canonical(), signature)


def parse_statement(text: str | bytes) -> Statement:
    """The statement a canonical JSON text holds; StatementError saying what is wrong otherwise."""
    document = _canonical_document(text, "statement")
    return _statement(document)


def parse_entry(text: str | bytes) -> Entry:
    """The entry a leaf's canonical JSON text holds; StatementError saying what is wrong otherwise."""
    document = _canonical_document(text, "entry")
    _format(document, "entry")
    _exactly(document, {"format", "signatures", "statement"}, "entry")
    statement = document["statement"]
    signatures = document["signatures"]
    if not isinstance(statement, dict):
        raise _malformed("the entry's statement must be an object")
    if not isinstance(signatures, list) or not 1 <= len(signatures) <= 8:
        raise _malformed("the entry's signatures must be a list of 1 to 8")
    return Entry(_statement(statement), tuple(_signature(signature) for signature in signatures))


def _canonical_document(text: str | bytes, what: str) -> dict[str, Any]:
    raw = text.encode() if isinstance(text, str) else text
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError):
        raise _malformed(f"the {what} is not JSON") from None
    if not isinstance(document, dict):
        raise _malformed(f"the {what} must be a JSON object")
    try:
        canonical = canonical_json(document)
    except UnicodeEncodeError:  # an escaped lone surrogate: no UTF-8 text, so never canonical
        canonical = b""
    if canonical != raw:
        raise _malformed(f"the {what} is not in canonical form (members sorted, no whitespace)")
    return document


def _statement(document: dict[str, Any]) -> Statement:
    _format(document, "statement")
    kind = document.get("type")
    tenant_id = _id(document, "tenantId")
    principal_id = _id(document, "principalId")
    created = _seconds(document, "created")
    if kind == DEVICE_KEYS:
        _exactly(
            document,
            {"agreementKey", "created", "endorser", "format", "principalId", "signingKey", "tenantId", "type"},
            kind,
        )
        endorser = document["endorser"]
        if not (endorser == "" or (isinstance(endorser, str) and _KEY_ID.fullmatch(endorser))):
            raise _malformed("endorser must be a device id or empty")
        signing = _jwk(document, "signingKey", signing=True)
        agreement = _jwk(document, "agreementKey", signing=False)
        return DeviceKeys(tenant_id, principal_id, signing, agreement, created, endorser)
    if kind == DEVICE_REVOCATION:
        _exactly(document, {"created", "device", "format", "principalId", "revoker", "tenantId", "type"}, kind)
        return DeviceRevocation(
            tenant_id, principal_id, _key_id(document, "device"), _key_id(document, "revoker"), created
        )
    if kind == PRINCIPAL_RESET:
        _exactly(document, {"created", "format", "principalId", "tenantId", "type"}, kind)
        return PrincipalReset(tenant_id, principal_id, created)
    if isinstance(kind, str):
        raise StatementError(
            "ENTRY_UNSUPPORTED", f"the statement type {kind[:64]!r} is unknown here: update the client"
        )
    raise _malformed("a statement's type must be a string")


def _signature(document: Any) -> EntrySignature:
    if not isinstance(document, dict) or set(document) != {"keyId", "signature"}:
        raise _malformed("a signature has exactly keyId and signature")
    key_id, signature = document["keyId"], document["signature"]
    if not (isinstance(key_id, str) and (_KEY_ID.fullmatch(key_id) or re.fullmatch(r"[0-9a-f]{8}", key_id))):
        raise _malformed("a signature's keyId must be a device id or a log key hash")
    try:
        raw = b64url_decode(signature, 64) if isinstance(signature, str) else None
    except ValueError:
        raw = None
    if raw is None:
        raise _malformed("a signature must be 64 bytes in base64url")
    return EntrySignature(key_id, raw)


def _format(document: dict[str, Any], what: str) -> None:
    version = document.get("format")
    if version == FORMAT and type(version) is int:
        return
    if type(version) is int:
        raise StatementError("ENTRY_UNSUPPORTED", f"the {what} format {version} is unknown here: update the client")
    raise _malformed(f"the {what} has no format version")


def _exactly(document: dict[str, Any], members: set[str], what: str) -> None:
    if set(document) != members:
        raise _malformed(f"a {what} has exactly the members {', '.join(sorted(members))}")


def _id(document: dict[str, Any], name: str) -> str:
    value = document.get(name)
    if not (isinstance(value, str) and _ID.fullmatch(value)):
        raise _malformed(f"{name} must be an id")
    return value


def _key_id(document: dict[str, Any], name: str) -> str:
    value = document.get(name)
    if not (isinstance(value, str) and _KEY_ID.fullmatch(value)):
        raise _malformed(f"{name} must be a key id (43 base64url characters)")
    return value


def _seconds(document: dict[str, Any], name: str) -> int:
    value = document.get(name)
    if type(value) is not int or not 0 <= value <= _MAX_SAFE_INTEGER:
        raise _malformed(f"{name} must be Unix seconds")
    return value


def _jwk(document: dict[str, Any], name: str, *, signing: bool) -> str:
    members = document.get(name)
    if not isinstance(members, dict):
        raise _malformed(f"{name} must be a JWK object")
    try:
        return canonical_public_jwk(members, signing=signing)
    except StatementError:
        raise
    except ValueError as error:
        raise _malformed(f"{name}: {error}") from None


def _malformed(message: str) -> StatementError:
    return StatementError("ENTRY_MALFORMED", message)
