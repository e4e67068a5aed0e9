"""Client helpers of the zero-knowledge platform's Connect API (platform.v1).

The generated messages and clients are in `zkplatform_api`; this package adds
what every client would otherwise write itself: a vault sync (`VaultSync`).
"""

from zkplatform_client.sync import (
    Backoff,
    Changes,
    Heartbeat,
    Reconnecting,
    Restarting,
    Synced,
    SyncEvent,
    SyncStoppedError,
    VaultSync,
)

__all__ = [
    "Backoff",
    "Changes",
    "Heartbeat",
    "Reconnecting",
    "Restarting",
    "SyncEvent",
    "SyncStoppedError",
    "Synced",
    "VaultSync",
]
