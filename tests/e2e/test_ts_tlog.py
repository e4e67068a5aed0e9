"""The transparency-log primitives of the TypeScript package (zkplatform-client/tlog) as a consumer
installs them (the npm tarball in an empty project, tests/e2e/test_client_packages.py's `project`):
tests/e2e/clients/tlog_checks.ts runs every case of every clients/testdata/tlog/*.json vector file
(the ones zkplatform_tlog is held to), random trees of 1 to 70 leaves (every proof verified, its
mutations refused), the Ed25519 cases of clients/testdata/ed25519-speccheck.json (each given the
verdict the Python package gives it) and checks of its own, and reports each case; the compiled
module imports nothing of Node's (it is for browsers too) and only its two pinned dependencies."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_client_packages import packages, project, run  # noqa: F401 # fixtures
from zkplatform_tlog import ed25519

ROOT = Path(__file__).resolve().parents[2]
TLOG = ROOT / "clients" / "testdata" / "tlog"
SPECCHECK = ROOT / "clients" / "testdata" / "ed25519-speccheck.json"
MAX_SAFE_INTEGER = 2**53 - 1
GENERATED_TREES = 70
NOBLE = {"@noble/curves", "@noble/hashes"}


@pytest.fixture(scope="module")
def report(project: Path) -> dict[str, Any]:  # noqa: F811
    result = run(["node", str(project / "out" / "tlog_checks.js"), str(TLOG), str(SPECCHECK)], project)
    assert result.stderr == ""
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def vector_files() -> dict[str, dict[str, Any]]:
    return {path.name: json.loads(path.read_text()) for path in sorted(TLOG.glob("*.json"))}


def case_names(data: dict[str, Any]) -> list[str]:
    """The report's name of each case of a vector file: one per element of each member but "about",
    one for a member that is not a list (tlog_checks.ts's runVectorFile)."""
    names = []
    for member, value in data.items():
        if member == "about":
            continue
        if not isinstance(value, list):
            names.append(member)
            continue
        for i, item in enumerate(value):
            desc = item.get("desc") if isinstance(item, dict) else None
            names.append(f"{member}[{i}]" + (f": {desc}" if isinstance(desc, str) else ""))
    return names


def unsafe_size_successes(name: str, data: dict[str, Any]) -> set[str]:
    """The cases of a vector file that succeed with a size past 2^53 - 1: the TypeScript package's
    sizes are numbers, so it refuses them (the only outcomes it may differ on)."""
    size_fields = {
        "checkpoint.json": {"parse": "size", "construct": "size"},
        "witness-wire.json": {"requests": "oldSize", "encode": "oldSize", "sizes": "size"},
    }.get(name, {})
    found = set()
    for member, key in size_fields.items():
        for i, item in enumerate(data.get(member, [])):
            if item["error"] is None and int(item[key]) > MAX_SAFE_INTEGER:
                found.add(f"{member}[{i}]: {item['desc']}")
    return found


def test_every_case_of_every_vector_file_runs(report: dict[str, Any]) -> None:
    files = vector_files()
    ran: dict[str, list[str]] = {}
    for case in report["cases"]:
        ran.setdefault(case["file"], []).append(case["name"])

    assert {"merkle.json", "note.json"} <= set(files)
    # A case the runner skipped, or a file it did not open, shows here.
    assert {name: ran.get(name, []) for name in files} == {name: case_names(data) for name, data in files.items()}
    assert set(ran) == {*files, "generated", "builtin", SPECCHECK.name}


def test_every_case_passes(report: dict[str, Any]) -> None:
    failed = [case for case in report["cases"] if not case["ok"]]

    assert failed == []
    assert len(report["cases"]) > 400


def test_the_only_deviations_are_sizes_past_2_53(report: dict[str, Any]) -> None:
    deviations = {(case["file"], case["name"]) for case in report["cases"] if case["detail"].startswith("deviation")}

    want = {(name, case) for name, data in vector_files().items() for case in unsafe_size_successes(name, data)}
    assert deviations == want


def test_both_packages_give_every_ed25519_case_openssls_verdict(report: dict[str, Any]) -> None:
    """One list of verdicts from each package's own check (the TypeScript one's detail starts with
    it, whether the case passed or not) and OpenSSL's published one: all three alike."""
    cases = json.loads(SPECCHECK.read_text())["cases"]
    ran = [case for case in report["cases"] if case["file"] == SPECCHECK.name]
    typescript = [re.match(r"(?:Error: )?(accepted|refused)\b", case["detail"]) for case in ran]
    python = [
        ed25519.verify(bytes.fromhex(case["pub_key"]), bytes.fromhex(case["message"]), bytes.fromhex(case["signature"]))
        for case in cases
    ]

    assert [case["name"] for case in ran] == [f"cases[{i}]: {case['desc']}" for i, case in enumerate(cases)]
    assert [found and found.group(1) for found in typescript] == ["accepted" if v else "refused" for v in python]
    assert python == [case["verdicts"]["OpenSSL-3.0"] for case in cases]


def test_signatures_only_a_cofactored_check_accepts_are_refused(report: dict[str, Any]) -> None:
    checks = {case["name"]: case for case in report["cases"] if case["name"].startswith("ed25519: ")}

    assert set(checks) == {
        "ed25519: a note signature only a cofactored check accepts is refused",
        "ed25519: a cosignature only a cofactored check accepts is refused",
    }
    assert [case["ok"] for case in checks.values()] == [True, True]


def test_random_trees(report: dict[str, Any]) -> None:
    generated = [case for case in report["cases"] if case["file"] == "generated"]

    assert [case["name"] for case in generated] == [f"tree of {n} leaves" for n in range(1, GENERATED_TREES + 1)]
    assert all(case["ok"] for case in generated)
    # Every inclusion proof of a tree of n leaves, and every consistency proof from 0 to n leaves.
    assert generated[-1]["detail"] == f"{2 * GENERATED_TREES + 1} proofs verified, and their mutations refused"


def test_the_module_is_for_browsers_too(project: Path) -> None:  # noqa: F811
    tlog = project / "node_modules" / "zkplatform-client" / "dist" / "tlog"
    sources = {path.name: path.read_text() for path in sorted(tlog.glob("*.js"))}

    assert {"index.js", "merkle.js", "note.js", "cosignature.js", "checkpoint.js", "witness-wire.js"} <= set(sources)
    imports = {
        specifier
        for text in sources.values()
        for specifier in re.findall(r"""(?:\bfrom|\bimport)\s*\(?\s*["']([^"']+)["']""", text)
    }
    assert imports, "no import found: the pattern no longer reads tsc's output"
    assert {spec for spec in imports if not spec.startswith("./")} == {
        "@noble/curves/ed25519.js",
        "@noble/hashes/sha2.js",
    }
    assert not [name for name, text in sources.items() if re.search(r"\b(Buffer|process|require)\b", text)]


def test_the_dependencies_are_pinned(project: Path) -> None:  # noqa: F811
    manifest = json.loads((ROOT / "clients" / "ts" / "package.json").read_text())
    lock = json.loads((ROOT / "clients" / "ts" / "package-lock.json").read_text())
    installed = json.loads((project / "node_modules" / "zkplatform-client" / "package.json").read_text())

    pins = {name: manifest["dependencies"][name] for name in NOBLE}
    assert all(re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", version) for version in pins.values()), pins
    assert {name: lock["packages"][f"node_modules/{name}"]["version"] for name in NOBLE} == pins
    assert {name: installed["dependencies"][name] for name in NOBLE} == pins
    assert installed["exports"]["./tlog"] == {"types": "./dist/tlog/index.d.ts", "default": "./dist/tlog/index.js"}
