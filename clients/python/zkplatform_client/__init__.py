"""Client helpers of the zero-knowledge platform's Connect API (platform.v1).

The generated messages and clients are in `zkplatform_api`; this package adds
what every client would otherwise write itself: both clients over one transport
with TLS options (`clients`), tokens on every call, renewed when they expire
(`TokenProvider`, `AuthInterceptor`), DPoP proofs (`DPoPKey`), a vault sync
(`VaultSync`), and the reason of a failed call (`error_reason`, to compare with
the generated `ErrorReason`).
"""

from zkplatform_api.platform.v1.errors_pb2 import ErrorReason
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
    error_reason,
)

__all__ = [
    "ERROR_DOMAIN",
    "AuthInterceptor",
    "Backoff",
    "Changes",
    "Clients",
    "DPoPKey",
    "ErrorReason",
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
    "error_reason",
    "http_transport",
    "is_token_expired",
]
