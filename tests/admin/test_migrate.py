"""`zkplatform admin migrate`, and how every command finds and opens its store."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.admin.conftest import admin, error_line
from zkplatform.admin import main
from zkplatform.store.migrations import latest


def test_migrate_applies_the_schema_once(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    every = range(1, latest("sqlite") + 1)
    assert admin(url, "migrate") == 0
    assert capsys.readouterr().out == f"applied migration(s) {', '.join(map(str, every))}\n"

    assert admin(url, "migrate") == 0
    assert capsys.readouterr().out == f"the schema is up to date (version {every[-1]})\n"


def test_a_store_without_schema_is_refused_with_what_to_do(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert admin(url, "tenant", "add", "acme") == 2

    # The command to run, with the URL spelled out or as "URL".
    assert re.search(r"run `zkplatform admin --store \S+ migrate`", error_line(capsys))


def test_the_store_defaults_to_the_environment(
    url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ZKPLATFORM_STORE", url)

    assert main(["migrate"]) == 0
    assert admin(url, "migrate") == 0

    assert "up to date" in capsys.readouterr().out


def test_the_memory_store_lives_for_one_invocation(capsys: pytest.CaptureFixture[str]) -> None:
    assert admin("memory:", "migrate") == 0
    assert admin("memory:", "tenant", "add", "acme") == 0
    captured = capsys.readouterr()
    assert captured.out == "the schema is up to date\ntenant acme added\n"
    assert "keeps nothing" in captured.err

    # A new invocation, a new and empty store: the tenant is gone.
    assert admin("memory:", "vault", "add", "v1", "--tenant", "acme") == 1
    assert "no tenant acme; nothing was changed" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("store", "says"),
    [
        ("mysql://db/zk", "unsupported store"),
        ("sqlite:///{tmp}/not-a-db", "not a (SQLite )?database"),
    ],
)
def test_an_unusable_store_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], store: str, says: str) -> None:
    (tmp_path / "not-a-db").write_bytes(b"this is not SQLite " * 10)

    assert admin(store.format(tmp=tmp_path), "migrate") == 2

    assert re.search(says, error_line(capsys))
