"""DPoP (RFC 9449): a key pair that tokens can be bound to, and a proof of it for each call.

A token minted with `pop_key_id=key.thumbprint` is bound to `key`: every call with it carries
`Authorization: DPoP <token>` and a `DPoP` header, a JWS signed by the key that names the call's
method (`htm`: GET for the Connect GET form, else POST) and URL without its query (`htu`), the
time (`iat`), a unique id (`jti`) and the token's hash (`ath`). `AuthInterceptor(..., dpop=key)`
makes one for every call; `proof()` is there for anything else (curl, another HTTP client).

The JOSE work is joserfc's: nothing here signs or hashes by hand but the `ath` digest.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import re
import secrets
import time
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from joserfc import jwk, jws

ALGORITHM: Final = "ES256"
_NAME: Final = re.compile(r"[A-Za-z0-9._~-]{1,253}")


class DPoPKey:
    """An EC P-256 key pair signing DPoP proofs with ES256.

    Make one with `DPoPKey.generate()`; keep `private_jwk()` somewhere safe to use the same key
    (and the tokens bound to it) after a restart, and load it with `DPoPKey.from_jwk()`.
    """

    def __init__(self, key: jwk.ECKey) -> None:
        if not key.is_private or key.as_dict(private=False).get("crv") != "P-256":
            raise ValueError("a DPoP key is a private EC P-256 key")
        self._key = key
        self._public = {name: value for name, value in key.as_dict(private=False).items() if name != "kid"}
        self._thumbprint: str = key.thumbprint()

    @classmethod
    def generate(cls) -> DPoPKey:
        return cls(jwk.ECKey.generate_key("P-256", private=True))

    @classmethod
    def from_jwk(cls, private_jwk: Mapping[str, Any]) -> DPoPKey:
        """A key saved with `private_jwk()`."""
        key = jwk.ECKey.import_key(dict(private_jwk))
        return cls(key)

    def private_jwk(self) -> dict[str, Any]:
        """The private key as a JWK (a secret: store it like one)."""
        return dict(self._key.as_dict(private=True))

    def public_jwk(self) -> dict[str, Any]:
        return dict(self._public)

    @property
    def thumbprint(self) -> str:
        """The RFC 7638 SHA-256 JWK thumbprint (`jkt`): MintUserApiToken's `pop_key_id`."""
        return self._thumbprint

    def proof(self, method: str, url: str, access_token: str) -> str:
        """A fresh proof for one call: `method` the HTTP method, `url` the procedure's URL (any query
        or fragment is left out of `htu`), `access_token` the token in `Authorization`."""
        header = {"typ": "dpop+jwt", "alg": ALGORITHM, "jwk": self._public}
        claims = {
            "htm": method.upper(),
            "htu": htu(url),
            "iat": int(time.time()),
            "jti": secrets.token_urlsafe(16),
            "ath": access_token_hash(access_token),
        }
        return jws.serialize_compact(header, json.dumps(claims), self._key, algorithms=[ALGORITHM])

    def __repr__(self) -> str:  # never the private part
        return f"DPoPKey(thumbprint={self._thumbprint!r})"


def htu(url: str) -> str:
    """The URL as a proof names it: without query or fragment (RFC 9449 section 4.2).

    ValueError, saying what is wrong (never the URL, which could carry credentials), when it is
    not an http(s) URL of a host and an optional port from 1 to 65535: the server refuses a proof
    of any other, so a malformed base URL fails here, where it is given, not at every call."""
    try:
        parts = urlsplit(url)
        port = parts.port  # ValueError for a port that is no number from 0 to 65535
    except ValueError as error:
        raise ValueError(f"a DPoP proof names an http(s) URL: this one is malformed ({error})") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError("a DPoP proof names an http(s) URL: this one has another scheme, or none")
    if not _host(parts.netloc):
        msg = "a DPoP proof names an http(s) URL: this one's host is neither a name nor an IP address (IPv6 in [])"
        raise ValueError(msg)
    if port == 0 or parts.netloc.endswith(":"):
        raise ValueError("a DPoP proof names an http(s) URL: this one's port is not from 1 to 65535")
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _host(netloc: str) -> bool:
    """Whether the URL's authority names a host as the server reads one (its domain/authority.py):
    a name of RFC 3986's unreserved characters, or an IPv6 address in brackets, without a zone."""
    if "@" in netloc:
        return False
    if netloc.startswith("["):
        literal = netloc[1 : netloc.find("]")]
        if "%" in literal:
            return False
        try:
            ipaddress.IPv6Address(literal)
        except ValueError:
            return False
        return True
    return _NAME.fullmatch(netloc.partition(":")[0]) is not None


def access_token_hash(access_token: str) -> str:
    """The `ath` claim: base64url (unpadded) SHA-256 of the access token."""
    digest = hashlib.sha256(access_token.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
