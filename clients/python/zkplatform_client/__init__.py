"""Client helpers of the zero-knowledge platform's Connect API (platform.v1).

The generated messages and clients are in `zkplatform_api`; this package adds
what every client would otherwise write itself: the services' clients over one
transport with TLS options (`clients`), tokens on every call, renewed when they
expire (`TokenProvider`, `AuthInterceptor`), DPoP proofs (`DPoPKey`), what a
failed call says (`error_details`: its reason, to compare with the generated
`ErrorReason`, metadata, field violations and retry delay), a vault sync that
resumes from a saved state (`VaultSync`, `FileSyncStore`, `MemorySyncStore`),
and end-to-end encryption (docs/sealing.md): items sealed for recipient keys and
opened with one (`seal`, `open_item`, `share`, `unshare`, `RecipientKey`,
`RecipientPrivateKey`, `SealingError`); devices' keys and statements
(`DeviceKeyPair`, `endorse`); and the key directory verified against a server
that may lie (docs/key-transparency.md): `KeyDirectory` over a `TrustPolicy` and
a `FileKeyLogStore` (or, chosen knowingly, `MemoryKeyLogStore`), its alerts, and
the pure checks under it (`verify_update`, `recipient_keys`, `KeyLogError`).
"""

from zkplatform_api.platform.v1.errors_pb2 import ErrorReason
from zkplatform_client.auth import AuthInterceptor, TokenProvider, is_token_expired
from zkplatform_client.client import Clients, HttpVersion, Protocol, clients, http_transport
from zkplatform_client.devices import DeviceKeyPair, DeviceStatement, SignedRevocation, endorse
from zkplatform_client.dpop import DPoPKey
from zkplatform_client.errors import ERROR_DOMAIN, ErrorDetails, FieldViolation, error_details, error_reason
from zkplatform_client.key_directory import KeyDirectory
from zkplatform_client.key_log import (
    Alert,
    AlertKind,
    KeyLogError,
    KeyLogReason,
    KeyLogState,
    LoggedDevice,
    LogUpdate,
    Me,
    Reset,
    TrustPolicy,
    acknowledge_alert,
    acknowledge_reset,
    recipient_keys,
    verify_update,
)
from zkplatform_client.key_log_store import FileKeyLogStore, KeyLogStore, MemoryKeyLogStore
from zkplatform_client.sealing import (
    RecipientKey,
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
    "Alert",
    "AlertKind",
    "AuthInterceptor",
    "Backoff",
    "Changes",
    "Clients",
    "DPoPKey",
    "DeviceKeyPair",
    "DeviceStatement",
    "ErrorDetails",
    "ErrorReason",
    "FieldViolation",
    "FileKeyLogStore",
    "FileSyncStore",
    "Heartbeat",
    "HttpVersion",
    "KeyDirectory",
    "KeyLogError",
    "KeyLogReason",
    "KeyLogState",
    "KeyLogStore",
    "LogUpdate",
    "LoggedDevice",
    "Me",
    "MemoryKeyLogStore",
    "MemorySyncStore",
    "Protocol",
    "RecipientKey",
    "RecipientPrivateKey",
    "Reconnecting",
    "Reset",
    "Restarting",
    "Resumed",
    "SealContext",
    "Sealed",
    "SealingError",
    "SignedRevocation",
    "SyncEvent",
    "SyncState",
    "SyncStoppedError",
    "SyncStore",
    "Synced",
    "TokenProvider",
    "TrustPolicy",
    "VaultSync",
    "acknowledge_alert",
    "acknowledge_reset",
    "clients",
    "endorse",
    "error_details",
    "error_reason",
    "http_transport",
    "is_token_expired",
    "open_item",
    "recipient_keys",
    "seal",
    "share",
    "unshare",
    "verify_update",
]
