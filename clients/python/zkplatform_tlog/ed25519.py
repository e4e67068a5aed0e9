"""The one Ed25519 signature check of the Python packages (statements, notes, cosignatures, sealed
items): OpenSSL's, through `cryptography`.

OpenSSL decides as RFC 8032 allows and ref10 does (crypto/ec/curve25519.c, ossl_ed25519_verify):
S below L; A decoded from its low 255 bits, a y of p or more reduced rather than refused; the
cofactorless equation, [S]B - [k]A encoded and compared with R byte for byte (so an R that is not
canonical never verifies); keys of small order not refused. The TypeScript package's
`ed25519Verify` (clients/ts/src/tlog/ed25519.ts) decides exactly so on the same group arithmetic:
clients/testdata/ed25519-speccheck.json holds both to the same verdicts, OpenSSL's.
"""

from __future__ import annotations

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def verify(public_key: bytes, message: bytes, signature: bytes) -> bool:
    """Whether `signature` is the Ed25519 signature of `message` by the 32-byte `public_key`;
    False, never an exception, for bytes of the wrong sizes."""
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True
