"""`zkplatform admin import`: NDJSON items, checked whole, then stored all or nothing."""

from __future__ import annotations

import asyncio
import io
import json
import sys
from pathlib import Path

import pytest

from tests.admin.conftest import IDS, admin, bootstrap, error_line, item, ndjson, stored_items


def test_a_bad_line_names_its_number_and_imports_nothing(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [item(i) for i in IDS]
    lines[2] = item("")

    assert admin(bootstrapped, "import", ndjson(tmp_path / "bad.ndjson", *lines)) == 1

    assert error_line(capsys) == "zkplatform admin: line 3: itemId: value is required; nothing was changed\n"
    assert asyncio.run(stored_items(bootstrapped)) == {}


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('{"itemId": "i2",', "line 2: not JSON: Expecting property name enclosed in double quotes at column 17"),
        ("[1, 2]", "line 2: not a JSON object"),
        ('{"itemId": "i2", "itemId": "i3"}', "line 2: not JSON: the key 'itemId' appears twice"),
        (json.dumps(item("i2", surprise=1)), 'line 2: not an Item: Message type "platform.v1.Item" has no field'),
        (json.dumps(item("i2", version=1.5)), "line 2: not an Item: Failed to parse version field"),
        (json.dumps(item("i2", updatedAt="2026-01-01T00:00:00.5Z")), "line 2: updatedAt: must be whole seconds"),
        (json.dumps(item("i2", version="0")), "line 2: version: must be greater than or equal to 1"),
        (json.dumps(item("i2", kind="Bad Kind")), "line 2: kind:"),
        (json.dumps(item("i2", deleted=True)), "line 2: a deleted item carries no payload"),
        (json.dumps(item("i1")), "line 2: item i1 of vault v1 is already on line 1"),
        (json.dumps(item("i2", purgeTime="2026-04-01T00:00:00Z")), "line 2: only a deleted item carries a purge time"),
    ],
)
def test_a_malformed_line_is_refused_with_its_reason(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, says: str
) -> None:
    path = ndjson(tmp_path / "one.ndjson", item("i1"), line, item("i3"))

    assert admin(bootstrapped, "import", path) == 1

    assert says in error_line(capsys)
    assert asyncio.run(stored_items(bootstrapped)) == {}


def test_a_line_that_is_not_utf8_is_refused(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "latin1.ndjson"
    latin1 = json.dumps(item("i2", titleHash="\xe9"), ensure_ascii=False).encode("latin-1")
    path.write_bytes(json.dumps(item("i1")).encode() + b"\n" + latin1)

    assert admin(bootstrapped, "import", str(path)) == 1

    assert "line 2: not UTF-8 text" in error_line(capsys)


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_string_no_store_can_hold_is_a_bad_line_on_every_store(
    request: pytest.FixtureRequest, tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    url = f"sqlite:///{tmp_path}/x.db" if kind == "sqlite" else request.getfixturevalue("postgres_url")
    bootstrap(url)
    capsys.readouterr()
    path = ndjson(tmp_path / "nul.ndjson", item("i1"), item("i2", titleHash="th\x00"))

    assert admin(url, "import", path) == 1

    assert (
        error_line(capsys) == "zkplatform admin: line 2: titleHash: does not match regex pattern `^[A-Za-z0-9_-]*$`;"
        " nothing was changed\n"
    )
    assert asyncio.run(stored_items(url)) == {}


def test_a_duplicate_of_a_stored_item_imports_nothing(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert admin(bootstrapped, "import", ndjson(tmp_path / "first.ndjson", item("i1"))) == 0
    capsys.readouterr()

    assert admin(bootstrapped, "import", ndjson(tmp_path / "again.ndjson", item("i2"), item("i1"), item("i3"))) == 1

    assert "item i1 in vault v1 already exists; nothing was changed" in error_line(capsys)
    assert set(asyncio.run(stored_items(bootstrapped))) == {"i1"}


def test_an_unknown_vault_imports_nothing(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ndjson(tmp_path / "far.ndjson", item("i1"), item("i2", vaultId="v9"))

    assert admin(bootstrapped, "import", path) == 1

    assert "no vault v9 in tenant acme; nothing was changed" in error_line(capsys)
    assert asyncio.run(stored_items(bootstrapped)) == {}


def test_import_reads_standard_input(
    bootstrapped: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = "\n".join(json.dumps(item(i)) for i in ("i1", "i2", "i3")) + "\n\n"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data.encode())))

    assert admin(bootstrapped, "import", "-") == 0

    assert capsys.readouterr().out == "imported 3 item(s)\n"
    assert set(asyncio.run(stored_items(bootstrapped))) == {"i1", "i2", "i3"}


def test_a_large_file_shows_its_progress_on_a_terminal(
    bootstrapped: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("zkplatform.admin.importer.PROGRESS_FROM_BYTES", 100)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)

    assert admin(bootstrapped, "import", ndjson(tmp_path / "big.ndjson", item("i1"), item("i2"))) == 0

    captured = capsys.readouterr()
    assert "checking: 100%" in captured.err
    assert captured.out == "imported 2 item(s)\n"


def test_a_missing_file_is_exit_2(bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert admin(bootstrapped, "import", str(tmp_path / "nowhere.ndjson")) == 2

    assert "nowhere.ndjson: No such file or directory" in error_line(capsys)


def bad_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    """What the command said on stderr: a line per reported bad line, then the one that sums up."""
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert all(line.startswith("zkplatform admin: ") for line in lines), err
    return [line.removeprefix("zkplatform admin: ") for line in lines]


def test_every_bad_line_is_reported_in_one_run(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ndjson(tmp_path / "bad.ndjson", item("i1"), item(""), "[1]", item("i4"), item("i1"), item("i5", version="0"))

    assert admin(bootstrapped, "import", path) == 1

    assert bad_lines(capsys) == [
        "line 2: itemId: value is required",
        "line 3: not a JSON object",
        "line 5: item i1 of vault v1 is already on line 1",
        "line 6: version: must be greater than or equal to 1",
        "4 bad lines; nothing was changed",
    ]
    assert asyncio.run(stored_items(bootstrapped)) == {}


def test_the_first_20_bad_lines_are_listed_and_the_rest_counted(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ndjson(tmp_path / "bad.ndjson", item("i1"), *["[]"] * 25)

    assert admin(bootstrapped, "import", path) == 1

    said = bad_lines(capsys)
    assert said[:20] == [f"line {n}: not a JSON object" for n in range(2, 22)]
    assert said[20:] == ["25 bad lines (the first 20 above, 5 more not listed); nothing was changed"]


def test_a_dry_run_checks_and_stores_nothing(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = ndjson(tmp_path / "good.ndjson", item("i1"), item("i2"))

    assert admin(bootstrapped, "import", good, "--dry-run") == 0
    assert capsys.readouterr().out == "2 item(s) checked, all good; nothing was stored (--dry-run)\n"
    assert asyncio.run(stored_items(bootstrapped)) == {}

    assert admin(bootstrapped, "import", ndjson(tmp_path / "bad.ndjson", item("i1"), item("")), "--dry-run") == 1
    assert error_line(capsys) == "zkplatform admin: line 2: itemId: value is required; nothing was changed\n"

    assert admin(bootstrapped, "import", good) == 0
    assert set(asyncio.run(stored_items(bootstrapped))) == {"i1", "i2"}


def test_a_dry_run_finds_vaults_the_store_lacks(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert admin(bootstrapped, "tenant", "add", "globex") == 0
    capsys.readouterr()
    path = ndjson(tmp_path / "far.ndjson", item("i1"), item("i2", vaultId="v9"), item("i3", tenantId="globex"))

    assert admin(bootstrapped, "import", "--dry-run", path) == 1

    assert error_line(capsys) == (
        "zkplatform admin: no vault v1 in tenant globex; no vault v9 in tenant acme; nothing was changed\n"
    )


def test_storing_shows_its_progress_on_a_terminal(
    bootstrapped: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("zkplatform.admin.importer.PROGRESS_FROM_ITEMS", 2)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)

    assert admin(bootstrapped, "import", ndjson(tmp_path / "big.ndjson", item("i1"), item("i2"), item("i3"))) == 0

    captured = capsys.readouterr()
    assert "storing: 100%" in captured.err
    assert "3/3" in captured.err
    assert captured.out == "imported 3 item(s)\n"


def test_no_progress_when_standard_error_is_not_a_terminal(
    bootstrapped: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("zkplatform.admin.importer.PROGRESS_FROM_BYTES", 1)
    monkeypatch.setattr("zkplatform.admin.importer.PROGRESS_FROM_ITEMS", 1)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)

    assert admin(bootstrapped, "import", ndjson(tmp_path / "big.ndjson", item("i1"), item("i2"))) == 0

    assert capsys.readouterr().err == ""
