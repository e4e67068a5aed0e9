"""The server pepper: the HMAC key under which tokens are stored.

From ZKPLATFORM_TOKEN_PEPPER (base64url, at least 32 bytes) when set;
otherwise generated once and kept, readable only by its owner, in the state
directory beside the store, so that tokens outlive a restart.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import secrets
from pathlib import Path

from zkplatform.config import ConfigError
from zkplatform.domain.tokens import PEPPER_BYTES

PEPPER_FILE = "token-pepper"


def load_pepper(configured: str | None, state_dir: Path) -> bytes:
    if configured:
        try:
            pepper = base64.urlsafe_b64decode(configured + "=" * (-len(configured) % 4))
        except (binascii.Error, ValueError):
            raise ConfigError("ZKPLATFORM_TOKEN_PEPPER must be base64url") from None
        if len(pepper) < PEPPER_BYTES:
            msg = f"ZKPLATFORM_TOKEN_PEPPER must encode at least {PEPPER_BYTES} bytes"
            raise ConfigError(msg)
        return pepper
    path = state_dir / PEPPER_FILE
    if not path.exists():
        _create(path)
    return path.read_bytes()


def _create(path: Path) -> None:
    """Write a new pepper completely, then link it into place: when several
    workers start at once, exactly one pepper wins and every worker reads it whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(secrets.token_bytes(PEPPER_BYTES))
            file.flush()
            os.fsync(file.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(draft, path)
    finally:
        draft.unlink()
