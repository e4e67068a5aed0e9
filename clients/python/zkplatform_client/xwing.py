"""X-Wing keys: the hybrid ML-KEM-768 + X25519 KEM of draft-connolly-cfrg-xwing-kem (HPKE's KEM
0x647A), sealing's third agreement key type (docs/sealing.md), as cryptography's HPKE takes them.

An X-Wing private key is a 32-byte seed. cryptography builds its hybrid key from the two parts and
imports no seed, so the seed is expanded here exactly as X-Wing's own key generation expands it
(draft-connolly-cfrg-xwing-kem, `expandDecapsulationKey`): SHAKE256 of the seed, 96 bytes, the
first 64 ML-KEM-768's seed (d || z, FIPS 203), the last 32 X25519's private key. The public key
is ML-KEM-768's encapsulation key (1184 bytes) followed by X25519's (32); its JWK, an "AKP" key,
is zkplatform_tlog.statements'. Every primitive (SHAKE256, ML-KEM, X25519, the X-Wing combiner
inside HPKE) is cryptography's or hashlib's; ML-KEM needs a backend that has it (cryptography's
wheels from 48.0.0 do).
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Final

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hpke
from cryptography.hazmat.primitives.asymmetric import mlkem
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from zkplatform_tlog.statements import XWING, XWING_PUBLIC_BYTES, b64url

__all__ = ["SEED_BYTES", "XWING", "XWingPrivateKey", "XWingPublicKey", "public_jwk"]

SEED_BYTES: Final = 32
_MLKEM768_PUBLIC_BYTES: Final = 1184
_EXPANDED_BYTES: Final = 96
_MLKEM_SEED_BYTES: Final = 64
_NO_MLKEM: Final = "X-Wing needs ML-KEM, which this cryptography backend lacks (its wheels have it from 48.0.0)"


class XWingPublicKey:
    """An X-Wing public key (1216 bytes), checked as cryptography imports its two parts."""

    def __init__(self, public: bytes) -> None:
        if len(public) != XWING_PUBLIC_BYTES:
            raise ValueError(f"an X-Wing public key is {XWING_PUBLIC_BYTES} bytes")
        try:
            mlkem_key = mlkem.MLKEM768PublicKey.from_public_bytes(public[:_MLKEM768_PUBLIC_BYTES])
        except UnsupportedAlgorithm:
            raise UnsupportedAlgorithm(_NO_MLKEM) from None
        x25519_key = X25519PublicKey.from_public_bytes(public[_MLKEM768_PUBLIC_BYTES:])
        self._public = bytes(public)
        self._key = hpke.MLKEM768X25519PublicKey(mlkem_key, x25519_key)

    @property
    def public_bytes(self) -> bytes:
        return self._public

    @property
    def hpke_key(self) -> hpke.MLKEM768X25519PublicKey:
        """The key as cryptography's HPKE seals to it (KEM.MLKEM768_X25519)."""
        return self._key


class XWingPrivateKey:
    """An X-Wing private key: its 32-byte seed, and the key cryptography's HPKE opens with.

    The seed is the private key (a key file keeps it as the JWK's `priv`); the repr shows neither."""

    def __init__(self, seed: bytes) -> None:
        if len(seed) != SEED_BYTES:
            raise ValueError(f"an X-Wing private key is a {SEED_BYTES}-byte seed")
        expanded = hashlib.shake_256(seed).digest(_EXPANDED_BYTES)
        try:
            mlkem_key = mlkem.MLKEM768PrivateKey.from_seed_bytes(expanded[:_MLKEM_SEED_BYTES])
        except UnsupportedAlgorithm:
            raise UnsupportedAlgorithm(_NO_MLKEM) from None
        x25519_key = X25519PrivateKey.from_private_bytes(expanded[_MLKEM_SEED_BYTES:])
        self._seed = bytes(seed)
        self._key = hpke.MLKEM768X25519PrivateKey(mlkem_key, x25519_key)
        self._public = mlkem_key.public_key().public_bytes_raw() + x25519_key.public_key().public_bytes_raw()

    @classmethod
    def generate(cls) -> XWingPrivateKey:
        """A new key, its seed from the platform's CSPRNG."""
        return cls(secrets.token_bytes(SEED_BYTES))

    @property
    def seed(self) -> bytes:
        """The private key itself (secret)."""
        return self._seed

    @property
    def public_bytes(self) -> bytes:
        """The 1216-byte public key: ML-KEM-768's encapsulation key, then X25519's."""
        return self._public

    @property
    def hpke_key(self) -> hpke.MLKEM768X25519PrivateKey:
        """The key as cryptography's HPKE opens with it (KEM.MLKEM768_X25519)."""
        return self._key

    def __repr__(self) -> str:  # never the seed
        return "XWingPrivateKey(...)"

    __str__ = __repr__


def public_jwk(public: bytes) -> dict[str, str]:
    """The JWK members of an X-Wing public key (docs/sealing.md): alg, kty and pub."""
    return {"alg": XWING, "kty": "AKP", "pub": b64url(public)}
