"""Where a KeyDirectory keeps the key log it verified (key_log.py's `KeyLogState`) between runs.

What the state holds is what the client trusts: the last checkpoint it verified, so that a log
rewritten or rolled back behind it is refused; the devices the log made; the alerts and resets
the application has not acknowledged yet. `FileKeyLogStore` keeps it in a file (the default a
KeyDirectory is built with in every example); `MemoryKeyLogStore` only in memory, which must be
chosen explicitly: after a restart such a client would trust whatever log it is shown next.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable
from pathlib import Path
from typing import Final, Protocol

from zkplatform_client.key_log import KeyLogState, restore_state, state_document
from zkplatform_client.state_files import read_state, replace_state

__all__ = ["STATE_FORMAT", "STATE_VERSION", "FileKeyLogStore", "KeyLogStore", "MemoryKeyLogStore"]

# What a state file says it is: its format and version. Version 1 was the hash chain of client
# packages 1.1; its files are refused (the next verification of a new file starts over).
STATE_FORMAT: Final = "zkplatform.key-log-state"
STATE_VERSION: Final = 2


class KeyLogStore(Protocol):
    """Keeps a KeyDirectory's verified state. Either method may be async."""

    def load(self) -> KeyLogState | Awaitable[KeyLogState | None] | None:
        """The saved state, or None when there is none yet."""
        ...

    def save(self, state: KeyLogState) -> Awaitable[None] | None:
        """Keep `state` in place of the one before, whole or not at all."""
        ...


class MemoryKeyLogStore:
    """A state kept in memory, for one process (and tests): a new process starts with no state
    and trusts the first log it is shown. Choose it knowingly; FileKeyLogStore is the default."""

    def __init__(self, state: KeyLogState | None = None) -> None:
        self.state = state

    def load(self) -> KeyLogState | None:
        return self.state

    def save(self, state: KeyLogState) -> None:
        self.state = state


class FileKeyLogStore:
    """A state kept in a JSON file, replaced atomically on each save (state_files.py). It holds
    public keys and signed statements only, but what it says is what the client trusts: keep it
    where the application keeps its own data, one file per tenant and device."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def load(self) -> KeyLogState | None:
        text = read_state(self.path)
        return None if text is None else parse_state(text)

    def save(self, state: KeyLogState) -> None:
        replace_state(self.path, format_state(state))


def format_state(state: KeyLogState) -> str:
    return json.dumps({"format": STATE_FORMAT, "version": STATE_VERSION, **state_document(state)})


def parse_state(text: str) -> KeyLogState:
    """The state of a file `format_state` wrote; ValueError (saying what) for any other file."""
    try:
        document = json.loads(text)
    except ValueError:
        raise ValueError("the key log state file is not JSON") from None
    if not isinstance(document, dict):
        raise ValueError("not a key log state file")  # noqa: TRY004 - the file given, not its type
    if document.get("version") != STATE_VERSION:
        raise ValueError(
            f"a key log state file of version {document.get('version')!r}, not {STATE_VERSION}: "
            "start from a new file (the next verification reads the whole log)"
        )
    if document.get("format") != STATE_FORMAT:
        raise ValueError("not a key log state file")
    try:
        return restore_state(document)
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"the key log state file is incomplete ({type(error).__name__})") from None
