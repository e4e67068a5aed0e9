"""The witness's systemd unit in docs/deploy.md is one systemd accepts, running this installation."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.server import zkplatform_command

pytestmark = pytest.mark.e2e

DEPLOY = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"
UNIT_BLOCK = re.compile(r"```ini\n(# /etc/systemd/system/zkplatform-witness\.service\n.*?)```", re.DOTALL)
DOCUMENTED_COMMAND = "/opt/zkplatform/venv/bin/zkplatform"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_verifies_the_documented_witness_unit(tmp_path: Path) -> None:
    [unit] = UNIT_BLOCK.findall(DEPLOY.read_text())
    assert f"{DOCUMENTED_COMMAND} witness serve" in unit
    path = tmp_path / "zkplatform-witness.service"
    path.write_text(unit.replace(DOCUMENTED_COMMAND, zkplatform_command()))

    result = subprocess.run(
        ["systemd-analyze", "verify", str(path)], capture_output=True, text=True, timeout=60, check=False
    )

    assert result.returncode == 0, result.stderr
    assert str(path) not in result.stderr, result.stderr
