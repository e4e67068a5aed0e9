"""Client helpers of the zero-knowledge platform's Connect API (platform.v1).

The generated messages and clients are in `zkplatform_api`; this package adds
what every client would otherwise write itself: both clients over one transport
with TLS options (`clients`), tokens on every call, renewed when they expire
(`TokenProvider`, `AuthInterceptor`), DPoP proofs (`DPoPKey`), what a failed call
says (`error_details`: its reason, to compare with the generated `ErrorReason`,
metadata, field violations and retry delay), and a vault sync that resumes from
a saved state (`VaultSync`, `FileSyncStore`, `MemorySyncStore`).
"""

from zkplatform_api.platform.v1.errors_pb2 import ErrorReason
from zkplatform_client.auth import AuthInterceptor, TokenProvider, is_token_expired
from zkplatform_client.client import Clients, HttpVersion, Protocol, clients, http_transport
from zkplatform_client.dpop import DPoPKey
from zkplatform_client.errors import ERROR_DOMAIN, ErrorDetails, FieldViolation, error_details, error_reason
from zkplatform_client.sync import (
    Backoff,
    Changes,
    FileSyncStore,
    Heartbeat,
    MemorySyncStore,
    Reconnecting,
    Restarting,
    Resumed,
    Synced,
    SyncEvent,
    SyncState,
    SyncStoppedError,
    SyncStore,
    VaultSync,
)

__all__ = [
    "ERROR_DOMAIN",
    "AuthInterceptor",
    "Backoff",
    "Changes",
    "Clients",
    "DPoPKey",
    "ErrorDetails",
    "ErrorReason",
    "FieldViolation",
    "FileSyncStore",
    "Heartbeat",
    "HttpVersion",
    "MemorySyncStore",
    "Protocol",
    "Reconnecting",
    "Restarting",
    "Resumed",
    "SyncEvent",
    "SyncState",
    "SyncStoppedError",
    "SyncStore",
    "Synced",
    "TokenProvider",
    "VaultSync",
    "clients",
    "error_details",
    "error_reason",
    "http_transport",
    "is_token_expired",
]
