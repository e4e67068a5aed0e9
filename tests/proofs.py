"""DPoP proofs for tests: a valid proof by default, and any header or claim changed, left out,
or signed by another key, so that each check of zkplatform.domain.dpop can be made to fail alone."""

from __future__ import annotations

import base64
import enum
import json
import secrets
from collections.abc import Mapping
from typing import Final

from joserfc import jwk
from joserfc.jws import JWSRegistry

from zkplatform.domain.dpop import access_token_hash


class _Omit(enum.Enum):
    OMIT = "omit"


OMIT: Final = _Omit.OMIT  # as a header or claim value: leave that member out

_ALG: Final = {"EC": "ES256", "OKP": "EdDSA"}


def alg_of(key: jwk.Key) -> str:
    """The algorithm a DPoP client signs with for this key (RFC 9449 names)."""
    return _ALG[key.key_type]


def build_proof(
    key: jwk.Key,
    url: str,
    token: str,
    iat: int,
    *,
    method: str = "POST",
    header: Mapping[str, object] | None = None,
    claims: Mapping[str, object] | None = None,
    payload: bytes | None = None,
    signer: jwk.Key | None = None,
    signature: bytes | None = None,
) -> str:
    """A compact JWS proving possession of `key` for a `method` request to `url` made with `token` at `iat`.

    `header` and `claims` override (or, with OMIT, remove) members of the valid ones;
    `payload` replaces the claims' JSON with raw bytes. The proof is signed by `signer`
    (by default `key`) with that key's own algorithm, whatever the header's `alg` says,
    and nothing checks the header first, so a proof can be signed whatever is wrong
    with it; `signature` puts those bytes in place of a signature.
    """
    protected = _merged({"typ": "dpop+jwt", "alg": alg_of(key), "jwk": key.as_dict(private=False)}, header)
    body = {"htm": method, "htu": url, "iat": iat, "jti": secrets.token_urlsafe(16), "ath": access_token_hash(token)}
    content = json.dumps(_merged(body, claims)).encode() if payload is None else payload
    signing_input = f"{_b64(json.dumps(protected).encode())}.{_b64(content)}"
    if signature is None:
        signing_key = signer or key
        signature = JWSRegistry.algorithms[alg_of(signing_key)].sign(signing_input.encode(), signing_key)
    return f"{signing_input}.{_b64(signature)}"


def _merged(base: dict[str, object], changes: Mapping[str, object] | None) -> dict[str, object]:
    merged = {**base, **(changes or {})}
    return {name: value for name, value in merged.items() if value is not OMIT}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
