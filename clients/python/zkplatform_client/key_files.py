"""Device key files (docs/sealing.md, "Device keys at rest"): a device's two private keys, its
tenant and its principal, as a compact JWE encrypted under a passphrase (PBES2-HS512+A256KW
and A256GCM, joserfc's), or as plain JSON when the application says so in so many words.

`write_key_file` and `read_key_file` are what `DeviceKeyPair.to_key_file` and `from_key_file`
call; the TypeScript package writes and reads the same files.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from joserfc import jwe
from joserfc.errors import JoseError
from joserfc.jwk import OctKey

from zkplatform_client.sealing import SealingError
from zkplatform_tlog.statements import b64url_decode, canonical_json

if TYPE_CHECKING:
    from zkplatform_client.devices import DeviceKeyPair

__all__ = ["KEY_FILE_ALG", "KEY_FILE_ENC", "KEY_FILE_ITERATIONS", "KeyFile", "read_key_file", "write_key_file"]

KEY_FILE_ALG: Final = "PBES2-HS512+A256KW"
KEY_FILE_ENC: Final = "A256GCM"
# OWASP's figure for PBKDF2-HMAC-SHA512; read from 100,000 to 300,000, the most joserfc reads.
KEY_FILE_ITERATIONS: Final = 210_000
_MIN_ITERATIONS: Final = 100_000
_MAX_ITERATIONS: Final = 300_000
_TYPE: Final = "zkplatform.device-keys-file"
_MEMBERS: Final = frozenset({"agreementKeyJwk", "deviceId", "principalId", "signingKeyJwk", "tenantId", "type"})
_REGISTRY: Final = jwe.JWERegistry(algorithms=[KEY_FILE_ALG, KEY_FILE_ENC])
_COMPACT_PARTS: Final = 5


@dataclass(frozen=True)
class KeyFile:
    """What a key file holds: the device's keys, and the tenant and principal it is a device of."""

    keys: DeviceKeyPair
    tenant_id: str
    principal_id: str


def write_key_file(
    keys: DeviceKeyPair, passphrase: str | None, *, tenant_id: str, principal_id: str, unencrypted: bool = False
) -> str:
    """The key file of `keys`: a compact JWE under `passphrase`, or with `unencrypted=True` (and
    no passphrase) the plain JSON of the private keys."""
    jwks = keys.to_jwks()
    document = {
        "agreementKeyJwk": jwks["privateKeyJwk"],
        "deviceId": keys.device_id,
        "principalId": principal_id,
        "signingKeyJwk": jwks["signingKeyJwk"],
        "tenantId": tenant_id,
        "type": _TYPE,
    }
    plaintext = canonical_json(document)
    if unencrypted:
        if passphrase is not None:
            raise ValueError("unencrypted=True writes no passphrase: give None")
        return plaintext.decode()
    header = {"alg": KEY_FILE_ALG, "enc": KEY_FILE_ENC, "p2c": KEY_FILE_ITERATIONS}
    return jwe.encrypt_compact(header, plaintext, _passphrase_key(passphrase), registry=_REGISTRY)


def read_key_file(text: str, passphrase: str | None, *, unencrypted: bool = False) -> KeyFile:
    """The keys, tenant and principal of a key file; SealingError WRONG_PASSPHRASE (a wrong
    passphrase, or a damaged ciphertext), MALFORMED (not a key file, or keys whose public
    members are not their private ones') or UNSUPPORTED (another alg or enc, an iteration
    count out of bounds). A plain JSON file is read only with `unencrypted=True`."""
    if unencrypted:
        if passphrase is not None:
            raise ValueError("unencrypted=True reads no passphrase: give None")
        return _key_file(text.encode())
    text = text.strip()  # a file as editors and `echo` leave it: a compact JWE has no whitespace of its own
    key = _passphrase_key(passphrase)
    _check_header(text)
    try:
        plaintext = jwe.decrypt_compact(text, key, registry=_REGISTRY).plaintext
    except (JoseError, ValueError):
        raise SealingError("WRONG_PASSPHRASE", "the key file does not open with this passphrase") from None
    return _key_file(plaintext or b"")


def _passphrase_key(passphrase: str | None) -> OctKey:
    if not passphrase:
        raise ValueError("a key file is encrypted under a passphrase: give one (or unencrypted=True)")
    with warnings.catch_warnings():
        # joserfc warns of an oct key under 112 bits; a passphrase is stretched by PBKDF2 first.
        warnings.filterwarnings("ignore", message="Key size should be")
        return OctKey.import_key(passphrase.encode())


def _check_header(text: str) -> None:
    parts = text.strip().split(".")
    if len(parts) != _COMPACT_PARTS:
        hint = " (a plain JSON key file is read with unencrypted=True)" if text.lstrip().startswith("{") else ""
        raise SealingError("MALFORMED", f"a key file is a compact JWE{hint}")
    try:
        header = json.loads(b64url_decode(parts[0]))
    except ValueError:
        header = None
    if not isinstance(header, dict):
        raise SealingError("MALFORMED", "the key file's protected header is not a JSON object")
    if (header.get("alg"), header.get("enc")) != (KEY_FILE_ALG, KEY_FILE_ENC):
        raise SealingError("UNSUPPORTED", f"a key file is {KEY_FILE_ALG} with {KEY_FILE_ENC}")
    count = header.get("p2c")
    if type(count) is not int or not _MIN_ITERATIONS <= count <= _MAX_ITERATIONS:
        raise SealingError(
            "UNSUPPORTED", f"a key file's p2c is from {_MIN_ITERATIONS:,} to {_MAX_ITERATIONS:,} iterations"
        )


def _key_file(plaintext: bytes) -> KeyFile:
    # Only here: devices.py imports this module.
    from zkplatform_client.devices import DeviceKeyPair  # noqa: PLC0415

    try:
        document: Any = json.loads(plaintext)
    except ValueError:
        document = None
    if not isinstance(document, dict) or set(document) != _MEMBERS or document["type"] != _TYPE:
        raise SealingError("MALFORMED", "not a device key file")
    tenant_id, principal_id, device_id = document["tenantId"], document["principalId"], document["deviceId"]
    if not all(isinstance(value, str) for value in (tenant_id, principal_id, device_id)):
        raise SealingError("MALFORMED", "a key file's ids are strings")
    try:
        keys = DeviceKeyPair.from_jwks(document["signingKeyJwk"], document["agreementKeyJwk"])
    except (ValueError, TypeError, KeyError):
        raise SealingError("MALFORMED", "the key file's keys are not usable, or not their public members'") from None
    if keys.device_id != device_id:
        raise SealingError("MALFORMED", "the key file's deviceId is not its signing key's")
    return KeyFile(keys, tenant_id, principal_id)
