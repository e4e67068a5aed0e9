"""The one table of settings (config.SETTINGS) drives the environment, the flags of `serve`,
its help and the workers' hand-over; docs/operations.md lists the same variables."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from zkplatform.cli import _parser, serve_settings
from zkplatform.config import DEFAULT_LISTEN_BACKLOG, INTERNAL_VARIABLES, SETTINGS, ConfigError, Settings
from zkplatform.server.listener import Listener
from zkplatform.server.serve import hypercorn_config

OPERATIONS = Path(__file__).parents[2] / "docs" / "operations.md"


def _documented() -> set[str]:
    text = OPERATIONS.read_text()
    section = text[text.index("## Settings in the environment") :]
    section = section[: section.index("\n## ", 1)]
    return set(re.findall(r"ZKPLATFORM_[A-Z_]+", section))


def test_the_operators_guide_lists_every_setting_and_no_other() -> None:
    table = {setting.variable for setting in SETTINGS} - INTERNAL_VARIABLES
    assert _documented() == table


def test_each_variable_and_each_flag_is_one_settings() -> None:
    variables = [setting.variable for setting in SETTINGS]
    flags = [setting.flag for setting in SETTINGS if setting.flag is not None]
    assert len(set(variables)) == len(variables)
    assert len(set(flags)) == len(flags)


def test_what_serve_hands_its_workers_reads_back_the_same() -> None:
    settings = serve_settings(
        _parsed(
            "--store=memory:",
            "--public-url=https://api.example.com",
            "--forwarded-allow-ips=10.0.0.0/8,::1",
            "--cors-origins=https://app.example.com",
            "--witness-quorum=1",
            "--witness-timeout=2.5",
            "--log-key-files=/etc/zk/a.key,/etc/zk/b.key",  # absolute: the workers are handed absolute paths
        ),
        Settings.from_env({"ZKPLATFORM_MAX_STREAMS": "7", "ZKPLATFORM_TOKEN_TTL_MAX": "7200"}),
    )
    handed = settings.to_env()

    assert Settings.from_env(handed) == settings
    assert "ZKPLATFORM_TOKEN_PEPPER" not in handed  # the workers find it where the server did


def test_a_flag_wins_over_its_variable() -> None:
    settings = serve_settings(
        _parsed("--witness-interval", "9"), Settings.from_env({"ZKPLATFORM_WITNESS_INTERVAL": "8"})
    )
    assert settings.witness_interval_seconds == 9
    assert Settings.from_env({"ZKPLATFORM_WITNESS_INTERVAL": "8"}).witness_interval_seconds == 8


@pytest.mark.parametrize(
    ("variable", "raw", "message"),
    [
        ("ZKPLATFORM_MAX_STREAMS", "0", "ZKPLATFORM_MAX_STREAMS must be a whole number from 1 to 100000, not '0'"),
        ("ZKPLATFORM_WITNESS_QUORUM", "x", "ZKPLATFORM_WITNESS_QUORUM must be a whole number from 0 to the number"),
        ("ZKPLATFORM_PUBLIC_URL", "ftp://x", "--public-url must be https://HOST[:PORT]"),
        ("ZKPLATFORM_METRICS_BIND", "nope", "HOST:PORT expected"),
    ],
)
def test_a_bad_variable_says_which_in_its_own_words(variable: str, raw: str, message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        Settings.from_env({variable: raw})
    assert str(refused.value).startswith(message)


def test_the_listen_backlog_reaches_hypercorn() -> None:
    args = _parsed()
    assert args.backlog is None  # given neither as a flag nor (below) in the environment
    assert hypercorn_config(Listener()).backlog == DEFAULT_LISTEN_BACKLOG
    assert hypercorn_config(Listener(backlog=137)).backlog == 137
    assert _parsed("--backlog", "137").backlog == 137


def _parsed(*flags: str) -> argparse.Namespace:
    args = _parser().parse_args(["serve", *flags])
    if args.bind is None:
        args.bind, args.workers = "127.0.0.1:8080", 1
    return args
