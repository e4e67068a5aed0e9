"""Reading the shared vector files of clients/testdata/tlog, and checking an outcome against one."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from zkplatform_tlog.errors import TlogError

T = TypeVar("T")

VECTORS = Path(__file__).resolve().parents[2] / "clients" / "testdata" / "tlog"


def load(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((VECTORS / name).read_text(encoding="utf-8"))
    return document


def case_id(case: dict[str, Any]) -> str:
    return f"{case['source'].split()[0]}: {case['desc']}"


def outcome(call: Callable[[], T], error: str | None) -> T | None:
    """The result of `call` when `error` is None; else check that it raises that reason."""
    if error is None:
        return call()
    with pytest.raises(TlogError) as raised:
        call()
    assert raised.value.reason == error, str(raised.value)
    return None
