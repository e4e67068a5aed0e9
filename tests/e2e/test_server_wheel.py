"""The server's own distribution holds what the server reads besides its modules: a wheel built
from this tree has every SQL migration and the development data set, so an installed server
migrates its store and serves `--dev` as a checkout does."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_holds_every_file_the_server_reads(tmp_path: Path) -> None:
    # Built from a copy: a build writes its build/ and egg-info beside the sources.
    tree = tmp_path / "tree"
    for part in ("src", "gen"):
        shutil.copytree(ROOT / part, tree / part, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    result = subprocess.run(  # this interpreter's pip, on a copy of this tree
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "--wheel-dir",
            str(tmp_path),
            str(tree),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    (wheel,) = tmp_path.glob("zkplatform-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    needed = {
        str(path.relative_to(ROOT / "src"))
        for path in (ROOT / "src" / "zkplatform").rglob("*")
        if path.is_file() and path.suffix in {".sql", ".json"}
    }

    assert needed  # the migrations and dev_data.json at least
    assert "zkplatform/dev_data.json" in needed
    assert needed <= shipped, sorted(needed - shipped)
