"""Client helpers of the zero-knowledge platform's Connect API (platform.v1).

The generated messages and clients are in `zkplatform_api`; this package adds
what every client would otherwise write itself: both clients over one transport
with TLS options (`clients`), tokens on every call, renewed when they expire
(`TokenProvider`, `AuthInterceptor`), DPoP proofs (`DPoPKey`) and a vault sync
(`VaultSync`).
"""

from zkplatform_client.auth import ERROR_DOMAIN, AuthInterceptor, TokenProvider, is_token_expired
from zkplatform_client.client import Clients, HttpVersion, Protocol, clients, http_transport
from zkplatform_client.dpop import DPoPKey
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
    "ERROR_DOMAIN",
    "AuthInterceptor",
    "Backoff",
    "Changes",
    "Clients",
    "DPoPKey",
    "Heartbeat",
    "HttpVersion",
    "Protocol",
    "Reconnecting",
    "Restarting",
    "SyncEvent",
    "SyncStoppedError",
    "Synced",
    "TokenProvider",
    "VaultSync",
    "clients",
    "http_transport",
    "is_token_expired",
]
