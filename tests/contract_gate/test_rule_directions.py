"""How the contract gate's rule check (scripts/check_rules.py) reads one rule's change, in process."""

from __future__ import annotations

import pytest
from buf.validate import validate_pb2

from scripts.check_rules import LOOSER, STRICTER, compare, directions
from scripts.protoimage import EnumName, Rules

BOTH = {STRICTER, LOOSER}


def cel(expression: str) -> validate_pb2.Rule:
    return validate_pb2.Rule(id="probe", expression=expression)


@pytest.mark.parametrize(
    ("rule", "old", "new", "expected"),
    [
        ("string.max_len", 64, 32, {STRICTER}),
        ("string.max_len", 64, 128, {LOOSER}),
        ("string.max_len", None, 64, {STRICTER}),
        ("string.max_len", 64, None, {LOOSER}),
        ("string.max_len", 64, 64, set()),
        ("string.min_len", 1, 2, {STRICTER}),
        ("repeated.min_items", 1, 0, {LOOSER}),
        ("repeated.items.string.max_len", 8, 4, {STRICTER}),
        ("string.pattern", None, "^[a-z]*$", {STRICTER}),
        ("string.pattern", "^[a-z]*$", "^[a-z0-9]*$", BOTH),
        ("string.pattern", "^[a-z]*$", None, {LOOSER}),
        ("required", None, True, {STRICTER}),
        ("required", True, None, {LOOSER}),
        ("repeated.unique", False, True, {STRICTER}),
        ("string.[platform.v1.no_nul]", None, True, {STRICTER}),
        ("string.strict", None, False, {LOOSER}),
        ("string.strict", None, True, set()),
        ("string.in", ("a", "b"), ("a",), {STRICTER}),
        ("string.in", ("a",), ("a", "b"), {LOOSER}),
        ("string.in", ("a", "b"), ("a", "c"), BOTH),
        ("string.in", None, ("a",), {STRICTER}),
        ("string.not_in", ("a",), ("a", "b"), {STRICTER}),
        ("string.not_in", ("a", "b"), ("a",), {LOOSER}),
        ("ignore", None, EnumName("IGNORE_IF_ZERO_VALUE"), {LOOSER}),
        ("ignore", EnumName("IGNORE_IF_ZERO_VALUE"), None, {STRICTER}),
        ("ignore", EnumName("IGNORE_IF_ZERO_VALUE"), EnumName("IGNORE_ALWAYS"), {LOOSER}),
        ("string.const", "a", "b", BOTH),
        ("bool.const", True, False, BOTH),
        ("cel[probe]", None, cel("this != ''"), {STRICTER}),
        ("cel[probe]", cel("this != ''"), None, {LOOSER}),
        ("cel[probe]", cel("this != ''"), cel("this != 'x'"), BOTH),
        ("cel[probe]", cel("this != ''"), cel("this != ''"), set()),
    ],
)
def test_direction_of_a_change(rule: str, old: object, new: object, expected: set[str]) -> None:
    assert directions(rule, old, new) == expected


@pytest.mark.parametrize(
    ("old", "new", "rule", "expected"),
    [
        ({"int32.lte": 1000}, {"int32.lte": 100}, "int32.lte", {STRICTER}),
        ({"int32.lte": 1000}, {"int32.lte": 5000}, "int32.lte", {LOOSER}),
        ({"int32.lte": 1000}, {"int32.lt": 1000}, "int32.lte/lt", {STRICTER}),
        ({"int32.lt": 1000}, {"int32.lte": 1000}, "int32.lt/lte", {LOOSER}),
        ({"int32.gte": 0}, {"int32.gte": 1}, "int32.gte", {STRICTER}),
        ({"int32.gte": 1}, {"int32.gt": 0}, "int32.gte/gt", {LOOSER}),
        ({"int32.gte": 0}, {"int32.gt": 0}, "int32.gte/gt", {STRICTER}),
        ({}, {"int64.gte": 1}, "int64.gte", {STRICTER}),
        ({"int64.gte": 1}, {}, "int64.gte", {LOOSER}),
    ],
)
def test_bounds_of_one_side_compare_as_one_rule(old: Rules, new: Rules, rule: str, expected: set[str]) -> None:
    assert [(name, found) for name, _, _, found in compare(old, new)] == [(rule, expected)]


def test_examples_document_and_never_break() -> None:
    assert list(compare({"string.example": ("a",)}, {"string.example": ("b",)})) == []
