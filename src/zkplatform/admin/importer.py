"""Reading items to import: NDJSON, one `platform.v1.Item` per line in its proto3 JSON form.

This is the first of the import's two passes: every line is parsed and checked
against the contract's rules before the store is touched, so that a bad file
is refused whole, naming its first bad line.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, BinaryIO

from google.protobuf import json_format
from tqdm import tqdm

from zkplatform.domain.models import Item
from zkplatform.messages.convert import item_from_proto
from zkplatform.messages.rules import violations_of
from zkplatform_api.platform.v1 import vault_pb2

STDIN = "-"
# Smaller files are checked before a progress bar would have drawn anything useful.
PROGRESS_FROM_BYTES = 1 << 20


class BadLine(ValueError):
    """A line that is not an importable item: its number and why."""

    def __init__(self, number: int, reason: str) -> None:
        super().__init__(f"line {number}: {reason}")
        self.number = number
        self.reason = reason


class _DuplicateKey(ValueError):
    pass


def read_file(name: str) -> list[Item]:
    """Every item of the file (or of standard input for "-"); BadLine for the first line that is not one."""
    if name == STDIN:
        return _read(sys.stdin.buffer)
    with Path(name).open("rb") as source:
        return _read(source)


def _read(source: BinaryIO) -> list[Item]:
    size = _size_of(source)
    quiet = size < PROGRESS_FROM_BYTES or not sys.stderr.isatty()
    with tqdm(total=size, unit="B", unit_scale=True, desc="checking", disable=quiet, file=sys.stderr) as bar:
        return read_items(source, bar.update)


def _size_of(source: BinaryIO) -> int:
    """The size of a regular file (standard input too, when redirected from one); 0 for a pipe or a terminal."""
    try:
        status = os.fstat(source.fileno())
    except (OSError, ValueError):  # no file descriptor at all (io.UnsupportedOperation is both)
        return 0
    return status.st_size if stat.S_ISREG(status.st_mode) else 0


def read_items(lines: Iterable[bytes], progress: Callable[[int], object] = lambda _: None) -> list[Item]:
    """The items of NDJSON lines, blank lines skipped; BadLine for the first line that is not one."""
    items: list[Item] = []
    first_seen: dict[tuple[str, str], int] = {}
    for number, line in enumerate(lines, start=1):
        progress(len(line))
        if not line.strip():
            continue
        item = parse_item(number, line)
        # The store would refuse this too, but only here can the message name both lines.
        key = (item.vault_id, item.item_id)
        if (earlier := first_seen.setdefault(key, number)) != number:
            raise BadLine(number, f"item {item.item_id} of vault {item.vault_id} is already on line {earlier}")
        items.append(item)
    return items


def parse_item(number: int, line: bytes) -> Item:
    """One line as an Item, or BadLine saying what is wrong with it."""
    try:
        # utf-8-sig: a byte-order mark, as some editors write one, is not an error.
        text = line.decode("utf-8-sig").strip()
    except UnicodeDecodeError as error:
        raise BadLine(number, f"not UTF-8 text (byte {error.start + 1})") from None
    data = _json_object(number, text)
    message = vault_pb2.Item()
    try:
        # Unknown fields are refused: in an operator's file they are typos.
        json_format.ParseDict(data, message)
    except (json_format.ParseError, RecursionError) as error:
        raise BadLine(number, f"not an Item: {_first_line(str(error))}") from None
    if violations := violations_of(message):
        raise BadLine(
            number, "; ".join(f"{v.field}: {v.description}" if v.field else v.description for v in violations)
        )
    # The contract's timestamps are whole seconds; the store keeps nothing finer.
    if message.updated_at.nanos:
        raise BadLine(number, "updatedAt: must be whole seconds")
    return item_from_proto(message)


def _json_object(number: int, text: str) -> dict[str, Any]:
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as error:
        raise BadLine(number, f"not JSON: {error.msg} at column {error.colno}") from None
    except _DuplicateKey as error:
        raise BadLine(number, f"not JSON: {error}") from None
    except RecursionError:
        raise BadLine(number, "not JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise BadLine(number, "not a JSON object")
    return data


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Refuse a repeated key, as json_format.Parse does: JSON itself would silently keep the last."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            msg = f"the key {key!r} appears twice"
            raise _DuplicateKey(msg)
        found[key] = value
    return found


def _first_line(text: str) -> str:
    """protobuf's messages go on to list every field on further lines; the first says what is wrong."""
    return text.partition("\n")[0].strip().rstrip(".")
