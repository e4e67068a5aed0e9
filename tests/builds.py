"""The builds a few tests need, made once per run and only when such a test runs.

`ts_build` is `make ts-build` (clients/ts/dist: the TypeScript client; and
clients/ts/dist-tools, `ts_tools`: its demos and tools, compiled against it);
`client_packages` is `make clients` (build/clients: the wheel and the npm
tarball). Both targets are stamped, so a second call changes nothing; a file
lock keeps parallel workers (pytest-xdist) from building at the same time, so no
test reads a file that another worker is rewriting. A test that asks for either
fixture is marked `packages` (tests/conftest.py).
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "build" / ".tests-build.lock"
BUILD_TIMEOUT = 600  # seconds for one make call, waiting for the lock not included


def make(target: str) -> None:
    """`make <target>` under the lock, bounded; a failure fails the tests that need it, with make's output."""
    for tool in ("make", "node", "npm"):
        if shutil.which(tool) is None:
            pytest.fail(f"`make {target}` needs {tool}: install it (Node 20 for node and npm)", pytrace=False)
    LOCK.parent.mkdir(exist_ok=True)
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        try:
            result = subprocess.run(
                ["make", "--no-print-directory", "-s", target],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"`make {target}` did not finish within {BUILD_TIMEOUT} s", pytrace=False)
    if result.returncode != 0:
        pytest.fail(f"`make {target}` failed ({result.returncode}):\n{result.stdout}{result.stderr}", pytrace=False)


@pytest.fixture(scope="session")
def ts_build() -> Path:
    """clients/ts/dist, compiled from the current sources."""
    make("ts-build")
    return ROOT / "clients" / "ts" / "dist"


@pytest.fixture(scope="session")
def ts_tools(ts_build: Path) -> Path:
    """clients/ts/dist-tools: clients/ts/tools (the demos, the sync example) compiled against ts_build."""
    return ts_build.parent / "dist-tools"


@pytest.fixture(scope="session")
def client_packages() -> Path:
    """build/clients, holding the wheel and the npm tarball of the current sources."""
    make("clients")
    return ROOT / "build" / "clients"
