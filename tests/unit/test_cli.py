"""The `zkplatform` command line: its help, its version."""

from __future__ import annotations

import importlib.metadata

import pytest

from zkplatform.cli import main
from zkplatform.config import INTERNAL_VARIABLES, Settings


def _help(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with pytest.raises(SystemExit) as exit_:
        main([*args, "--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])

    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"zkplatform {importlib.metadata.version('zkplatform')}\n"


def test_every_command_says_what_it_does(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(capsys)

    assert "COMMAND     what to do" in text
    assert "    serve     serve the Connect API" in text
    assert "    admin     operator commands on a store" in text


def test_serve_help_lists_every_setting_of_the_environment_and_the_exit_codes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = _help(capsys, "serve")

    names = (set(Settings().to_env()) - INTERNAL_VARIABLES) | {"ZKPLATFORM_TOKEN_PEPPER"}
    listed = {line.split()[0] for line in text.splitlines() if line.startswith("  ZKPLATFORM_")}
    assert listed == names
    assert "\nexit codes:\n  0    stopped by SIGTERM or SIGINT (Ctrl-C)\n" in text
    assert "  2    a usage, configuration or start-up problem" in text
    for flag in ("--bind", "--store", "--workers", "--migrate", "--log-level", "--dev", "--dev-credentials"):
        assert f"  {flag} " in text
