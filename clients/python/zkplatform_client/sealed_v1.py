"""Opening items sealed in version 1 of docs/sealing.md, read only: each wrapped key a compact JWE
(ECDH-ES+A256KW, A256GCM) of the AES-256-GCM key itself, and no signature. sealing.py checks
everything a payload of either version shares (steps 1 to 3 of "Opening") before it calls
`open_v1`; nothing writes version 1 any more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from joserfc import jwe

from zkplatform_client.sealing import CONTENT_KEY_BYTES, SealingError

if TYPE_CHECKING:
    from zkplatform_api.platform.v1.vault_pb2 import WrappedKey
    from zkplatform_client.sealing import DecodedPayload, RecipientPrivateKey

__all__ = ["WRAP_ALG", "open_v1"]

WRAP_ALG: Final = "ECDH-ES+A256KW"
# The key types version 1 wrapped for: an X-Wing key is never a version 1 recipient.
_KEY_TYPES: Final = frozenset({"X25519", "P-256"})
# Only what this format used, so that a JWE of another algorithm is refused, never tried.
_JWE_REGISTRY: Final = jwe.JWERegistry(algorithms=[WRAP_ALG, "A256GCM"])


def open_v1(own: WrappedKey | None, fields: DecodedPayload, private_key: RecipientPrivateKey) -> tuple[bytes, bytes]:
    """The content key and the content of a version 1 payload whose fields sealing.py decoded,
    `own` the wrapped key with the private key's recipient id (None when there is none)."""
    if own is None or own.wrap_alg != WRAP_ALG:
        raise SealingError("NOT_A_RECIPIENT", f"no wrapped key of {WRAP_ALG} for key {private_key.key_id}")
    if private_key.curve not in _KEY_TYPES:  # an entry planted for a key that version 1 never had
        raise SealingError("NOT_A_RECIPIENT", f"{WRAP_ALG} wraps for X25519 and P-256 keys, not {private_key.curve}")
    try:
        compact = fields.own_wrapped.decode("ascii")
        content_key = jwe.decrypt_compact(compact, private_key.jwk_key, registry=_JWE_REGISTRY).plaintext
    except Exception:  # noqa: BLE001 - a hostile JWE makes joserfc raise JoseError, ValueError, KeyError...
        content_key = None
    if content_key is None or len(content_key) != CONTENT_KEY_BYTES:
        raise SealingError("DECRYPTION_FAILED", "the wrapped key does not decrypt with this key")
    try:
        plaintext = AESGCM(content_key).decrypt(fields.nonce, fields.ciphertext, fields.aad)
    except InvalidTag:
        raise SealingError("DECRYPTION_FAILED", "the ciphertext does not decrypt (tampered)") from None
    return content_key, plaintext
