"""The TypeScript demo, called wrongly: its usage on stderr and exit code 2, not a stack trace."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def demo(ts_tools: Path) -> Path:
    """The compiled demo."""
    return ts_tools / "demo.js"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ((), "expected 6 non-empty arguments, got 0"),
        (("http://127.0.0.1:8080", "connect-json"), "expected 6 non-empty arguments, got 2"),
        (("http://127.0.0.1:8080", "carrier-pigeon", "t", "v", "i", "j"), 'unknown protocol "carrier-pigeon"'),
    ],
)
def test_a_wrong_call_prints_the_usage_and_exits_2(demo: Path, args: tuple[str, ...], says: str) -> None:
    result = subprocess.run(["node", str(demo), *args], capture_output=True, text=True, timeout=60, check=False)

    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines()[0] == f"demo: {says}"
    assert "usage: node dist-tools/demo.js BASE_URL PROTOCOL TOKEN VAULT_ID ITEM_ID OTHER_ITEM_ID" in result.stderr
    assert "PROTOCOL is one of connect-json, connect-binary, grpc, grpc-web" in result.stderr
    assert "    at " not in result.stderr  # no stack trace
