"""Other commits' code, served by this harness beside the working tree's.

A commit is checked out once as a git worktree under build/ (ignored). Its server, and
the seeding of its store, run with its src/ and gen/ first on PYTHONPATH, in the same
venv: the harness (bench/) stays this one, the code measured is that commit's.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def checkout(commit: str) -> Path:
    """The worktree of `commit` under build/, added when missing."""
    path = ROOT / "build" / f"bench-{commit}"
    if not (path / "src" / "zkplatform").is_dir():
        path.parent.mkdir(exist_ok=True)
        subprocess.run(["git", "worktree", "prune"], cwd=ROOT, check=True, capture_output=True)
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(path), commit], cwd=ROOT, check=True, capture_output=True
        )
    return path


def pythonpath(commit: str) -> str:
    """PYTHONPATH for a process that runs `commit`'s code ("" for the working tree's) with this bench/.
    BENCH_SERVER_PATH, when set, stands for the working tree's src and gen (another checkout's)."""
    code = (
        [str(checkout(commit) / "src"), str(checkout(commit) / "gen")]
        if commit
        else [os.environ.get("BENCH_SERVER_PATH", "")]
    )
    return os.pathsep.join(filter(None, [*code, str(ROOT)]))
