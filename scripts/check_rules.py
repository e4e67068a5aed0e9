"""The half of the contract gate that `buf breaking` cannot see: the protovalidate rules, and the
fields' `google.api.field_behavior` (scripts/field_behaviors.py, AIP-203).

    python -m scripts.check_rules BASELINE_IMAGE CURRENT_IMAGE   (`-`: a binary image on stdin)

A client built against the baseline sends what the baseline's rules allow and accepts what they
promise. So a rule made stricter on a request field refuses what such a client may send, and a
rule made looser on a response field answers what it may refuse: either fails, one line each.

A message is a request message when an RPC takes it, or a message field of a request message
holds it (transitively); a response message likewise from an RPC's answer; one used both ways
is both, so any change of its rules fails. A pattern or CEL expression that changes is taken as
both stricter and looser. A field new in a request message must accept being absent (old
clients never set it): its rules are checked with protovalidate on an empty message. Removed
and renumbered fields are left to `buf breaking`.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import protovalidate
from google.protobuf import message_factory

from scripts import field_behaviors
from scripts.protoimage import Image, Rules, show

if TYPE_CHECKING:
    from collections.abc import Iterator

    from google.protobuf.descriptor import Descriptor

STRICTER, LOOSER = "stricter", "looser"
REQUEST, RESPONSE = "request", "response"
FAILS = {REQUEST: STRICTER, RESPONSE: LOOSER}  # a field in this role fails on a change this way

# How a rule compares goes by the last part of its path. The bounds of one side (lt, lte,
# lt_now; gt, gte, gt_now) are one rule, so that `lte: 10` -> `lt: 10` reads as stricter.
SIDES = {"lt": "upper", "lte": "upper", "lt_now": "upper", "gt": "lower", "gte": "lower", "gt_now": "lower"}
UPPER = {"max_len", "max_bytes", "max_items", "max_pairs", "within"}  # lowering it is stricter
LOWER = {"min_len", "min_bytes", "min_items", "min_pairs"}  # raising it is stricter
ALLOW_LIST = {"in"}  # shrinking it is stricter
DENY_LIST = {"not_in", "cel_expression"}  # growing it is stricter
IGNORE_ORDER = ["IGNORE_ALWAYS", "IGNORE_IF_ZERO_VALUE", "IGNORE_UNSPECIFIED"]  # loosest first
DEFAULT_TRUE = {"strict"}  # StringRules.strict: unset means true
DOCUMENTATION = {"example"}  # no effect on validation


class Note(str):
    """Words in place of a rule's value, shown bare."""

    __slots__ = ()


class Bound(NamedTuple):
    name: str  # lt, lte, lt_now, gt, gte or gt_now
    value: object


@dataclass(frozen=True)
class Violation:
    file: str
    message: str
    field: str  # a field's name, `(message)` for the message's own rules, or `oneof <name>`
    rule: str
    old: object
    new: object
    role: str
    why: str = ""  # what breaks, when it is no rule made stricter or looser (a field behaviour)

    def __str__(self) -> str:
        where = "message" if self.field == "(message)" else "field"
        change = f"{self.file}: {self.message}.{self.field}: {self.rule}: {_show(self.old)} -> {_show(self.new)}"
        if self.why:
            return f"{change}: {self.why} on a {self.role} {where} (AIP-203)"
        return f"{change} is {FAILS[self.role]} on a {self.role} {where}"


def _show(value: object) -> str:
    if isinstance(value, Bound):
        return show(value.value)
    return value if isinstance(value, Note) else show(value)


def roles(*images: Image) -> dict[str, set[str]]:
    """Message name -> {"request", "response"}, from the RPCs of every image given."""
    found: dict[str, set[str]] = defaultdict(set)
    # Walked per image: a message may hold a field in one image that it lacks in the other (a
    # message newly carried in a request is a request message from then on).
    seen: set[tuple[str, str]] = set()

    def mark(message: Descriptor, role: str) -> None:
        if (message.full_name, role) not in seen:
            seen.add((message.full_name, role))
            found[message.full_name].add(role)
            for field in message.fields:
                if field.message_type is not None:
                    mark(field.message_type, role)

    for image in images:
        seen.clear()
        for file in image.files:
            for method in (method for service in file.service for method in service.method):
                mark(image.pool.FindMessageTypeByName(method.input_type.lstrip(".")), REQUEST)
                mark(image.pool.FindMessageTypeByName(method.output_type.lstrip(".")), RESPONSE)
    return found


def directions(rule: str, old: object, new: object) -> set[str]:  # noqa: PLR0911 (one return per kind of rule)
    """Whether going from old to new (None: no such rule) is stricter, looser, both or neither."""
    leaf = rule.rpartition(".")[2]
    if leaf == "ignore":
        return _ranked(*(IGNORE_ORDER.index(str(value or "IGNORE_UNSPECIFIED")) for value in (old, new)))
    if (isinstance(old, bool) or isinstance(new, bool)) and leaf != "const":  # `email: true`, `unique: true`...
        default = leaf in DEFAULT_TRUE
        return _ranked(*(int(default if value is None else bool(value)) for value in (old, new)))
    if old is None or new is None:
        return {STRICTER} if old is None else {LOOSER}
    if isinstance(old, Bound) and isinstance(new, Bound):
        return _bound(leaf, old, new)
    if leaf in UPPER | LOWER and (old_at := _magnitude(old)) is not None and (new_at := _magnitude(new)) is not None:
        return _ranked(old_at, new_at) if leaf in LOWER else _ranked(new_at, old_at)
    if leaf in ALLOW_LIST | DENY_LIST:
        old_set, new_set = ({show(item) for item in value} for value in (old, new))  # type: ignore[attr-defined]
        grown, shrunk = bool(new_set - old_set), bool(old_set - new_set)
        stricter, looser = (grown, shrunk) if leaf in DENY_LIST else (shrunk, grown)
        return {direction for direction, hit in ((STRICTER, stricter), (LOOSER, looser)) if hit}
    return set() if show(old) == show(new) else {STRICTER, LOOSER}  # a pattern, a CEL expression, a const...


def _ranked(old: Any, new: Any) -> set[str]:
    """For values where the higher is the stricter."""
    if new == old:
        return set()
    return {STRICTER} if new > old else {LOOSER}


def _bound(side: str, old: Bound, new: Bound) -> set[str]:
    old_at, new_at = _magnitude(old.value), _magnitude(new.value)
    if old_at is None or new_at is None:  # lt_now, gt_now: no value to compare with
        return set() if old == new else {STRICTER, LOOSER}
    if old_at == new_at:  # the same value: the exclusive bound (lt, gt) is the stricter
        return _ranked(old.name in {"lt", "gt"}, new.name in {"lt", "gt"})
    return _ranked(old_at, new_at) if side == "lower" else _ranked(new_at, old_at)


def _magnitude(value: object) -> tuple[int, int] | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    seconds = getattr(value, "seconds", None)  # a Duration or a Timestamp
    return None if seconds is None else (seconds, getattr(value, "nanos", 0))


def keyed(rules: Rules) -> dict[str, object]:
    """The rules keyed for comparison: each side's bound under `<prefix>.upper` or `.lower`."""
    result: dict[str, object] = {}
    for path, value in rules.items():
        prefix, _, leaf = path.rpartition(".")
        if leaf in SIDES:
            result[f"{prefix}.{SIDES[leaf]}"] = Bound(leaf, value)
        elif leaf not in DOCUMENTATION:
            result[path] = value
    return result


def compare(old: Rules, new: Rules) -> Iterator[tuple[str, object, object, set[str]]]:
    """(rule, old value, new value, directions) for every rule that changed, by the rule's path."""
    old_keyed, new_keyed = keyed(old), keyed(new)
    for key in list(old_keyed) + [key for key in new_keyed if key not in old_keyed]:
        before, after = old_keyed.get(key), new_keyed.get(key)
        found = directions(key, before, after)
        if found:
            names = dict.fromkeys(value.name for value in (before, after) if isinstance(value, Bound))
            rule = f"{key.rpartition('.')[0]}.{'/'.join(names)}" if names else key  # int32.lte, int32.lte/lt
            yield rule, before, after, found


def changes(
    baseline: Image, current: Image, before: Descriptor, after: Descriptor, *, request: bool
) -> Iterator[tuple[str, str, object, object, set[str]]]:
    """(field, rule, old, new, directions) for one message present in both images."""
    pairs = [("(message)", baseline.rules(before.GetOptions()), current.rules(after.GetOptions()))]
    for oneof in after.oneofs:
        old_oneof = before.oneofs_by_name.get(oneof.name)
        old_rules = baseline.rules(old_oneof.GetOptions()) if old_oneof is not None else {}
        pairs.append((f"oneof {oneof.name}", old_rules, current.rules(oneof.GetOptions())))
    for field in after.fields:
        old_field = before.fields_by_number.get(field.number)
        if old_field is not None:
            pairs.append((field.name, baseline.rules(old_field.GetOptions()), current.rules(field.GetOptions())))
        elif request:  # old clients never set a new field: its absence must pass
            for rule in refusals_of_absence(after, field.number):
                yield field.name, rule, Note("(a new field)"), Note("refuses the field unset"), {STRICTER}
    for field_name, old_rules, new_rules in pairs:
        for rule, old, new, found in compare(old_rules, new_rules):
            yield field_name, rule, old, new, found


def refusals_of_absence(message: Descriptor, number: int) -> list[str]:
    """The rules (`string.uuid`) that refuse an empty `message` because of its field `number`."""
    empty = message_factory.GetMessageClass(message)()
    validator = protovalidate.Validator()  # a cache of its own: another image may reuse these names
    refusals = []
    for violation in validator.collect_violations(empty):
        field, rule = violation.proto.field, violation.proto.rule
        if field is not None and field.elements and field.elements[0].field_number == number:
            path = ".".join(element.field_name for element in rule.elements) if rule is not None else ""
            refusals.append(path or violation.proto.rule_id)
    return refusals


def check(baseline: Image, current: Image) -> list[Violation]:
    role_of = roles(baseline, current)
    violations: list[Violation] = []
    for name in sorted(role_of):
        before, after = baseline.message(name), current.message(name)
        if before is None or after is None:
            continue  # a new message, or one removed (buf breaking's business)
        for field, rule, old, new, found in changes(baseline, current, before, after, request=REQUEST in role_of[name]):
            violations.extend(
                Violation(after.file.name, name, field, rule, old, new, role)
                for role in sorted(role_of[name])
                if FAILS[role] in found
            )
        violations.extend(
            Violation(
                after.file.name,
                name,
                change.field,
                field_behaviors.RULE,
                Note("(a new field)") if change.old is None else change.old,
                change.new,
                change.role,
                change.why,
            )
            for change in field_behaviors.breaking(baseline, current, before, after, role_of[name])
        )
    return violations


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m scripts.check_rules BASELINE_IMAGE CURRENT_IMAGE", file=sys.stderr)
        return 2
    violations = check(Image.load(argv[0]), Image.load(argv[1]))
    for violation in violations:
        print(violation)
    if violations:
        print(
            f"check_rules: {len(violations)} rule or field behavior change(s) would break clients of {argv[0]}",
            file=sys.stderr,
        )
        return 1
    print(f"check_rules: no protovalidate rule or field behavior change breaks clients of {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
