"""A script that uses the Python package may simply end: run again and again against a real server,
it always exits 0 with nothing on stderr. Without zkplatform_client.exit_guard, about one run in
three of the burst below, and one in ten of the example, ends in SIGABRT on Python 3.11 to 3.13:
pyqwest's threads, which finish each call, meet the interpreter's finalization."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.clients.conftest import PY_CLIENT, dev_principals
from tests.e2e.server import Server

pytestmark = pytest.mark.e2e  # starts servers (tests/conftest.py marks only tests/e2e by place)

RUNS = 20

# Calls at once, then the end: the more calls finish together, the more of pyqwest's threads are
# still inside the interpreter as the script ends.
BURST = """\
import asyncio, json, sys
from zkplatform_api.platform.v1.vault_pb2 import GetItemRequest
from zkplatform_client import clients

async def main(base_url: str, token: str) -> int:
    async with clients(base_url, token=token) as platform:
        request = GetItemRequest(vault_id="acme-shared", item_id="item-2")
        answers = await asyncio.gather(*(platform.vault.get_item(request) for _ in range(8)))
    return len(answers)

print(json.dumps({"got": asyncio.run(main(*sys.argv[1:]))}))
"""


def run_plainly(args: list[str]) -> list[tuple[int, str, str]]:
    """The exit codes, stdout and stderr of RUNS runs of the package's sources, four at a time."""
    env = {**os.environ, "PYTHONPATH": str(PY_CLIENT)}

    def once(_: int) -> tuple[int, str, str]:
        command = [sys.executable, *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False, env=env)
        return done.returncode, done.stdout, done.stderr

    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(once, range(RUNS)))


def test_a_burst_of_calls_then_a_plain_exit_exits_0(dev_server: Server, dev_credentials: Path) -> None:
    alice = dev_principals(dev_credentials)["alice"]["token"]

    results = run_plainly(["-c", BURST, dev_server.base_url, alice])

    codes = [code for code, _, _ in results]
    assert codes == [0] * RUNS, f"exit codes {codes} (-6: SIGABRT)"
    assert {(out, err) for _, out, err in results} == {(json.dumps({"got": 8}) + "\n", "")}


def test_the_interceptors_example_exits_0_every_time(dev_server: Server, dev_credentials: Path) -> None:
    """An example as docs/clients.md shows it, on connectrpc's default transport (never closed)."""
    alice = dev_principals(dev_credentials)["alice"]["token"]
    example = PY_CLIENT / "examples" / "interceptors.py"

    results = run_plainly([str(example), dev_server.base_url, alice])

    codes = [code for code, _, _ in results]
    assert codes == [0] * RUNS, f"exit codes {codes} (-6: SIGABRT)"
    assert {err for _, _, err in results} == {""}
    assert all(json.loads(out)["calls"][0]["code"] == "ok" for _, out, _ in results)
