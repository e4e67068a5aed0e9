"""Each tenant's key log and its witnesses' cosignatures (domain/key_log.py holds its types)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from zkplatform.domain.audit import Action, Actor
from zkplatform.domain.key_log import Cosignature, Device, Leaf, LogChange
from zkplatform.domain.request_ids import Repeated, RequestId, Reused


class KeyLogRepository(Protocol):
    """Each tenant's key log (domain/key_log.py): its entries with their leaf hashes, the
    devices they made, and the witnesses' cosignatures of its checkpoints.

    Entries are only ever appended, by compare-and-set on the log's size (`append_key_log`),
    in one transaction with the devices they add or revoke and their audit event."""

    async def key_log_size(self, tenant_id: str) -> int:
        """The number of entries in the tenant's log (0 for none)."""
        ...

    async def devices(self, tenant_id: str, principal_id: str | None = None) -> list[Device]:
        """The tenant's devices (one principal's, unless None), live and revoked, by principal,
        then by log_index."""
        ...

    async def find_device_key(self, tenant_id: str, key_id: str) -> Device | None:
        """The tenant's device whose device id or agreement key id is `key_id`, live or revoked."""
        ...

    async def append_key_log(  # noqa: PLR0913 # the entry, its change and event, and the request id naming it
        self,
        tenant_id: str,
        expected_size: int,
        entry: bytes,
        *,
        change: LogChange,
        event: tuple[Action, dict[str, str]],
        actor: Actor,
        request: RequestId | None = None,
    ) -> int | Repeated[tuple[str, ...]] | Reused | None:
        """Atomically, if the tenant's log holds `expected_size` entries: append `entry` at that
        index (its leaf hash with it), apply `change` (AddDevice stores the device with that
        log_index; RevokeDevices sets revoked_at and revoked_index on those of the principal's
        devices that are live) and record the audit event (action, details); answer the new
        size. None, changing nothing, when the log's size is not `expected_size`: the caller
        reads again and decides again. AlreadyExists when AddDevice's device id or agreement
        key id is taken in the tenant (a concurrent publication won).

        With a request id: its record answers a repeat (Repeated, whose answer is the entry's
        index as its one string) or a reuse (Reused), changing nothing; a success records the
        entry's index under it in the same transaction."""
        ...

    async def key_log_leaves(self, tenant_id: str, start: int, limit: int, size: int) -> list[Leaf]:
        """At most `limit` of the tenant's entries from index `start`, below `size`, ascending."""
        ...

    async def key_log_hashes(self, tenant_id: str, size: int) -> list[bytes]:
        """The leaf hashes of the tenant's first `size` entries (fewer if the log is shorter)."""
        ...

    async def live_devices(
        self, tenant_id: str, principal_ids: Iterable[str], size: int, after: tuple[str, int] | None, limit: int
    ) -> list[Device]:
        """At most `limit` devices of those principals live in the log's first `size` entries
        (Device.live_at), by principal, then log_index, after the (principal_id, log_index)
        `after` when given."""
        ...

    async def key_log_tenants(self) -> list[str]:
        """Every tenant whose log has an entry, sorted."""
        ...

    async def save_cosignature(self, cosignature: Cosignature) -> None:
        """Keep a witness's cosignature of a tenant's checkpoint, replacing an older one of the
        same witness for the same size (a newer time wins; an older one changes nothing)."""
        ...

    async def served_checkpoint(
        self, tenant_id: str, witnesses: Iterable[str], quorum: int
    ) -> tuple[int, list[Cosignature]]:
        """The size of the tenant's newest checkpoint that at least `quorum` of the named
        witnesses cosigned, and their cosignatures of it; (0, []) when none has. With a quorum
        of 0: the log's current size, and whatever cosignatures of it the witnesses made.
        Cosignatures of sizes below the answered one may be forgotten."""
        ...

    async def witness_sizes(self, tenant_id: str) -> dict[str, int]:
        """For each witness that cosigned a checkpoint of the tenant: the largest size it cosigned."""
        ...
