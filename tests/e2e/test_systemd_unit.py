"""The systemd unit docs/deploy.md gives: one systemd accepts, hardened (`systemd-analyze
security` scores it at most MAX_EXPOSURE, where it scored 7.9 "EXPOSED"), and running this
installation's server within its system call filter, address families and memory rules.

This machine may have no systemd as its init (a container), so the unit is not started by
systemd: tests/e2e/systemd_sandbox.py applies what of the unit decides whether the runtime
runs (seccomp, as systemd does), and the server must serve and stop cleanly within it."""

from __future__ import annotations

import ctypes.util
import json
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.connect import JSON, headers
from tests.e2e.server import free_port, serving, zkplatform_command
from tests.e2e.test_durable import ENV, seeded

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "docs" / "deploy.md"
SANDBOX = REPO / "tests" / "e2e" / "systemd_sandbox.py"
UNIT_BLOCK = re.compile(r"```ini\n(# /etc/systemd/system/zkplatform.service\n.*?)```", re.DOTALL)
DOCUMENTED_COMMAND = "/opt/zkplatform/venv/bin/zkplatform"
# The most `systemd-analyze security` may score the unit: "OK" is below 3.0; the unit scores 1.2.
MAX_EXPOSURE = 2.0
EXPOSURE = re.compile(r"Overall exposure level for \S+: (\d+\.\d+) ")

needs_systemd_analyze = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed"
)
needs_seccomp = pytest.mark.skipif(
    ctypes.util.find_library("seccomp") is None, reason="libseccomp is not installed (Debian's libseccomp2)"
)


def documented_unit(tmp_path: Path) -> Path:
    """The unit of docs/deploy.md, running this installation's zkplatform."""
    [unit] = UNIT_BLOCK.findall(DEPLOY.read_text())
    assert DOCUMENTED_COMMAND in unit
    path = tmp_path / "zkplatform.service"
    path.write_text(unit.replace(DOCUMENTED_COMMAND, zkplatform_command()))
    return path


def exposure(unit: Path) -> float:
    """`systemd-analyze security --offline=yes`'s overall exposure of the unit file."""
    result = subprocess.run(
        ["systemd-analyze", "security", "--offline=yes", "--no-pager", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    found = EXPOSURE.search(result.stdout)
    assert found, result.stdout + result.stderr
    return float(found.group(1))


def sandboxed(unit: Path) -> list[str]:
    """The command prefix that runs a command within the unit's rules."""
    return [sys.executable, str(SANDBOX), str(unit), "--"]


@needs_systemd_analyze
def test_systemd_verifies_the_documented_unit(tmp_path: Path) -> None:
    path = documented_unit(tmp_path)

    result = subprocess.run(
        ["systemd-analyze", "verify", str(path)], capture_output=True, text=True, timeout=60, check=False
    )

    assert result.returncode == 0, result.stderr
    assert str(path) not in result.stderr, result.stderr  # no warning about the unit, an unknown key say


@needs_systemd_analyze
def test_the_documented_unit_is_hardened(tmp_path: Path) -> None:
    assert exposure(documented_unit(tmp_path)) <= MAX_EXPOSURE


@needs_systemd_analyze
@needs_seccomp
def test_the_sandbox_takes_away_what_the_unit_says(tmp_path: Path) -> None:
    """The emulation is no empty gesture: within it, what the unit forbids fails."""
    checks = {
        "writable and executable memory": "import mmap; mmap.mmap(-1, 4096, prot=7)",
        "a packet socket": "import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)",
        "a change of owner": f"import os; os.chown({str(tmp_path)!r}, 0, 0)",
        "a change of user": "import os; os.setuid(0)",
    }
    unit = documented_unit(tmp_path)
    refused = {}
    for what, code in checks.items():
        done = subprocess.run(
            [*sandboxed(unit), sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
        )
        refused[what] = done.returncode != 0 and "Operation not permitted" in done.stderr
    allowed = subprocess.run(
        [*sandboxed(unit), sys.executable, "-c", "print('runs')"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert refused == dict.fromkeys(checks, True)
    assert allowed.stdout == "runs\n", allowed.stderr


@needs_systemd_analyze
@needs_seccomp
@pytest.mark.parametrize("store", ["dev", "postgresql"])
def test_the_server_serves_within_the_units_rules(tmp_path: Path, store: str, request: pytest.FixtureRequest) -> None:
    """In development mode (the sealed demo data: cryptography's keys and HPKE), and on PostgreSQL
    with two workers and metrics (psycopg's libpq, spawned workers, prometheus' shared files)."""
    unit = documented_unit(tmp_path)
    metrics = f"127.0.0.1:{free_port()}"
    if store == "dev":
        args: tuple[str, ...] = ("--dev",)
        token = None
    else:
        url: str = request.getfixturevalue("postgres_url")
        token = seeded(url).token("alice")
        args = ("--store", url, "--workers", "2", "--metrics-bind", metrics)
    with serving(tmp_path, *args, env=ENV, wrapper=sandboxed(unit)) as server:
        if token is None:
            credentials = json.loads((tmp_path / "var" / "dev-credentials.json").read_text())
            token = next(p["token"] for p in credentials["tenants"][0]["principals"] if p["principalId"] == "alice")
        ready = httpx.get(f"{server.base_url}/readyz", timeout=10)
        listed = httpx.post(
            f"{server.base_url}/platform.v1.VaultService/ListItems",
            json={"vaultId": "acme-shared"},
            headers=headers(JSON, token),
            timeout=10,
        )
        scraped = httpx.get(f"http://{metrics}/metrics", timeout=10).status_code if store != "dev" else 200
        server.process.send_signal(signal.SIGTERM)
        code = server.process.wait(timeout=30)
    log = server.log()

    assert (ready.status_code, ready.text) == (200, "ok\n")
    assert listed.status_code == 200, listed.text
    assert listed.json()["items"]
    assert scraped == 200
    assert code == 0, log
    assert "Traceback" not in log
    assert "Operation not permitted" not in log
    assert "PR_SET_MDWE" not in log  # the kernel's rule applied too, not only seccomp's
