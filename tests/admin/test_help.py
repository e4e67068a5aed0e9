"""The command line itself: help for every command and argument (through the console script too),
and --store before or after the command."""

from __future__ import annotations

import argparse
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server import zkplatform_command
from zkplatform.admin import main
from zkplatform.admin.arguments import build_parser


@pytest.mark.e2e  # runs the console script
def test_help_through_the_console_script() -> None:
    for args in (["admin", "--help"], ["admin", "token", "issue", "--help"]):
        result = subprocess.run([zkplatform_command(), *args], capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith(f"usage: zkplatform {' '.join(args[:-1])}")


def _parsers(parser: argparse.ArgumentParser, path: str = "") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every command's parser, by its command line (`tenant add`, ...), the top one included."""
    yield path, parser
    for action in parser._actions:  # argparse exposes its subcommands no other way
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}".strip())


def test_every_command_and_argument_is_described() -> None:
    undescribed = [
        f"{path or 'admin'}: {action.metavar or action.dest}"
        for path, parser in _parsers(build_parser())
        for action in parser._actions
        if not action.help
    ]
    undescribed += [f"{path}: no description" for path, parser in _parsers(build_parser()) if not parser.description]

    assert undescribed == []


def test_a_commands_help_describes_its_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tenant", "add", "--help"]) == 0

    out = capsys.readouterr().out
    assert re.search(r"TENANT_ID +the new tenant's id", out)
    assert "--store URL" in out


@pytest.mark.parametrize(
    "args",
    [
        ("migrate",),
        ("tenant", "add", "acme"),
        ("principal", "add", "alice", "--tenant", "acme", "--role", "owner"),
        ("vault", "add", "v1", "--tenant", "acme"),
        ("token", "issue", "--principal", "alice"),
        ("purge-tombstones",),
        ("epoch", "rotate"),
    ],
)
def test_store_may_follow_the_command(url: str, capsys: pytest.CaptureFixture[str], args: tuple[str, ...]) -> None:
    bootstrap_steps = [
        ("migrate",),
        ("tenant", "add", "acme"),
        ("principal", "add", "alice", "--tenant", "acme", "--role", "owner"),
    ]
    for step in bootstrap_steps[: bootstrap_steps.index(args) if args in bootstrap_steps else None]:
        assert main([*step, "--store", url]) == 0
    capsys.readouterr()

    assert main([*args, "--store", url]) == 0, capsys.readouterr().err

    assert capsys.readouterr().err == ""
    assert Path(url.removeprefix("sqlite:///")).exists()  # that store, not the default one


def test_store_given_before_and_after_must_agree(url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--store", url, "migrate", "--store", url]) == 0
    capsys.readouterr()

    assert main(["--store", url, "tenant", "add", "acme", "--store", f"sqlite:///{tmp_path}/other.db"]) == 2

    err = capsys.readouterr().err
    assert "usage: zkplatform admin" in err
    assert "--store is given twice, with two different URLs: give it once" in err
    assert not (tmp_path / "other.db").exists()
