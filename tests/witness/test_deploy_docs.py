"""The witness's systemd unit in docs/deploy.md is one systemd accepts, running this installation,
hardened as the server's (tests/e2e/test_systemd_unit.py: the same bound on its exposure, and the
witness serving within its system call, socket and memory rules)."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.server import START_TIMEOUT_S, free_port, zkplatform_command
from tests.e2e.test_systemd_unit import MAX_EXPOSURE, exposure, needs_seccomp, needs_systemd_analyze, sandboxed
from tests.witness.serving import keygen
from zkplatform_tlog.note import generate_signer_key

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


def documented_unit(tmp_path: Path) -> Path:
    [unit] = UNIT_BLOCK.findall(DEPLOY.read_text())
    path = tmp_path / "zkplatform-witness.service"
    path.write_text(unit.replace(DOCUMENTED_COMMAND, zkplatform_command()))
    return path


@needs_systemd_analyze
def test_the_documented_witness_unit_is_hardened(tmp_path: Path) -> None:
    assert exposure(documented_unit(tmp_path)) <= MAX_EXPOSURE


@needs_systemd_analyze
@needs_seccomp
def test_the_witness_serves_within_its_units_rules(tmp_path: Path) -> None:
    key, _ = keygen(tmp_path)
    port = free_port()
    log_path = tmp_path / "witness.log"
    command = [zkplatform_command(), "witness", "serve", "--key", str(key), "--state", str(tmp_path / "w.db")]
    command += ["--bind", f"127.0.0.1:{port}", "--log-key", generate_signer_key("log.example.test")[1]]
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            [*sandboxed(documented_unit(tmp_path)), *command], stdout=log_file, stderr=subprocess.STDOUT, cwd=tmp_path
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while "listening on" not in log_path.read_text() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        healthz = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10)
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=30)
    log = log_path.read_text()

    assert (healthz.status_code, healthz.text) == (200, "ok\n"), log
    assert code == 0, log
    assert "Traceback" not in log
