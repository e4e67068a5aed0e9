"""Other commits' code, served by this harness beside the working tree's: everything bench/ keeps
for it, in one place.

It exists because a comparison with the code before a change is only fair when both run in one
sitting on one machine: the commits the plan names (bench/plan.py: BEFORE_TOKEN_LIFECYCLE,
BEFORE_AUDIT, BEFORE_PER_CALL; bench/unread.py and bench/watches10k.py: BEFORE) are served beside
the working tree. A commit is checked out once as a git worktree under build/ (ignored). Its
server, and the seeding of its store, run with its src/ and gen/ first on PYTHONPATH, in the same
venv: the harness (bench/) stays this one, the code measured is that commit's. Where this harness calls
into the served code, the calls an older commit's code takes differently are made here
(`create_app`, `by_operator`); a shim goes when no commit the plan names needs it. This module,
bench/apps.py and bench/seed.py run on that code too: at run time they import only names that
every commit the plan names has (a type the oldest lacks is imported for type checking only).
"""

from __future__ import annotations

import inspect
import os
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zkplatform.app import create_app as _create_app

if TYPE_CHECKING:
    from zkplatform.asgi import ASGIApp
    from zkplatform.config import Settings

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


def create_app(settings: Settings, **parts: Any) -> ASGIApp:
    """create_app with the parts its code takes: c2d7c9e's (BEFORE_TOKEN_LIFECYCLE) predates
    `telemetry`, and then builds its default."""
    accepted = inspect.signature(_create_app).parameters
    return _create_app(settings, **{name: part for name, part in parts.items() if name in accepted})


def by_operator(change: Callable[..., Awaitable[Any]], *args: object, at: int) -> Awaitable[Any]:
    """The change, made by the operator at `at`. Code from before the audit trail (c2d7c9e and
    8890b82, BEFORE_AUDIT) seeds with bench/seed.py too: its changes take no author."""
    if "actor" not in inspect.signature(change).parameters:
        return change(*args)
    from zkplatform.domain.audit import Actor  # noqa: PLC0415 # absent from such older code

    return change(*args, Actor.operator(at))
