"""The messages of C2SP tlog-witness `add-checkpoint` ("HTTP Interface"), as bytes on the wire.

Owns the request body (`old <size>`, the consistency proof one base64 hash a line, a blank line,
then the signed checkpoint note), the 200 body (cosignature lines) and the 409 body (the witness's
size), and the status codes and content type the spec gives them. It checks syntax only: whether
the note verifies, the origin is known, the sizes and proof agree is the witness's to decide (with
note.py, checkpoint.py and merkle.py), and the HTTP layer bounds the body's size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from zkplatform_tlog.encoding import b64decode, b64encode, parse_decimal
from zkplatform_tlog.errors import NoteError, WireError
from zkplatform_tlog.merkle import HASH_SIZE
from zkplatform_tlog.note import NoteSignature

ADD_CHECKPOINT_PATH: Final = "/add-checkpoint"  # POST <submission prefix>/add-checkpoint
# The 409 body's media type.
SIZE_CONTENT_TYPE: Final = "text/x.tlog.size"
# "The client MUST NOT send more than 63 consistency proof lines" (a proof in a tree of 2^64 leaves).
MAX_PROOF_LINES: Final = 63

# The statuses of add-checkpoint, as tlog-witness names them:
STATUS_OK: Final = 200  # cosigned; the body is the cosignature lines
STATUS_BAD_REQUEST: Final = 400  # the old size is above the checkpoint's size
STATUS_FORBIDDEN: Final = 403  # no signature of a trusted log key, or one that fails to verify
STATUS_NOT_FOUND: Final = 404  # the checkpoint's origin is not a known log
STATUS_CONFLICT: Final = 409  # the old size is not the witness's; the body is its size
STATUS_UNPROCESSABLE: Final = 422  # the proof does not verify, or an empty tree's root is wrong

_OLD_PREFIX: Final = "old "


@dataclass(frozen=True)
class AddCheckpoint:
    """An add-checkpoint request: the size the client believes the witness has, the consistency
    proof from it, and the signed checkpoint note (unverified)."""

    old_size: int
    proof: tuple[bytes, ...]
    note: str

    def claimed_origin(self) -> str:
        """The first line of the note, unverified: only to find the log's keys (404 if none)."""
        return self.note.partition("\n")[0]


def encode_add_checkpoint(old_size: int, proof: Sequence[bytes], note: str) -> bytes:
    """The request body; WireError if a part could not be parsed back."""
    if parse_decimal(str(old_size)) is None:
        raise WireError("bad-old-size-line", "old size is not an unsigned 64-bit integer")
    _check_proof(proof)
    if not note or not note.endswith("\n"):
        raise WireError("missing-checkpoint", "the checkpoint note is empty or does not end with a newline")
    lines = [f"{_OLD_PREFIX}{old_size}", *(b64encode(node) for node in proof), ""]
    return ("".join(line + "\n" for line in lines) + note).encode()


def parse_add_checkpoint(body: bytes) -> AddCheckpoint:
    """The request of a body; WireError (a 400) if it is not old size, proof, blank line, note."""
    text = _decode(body)
    head, blank, note = text.partition("\n\n")
    if not blank or not note:
        raise WireError("missing-checkpoint", "no blank line followed by a checkpoint note")
    old_line, *proof_lines = head.split("\n")
    old_size = parse_decimal(old_line.removeprefix(_OLD_PREFIX)) if old_line.startswith(_OLD_PREFIX) else None
    if old_size is None:
        raise WireError("bad-old-size-line", "first line is not 'old <size>' with a decimal size")
    if len(proof_lines) > MAX_PROOF_LINES:
        raise WireError("too-many-proof-lines", f"{len(proof_lines)} proof lines, at most {MAX_PROOF_LINES}")
    proof: list[bytes] = []
    for number, line in enumerate(proof_lines, start=1):
        node = b64decode(line)
        if node is None or len(node) != HASH_SIZE:
            raise WireError("bad-proof-line", f"proof line {number} is not a {HASH_SIZE}-byte hash in base64")
        proof.append(node)
    return AddCheckpoint(old_size, tuple(proof), note)


def encode_cosignatures(lines: Sequence[str]) -> bytes:
    """The 200 body: one or more signature lines, each with its newline."""
    return _check_cosignatures(lines).encode()


def parse_cosignatures(body: bytes) -> tuple[str, ...]:
    """The signature lines of a 200 body, each with its newline, in order; WireError if it is not
    one or more well-formed signature lines. A client appends them to the checkpoint note and
    opens it with the witness keys it trusts (note.open_note), ignoring the others."""
    text = _decode(body)
    if not text.endswith("\n"):
        raise WireError("bad-cosignature-response", "response is empty or does not end with a newline")
    lines = tuple(line + "\n" for line in text[:-1].split("\n"))
    _check_cosignatures(lines)
    return lines


def encode_size(size: int) -> bytes:
    """The 409 body (of content type SIZE_CONTENT_TYPE): the witness's latest size and a newline."""
    if parse_decimal(str(size)) is None:
        raise WireError("bad-size-body", "size is not an unsigned 64-bit integer")
    return f"{size}\n".encode()


def parse_size(body: bytes) -> int:
    """The size of a 409 body; WireError if it is not a decimal and a newline."""
    text = _decode(body)
    size = parse_decimal(text[:-1]) if text.endswith("\n") else None
    if size is None:
        raise WireError("bad-size-body", "409 body is not a decimal size and a newline")
    return size


def _check_proof(proof: Sequence[bytes]) -> None:
    if len(proof) > MAX_PROOF_LINES:
        raise WireError("too-many-proof-lines", f"{len(proof)} proof hashes, at most {MAX_PROOF_LINES}")
    if any(len(node) != HASH_SIZE for node in proof):
        raise WireError("bad-proof-line", f"a proof hash is not {HASH_SIZE} bytes")


def _check_cosignatures(lines: Sequence[str]) -> str:
    if not lines:
        raise WireError("bad-cosignature-response", "a response needs at least one cosignature line")
    for number, line in enumerate(lines, start=1):
        try:
            NoteSignature.parse_line(line)
        except NoteError as error:
            raise WireError("bad-cosignature-response", f"line {number} is not a signature line") from error
    return "".join(lines)


def _decode(body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise WireError("not-utf8", "body is not UTF-8") from error
