"""Reading items to import: NDJSON, one `platform.v1.Item` per line in its proto3 JSON form.

An import makes two passes, and neither holds the file's items in memory.
The first (`check`) reads the file once and checks every line against the
contract's rules, reporting every bad line rather than stopping at the first;
each good item goes, in the contract's binary form, to a spool: an anonymous
temporary file. The second (`Spool.items`) streams the spool into the store
only when every line was good. Reading the spool rather than the file again
parses no JSON twice (the costliest step by far), works for standard input,
and stores exactly what was checked even if the file changes meanwhile.
"""

from __future__ import annotations

import json
import os
import stat
import struct
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Self

from google.protobuf import json_format
from tqdm import tqdm

from zkplatform.domain.models import Item
from zkplatform.messages.convert import item_from_proto
from zkplatform.messages.rules import violations_of
from zkplatform_api.platform.v1 import vault_pb2

STDIN = "-"
# Smaller files are checked (and stored) before a progress bar would have drawn anything useful.
PROGRESS_FROM_BYTES = 1 << 20
PROGRESS_FROM_ITEMS = 2_500  # about 1 MiB of typical items
# Enough to see what is wrong with a file; its other bad lines are counted, not listed.
REPORTED_BAD_LINES = 20
_LENGTH = struct.Struct("<I")  # each spooled item's length, then its binary form


class BadLine(ValueError):
    """A line that is not an importable item: its number and why."""

    def __init__(self, number: int, reason: str) -> None:
        super().__init__(f"line {number}: {reason}")
        self.number = number
        self.reason = reason


class BadFile(ValueError):
    """A file with bad lines: the first REPORTED_BAD_LINES of them, and how many there are in all."""

    def __init__(self, reported: list[BadLine], total: int) -> None:
        self.reported = tuple(reported)
        self.total = total
        unlisted = total - len(reported)
        more = f" (the first {len(reported)} above, {unlisted} more not listed)" if unlisted else ""
        # One bad line is said as itself, in one line, as every other refusal is.
        super().__init__(str(reported[0]) if total == 1 else f"{total} bad lines{more}")


class _DuplicateKey(ValueError):
    pass


class Spool:
    """The checked items, each as its length and its binary `platform.v1.Item`, in an anonymous
    temporary file (gone when closed, or when the process ends)."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 # closed by close(), as the spool outlives this call
        self.count = 0

    def add(self, message: vault_pb2.Item) -> None:
        data = message.SerializeToString()
        self._file.write(_LENGTH.pack(len(data)))
        self._file.write(data)
        self.count += 1

    def items(self, progress: Callable[[int], object] = lambda _: None) -> Iterator[Item]:
        """The spooled items, in file order, read as they are consumed."""
        self._file.seek(0)
        read = self._file.read
        for _ in range(self.count):
            (length,) = _LENGTH.unpack(read(_LENGTH.size))
            message = vault_pb2.Item()
            message.ParseFromString(read(length))
            progress(1)
            yield item_from_proto(message)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def check_file(name: str, accept: Callable[[vault_pb2.Item], object]) -> int:
    """Pass 1 over the file (standard input for "-"): each good item to `accept` (a spool's add);
    the number of items, or BadFile naming the bad lines once the whole file has been read."""
    if name == STDIN:
        return _check(sys.stdin.buffer, accept)
    with Path(name).open("rb") as source:
        return _check(source, accept)


def _check(source: BinaryIO, accept: Callable[[vault_pb2.Item], object]) -> int:
    size = _size_of(source)
    quiet = size < PROGRESS_FROM_BYTES or not sys.stderr.isatty()
    with tqdm(total=size, unit="B", unit_scale=True, desc="checking", disable=quiet, file=sys.stderr) as bar:
        return check_lines(source, accept, bar.update)


def storing(spool: Spool) -> Iterator[Item]:
    """Pass 2: the spooled items as the store consumes them, with a progress bar (by items) on a terminal."""
    quiet = spool.count < PROGRESS_FROM_ITEMS or not sys.stderr.isatty()
    with tqdm(total=spool.count, unit=" items", desc="storing", disable=quiet, file=sys.stderr) as bar:
        yield from spool.items(bar.update)


def _size_of(source: BinaryIO) -> int:
    """The size of a regular file (standard input too, when redirected from one); 0 for a pipe or a terminal."""
    try:
        status = os.fstat(source.fileno())
    except (OSError, ValueError):  # no file descriptor at all (io.UnsupportedOperation is both)
        return 0
    return status.st_size if stat.S_ISREG(status.st_mode) else 0


def check_lines(
    lines: Iterable[bytes],
    accept: Callable[[vault_pb2.Item], object],
    progress: Callable[[int], object] = lambda _: None,
) -> int:
    """Check NDJSON lines, blank lines skipped, handing each good item to `accept`; the number of
    items. BadFile once every line has been read, if any was bad."""
    reported: list[BadLine] = []
    bad = good = 0
    # Only the ids of the items seen (per vault, so that each vault id is held once): what naming
    # both lines of a duplicate takes. The store would refuse a duplicate too, but not name them.
    first_seen: dict[str, dict[str, int]] = {}
    for number, line in enumerate(lines, start=1):
        progress(len(line))
        if not line.strip():
            continue
        try:
            message = parse_line(number, line)
            earlier = first_seen.setdefault(message.vault_id, {}).setdefault(message.item_id, number)
            if earlier != number:
                what = f"item {message.item_id} of vault {message.vault_id} is already on line {earlier}"
                raise BadLine(number, what)  # noqa: TRY301 # reported like every other bad line, just below
        except BadLine as error:
            bad += 1
            if len(reported) < REPORTED_BAD_LINES:
                reported.append(error)
            continue
        if not bad:  # after a bad line nothing will be stored: spooling more would be wasted
            accept(message)
        good += 1
    if bad:
        raise BadFile(reported, bad)
    return good


def parse_line(number: int, line: bytes) -> vault_pb2.Item:
    """One line as a checked Item message, or BadLine saying what is wrong with it."""
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
    return message


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
