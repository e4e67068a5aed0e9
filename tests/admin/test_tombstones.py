"""`purge-tombstones`."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.admin.conftest import admin, item, ndjson, stored_items, tombstone


def test_purge_tombstones_forgets_only_old_ones(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ndjson(
        tmp_path / "t.ndjson",
        tombstone("i1", "2020-01-01T00:00:00Z"),
        tombstone("i2", "2099-01-01T00:00:00Z"),
        item("i3", updatedAt="2020-01-01T00:00:00Z"),
    )
    assert admin(bootstrapped, "import", path) == 0
    capsys.readouterr()

    assert admin(bootstrapped, "purge-tombstones") == 0

    assert capsys.readouterr().out == "purged 1 tombstone(s) deleted more than 90 day(s) ago\n"
    assert set(asyncio.run(stored_items(bootstrapped))) == {"i2", "i3"}


def test_purge_retention_from_the_flag_or_the_environment(
    bootstrapped: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ZKPLATFORM_TOMBSTONE_RETENTION_DAYS", "30")
    assert admin(bootstrapped, "purge-tombstones") == 0
    assert admin(bootstrapped, "purge-tombstones", "--older-than-days", "7") == 0

    assert capsys.readouterr().out.splitlines() == [
        "purged 0 tombstone(s) deleted more than 30 day(s) ago",
        "purged 0 tombstone(s) deleted more than 7 day(s) ago",
    ]


def test_purge_with_zero_days_forgets_every_tombstone_now(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """After an erasure request, say: the tombstones need not wait out the retention."""
    just_now = (datetime.now(UTC) - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    path = ndjson(tmp_path / "t.ndjson", tombstone("i1", just_now), item("i2"))
    assert admin(bootstrapped, "import", path) == 0
    capsys.readouterr()

    assert admin(bootstrapped, "purge-tombstones", "--older-than-days", "0") == 0

    assert capsys.readouterr().out == "purged 1 tombstone(s) deleted more than 0 day(s) ago\n"
    assert set(asyncio.run(stored_items(bootstrapped))) == {"i2"}
