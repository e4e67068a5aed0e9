"""State files of the client's stores (FileSyncStore, FileKeyLogStore): read whole, and replaced
whole, so that a client killed at any moment finds the last state it saved, never half of one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def read_state(path: Path) -> str | None:
    """The file's text, or None when there is no file yet."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def replace_state(path: Path, text: str) -> None:
    """Write `text` in place of the file, atomically: a temporary file in the same directory,
    flushed to disk, renamed over the old one (removed again if anything fails before)."""
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
