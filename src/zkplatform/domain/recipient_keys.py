"""Recipient keys: the public keys clients wrap item keys for, as a principal publishes them.

A key arrives as the JSON text of a JWK (RFC 7517). Only key agreement keys of two
curves are taken, X25519 (`kty` OKP) and P-256 (`kty` EC), public members only. joserfc
(with cryptography below it) decides whether the coordinates are a usable public key:
nothing here is hand-made crypto. The key is then kept in the canonical form of RFC 7638
(its required members, sorted, no whitespace), so that its id, the RFC 7638 thumbprint,
is the SHA-256 of exactly the text every answer carries: a client checks a key it is
given by hashing the text it received.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Final

from joserfc import jwk
from joserfc.errors import JoseError

from zkplatform.domain.errors import FieldViolation, InvalidArgument

FIELD: Final = "publicKeyJwk"
# The key types and curves taken, and the members RFC 7638 hashes for each.
CURVES: Final = {("OKP", "X25519"): ("crv", "kty", "x"), ("EC", "P-256"): ("crv", "kty", "x", "y")}
# What may come besides the required members (WebCrypto's exportKey adds key_ops and ext;
# libraries add kid, use, alg): accepted, checked, and not kept.
OPTIONAL_MEMBERS: Final = frozenset({"kid", "use", "alg", "key_ops", "ext"})
# Members of private keys in RFC 7518 (EC and OKP `d`, RSA's, a symmetric key's `k`).
PRIVATE_MEMBERS: Final = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})


@dataclass(frozen=True, slots=True)
class PublicKey:
    """A key fit to publish: its RFC 7638 thumbprint and its canonical JWK text."""

    key_id: str
    jwk: str


@dataclass(frozen=True, slots=True)
class RecipientKey:
    """A published key: whose it is, when it was published, and when it was revoked (None: live)."""

    key_id: str
    tenant_id: str
    principal_id: str
    jwk: str  # canonical (RFC 7638): key_id is the SHA-256 of its UTF-8 bytes
    created_at: int  # Unix seconds
    revoked_at: int | None = None

    @property
    def live(self) -> bool:
        return self.revoked_at is None

    def revoked(self, at: int) -> RecipientKey:
        return RecipientKey(self.key_id, self.tenant_id, self.principal_id, self.jwk, self.created_at, at)


def thumbprint(canonical_jwk: str) -> str:
    """The RFC 7638 SHA-256 thumbprint of a JWK in canonical form, base64url without padding."""
    digest = hashlib.sha256(canonical_jwk.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def public_key(text: str) -> PublicKey:
    """The key the JWK text holds, if it is one to publish; InvalidArgument naming
    publicKeyJwk, and saying what is wrong, otherwise."""
    members = _members(text)
    if private := sorted(PRIVATE_MEMBERS & members.keys()):
        raise _refused(f"has the private member {', '.join(private)}: publish the public key only")
    kty, crv = members.get("kty"), members.get("crv")
    required = CURVES.get((kty, crv)) if isinstance(kty, str) and isinstance(crv, str) else None
    if required is None:
        raise _refused('must be an X25519 key (kty "OKP", crv "X25519") or a P-256 key (kty "EC", crv "P-256")')
    if unknown := sorted(members.keys() - set(required) - OPTIONAL_MEMBERS):
        raise _refused(f"has the member {', '.join(unknown)}, which a public {crv} key has not")
    _check_optional(members)
    canonical: dict[str, str | list[str]] = {}
    for name in required:
        value = members.get(name)
        if not isinstance(value, str):
            raise _refused(f"{name} must be a string")
        canonical[name] = value
    try:
        imported = jwk.import_key(canonical)
    except (JoseError, ValueError, TypeError) as error:  # binascii.Error is a ValueError
        raise _refused(f"is not a usable {crv} public key ({_said(error)})") from None
    # The coordinates as the library writes them back: a coordinate written otherwise (padding,
    # spare bits set, leading zeros left out) would give one key two thumbprints.
    exported: dict[str, Any] = imported.as_dict(private=False)
    if any(exported.get(name) != canonical[name] for name in required):
        raise _refused(f"is not a usable {crv} public key (a coordinate is not in canonical base64url)")
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"))
    return PublicKey(thumbprint(text), text)


def _members(text: str) -> dict[str, Any]:
    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        members = dict(pairs)
        if len(members) != len(pairs):
            raise _refused("repeats a member")
        return members

    try:
        members = json.loads(text, object_pairs_hook=unique)
    except (ValueError, RecursionError):
        raise _refused("is not JSON") from None
    if not isinstance(members, dict):
        raise _refused("must be a JSON object")
    return members


def _check_optional(members: dict[str, Any]) -> None:
    if "use" in members and members["use"] != "enc":
        raise _refused('use must be "enc": a recipient key wraps keys')
    if "alg" in members and not (isinstance(members["alg"], str) and members["alg"].startswith("ECDH-ES")):
        raise _refused("alg must be an ECDH-ES algorithm")
    if "kid" in members and not isinstance(members["kid"], str):
        raise _refused("kid must be a string")
    key_ops = members.get("key_ops", [])
    if not (isinstance(key_ops, list) and all(isinstance(op, str) for op in key_ops)):
        raise _refused("key_ops must be a list of strings")
    if "ext" in members and not isinstance(members["ext"], bool):
        raise _refused("ext must be true or false")


def _said(error: Exception) -> str:
    """The library's reason, in one short line (it never holds more than the key's public parts)."""
    said = " ".join(str(error).split())[:200]
    return said or type(error).__name__


def _refused(why: str) -> InvalidArgument:
    return InvalidArgument([FieldViolation(FIELD, f"the JWK {why}")])
