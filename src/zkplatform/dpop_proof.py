"""Make DPoP keys and proofs: for clients, the README's example and the tests.

python -m zkplatform.dpop_proof new-key KEYFILE [--kind ec|ed25519]
    writes a private JWK and prints its thumbprint (the popKeyId)
python -m zkplatform.dpop_proof proof KEYFILE URL TOKEN
    prints a fresh proof for a POST to URL made with TOKEN
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import time
import warnings
from pathlib import Path
from typing import Literal

from joserfc import jwk, jws
from joserfc.errors import SecurityWarning

from zkplatform.domain.dpop import access_token_hash

KeyKind = Literal["ec", "ed25519"]
_ALG = {"EC": "ES256", "OKP": "EdDSA"}


def new_key(kind: KeyKind = "ec") -> jwk.Key:
    if kind == "ec":
        return jwk.ECKey.generate_key("P-256")
    return jwk.OKPKey.generate_key("Ed25519")


def thumbprint(key: jwk.Key) -> str:
    """The RFC 7638 SHA-256 thumbprint: what popKeyId carries."""
    return key.thumbprint()


def make_proof(  # noqa: PLR0913 # the claims a test may want to get wrong
    key: jwk.Key,
    url: str,
    access_token: str,
    *,
    method: str = "POST",
    iat: int | None = None,
    jti: str | None = None,
) -> str:
    alg = _ALG[key.key_type]
    header = {"typ": "dpop+jwt", "alg": alg, "jwk": key.as_dict(private=False)}
    claims = {
        "htm": method,
        "htu": url,
        "iat": int(time.time()) if iat is None else iat,
        "jti": secrets.token_urlsafe(16) if jti is None else jti,
        "ath": access_token_hash(access_token),
    }
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=SecurityWarning, message="EdDSA is deprecated")
        return jws.serialize_compact(header, json.dumps(claims), key, algorithms=[alg])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m zkplatform.dpop_proof", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    keygen = commands.add_parser("new-key", help="write a new private JWK; print its thumbprint")
    keygen.add_argument("keyfile", type=Path)
    keygen.add_argument("--kind", choices=["ec", "ed25519"], default="ec")
    proof = commands.add_parser("proof", help="print a DPoP proof for a POST to URL with TOKEN")
    proof.add_argument("keyfile", type=Path)
    proof.add_argument("url")
    proof.add_argument("token")
    args = parser.parse_args(argv)
    if args.command == "new-key":
        key = new_key(args.kind)
        fd = os.open(args.keyfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as file:
            json.dump(key.as_dict(private=True), file)
        print(thumbprint(key))  # noqa: T201
        return 0
    key = jwk.import_key(json.loads(args.keyfile.read_text()))
    print(make_proof(key, args.url, args.token))  # noqa: T201
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
