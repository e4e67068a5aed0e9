"""Client helpers of the zero-knowledge platform's Connect API (platform.v1).

The generated messages and clients are in `zkplatform_api`; this package adds
what every client would otherwise write itself: the services' clients over one
transport with TLS options (`clients`), tokens on every call, renewed when they
expire (`TokenProvider`, `AuthInterceptor`), DPoP proofs (`DPoPKey`), what a
failed call says (`error_details`: its reason, to compare with the generated
`ErrorReason`, metadata, field violations and retry delay), a vault sync that
resumes from a saved state (`VaultSync`, `FileSyncStore`, `MemorySyncStore`),
and end-to-end encryption (docs/sealing.md): items sealed for recipient keys and
signed by the sealing device, opened with one against the verified directory,
which answers who sealed them (`seal`, `open_item`, `share`, `unshare`,
`Opened`, `SealedBy`, `SignerDirectory`, `RecipientKey`, `RecipientPrivateKey`,
`SealingError`); devices' keys and statements, and their key files under a
passphrase (`DeviceKeyPair`, `endorse`, `KeyFile`, `read_key_file`); and the key directory verified against a server
that may lie (docs/key-transparency.md): `KeyDirectory` over a `TrustPolicy` and
a `FileKeyLogStore` (or, chosen knowingly, `MemoryKeyLogStore`), its alerts, and
the pure checks under it (`verify_update`, `recipient_keys`, `KeyLogError`).
"""

from zkplatform_api.platform.v1.errors_pb2 import ErrorReason
from zkplatform_client.auth import AuthInterceptor, TokenProvider, is_token_expired
from zkplatform_client.client import Clients, HttpVersion, Protocol, clients, http_transport
from zkplatform_client.devices import DeviceKeyPair, DeviceStatement, KeyFile, SignedRevocation, endorse, read_key_file
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
    Opened,
    RecipientKey,
    RecipientPrivateKey,
    SealContext,
    Sealed,
    SealedBy,
    SealingError,
    SignerDirectory,
    open_item,
    seal,
    share,
    unshare,
)
from zkplatform_client.sync import (
    Backoff,
    CaughtUp,
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
    "CaughtUp",
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
    "KeyFile",
    "KeyLogError",
    "KeyLogReason",
    "KeyLogState",
    "KeyLogStore",
    "LogUpdate",
    "LoggedDevice",
    "Me",
    "MemoryKeyLogStore",
    "MemorySyncStore",
    "Opened",
    "Protocol",
    "RecipientKey",
    "RecipientPrivateKey",
    "Reconnecting",
    "Reset",
    "Restarting",
    "Resumed",
    "SealContext",
    "Sealed",
    "SealedBy",
    "SealingError",
    "SignedRevocation",
    "SignerDirectory",
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
    "read_key_file",
    "recipient_keys",
    "seal",
    "share",
    "unshare",
    "verify_update",
]
