from __future__ import annotations

from pathlib import Path

import pytest

from tests.witness.logs import TestLog
from zkplatform.witness.core import WitnessCore
from zkplatform.witness.state import MemoryState, SqliteState, WitnessState
from zkplatform_tlog.note import Cosigner, generate_cosigner_key

START = 1_800_000_000


class Clock:
    """The witness's time, moved by the test."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> int:
        return self.now


def cosigner(name: str = "witness.example.test/w1") -> Cosigner:
    return Cosigner.from_skey(generate_cosigner_key(name)[0])


@pytest.fixture(params=["memory", "sqlite"])
def state(request: pytest.FixtureRequest, tmp_path: Path) -> WitnessState:
    if request.param == "memory":
        return MemoryState()
    return SqliteState.open(tmp_path / "witness.db")


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def log() -> TestLog:
    return TestLog()


@pytest.fixture
def core(state: WitnessState, clock: Clock, log: TestLog) -> WitnessCore:
    return WitnessCore(cosigner(), [log.verifier], state, clock)
