"""Checkpoint bodies of C2SP tlog-checkpoint ("Note text"): the text a log signs as a signed note.

Owns the body only: `origin\\nsize\\nbase64(root hash)\\n` then the extension lines. Signing and
verifying the note around it is note.py's; a body must be parsed only once its note has verified.

Parsing is strict, so that a checkpoint has one spelling: the size is ASCII decimal without leading
zeros (below 2^64), the root hash is 32 bytes in padded standard base64 (canonical), every line
ends with a newline and none is empty. The origin may hold any character a note may hold (no
control characters): the spec only recommends against spaces and '+' and tells clients not to
assume it, so a parser that refused them would refuse valid checkpoints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Self

from zkplatform_tlog.encoding import UINT64_MAX, b64decode, b64encode, has_control, is_utf8, parse_decimal
from zkplatform_tlog.errors import CheckpointError

ROOT_HASH_SIZE: Final = 32


@dataclass(frozen=True)
class Checkpoint:
    """A log's tree head: its origin, tree size and root hash, and opaque extension lines."""

    origin: str
    size: int
    root_hash: bytes
    extensions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_line(self.origin, "bad-origin", "origin")
        if not 0 <= self.size <= UINT64_MAX:
            raise CheckpointError("bad-size", "tree size is not an unsigned 64-bit integer")
        if len(self.root_hash) != ROOT_HASH_SIZE:
            raise CheckpointError("bad-root-hash", f"root hash has {len(self.root_hash)} bytes, want {ROOT_HASH_SIZE}")
        for extension in self.extensions:
            _check_line(extension, "bad-extension", "extension line")

    def body(self) -> str:
        """The note text: one line each for origin, size and root hash, then the extension lines."""
        lines = [self.origin, str(self.size), b64encode(self.root_hash), *self.extensions]
        return "".join(line + "\n" for line in lines)

    @classmethod
    def parse(cls, body: str) -> Self:
        """The checkpoint of a note text (without the signature lines); CheckpointError if the text
        is not exactly what `body()` would give for some checkpoint."""
        if not body.endswith("\n"):
            raise CheckpointError("malformed-checkpoint", "checkpoint does not end with a newline")
        lines = body[:-1].split("\n")
        if len(lines) < 3:
            raise CheckpointError("malformed-checkpoint", f"checkpoint has {len(lines)} lines, want at least 3")
        origin, size_text, hash_text, *extensions = lines
        size = parse_decimal(size_text)
        if size is None:
            raise CheckpointError("bad-size", "tree size is not a decimal below 2^64 without leading zeros")
        root = b64decode(hash_text)
        if root is None:
            raise CheckpointError("bad-root-hash", "root hash is not canonical padded standard base64")
        return cls(origin, size, root, tuple(extensions))


def _check_line(line: str, reason: str, what: str) -> None:
    if not line:
        raise CheckpointError(reason, f"{what} is empty")
    if "\n" in line or has_control(line) or not is_utf8(line):
        raise CheckpointError(reason, f"{what} holds a newline, a control character or a lone surrogate")
