"""zkplatform_tlog.checkpoint against clients/testdata/tlog/checkpoint.json."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.tlog.vectors import case_id, load, outcome
from zkplatform_tlog.checkpoint import Checkpoint
from zkplatform_tlog.merkle import EMPTY_ROOT

VECTORS = load("checkpoint.json")


@pytest.mark.parametrize("case", VECTORS["parse"], ids=case_id)
def test_parse(case: dict[str, Any]) -> None:
    checkpoint = outcome(lambda: Checkpoint.parse(case["body"]), case["error"])
    if checkpoint is not None:
        assert checkpoint.origin == case["origin"]
        assert checkpoint.size == int(case["size"])
        assert checkpoint.root_hash.hex() == case["rootHash"]
        assert list(checkpoint.extensions) == case["extensions"]
        assert checkpoint.body() == case["body"]


@pytest.mark.parametrize("case", VECTORS["construct"], ids=case_id)
def test_construct(case: dict[str, Any]) -> None:
    def build() -> Checkpoint:
        return Checkpoint(case["origin"], int(case["size"]), bytes.fromhex(case["rootHash"]), tuple(case["extensions"]))

    checkpoint = outcome(build, case["error"])
    if checkpoint is not None:
        assert checkpoint.body() == case["body"]
        assert Checkpoint.parse(case["body"]) == checkpoint


def test_every_reason_is_documented() -> None:
    for case in VECTORS["parse"] + VECTORS["construct"]:
        assert case["error"] is None or case["error"] in VECTORS["about"]["reasons"]


def test_frozen_and_defaults() -> None:
    checkpoint = Checkpoint("log.example/zk", 0, EMPTY_ROOT)
    assert checkpoint.extensions == ()
    assert checkpoint.body() == "log.example/zk\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n"
    with pytest.raises(dataclasses.FrozenInstanceError):
        checkpoint.size = 1  # type: ignore[misc]


def test_lone_surrogate_in_origin_is_refused() -> None:
    with pytest.raises(ValueError, match="origin"):
        Checkpoint("log\ud800", 1, EMPTY_ROOT)
