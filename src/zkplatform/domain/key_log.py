"""The key log as the domain sees it: each tenant's append-only list of signed statements
(devices published, devices revoked, principals reset), the devices those statements made,
and the witnesses' cosignatures of its checkpoints.

The formats (canonical statements and entries, the Merkle tree, checkpoints, notes) are the
shared `zkplatform_tlog` package's, which the client packages read with the same code: see
docs/key-transparency.md. What is here is what a store keeps of them.

The log grows by compare-and-set on its size: a use case reads the tenant's devices and the
log's size, decides (signatures, endorsement, liveness), and asks the store to append its
entry only if the size has not moved, so that concurrent changes of one tenant, from any
worker or host, are decided one after the other and the log never forks.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Device:
    """A device of a principal, as the log's entries made it."""

    tenant_id: str
    principal_id: str
    device_id: str  # the thumbprint of signing_jwk
    signing_jwk: str  # canonical Ed25519 JWK text
    agreement_key_id: str  # the thumbprint of agreement_jwk
    agreement_jwk: str  # canonical X25519 or P-256 JWK text
    endorser: str  # a device id, "" for a first device
    created_at: int  # the statement's time, Unix seconds
    log_index: int  # the entry that published it
    revoked_at: int | None = None
    revoked_index: int | None = None  # the entry that revoked it (a revocation's or a reset's)

    @property
    def live(self) -> bool:
        return self.revoked_index is None

    def live_at(self, size: int) -> bool:
        """Live in the log's first `size` entries."""
        return self.log_index < size and (self.revoked_index is None or self.revoked_index >= size)


@dataclass(frozen=True, slots=True)
class Leaf:
    """An entry of the log: its index (from 0), its canonical bytes and its RFC 9162 leaf hash."""

    index: int
    data: bytes
    leaf_hash: bytes


@dataclass(frozen=True, slots=True)
class AddDevice:
    """What appending a DeviceKeys entry does: the device is stored (its log_index is the entry's)."""

    device: Device


@dataclass(frozen=True, slots=True)
class RevokeDevices:
    """What appending a revocation or a reset does: these devices are revoked at `at`."""

    principal_id: str
    device_ids: tuple[str, ...]
    at: int


LogChange = AddDevice | RevokeDevices


@dataclass(frozen=True, slots=True)
class Cosignature:
    """A witness's cosignature of a tenant's checkpoint of `size` entries: the C2SP
    `cosignature/v1` signature line as the witness answered it, and the time it carries."""

    tenant_id: str
    size: int
    witness: str  # the witness key's name
    cosigned_at: int  # Unix seconds, from the cosignature
    line: str  # "— <name> <base64>\n"


class UnreadableKeyLog(Exception):
    """Stored key log data that does not hold what the stores write (an entry that is no UTF-8
    text, a device's row of another type), changed behind the store's back: no request can fix
    it, the operator must. The message names the tenant and the entry, never the value."""

    def __init__(self, tenant_id: str, what: str, problem: str) -> None:
        super().__init__(f"tenant {tenant_id}: {what} cannot be read: {problem}")
