"""Client helpers of the zero-knowledge platform's Connect API (platform.v1).

The generated messages and clients are in `zkplatform_api`; this package adds
what every client would otherwise write itself: the services' clients over one
transport with TLS options (`clients`), tokens on every call, renewed when they
expire (`TokenProvider`, `AuthInterceptor`), DPoP proofs (`DPoPKey`), what a
failed call says (`error_details`: its reason, to compare with the generated
`ErrorReason`, metadata, field violations and retry delay), a vault sync that
resumes from a saved state (`VaultSync`, `FileSyncStore`, `MemorySyncStore`),
and end-to-end encryption (docs/sealing.md): items sealed for recipient keys and
opened with one (`seal`, `open_item`, `share`, `unshare`, `RecipientPrivateKey`,
`SealingError`), and recipient keys checked against the tenant's verified key
log (`KeyDirectory`, `FileKeyLogStore`, `MemoryKeyLogStore`, `KeyLogError`).
"""

from zkplatform_api.platform.v1.errors_pb2 import ErrorReason
from zkplatform_client.auth import AuthInterceptor, TokenProvider, is_token_expired
from zkplatform_client.client import Clients, HttpVersion, Protocol, clients, http_transport
from zkplatform_client.dpop import DPoPKey
from zkplatform_client.errors import ERROR_DOMAIN, ErrorDetails, FieldViolation, error_details, error_reason
from zkplatform_client.key_directory import (
    FileKeyLogStore,
    KeyDirectory,
    KeyLogError,
    KeyLogState,
    KeyLogStore,
    LoggedKey,
    MemoryKeyLogStore,
    check_recipient_keys,
    extend_key_log,
)
from zkplatform_client.sealing import (
    RecipientPrivateKey,
    SealContext,
    Sealed,
    SealingError,
    open_item,
    seal,
    share,
    unshare,
)
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
    "FileKeyLogStore",
    "FileSyncStore",
    "Heartbeat",
    "HttpVersion",
    "KeyDirectory",
    "KeyLogError",
    "KeyLogState",
    "KeyLogStore",
    "LoggedKey",
    "MemoryKeyLogStore",
    "MemorySyncStore",
    "Protocol",
    "RecipientPrivateKey",
    "Reconnecting",
    "Restarting",
    "Resumed",
    "SealContext",
    "Sealed",
    "SealingError",
    "SyncEvent",
    "SyncState",
    "SyncStoppedError",
    "SyncStore",
    "Synced",
    "TokenProvider",
    "VaultSync",
    "check_recipient_keys",
    "clients",
    "error_details",
    "error_reason",
    "extend_key_log",
    "http_transport",
    "is_token_expired",
    "open_item",
    "seal",
    "share",
    "unshare",
]
