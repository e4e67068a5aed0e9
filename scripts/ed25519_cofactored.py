"""Ed25519 signatures that only a cofactored check accepts, for the vector scripts and tests: what
both client packages must refuse, as OpenSSL's cofactorless check does (clients/ts/src/tlog/ed25519.ts,
zkplatform_tlog.ed25519). Made with SHA-512 and arithmetic modulo L only: no point is computed."""

from __future__ import annotations

import hashlib

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

ED25519_ORDER = 2**252 + 27742317777372353535851937790883648493  # L
_P25519 = 2**255 - 19
_SIGN = 1 << 255  # the sign bit of an encoding: x's parity


def secret_scalar(secret: bytes) -> int:
    """The scalar of an Ed25519 private key (its seed): RFC 8032, 5.1.5, steps 1 to 3."""
    scalar = bytearray(hashlib.sha512(secret).digest()[:32])
    scalar[0] &= 248
    scalar[31] &= 127
    scalar[31] |= 64
    return int.from_bytes(scalar, "little")


def cofactored_only_signature(key: Ed25519PrivateKey, message: bytes) -> bytes:
    """The key's signature of `message` with R moved by the point of order 2, (0, -1): R' = R + (0, -1)
    = (-x, -y), and S' = r + k'a made for R' with the nonce r of the key's own signature. [S']B - [k']A
    is R, not R': RFC 8032's cofactorless check, OpenSSL's (and so both packages'), refuses it; the
    cofactored one, [8]R' = [8]R (ZIP-215; @noble/curves' ed25519.verify, even with zip215: false),
    accepts it."""
    signature = key.sign(message)
    public = key.public_key().public_bytes_raw()
    a = secret_scalar(key.private_bytes_raw())

    def challenge(r: bytes) -> int:
        return int.from_bytes(hashlib.sha512(r + public + message).digest(), "little") % ED25519_ORDER

    nonce = (int.from_bytes(signature[32:], "little") - challenge(signature[:32]) * a) % ED25519_ORDER
    encoded = int.from_bytes(signature[:32], "little")
    # -y, and the other sign for -x, as x != 0 (R = rB is of order L)
    moved = ((_P25519 - (encoded & (_SIGN - 1))) | ((encoded & _SIGN) ^ _SIGN)).to_bytes(32, "little")
    return moved + ((nonce + challenge(moved) * a) % ED25519_ORDER).to_bytes(32, "little")
