"""The token pepper: configured, or generated once into the state directory."""

from __future__ import annotations

import base64
import stat
from pathlib import Path

import pytest

from zkplatform.config import ConfigError
from zkplatform.pepper import PEPPER_FILE, load_pepper


def test_generated_once_private_and_kept(tmp_path: Path) -> None:
    first = load_pepper(None, tmp_path / "state")
    second = load_pepper(None, tmp_path / "state")

    assert first == second
    assert len(first) == 32
    assert stat.S_IMODE((tmp_path / "state" / PEPPER_FILE).stat().st_mode) == 0o600
    assert sorted(p.name for p in (tmp_path / "state").iterdir()) == [PEPPER_FILE]  # no drafts left behind


def test_configured_pepper_wins_and_writes_nothing(tmp_path: Path) -> None:
    configured = base64.urlsafe_b64encode(b"k" * 32).decode().rstrip("=")

    assert load_pepper(configured, tmp_path) == b"k" * 32
    assert not (tmp_path / PEPPER_FILE).exists()


@pytest.mark.parametrize("configured", ["c2hvcnQ", "not base64 !!"])
def test_unusable_configured_pepper_is_refused(tmp_path: Path, configured: str) -> None:
    with pytest.raises(ConfigError, match="ZKPLATFORM_TOKEN_PEPPER"):
        load_pepper(configured, tmp_path)
