"""DPoP proofs (RFC 9449): proof of possession of the key a token is bound to.

A proof is a JWS whose header carries the public key (`jwk`) and whose claims
tie it to one HTTP request (`htm`, `htu`), one moment (`iat`), one use (`jti`)
and one token (`ath`). Verification uses joserfc; nothing here is hand-made
crypto. Every failure names the check that failed, never the token.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import warnings
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

from joserfc import jwk, jws
from joserfc.errors import JoseError, SecurityWarning

from zkplatform.domain.authority import parse_authority
from zkplatform.domain.errors import ProofInvalid, ProofReplayed
from zkplatform.domain.ports.limits import LimitsRepository

# ES256 (EC P-256), and Ed25519 under its RFC 8037 name EdDSA (what DPoP
# clients send) or its RFC 9864 name Ed25519.
ALGORITHMS: Final = ("ES256", "EdDSA", "Ed25519")
MAX_AGE_SECONDS: Final = 60
MAX_PROOF_BYTES: Final = 8 * 1024
MAX_JTI_LENGTH: Final = 256
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_METHOD_NAME: Final = re.compile(r"[A-Za-z]{1,16}")
_NO_HTTP_URL: Final = "the proof's htu is not an http(s) URL naming a host and an optional port"


@dataclass(frozen=True, slots=True)
class ProofRequest:
    """The request a DPoP proof must describe, and the proof it carried (if any)."""

    proof: str | None
    htm: str
    htu: str


def access_token_hash(access_token: str) -> str:
    """The `ath` claim: base64url (unpadded) SHA-256 of the token."""
    return base64.urlsafe_b64encode(hashlib.sha256(access_token.encode()).digest()).rstrip(b"=").decode()


def normalize_htu(url: str) -> str | None:
    """A URL as `htu` compares (RFC 9449 section 4.3): no query or fragment, scheme and host in
    lower case, default port dropped; None when it is not an http(s) URL whose authority is a
    host and an optional port (domain/authority.py), which nothing the server serves matches."""
    try:
        parts = urlsplit(url)
    except ValueError:  # brackets that do not close, or that hold no address
        return None
    scheme = parts.scheme.lower()
    authority = parse_authority(parts.netloc)
    if scheme not in _DEFAULT_PORTS or authority is None:
        return None
    return f"{scheme}://{authority.text(_DEFAULT_PORTS[scheme])}{parts.path or '/'}"


def _refused(reason: str) -> ProofInvalid:
    return ProofInvalid(f"DPoP proof: {reason}")


def _htm_refused(htm: object, method: str) -> ProofInvalid:
    """Names the method the proof should have said (GET for the Connect GET form, else POST), and
    the one it said when that looks like a method name: nothing else of the proof is repeated."""
    if htm is None:
        said = "the proof has no htm"
    elif isinstance(htm, str) and _METHOD_NAME.fullmatch(htm):
        said = f"the proof's htm is {htm}"
    else:
        said = "the proof's htm is not a method name"
    return _refused(f"htm does not match the request method: {said}; this call is a {method}")


async def verify_proof(
    request: ProofRequest, *, key_thumbprint: str, access_token: str, now: int, replay: LimitsRepository
) -> None:
    """Check the proof for a request made with `access_token` bound to `key_thumbprint`."""
    if not request.proof:
        raise _refused("missing DPoP header")
    if len(request.proof) > MAX_PROOF_BYTES:
        raise _refused("too large")
    signed = _verified(request.proof, key_thumbprint)
    claims = _claims(signed)
    if claims.get("htm") != request.htm:
        raise _htm_refused(claims.get("htm"), request.htm)
    _check_htu(claims.get("htu"), request.htu)
    iat = claims.get("iat")
    if not isinstance(iat, int) or isinstance(iat, bool) or abs(now - iat) > MAX_AGE_SECONDS:
        raise _refused(f"iat is not within {MAX_AGE_SECONDS} seconds of the server's time")
    if claims.get("ath") != access_token_hash(access_token):
        raise _refused("ath does not match the access token")
    jti = claims.get("jti")
    if not isinstance(jti, str) or not jti or len(jti) > MAX_JTI_LENGTH:
        raise _refused("jti is missing")
    if not _storable(jti):
        raise _refused("jti must not contain U+0000 (NUL) or an unpaired surrogate")
    # Remembered long enough to cover every iat the window still accepts.
    if not await replay.remember_proof(key_thumbprint, jti, now, iat + 2 * MAX_AGE_SECONDS):
        raise ProofReplayed("DPoP proof: jti was already used")


def _check_htu(htu: object, request_url: str) -> None:
    if not isinstance(htu, str):
        raise _refused("htu does not match the request URL")
    normal = normalize_htu(htu)
    if normal is None:
        raise _refused(f"htu does not match the request URL: {_NO_HTTP_URL}")
    # The request's URL is the front's (rpc/origin.py), its Host checked there: None is no match all the same.
    if normal != normalize_htu(request_url):
        raise _refused("htu does not match the request URL")


def _storable(text: str) -> bool:
    """Whether every store can remember the string: PostgreSQL text holds no U+0000, and no
    store can encode an unpaired surrogate (which JSON's \\u escapes can make) as UTF-8."""
    if "\x00" in text:
        return False
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _verified(proof: str, key_thumbprint: str) -> jws.CompactSignature:
    try:
        signed = jws.extract_compact(proof.encode())
    except (JoseError, ValueError):
        raise _refused("not a compact JWS") from None
    header = signed.headers()
    if header.get("typ") != "dpop+jwt":
        raise _refused("typ must be dpop+jwt")
    alg = header.get("alg")
    if alg not in ALGORITHMS:
        raise _refused(f"alg must be one of {', '.join(ALGORITHMS)}")
    public = header.get("jwk")
    if not isinstance(public, dict) or "d" in public:
        raise _refused("the header must carry the public jwk")
    try:
        key = jwk.import_key(public)
    except (JoseError, ValueError, TypeError):
        raise _refused("the header's jwk is not a usable public key") from None
    if key.thumbprint() != key_thumbprint:
        raise _refused("jwk is not the key the token is bound to")
    try:
        with warnings.catch_warnings():
            # EdDSA is the name RFC 9449 clients use; joserfc flags it as superseded by RFC 9864.
            warnings.filterwarnings("ignore", category=SecurityWarning, message="EdDSA is deprecated")
            valid = jws.validate_compact(signed, key, algorithms=[alg])
    except (JoseError, ValueError):
        valid = False
    if not valid:
        raise _refused("signature is not valid")
    return signed


def _claims(signed: jws.CompactSignature) -> dict[str, Any]:
    try:
        claims = json.loads(signed.payload)
    except (ValueError, UnicodeDecodeError):
        raise _refused("claims are not JSON") from None
    if not isinstance(claims, dict):
        raise _refused("claims are not a JSON object")
    return claims
