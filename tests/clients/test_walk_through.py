"""The README's walk-through as a newcomer runs it: the shell blocks of its "First calls" section, in
order and in one shell, against `zkplatform serve --dev` (what `make dev` runs), then those of
docs/clients.md that go on from it (its sections up to "Minting a narrower token", but for the
blocks marked as not in the walk-through). Every block ends as the docs say, and what it prints is
what the docs show after it, but for what differs from one run to the next: times, the store's
epoch (development mode makes a new one at each start) and page tokens (which carry it). A cursor
of an earlier run, such as the one the docs show, answers CURSOR_EXPIRED and says so."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.connect import brief, error_of
from tests.e2e.server import Server, serving

pytestmark = pytest.mark.e2e  # starts servers (tests/conftest.py marks only tests/e2e by place)

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
CLIENTS = ROOT / "docs" / "clients.md"
# A fenced block, and whether a marker before it leaves it out of the walk-through.
FENCE = re.compile(r"^(<!-- not in the walk-through[^\n]*-->\n)?```(\w+)\n(.*?)^```\n", re.MULTILINE | re.DOTALL)
# What differs from one run to the next in an answer shown.
VOLATILE = {"updatedAt", "purgeTime", "epoch", "nextPageToken"}


@dataclass(frozen=True)
class Step:
    """A shell block of the docs, and the output shown right after it (its language and text)."""

    where: str
    command: str
    shown: tuple[str, str] | None


def steps(path: Path, start: str, end: str) -> list[Step]:
    text = path.read_text()
    section = text[text.index(start) : text.index(end)]
    blocks = [(bool(m.group(1)), m.group(2), m.group(3)) for m in FENCE.finditer(section)]
    found = []
    for at, (left_out, language, body) in enumerate(blocks):
        if language != "sh" or left_out:
            continue
        after = blocks[at + 1] if at + 1 < len(blocks) else None
        shown = (after[1], after[2]) if after and after[1] in {"json", "text"} else None
        found.append(Step(f"{path.name}, block {at + 1} of {start!r}", body, shown))
    return found


def readme_steps() -> list[Step]:
    first, *rest = steps(README, "## First calls: development mode", "\n## Make targets")
    # `make dev` is the server the test starts: the Makefile's scripts/dev_server.py runs
    # `zkplatform serve --dev` (beside the web vault page, which the walk-through does not use).
    assert first.command.startswith("make dev "), first.command
    assert re.search(
        r"^dev:.*\n\t\$\(BIN\)/python -m scripts\.dev_server ", (ROOT / "Makefile").read_text(), re.MULTILINE
    )
    assert '[zkplatform(), "serve", "--dev", ' in (ROOT / "scripts" / "dev_server.py").read_text()
    return rest


def clients_md_steps() -> list[Step]:
    return steps(CLIENTS, "## Items: create, update, read, list", "\n## Minting a narrower token")


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A `zkplatform serve --dev` of the module's own: the walk-through changes its data."""
    with serving(tmp_path_factory.mktemp("walk"), "--dev") as server:
        yield server


def run_in_one_shell(walk: list[Step], credentials: Path, work: Path) -> list[tuple[int, str]]:
    """Each step's exit code and output (stdout and stderr), run in order in one bash, so that the
    variables a step sets are there for the next, as in the reader's terminal."""
    script = []
    for number, step in enumerate(walk):
        command = step.command.replace("var/dev-credentials.json", str(credentials))
        command = command.replace(".venv/bin/python", sys.executable)
        script.append(f"{{\n{command}\n}} > {work}/out-{number} 2>&1\necho $? > {work}/code-{number}\n")
    subprocess.run(["bash", "-c", "".join(script)], cwd=ROOT, timeout=300, check=True)
    return [
        (int((work / f"code-{n}").read_text()), (work / f"out-{n}").read_text(errors="replace"))
        for n in range(len(walk))
    ]


def steady(value: Any) -> Any:
    """An answer without what differs from one run to the next."""
    if isinstance(value, dict):
        return {k: "..." if k in VOLATILE and v is not None else steady(v) for k, v in value.items()}
    if isinstance(value, list):
        return [steady(v) for v in value]
    return value


def printed(language: str, text: str) -> Any:
    if language == "json":
        return [steady(json.loads(line)) for line in text.splitlines() if line.strip()]
    return text.strip()


def test_the_readme_and_clients_md_walk_through_runs_as_written(dev_server: Server, tmp_path: Path) -> None:
    credentials = dev_server.log_path.parent / "var" / "dev-credentials.json"
    readme, clients = readme_steps(), clients_md_steps()
    walk = readme + clients

    results = run_in_one_shell(walk, credentials, tmp_path)

    # Every block succeeds, but for the README's last: a deleted item does not open (exit code 1).
    assert [code for code, _ in results] == [0] * (len(readme) - 1) + [1] + [0] * len(clients), results
    compared = 0
    for step, (_, output) in zip(walk, results, strict=True):
        if step.shown is not None:
            language, shown = step.shown
            assert printed(language, output) == printed(language, shown), step.where
            compared += 1
    assert compared >= 7  # README: the delete, the sealed demo, the deleted item; clients.md's 4
    assert "DELETED: the item was deleted" in results[len(readme) - 1][1]
    everything = "".join(output for _, output in results)
    assert "Traceback" not in everything
    # The demo keys stay in the credentials file: neither the examples nor the server show them.
    assert "privateKeyJwk" not in everything
    assert "signingKeyJwk" not in everything
    assert '"d"' not in dev_server.log()


def test_a_cursor_of_another_run_is_expired_and_the_message_says_why(dev_server: Server) -> None:
    """The epoch the docs show is an earlier development server's: not a backup restored."""
    credentials = json.loads((dev_server.log_path.parent / "var" / "dev-credentials.json").read_text())
    alice = next(p["token"] for p in credentials["tenants"][0]["principals"] if p["principalId"] == "alice")
    shown = re.search(r'"epoch":"([0-9a-f]{32})"', README.read_text())
    assert shown

    answer = httpx.post(
        f"{dev_server.base_url}/platform.v1.VaultService/ListChanges",
        json={"vaultId": "acme-private", "sinceSequence": "5", "sinceEpoch": shown.group(1)},
        headers={"Authorization": f"Bearer {alice}", "Connect-Protocol-Version": "1"},
        timeout=10,
    )

    said = brief(error_of(answer))
    assert (answer.status_code, said["code"], said["reason"]) == (400, "failed_precondition", "CURSOR_EXPIRED")
    assert "restored from a backup" in said["message"]
    assert "another store (a development server starts a new one each time)" in said["message"]
    assert said["message"].endswith("start over with ListItems")
