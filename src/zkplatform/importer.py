"""Reading items to import: NDJSON, one Item per line in its proto3 JSON form.

Every line is parsed and checked against the proto's rules before anything is
stored, so a bad file is refused whole, naming its first bad line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from google.protobuf import json_format

from zkplatform.domain.models import Item
from zkplatform.rpc.convert import item_from_proto
from zkplatform.rpc.validation import violations_of
from zkplatform_api.platform.v1 import vault_pb2


class BadLine(ValueError):
    def __init__(self, number: int, reason: str) -> None:
        super().__init__(f"line {number}: {reason}")
        self.number = number


def read_items(lines: Iterable[bytes], progress: Callable[[int], object] = lambda _: None) -> list[Item]:
    """Every item of the file, or BadLine for the first line that is not one."""
    items = []
    for number, line in enumerate(lines, start=1):
        progress(len(line))
        if line.strip():
            items.append(_item(number, line))
    return items


def _item(number: int, line: bytes) -> Item:
    message = vault_pb2.Item()
    try:
        # Unknown fields are refused: in an operator's file they are typos.
        json_format.Parse(line, message)
    except json_format.ParseError as error:
        raise BadLine(number, f"not an Item in proto3 JSON: {error}") from None
    if violations := violations_of(message):
        reason = "; ".join(f"{v.field}: {v.description}" if v.field else v.description for v in violations)
        raise BadLine(number, reason)
    if message.updated_at.nanos:
        raise BadLine(number, "updatedAt: must be whole seconds")
    return item_from_proto(message)
