"""The contract gate's check of `google.api.field_behavior`, which `buf breaking` does not compare.

A field's behaviours are what a client in another language generates its code from (a required
argument, a field left out of a request) and what its developers read. AIP-203 lists the changes
of them that break such a client; which ones do here depends on the role of the field's message
(check_rules.roles: sent in a request, read in a response, or both):

- on a request field: REQUIRED added, to an existing field or with a new one (a client built on
  the baseline may leave it unset); OUTPUT_ONLY added (the server now ignores what that client
  sends) or removed (the server now reads what that client sends back as it was answered);
  IMMUTABLE added (a change that client makes is now refused);
- on a response field: INPUT_ONLY added (that client no longer gets it).

Every other change passes: OPTIONAL added or removed, REQUIRED removed, INPUT_ONLY or IMMUTABLE
removed, and the values AIP-203 does not rank (IDENTIFIER, UNORDERED_LIST, NON_EMPTY_DEFAULT).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from scripts.protoimage import EnumName

if TYPE_CHECKING:
    from collections.abc import Iterator

    from google.protobuf.descriptor import Descriptor
    from google.protobuf.message import Message

    from scripts.protoimage import Image

REQUEST, RESPONSE = "request", "response"
RULE = "google.api.field_behavior"


class Change(NamedTuple):
    """One breaking change of a field's behaviours, in the role it breaks."""

    field: str
    old: tuple[EnumName, ...] | None  # None: a field the baseline does not have
    new: tuple[EnumName, ...]
    role: str
    why: str  # what changed: "REQUIRED added"


# (value, added?) -> the role of message it breaks clients in.
BREAKING = {
    ("REQUIRED", True): REQUEST,
    ("OUTPUT_ONLY", True): REQUEST,
    ("OUTPUT_ONLY", False): REQUEST,
    ("IMMUTABLE", True): REQUEST,
    ("INPUT_ONLY", True): RESPONSE,
}


def breaking(
    baseline: Image, current: Image, before: Descriptor, after: Descriptor, roles: set[str]
) -> Iterator[Change]:
    """The behaviour changes of one message (present in both images) that break its clients."""
    for field in after.fields:
        new = _behaviors(current, field.GetOptions())
        old_field = before.fields_by_number.get(field.number)
        if old_field is None:
            # A new field: clients built on the baseline never set it.
            if REQUEST in roles and "REQUIRED" in new:
                yield Change(field.name, None, new, REQUEST, "REQUIRED on a new field")
            continue
        old = _behaviors(baseline, old_field.GetOptions())
        for value in sorted(set(old) ^ set(new)):
            added = value in new
            role = BREAKING.get((value, added))
            if role in roles:
                yield Change(field.name, old, new, role, f"{value} {'added' if added else 'removed'}")


def _behaviors(image: Image, options: Message) -> tuple[EnumName, ...]:
    return tuple(EnumName(name) for name in image.field_behavior(options))
