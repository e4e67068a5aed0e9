"""Make DPoP keys and proofs from a shell, for a client without this package's interceptors
(curl: docs/clients.md); the tests make theirs with it too, claims they want wrong included.

python -m zkplatform_client.dpop_proof new-key KEYFILE [--kind ec|ed25519] [--force]
    writes a private JWK and prints its thumbprint (the popKeyId); an existing
    KEYFILE is kept unless --force
python -m zkplatform_client.dpop_proof proof KEYFILE URL TOKEN [--method GET]
    prints a fresh proof for a POST to URL made with TOKEN (--method GET for
    the Connect GET form; URL without its query)
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import time
import warnings
from pathlib import Path
from typing import Literal

from joserfc import jwk, jws
from joserfc.errors import JoseError

from zkplatform_client.dpop import access_token_hash, htu

KeyKind = Literal["ec", "ed25519"]
_ALG = {"EC": "ES256", "OKP": "EdDSA"}
PROG = "python -m zkplatform_client.dpop_proof"
USAGE_ERROR = 2


class _Unusable(Exception):
    """A key file that cannot be written or used: one line for the user, exit code 2."""


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
        # By message alone: the warning's class is younger than the oldest joserfc the package allows.
        warnings.filterwarnings("ignore", message="EdDSA is deprecated")
        return jws.serialize_compact(header, json.dumps(claims), key, algorithms=[alg])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    keygen = commands.add_parser("new-key", help="write a new private JWK; print its thumbprint")
    keygen.add_argument("keyfile", type=Path, help="where to write the key (mode 0600)")
    keygen.add_argument("--kind", choices=["ec", "ed25519"], default="ec", help="EC P-256 (ES256) or Ed25519")
    keygen.add_argument("--force", action="store_true", help="replace an existing key file")
    proof = commands.add_parser("proof", help="print a DPoP proof for a call to URL with TOKEN")
    proof.add_argument("keyfile", type=Path, help="a key file written by new-key")
    proof.add_argument("url", help="the procedure's URL (htu)")
    proof.add_argument("token", help="the access token the call presents (its hash is the proof's ath)")
    proof.add_argument(
        "--method", choices=["POST", "GET"], default="POST", help="the call's HTTP method (htm): GET for the GET form"
    )
    args = parser.parse_args(argv)
    try:
        if args.command == "new-key":
            print(_write_new_key(args.keyfile, args.kind, force=args.force))  # noqa: T201
        else:
            print(make_proof(_read_key(args.keyfile), _htu(args.url), args.token, method=args.method))  # noqa: T201
    except _Unusable as error:
        print(f"{PROG}: {error}", file=sys.stderr)  # noqa: T201
        return USAGE_ERROR
    return 0


def _write_new_key(path: Path, kind: KeyKind, *, force: bool) -> str:
    """Write a new private key to `path`; its thumbprint. A key that exists is someone's: losing it
    would orphan every token bound to it, so only --force replaces it."""
    key = new_key(kind)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        msg = f"{path} exists: it may be a key in use; choose another path, or pass --force to replace it"
        raise _Unusable(msg) from None
    except OSError as error:
        raise _Unusable(f"{path}: {error.strerror}") from None
    with os.fdopen(fd, "w") as file:
        json.dump(key.as_dict(private=True), file)
    return thumbprint(key)


def _htu(url: str) -> str:
    """The URL as given, unless every server would refuse a proof of it (dpop.htu says which pass)."""
    try:
        htu(url)
    except ValueError:
        msg = f"{url} is not an http(s) URL naming a host and an optional port from 1 to 65535"
        raise _Unusable(msg) from None
    return url


def _read_key(path: Path) -> jwk.Key:
    try:
        text = path.read_text()
    except OSError as error:
        raise _Unusable(f"{path}: {error.strerror}; make a key with new-key") from None
    msg = f"{path} is not a key written by new-key (a private JWK)"
    try:
        key = jwk.JWKRegistry.import_key(json.loads(text))  # jwk.import_key is younger than joserfc 1.0
    except (ValueError, TypeError, KeyError, JoseError):
        raise _Unusable(msg) from None
    if not key.is_private or key.key_type not in _ALG:  # a public key cannot sign
        raise _Unusable(msg)
    return key


if __name__ == "__main__":
    raise SystemExit(main())
