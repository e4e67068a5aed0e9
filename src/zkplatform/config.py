"""Settings, from `zkplatform serve` flags or the environment.

Worker processes are spawned by hypercorn and re-import the application, so
the CLI hands its flags to them through these same environment variables.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_BIND = "127.0.0.1:8080"
DEFAULT_STORE = "memory:"
DEFAULT_MAX_BODY_BYTES = 64 * 1024


class ConfigError(ValueError):
    """A setting that cannot be used; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Settings:
    store_url: str = DEFAULT_STORE
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        return cls(
            store_url=env.get("ZKPLATFORM_STORE", DEFAULT_STORE),
            max_body_bytes=_positive_int(env, "ZKPLATFORM_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES),
        )

    def to_env(self) -> dict[str, str]:
        return {
            "ZKPLATFORM_STORE": self.store_url,
            "ZKPLATFORM_MAX_BODY_BYTES": str(self.max_body_bytes),
        }


def _positive_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None:
        return default
    if not raw.isdigit() or int(raw) < 1:
        msg = f"{name} must be a positive whole number, not {raw!r}"
        raise ConfigError(msg)
    return int(raw)
