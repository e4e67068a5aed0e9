"""The TypeScript package's key directory core (zkplatform-client/key-directory: verifyUpdate,
recipientKeys, acknowledgeReset) as a consumer installs it (the npm tarball in an empty project,
tests/e2e/test_client_packages.py's `project`), over every case of
clients/testdata/key-transparency.json: tests/e2e/clients/key_transparency_checks.ts reports what
each step concluded, and every step must conclude what the file says (the Python package is held
to the same file by tests/clients/test_key_transparency_vectors.py). The core, its state's format
and the statements import nothing of Node's: a browser entry point will reuse them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_client_packages import packages, project, run  # noqa: F401 # fixtures

VECTORS_FILE = Path(__file__).resolve().parents[2] / "clients" / "testdata" / "key-transparency.json"
VECTORS: dict[str, Any] = json.loads(VECTORS_FILE.read_text())


def expected(step: dict[str, Any]) -> dict[str, Any]:
    """What the report says of a step that concluded as the file says: an update that was refused
    left the state as it was (`unchanged`), an acknowledgement is acknowledged, a new record of
    this device is taken."""
    if "acknowledgeReset" in step:
        return {"acknowledged": True}
    if "me" in step:
        return {"me": True}
    if "update" in step and not step["expect"]["ok"]:
        return {**step["expect"], "unchanged": True}
    concluded: dict[str, Any] = step["expect"]
    return concluded


@pytest.fixture(scope="module")
def report(project: Path) -> dict[str, Any]:  # noqa: F811
    result = run(["node", str(project / "out" / "key_transparency_checks.js"), str(VECTORS_FILE)], project)
    assert result.stderr == ""
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def test_every_case_is_run(report: dict[str, Any]) -> None:
    names = [case["name"] for case in VECTORS["cases"]]

    assert [case["name"] for case in report["cases"]] == names
    assert len(report["cases"]) == len(VECTORS["cases"]) > 0
    assert [len(case["steps"]) for case in report["cases"]] == [len(case["steps"]) for case in VECTORS["cases"]]


@pytest.mark.parametrize("number", range(len(VECTORS["cases"])), ids=[case["name"] for case in VECTORS["cases"]])
def test_every_case_concludes_as_the_vectors_say(report: dict[str, Any], number: int) -> None:
    case = VECTORS["cases"][number]

    concluded = report["cases"][number]["steps"]

    assert concluded == [expected(step) for step in case["steps"]]


def relative_imports(text: str) -> tuple[set[str], set[str]]:
    """The specifiers a compiled module imports: those of the package's own modules, and the rest."""
    found = set(re.findall(r"""(?:\bfrom|\bimport)\s*\(?\s*["']([^"']+)["']""", text))
    return {spec for spec in found if spec.startswith(".")}, {spec for spec in found if not spec.startswith(".")}


def test_the_core_imports_nothing_of_nodes(project: Path) -> None:  # noqa: F811
    dist = project / "node_modules" / "zkplatform-client" / "dist"
    pending = [dist / name for name in ("key-log.js", "key-log-store.js", "statements.js")]
    seen: dict[Path, str] = {}
    outside: set[str] = set()
    while pending:  # every module the core's modules import, transitively
        path = pending.pop().resolve()
        if path in seen:
            continue
        seen[path] = path.read_text()
        own, others = relative_imports(seen[path])
        outside |= others
        pending += [path.parent / spec for spec in own]

    assert {path.name for path in seen} >= {"key-log.js", "key-log-store.js", "statements.js", "index.js", "merkle.js"}
    assert outside == {"@noble/curves/ed25519.js", "@noble/curves/nist.js", "@noble/hashes/sha2.js"}
    code = {path.name: re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.DOTALL) for path, text in seen.items()}
    assert not [name for name, text in code.items() if re.search(r"\b(Buffer|process|require)\b", text)]
