"""Signed notes of C2SP signed-note, with Ed25519 keys, and the Ed25519 checkpoint cosignatures of
C2SP tlog-cosignature (`cosignature/v1`).

Owns: key names and key IDs ("Signatures"), verifier keys ("Verifier keys") and the private key
text of golang.org/x/mod/sumdb/note (`PRIVATE+KEY+<name>+<key ID>+base64(type || seed)`), for
signature types 0x01 (Ed25519 over the note text, "Ed25519 signatures") and 0x04 (tlog-cosignature
"Format" and "Ed25519 signed message"); the note format itself ("Format"): signing, and opening a
note against known keys.

Opening follows the spec and golang.org/x/mod/sumdb/note, stricter where the spec leaves room:
at most 100 signature lines; signature lines from unknown keys (name and key ID not both known)
are kept but not checked; a known key's signature must verify, or the whole note is refused; a
known key may sign a note only once (sumdb/note skips a repeated line unchecked, which the spec's
"MUST verify" does not allow); base64 must be canonical; at least one known key must have signed.
A note whose text is refused is to be ignored altogether; its text is returned only once verified.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol, Self

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from zkplatform_tlog import ed25519
from zkplatform_tlog.checkpoint import Checkpoint
from zkplatform_tlog.encoding import b64decode, b64encode, has_control, is_lower_hex, is_utf8
from zkplatform_tlog.errors import CheckpointError, KeyFormatError, NoteError

# Signature type bytes (signed-note "Signature types").
SIGNATURE_TYPE_ED25519: Final = 0x01
SIGNATURE_TYPE_COSIGNATURE_V1: Final = 0x04

KEY_ID_SIZE: Final = 4
MAX_SIGNATURES: Final = 100  # the spec asks for at least 16; sumdb/note allows 100
ED25519_KEY_SIZE: Final = 32
ED25519_SIGNATURE_SIZE: Final = 64
# tlog-cosignature: the timestamp "MUST NOT exceed 2^63 - 1".
MAX_TIMESTAMP: Final = (1 << 63) - 1
TIMESTAMP_SIZE: Final = 8

_SIGNATURE_PREFIX: Final = "\u2014 "  # em dash, space
_PRIVATE_PREFIX: Final = "PRIVATE+KEY+"
# Unicode White_Space (PropList.txt): a key name "MUST NOT contain any Unicode spaces". Spelled
# out rather than str.isspace(), whose set differs (and may change with the Unicode version).
_WHITE_SPACE: Final = frozenset(
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def check_key_name(name: str) -> None:
    """Refuse (KeyFormatError bad-key-name) a name that signed-note does not allow: empty, with a
    Unicode space or '+', or that could not appear in a note (control characters, lone surrogates)."""
    if not name or "+" in name or any(ch in _WHITE_SPACE for ch in name) or has_control(name) or not is_utf8(name):
        raise KeyFormatError("bad-key-name", "key name is empty or holds a space, '+' or a control character")


def key_id(name: str, signature_type: int, public_key: bytes) -> bytes:
    """SHA-256(name || 0x0A || signature type || public key)[:4], the recommended key ID."""
    return hashlib.sha256(name.encode() + b"\n" + bytes([signature_type]) + public_key).digest()[:KEY_ID_SIZE]


class Verifier(Protocol):
    """A known key: the signatures whose name and key ID are both its own are its to check."""

    @property
    def name(self) -> str: ...

    @property
    def key_id(self) -> bytes: ...

    def verify(self, text: str, signature: bytes) -> bool:
        """Whether `signature` (the bytes after the key ID) is this key's over the note text."""
        ...


class Signer(Protocol):
    """A private key that signs note texts."""

    @property
    def name(self) -> str: ...

    @property
    def key_id(self) -> bytes: ...

    def sign(self, text: str) -> bytes:
        """The signature over the note text (without the key ID)."""
        ...


@dataclass(frozen=True)
class NoteSignature:
    """One signature line: `— <name> base64(key ID || signature)`."""

    name: str
    key_id: bytes
    signature: bytes

    def line(self) -> str:
        """The signature line, with its final newline."""
        return f"{_SIGNATURE_PREFIX}{self.name} {b64encode(self.key_id + self.signature)}\n"

    @classmethod
    def parse_line(cls, line: str) -> Self:
        """The signature of one line, which must end with its newline (NoteError
        malformed-signature-line otherwise)."""
        body = line.removeprefix(_SIGNATURE_PREFIX)
        if body == line or not body.endswith("\n") or "\n" in body[:-1] or has_control(body) or not is_utf8(body):
            raise NoteError("malformed-signature-line", "signature line is not '— <name> <base64>' and a newline")
        name, _, encoded = body[:-1].partition(" ")
        try:
            check_key_name(name)
        except KeyFormatError as error:
            raise NoteError("malformed-signature-line", "signature line has an invalid key name") from error
        decoded = b64decode(encoded)
        if decoded is None or len(decoded) <= KEY_ID_SIZE:
            raise NoteError("malformed-signature-line", "signature is not canonical base64 of a key ID and signature")
        return cls(name, decoded[:KEY_ID_SIZE], decoded[KEY_ID_SIZE:])


@dataclass(frozen=True)
class OpenedNote:
    """A note whose signatures from known keys all verified (at least one): its text, those
    signatures, and the lines of unknown keys, unchecked, in the order of the note."""

    text: str
    verified: tuple[NoteSignature, ...]
    unverified: tuple[NoteSignature, ...]

    def signed_by(self, name: str) -> bool:
        """Whether a known key of this name signed the note."""
        return any(signature.name == name for signature in self.verified)


@dataclass(frozen=True)
class NoteVerifier:
    """An Ed25519 verifier key of signed-note (signature type 0x01)."""

    name: str
    key_id: bytes
    public_key: bytes

    def __post_init__(self) -> None:
        _check_key(self.name, self.key_id, SIGNATURE_TYPE_ED25519, self.public_key)

    @classmethod
    def from_vkey(cls, vkey: str) -> Self:
        """The key of `<name>+<hex key ID>+base64(0x01 || public key)`; KeyFormatError if not."""
        return cls(*_parse_vkey(vkey, SIGNATURE_TYPE_ED25519))

    def vkey(self) -> str:
        return _vkey_text(self.name, self.key_id, SIGNATURE_TYPE_ED25519, self.public_key)

    def verify(self, text: str, signature: bytes) -> bool:
        return ed25519.verify(self.public_key, text.encode(), signature)


@dataclass(frozen=True)
class NoteSigner:
    """An Ed25519 private key of signed-note (signature type 0x01)."""

    name: str
    key_id: bytes
    _private: Ed25519PrivateKey = field(repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_key(self.name, self.key_id, SIGNATURE_TYPE_ED25519, _public_bytes(self._private))

    @classmethod
    def from_skey(cls, skey: str) -> Self:
        """The key of `PRIVATE+KEY+<name>+<hex key ID>+base64(0x01 || seed)`; KeyFormatError if not."""
        name, identifier, private = _parse_skey(skey, SIGNATURE_TYPE_ED25519)
        return cls(name, identifier, private)

    def verifier(self) -> NoteVerifier:
        return NoteVerifier(self.name, self.key_id, _public_bytes(self._private))

    def sign(self, text: str) -> bytes:
        return self._private.sign(text.encode())


def generate_signer_key(name: str, *, seed: bytes | None = None) -> tuple[str, str]:
    """A new Ed25519 note key (private key text, vkey); `seed` (32 bytes) only for test vectors."""
    return _generate(name, SIGNATURE_TYPE_ED25519, seed)


def sign_note(text: str, signers: Sequence[Signer]) -> str:
    """The signed note of `text` (which must end with a newline) by each of `signers`, in order."""
    if not text.endswith("\n") or has_control(text) or not is_utf8(text):
        raise NoteError("malformed-note", "note text must end with a newline and hold no control characters")
    if not signers:
        raise NoteError("no-signers", "a note needs at least one signature")
    if len(signers) > MAX_SIGNATURES:
        raise NoteError("too-many-signatures", f"{len(signers)} signers, at most {MAX_SIGNATURES}")
    if len({(signer.name, signer.key_id) for signer in signers}) != len(signers):
        raise NoteError("duplicate-signer", "two signers share a key name and key ID")
    lines = [NoteSignature(signer.name, signer.key_id, signer.sign(text)).line() for signer in signers]
    return text + "\n" + "".join(lines)


def open_note(note: str, verifiers: Sequence[Verifier]) -> OpenedNote:
    """The text and signatures of `note`, checked against the known keys `verifiers`; NoteError
    unless the note is well formed, every signature of a known key verifies and there is one."""
    known = _known_keys(verifiers)
    text, lines = _split_note(note)
    verified: list[NoteSignature] = []
    unverified: list[NoteSignature] = []
    for line in lines:
        signature = NoteSignature.parse_line(line)
        verifier = known.get((signature.name, signature.key_id))
        if verifier is None:
            unverified.append(signature)
            continue
        where = f"{signature.name}+{signature.key_id.hex()}"
        if signature.key_id in {seen.key_id for seen in verified if seen.name == signature.name}:
            raise NoteError("duplicate-signature", f"the key {where} signs the note more than once")
        if not verifier.verify(text, signature.signature):
            raise NoteError("bad-signature", f"the signature of the known key {where} does not verify")
        verified.append(signature)
    if not verified:
        raise NoteError("no-verified-signature", "no known key signed the note")
    return OpenedNote(text, tuple(verified), tuple(unverified))


def _known_keys(verifiers: Sequence[Verifier]) -> dict[tuple[str, bytes], Verifier]:
    known: dict[tuple[str, bytes], Verifier] = {}
    for verifier in verifiers:
        if known.setdefault((verifier.name, verifier.key_id), verifier) is not verifier:
            where = f"{verifier.name}+{verifier.key_id.hex()}"
            raise NoteError("ambiguous-verifiers", f"two verifiers share the key {where}")
    return known


def _split_note(note: str) -> tuple[str, list[str]]:
    """The text of a note and its signature lines (each with its newline), unchecked."""
    if has_control(note) or not is_utf8(note):
        raise NoteError("malformed-note", "note holds a control character or a lone surrogate")
    # The text ends at the last blank line; signature lines never hold one.
    split = note.rfind("\n\n")
    if split < 0:
        raise NoteError("malformed-note", "note has no blank line before its signatures")
    text, signature_block = note[: split + 1], note[split + 2 :]
    if not signature_block.endswith("\n"):
        raise NoteError("malformed-note", "note has no signature lines, or its last does not end with a newline")
    lines = signature_block[:-1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise NoteError("too-many-signatures", f"note has {len(lines)} signatures, at most {MAX_SIGNATURES}")
    return text, [line + "\n" for line in lines]


def cosignature_message(checkpoint_body: str, timestamp: int) -> bytes:
    """What a cosignature/v1 signs (tlog-cosignature "Ed25519 signed message")."""
    return f"cosignature/v1\ntime {timestamp}\n{checkpoint_body}".encode()


def cosignature_timestamp(signature: bytes) -> int:
    """The timestamp of a cosignature/v1 signature (the bytes after the key ID), unchecked."""
    return int.from_bytes(signature[:TIMESTAMP_SIZE], "big")


@dataclass(frozen=True)
class CosignatureVerifier:
    """A witness's Ed25519 cosignature/v1 key (signature type 0x04).

    Also a note Verifier: given to open_note, it checks cosignature lines over a checkpoint note.
    """

    name: str
    key_id: bytes
    public_key: bytes

    def __post_init__(self) -> None:
        _check_key(self.name, self.key_id, SIGNATURE_TYPE_COSIGNATURE_V1, self.public_key)

    @classmethod
    def from_vkey(cls, vkey: str) -> Self:
        """The key of `<name>+<hex key ID>+base64(0x04 || public key)`; KeyFormatError if not."""
        return cls(*_parse_vkey(vkey, SIGNATURE_TYPE_COSIGNATURE_V1))

    def vkey(self) -> str:
        return _vkey_text(self.name, self.key_id, SIGNATURE_TYPE_COSIGNATURE_V1, self.public_key)

    def verify(self, text: str, signature: bytes) -> bool:
        if len(signature) != TIMESTAMP_SIZE + ED25519_SIGNATURE_SIZE:
            return False
        timestamp = cosignature_timestamp(signature)
        if timestamp > MAX_TIMESTAMP:
            return False
        try:
            Checkpoint.parse(text)
        except CheckpointError:
            return False
        return ed25519.verify(self.public_key, cosignature_message(text, timestamp), signature[TIMESTAMP_SIZE:])

    def verify_line(self, checkpoint_body: str, line: str) -> int:
        """The timestamp of `line` (a signature line with its newline), this key's cosignature of
        `checkpoint_body`; NoteError (or CheckpointError for the body) if it is not."""
        signature = NoteSignature.parse_line(line)
        if (signature.name, signature.key_id) != (self.name, self.key_id):
            raise NoteError("unknown-key", f"the line is signed by {signature.name}+{signature.key_id.hex()}")
        if len(signature.signature) != TIMESTAMP_SIZE + ED25519_SIGNATURE_SIZE:
            raise NoteError("malformed-cosignature", f"cosignature has {len(signature.signature)} bytes, want 72")
        timestamp = cosignature_timestamp(signature.signature)
        if timestamp > MAX_TIMESTAMP:
            raise NoteError("bad-timestamp", "cosignature timestamp exceeds 2^63 - 1")
        Checkpoint.parse(checkpoint_body)
        message = cosignature_message(checkpoint_body, timestamp)
        if not ed25519.verify(self.public_key, message, signature.signature[TIMESTAMP_SIZE:]):
            raise NoteError("bad-signature", f"the cosignature of {self.name} does not verify")
        return timestamp


@dataclass(frozen=True)
class Cosigner:
    """A witness's Ed25519 cosignature/v1 private key (signature type 0x04)."""

    name: str
    key_id: bytes
    _private: Ed25519PrivateKey = field(repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_key(self.name, self.key_id, SIGNATURE_TYPE_COSIGNATURE_V1, _public_bytes(self._private))

    @classmethod
    def from_skey(cls, skey: str) -> Self:
        """The key of `PRIVATE+KEY+<name>+<hex key ID>+base64(0x04 || seed)`; KeyFormatError if not."""
        name, identifier, private = _parse_skey(skey, SIGNATURE_TYPE_COSIGNATURE_V1)
        return cls(name, identifier, private)

    def verifier(self) -> CosignatureVerifier:
        return CosignatureVerifier(self.name, self.key_id, _public_bytes(self._private))

    def cosign(self, checkpoint_body: str, timestamp: int) -> str:
        """The signature line (with its newline) cosigning `checkpoint_body` at `timestamp` (POSIX
        seconds; tlog-witness forbids 0). CheckpointError if the body is not a checkpoint."""
        if not 0 < timestamp <= MAX_TIMESTAMP:
            raise NoteError("bad-timestamp", "cosignature timestamp must be between 1 and 2^63 - 1")
        Checkpoint.parse(checkpoint_body)
        signature = self._private.sign(cosignature_message(checkpoint_body, timestamp))
        return NoteSignature(self.name, self.key_id, timestamp.to_bytes(TIMESTAMP_SIZE, "big") + signature).line()


def generate_cosigner_key(name: str, *, seed: bytes | None = None) -> tuple[str, str]:
    """A new cosignature/v1 key (private key text, vkey); `seed` (32 bytes) only for test vectors."""
    return _generate(name, SIGNATURE_TYPE_COSIGNATURE_V1, seed)


def _generate(name: str, signature_type: int, seed: bytes | None) -> tuple[str, str]:
    check_key_name(name)
    private = Ed25519PrivateKey.generate() if seed is None else Ed25519PrivateKey.from_private_bytes(seed)
    public = _public_bytes(private)
    identifier = key_id(name, signature_type, public)
    seed_bytes = private.private_bytes_raw()
    skey = f"{_PRIVATE_PREFIX}{name}+{identifier.hex()}+{b64encode(bytes([signature_type]) + seed_bytes)}"
    return skey, _vkey_text(name, identifier, signature_type, public)


def _vkey_text(name: str, identifier: bytes, signature_type: int, public_key: bytes) -> str:
    return f"{name}+{identifier.hex()}+{b64encode(bytes([signature_type]) + public_key)}"


def _split_key(text: str) -> tuple[str, str, bytes]:
    """The name, hex key ID and decoded key material of `<name>+<hex>+<base64>` (the base64 may
    itself hold '+'; the name may not)."""
    name, _, rest = text.partition("+")
    hex_id, plus, encoded = rest.partition("+")
    if not plus:
        raise KeyFormatError("malformed-key", "key is not <name>+<key ID>+<base64>")
    check_key_name(name)
    if len(hex_id) != 2 * KEY_ID_SIZE or not is_lower_hex(hex_id):
        raise KeyFormatError("malformed-key", "key ID is not 8 lowercase hex digits")
    material = b64decode(encoded)
    if not material:
        raise KeyFormatError("malformed-key", "key material is not canonical, non-empty standard base64")
    return name, hex_id, material


def _parse_vkey(vkey: str, signature_type: int) -> tuple[str, bytes, bytes]:
    name, hex_id, material = _split_key(vkey)
    identifier = bytes.fromhex(hex_id)
    # The key ID covers the type byte and the key: checked first, as sumdb/note does.
    if key_id(name, material[0], material[1:]) != identifier:
        raise KeyFormatError("key-id-mismatch", f"key ID {hex_id} is not the one of the name and key")
    if material[0] != signature_type:
        raise KeyFormatError("wrong-key-type", f"key has signature type {material[0]:#04x}, want {signature_type:#04x}")
    if len(material) != 1 + ED25519_KEY_SIZE:
        raise KeyFormatError("malformed-key", f"Ed25519 key has {len(material) - 1} bytes, want {ED25519_KEY_SIZE}")
    try:
        Ed25519PublicKey.from_public_bytes(material[1:])
    except ValueError as error:
        raise KeyFormatError("malformed-key", "key is not an Ed25519 public key") from error
    return name, identifier, material[1:]


def _parse_skey(skey: str, signature_type: int) -> tuple[str, bytes, Ed25519PrivateKey]:
    if not skey.startswith(_PRIVATE_PREFIX):
        raise KeyFormatError("malformed-key", "private key does not start with PRIVATE+KEY+")
    name, hex_id, material = _split_key(skey.removeprefix(_PRIVATE_PREFIX))
    if material[0] != signature_type:
        raise KeyFormatError("wrong-key-type", f"key has signature type {material[0]:#04x}, want {signature_type:#04x}")
    if len(material) != 1 + ED25519_KEY_SIZE:
        raise KeyFormatError("malformed-key", f"Ed25519 seed has {len(material) - 1} bytes, want {ED25519_KEY_SIZE}")
    private = Ed25519PrivateKey.from_private_bytes(material[1:])
    identifier = key_id(name, signature_type, _public_bytes(private))
    if identifier != bytes.fromhex(hex_id):
        raise KeyFormatError("key-id-mismatch", f"key ID {hex_id} is not the one of the name and key")
    return name, identifier, private


def _check_key(name: str, identifier: bytes, signature_type: int, public_key: bytes) -> None:
    """What every key object holds true, however it was made (the parsers say first what is wrong
    with a text)."""
    check_key_name(name)
    if len(public_key) != ED25519_KEY_SIZE:
        raise KeyFormatError("malformed-key", f"Ed25519 key has {len(public_key)} bytes, want {ED25519_KEY_SIZE}")
    if identifier != key_id(name, signature_type, public_key):
        raise KeyFormatError("key-id-mismatch", f"key ID {identifier.hex()} is not the one of the name and key")


def _public_bytes(private: Ed25519PrivateKey) -> bytes:
    return private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
