"""The npm package in browsers (issue 43), as a consumer installs it (the tarball in an empty
project, tests/e2e/test_client_packages.py's `project`).

Its `browser` entry points bundle for a browser with nothing of Node's: esbuild, the way a web
app's bundler picks them (the package's `exports` conditions), finds no node:* module and no
@connectrpc/connect-node, while the Node entry does not bundle for a browser at all.

In headless Chromium (the distribution's, driven by playwright-core; tests/e2e/browser/drive.mjs),
in a page served from http://localhost:PORT while the server is http://127.0.0.1:OTHER (another
origin, allowed by ZKPLATFORM_CORS_ORIGINS: every call is a CORS request): the shared vectors
(key-transparency.json, sealed-*.json, tlog/*.json) conclude in the page what they say, run by the
very check programs Node runs where they read no more than files (tests/e2e/clients/*_checks.ts,
their node:fs and kin replaced by tests/e2e/browser/shims/) and by sealed_vectors.ts; an item
sealed in the page is opened by the Python package and the reverse (tests/e2e/browser/interop.ts,
its verified key log in IndexedDB). Without Chromium these tests skip and say why."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clients.test_sealing_interop import python_open, python_seal, signed_by
from tests.e2e.pages import CHROMIUM, NO_CHROMIUM, needs_chromium, static_site
from tests.e2e.server import Server, serving
from tests.e2e.test_client_packages import packages, project, run  # noqa: F401 # fixtures
from tests.e2e.test_ts_key_transparency import VECTORS as KT_VECTORS
from tests.e2e.test_ts_key_transparency import expected as kt_expected
from tests.e2e.test_ts_sealing import expected_answers

ROOT = Path(__file__).resolve().parents[2]
TS_CLIENT = ROOT / "clients" / "ts"
ESBUILD = TS_CLIENT / "node_modules" / ".bin" / "esbuild"
TESTDATA = ROOT / "clients" / "testdata"
BROWSER = Path(__file__).resolve().parent / "browser"
CHECKS = Path(__file__).resolve().parent / "clients"
SUBPATHS = ["", "/client", "/auth", "/dpop", "/sync", "/sealing", "/key-directory", "/devices", "/statements", "/tlog"]
VAULT = "acme-shared"


def esbuild(directory: Path, entry: Path, out: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """esbuild --bundle --platform=browser, run in `directory` (its node_modules resolve)."""
    command = [str(ESBUILD), "--bundle", "--platform=browser", "--format=esm", "--log-level=error", *options]
    return subprocess.run(
        [*command, str(entry), f"--outfile={out}"],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_browser_entry_bundles_with_nothing_of_nodes(project: Path, tmp_path: Path) -> None:  # noqa: F811
    entry = project / "every-browser-entry.js"
    entry.write_text("".join(f'export * as m{n} from "zkplatform-client{path}";\n' for n, path in enumerate(SUBPATHS)))
    meta = tmp_path / "meta.json"

    bundled = esbuild(project, entry, tmp_path / "bundle.js", f"--metafile={meta}")
    node_entry = esbuild(
        project, project / "node_modules" / "zkplatform-client" / "dist" / "index.js", tmp_path / "n.js"
    )

    assert bundled.returncode == 0, bundled.stderr
    inputs = list(json.loads(meta.read_text())["inputs"])
    assert [path for path in inputs if path.startswith("node:") or "connect-node" in path] == []
    package = "node_modules/zkplatform-client/dist/"
    assert {f"{package}browser.js", f"{package}client-web.js", f"{package}indexeddb-store.js"} <= set(inputs)
    assert not [path for path in inputs if path.startswith(package) and "node" in path.removeprefix(package)]
    assert any("@connectrpc/connect-web" in path for path in inputs)
    assert "node:" not in (tmp_path / "bundle.js").read_text()
    # The Node entry is what a browser must not get: bundled for one, it fails on Node's modules.
    assert node_entry.returncode != 0
    assert 'Could not resolve "node:' in node_entry.stderr


# --- In headless Chromium ------------------------------------------------------------------------

SHIMS = [
    *[f"--alias:node:{name}=./browser/shims/{name}.js" for name in ("fs", "path", "crypto", "util")],
    *[f"--inject:./browser/shims/{name}.js" for name in ("process", "buffer")],
]


@pytest.fixture(scope="module")
def page_dir(project: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: F811
    """The page and its modules, bundled from the installed package's browser entry."""
    if CHROMIUM is None:
        pytest.skip(NO_CHROMIUM)
    shutil.copytree(BROWSER, project / "browser", dirs_exist_ok=True)
    for name in ("key_transparency_checks.ts", "tlog_checks.ts"):
        shutil.copy(CHECKS / name, project / "browser" / name)
    directory = tmp_path_factory.mktemp("page")
    shutil.copy(BROWSER / "index.html", directory / "index.html")
    modules = {
        "kt.js": "key_transparency_checks.ts",
        "tlog.js": "tlog_checks.ts",
        "sealed.js": "sealed_vectors.ts",
        "interop.js": "interop.ts",
    }
    for out, source in modules.items():
        shims = SHIMS if source.endswith("_checks.ts") else []
        result = esbuild(project, project / "browser" / source, directory / out, *shims)
        assert result.returncode == 0, result.stderr
    return directory


@pytest.fixture(scope="module")
def page_origin(page_dir: Path) -> Iterator[str]:
    """The page's static server, on another origin than the API's."""
    with static_site(page_dir) as origin:
        yield origin


def drive(origin: str, plan: list[dict[str, Any]], work: Path) -> list[dict[str, Any]]:
    """Each step's answer in the page (drive.mjs), none of them failed, no page error."""
    plan_file = work / "plan.json"
    plan_file.write_text(json.dumps(plan))
    result = run(["node", str(BROWSER / "drive.mjs"), str(TS_CLIENT), f"{origin}/index.html", str(plan_file)])
    report: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["errors"] == []
    assert [answer["error"] for answer in report["answers"] if "error" in answer] == []
    answers: list[dict[str, Any]] = report["answers"]
    return answers


def printed(answer: dict[str, Any]) -> Any:
    """What a check program printed: one JSON line."""
    (line,) = answer["lines"]
    return json.loads(line)


@pytest.fixture(scope="module")
def vectors(page_origin: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    sealed = {f"/testdata/{p.name}": p.read_text() for p in TESTDATA.glob("*.json")}
    tlog = {f"/testdata/tlog/{p.name}": p.read_text() for p in (TESTDATA / "tlog").glob("*.json")}
    # tlog_checks.js's arguments as test_ts_tlog.py gives them: the directory, and the Ed25519
    # edge cases' file where there is one.
    tlog_argv = ["/testdata/tlog", *[name for name in ["/testdata/ed25519-speccheck.json"] if name in sealed]]
    kt = "/testdata/key-transparency.json"
    plan = [
        {"import": "kt.js", "argv": ["node", "kt", kt], "files": {kt: sealed[kt]}},
        {"import": "tlog.js", "argv": ["node", "tlog", *tlog_argv], "files": {**tlog, **sealed}},
        {"import": "sealed.js", "files": sealed},
    ]
    answers = drive(page_origin, plan, tmp_path_factory.mktemp("vectors"))
    return {"kt": printed(answers[0]), "tlog": printed(answers[1]), "sealed": printed(answers[2])}


@needs_chromium
def test_the_key_transparency_vectors_conclude_in_the_browser(vectors: dict[str, Any]) -> None:
    concluded = vectors["kt"]["cases"]

    assert [case["name"] for case in concluded] == [case["name"] for case in KT_VECTORS["cases"]]
    assert len(concluded) > 0
    for case, report in zip(KT_VECTORS["cases"], concluded, strict=True):
        assert report["steps"] == [kt_expected(step) for step in case["steps"]], case["name"]


@needs_chromium
def test_the_tlog_vectors_pass_in_the_browser(vectors: dict[str, Any]) -> None:
    cases = vectors["tlog"]["cases"]

    assert [case for case in cases if not case["ok"]] == []
    assert len(cases) > 400
    assert {"merkle.json", "note.json", "generated"} <= {case["file"] for case in cases}


@needs_chromium
def test_every_sealed_vector_opens_in_the_browser_as_it_says(vectors: dict[str, Any]) -> None:
    files = sorted(TESTDATA.glob("sealed-*.json"))

    report = vectors["sealed"]

    assert sorted(report) == [path.name for path in files]
    assert {"sealed-v2-python.json", "sealed-v2-ts.json"} <= set(report)
    for path in files:
        assert report[path.name] == expected_answers(path), path.name


@pytest.fixture(scope="module")
def cors_server(page_origin: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """serve --dev allowing the page's origin, and only it."""
    env = {"ZKPLATFORM_CORS_ORIGINS": page_origin}
    with serving(tmp_path_factory.mktemp("browser-dev"), "--dev", env=env) as server:
        yield server


@needs_chromium
def test_sealed_in_the_browser_opened_by_python_and_the_reverse(
    cors_server: Server, page_origin: str, tmp_path: Path
) -> None:
    credentials_file = cors_server.log_path.parent / "var" / "dev-credentials.json"
    credentials = json.loads(credentials_file.read_text())
    assert credentials["baseUrl"].startswith("http://127.0.0.1:")  # not the page's origin
    asyncio.run(python_seal(cors_server, credentials_file, "bob", "py-to-browser", "sealed in Python"))

    answers = drive(
        page_origin,
        [
            {"import": "interop.js"},
            {"call": "interop.seal", "args": [credentials, "alice", VAULT, "browser-to-py", "sealed in the browser"]},
            {"call": "interop.open", "args": [credentials, "alice", VAULT, "py-to-browser"]},
        ],
        tmp_path,
    )
    by_bob = asyncio.run(python_open(cors_server, credentials_file, "bob", "browser-to-py"))

    assert answers[1]["answer"] == {"created": "1", "recipients": 2}  # alice's and bob's demo devices
    assert answers[2]["answer"] == {"opened": "sealed in Python", "sealedBy": signed_by(credentials_file, "bob")}
    assert by_bob == {"opened": "sealed in the browser", "sealedBy": signed_by(credentials_file, "alice")}
