"""What the client packages promise, read from their files: docs/clients.md shows every example as
it is (tests/e2e/test_client_packages.py runs them), the wheel depends on ranges, the npm package's
engines are what its locked dependencies need, and both carry the same version."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "clients.md"
TS = ROOT / "clients" / "ts"
PY = ROOT / "clients" / "python"
INCLUDE = re.compile(r"<!-- include: (\S+) -->\n```[a-z]+\n(.*?)\n```\n", re.DOTALL)


def test_every_example_is_in_the_docs_as_it_is() -> None:
    text = DOCS.read_text()
    included = dict(INCLUDE.findall(text))
    examples = sorted(str(path.relative_to(ROOT)) for path in [*PY.glob("examples/*.py"), *TS.glob("examples/*.ts")])

    assert text.count("<!-- include: ") == len(included), "an include marker without its code block"
    assert sorted(included) == examples
    for path, shown in included.items():
        assert shown == (ROOT / path).read_text().rstrip("\n"), f"docs/clients.md shows another {path}"


def test_the_wheel_depends_on_ranges() -> None:
    project = tomllib.loads((PY / "pyproject.toml").read_text())["project"]

    assert project["requires-python"] == ">=3.11"  # no upper cap
    for requirement in project["dependencies"]:
        assert re.fullmatch(r"[a-z-]+>=[0-9.]+,<[0-9.]+", requirement), requirement


def _minimum(node: str) -> tuple[int, ...]:
    """The lowest Node version an `engines.node` of the form `>=X[.Y[.Z]]` admits."""
    match = re.fullmatch(r">=\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?", node.strip())
    assert match, f"an engines.node this test does not read: {node!r}"
    return tuple(int(part or 0) for part in match.groups())


def test_the_npm_package_runs_where_its_locked_dependencies_do() -> None:
    package = json.loads((TS / "package.json").read_text())
    lock = json.loads((TS / "package-lock.json").read_text())
    minimum = _minimum(package["engines"]["node"])

    needs = {
        name: entry["engines"]["node"]
        for name, entry in lock["packages"].items()
        if name and "node" in entry.get("engines", {})
    }
    assert needs, "the lockfile names no engines: this test reads nothing"
    assert {name: node for name, node in needs.items() if _minimum(node) > minimum} == {}


def test_both_packages_are_publishable_at_one_version() -> None:
    package = json.loads((TS / "package.json").read_text())
    project = tomllib.loads((PY / "pyproject.toml").read_text())["project"]

    assert "private" not in package
    assert package["version"] == project["version"]
    assert package["version"].split(".")[0] == "1"  # the contract's major version: platform.v1
