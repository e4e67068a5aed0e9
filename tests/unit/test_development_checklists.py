"""Every path docs/development.md's checklists name exists: a checklist that sends a newcomer to a
file that moved is worse than none. A move fails this test until the checklist follows it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
DEVELOPMENT = ROOT / "docs" / "development.md"
# Paths are named in backquotes: a repository path (one with a slash), or a file beside the one
# named before it in the same item (`broker.proto` after `.../vault.proto`).
CODE = re.compile(r"`([^`\s]+)`")
FILE = re.compile(r"[\w./-]+\.(?:py|proto|md|json|sql)|[\w.-]+(?:/[\w.-]+)+/?")


def checklists() -> str:
    text = DEVELOPMENT.read_text()
    start = text.index("\n## Checklists\n")
    return text[start : text.index("\n## ", start + 1)]


def named_paths(section: str) -> list[tuple[str, Path]]:
    """Each path named, with where it is looked for: from the repository's root when it has a
    slash, else in the directory of the last path named before it in the same item."""
    found = []
    for item in re.split(r"\n(?=\d+\. )", section):
        directory = ROOT
        for name in CODE.findall(item):
            if not FILE.fullmatch(name) or name.startswith("."):
                continue
            if "/" in name:
                path = ROOT / name
                directory = path if name.endswith("/") else path.parent
            else:
                path = directory / name
            found.append((name, path))
    return found


def test_every_path_the_checklists_name_exists() -> None:
    named = named_paths(checklists())

    assert len(named) > 40, "the checklists name fewer paths than they did: is the pattern still right?"
    assert [name for name, path in named if not path.exists()] == []


def test_a_path_that_does_not_exist_is_found_out() -> None:
    section = "\n## Checklists\n\n1. See `src/zkplatform/domain/nowhere.py` and `gone.py`.\n"

    assert [name for name, path in named_paths(section) if not path.exists()] == [
        "src/zkplatform/domain/nowhere.py",
        "gone.py",
    ]
