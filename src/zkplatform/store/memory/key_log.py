"""The memory store's key logs, their devices and their witnesses' cosignatures."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import replace

from zkplatform.domain.audit import Action, Actor
from zkplatform.domain.key_log import AddDevice, Cosignature, Device, Leaf, LogChange
from zkplatform.domain.ports.refusals import AlreadyExists, UnknownReference
from zkplatform.domain.request_ids import Repeated, RequestId, Reused
from zkplatform.store.key_rows import taken
from zkplatform.store.memory.tables import Tables
from zkplatform_tlog.merkle import leaf_hash


class MemoryKeyLog(Tables):
    async def key_log_size(self, tenant_id: str) -> int:
        return len(self._key_logs.get(tenant_id, ()))

    async def devices(self, tenant_id: str, principal_id: str | None = None) -> list[Device]:
        owned = self._principal_devices.get(tenant_id, {})
        principals = sorted(owned) if principal_id is None else [principal_id]
        return [self._devices[tenant_id, d] for p in principals for d in owned.get(p, ())]

    async def find_device_key(self, tenant_id: str, key_id: str) -> Device | None:
        device_id = self._device_keys.get((tenant_id, key_id))
        return None if device_id is None else self._devices[tenant_id, device_id]

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
        if (earlier := self._earlier(actor, request, tuple)) is not None:
            return earlier
        leaves = self._key_logs.setdefault(tenant_id, [])
        if len(leaves) != expected_size:
            return None
        if isinstance(change, AddDevice):  # everything checked before anything changes: all or none
            device = replace(change.device, tenant_id=tenant_id, log_index=expected_size)
            principal = self._principals.get(device.principal_id)
            if principal is None or principal.tenant_id != tenant_id:
                raise UnknownReference(f"no principal {device.principal_id} in tenant {tenant_id}")
            for key_id in (device.device_id, device.agreement_key_id):
                if (tenant_id, key_id) in self._device_keys:
                    raise AlreadyExists(taken(tenant_id, key_id))
            self._devices[tenant_id, device.device_id] = device
            self._device_keys[tenant_id, device.device_id] = self._device_keys[tenant_id, device.agreement_key_id] = (
                device.device_id
            )
            self._principal_devices.setdefault(tenant_id, {}).setdefault(device.principal_id, []).append(
                device.device_id
            )
        else:
            for device_id in change.device_ids:
                held = self._devices.get((tenant_id, device_id))
                if held is not None and held.principal_id == change.principal_id and held.live:
                    self._devices[tenant_id, device_id] = replace(
                        held, revoked_at=change.at, revoked_index=expected_size
                    )
        leaves.append(Leaf(expected_size, entry, leaf_hash(entry)))
        action, details = event
        self._record([actor.event(tenant_id, action, **details)])
        self._remember(actor, request, (str(expected_size),))
        return expected_size + 1

    async def key_log_leaves(self, tenant_id: str, start: int, limit: int, size: int) -> list[Leaf]:
        leaves = self._key_logs.get(tenant_id, [])
        return leaves[max(start, 0) : max(min(size, start + limit), 0)]

    async def key_log_hashes(self, tenant_id: str, size: int) -> list[bytes]:
        return [leaf.leaf_hash for leaf in self._key_logs.get(tenant_id, [])[: max(size, 0)]]

    async def live_devices(
        self, tenant_id: str, principal_ids: Iterable[str], size: int, after: tuple[str, int] | None, limit: int
    ) -> list[Device]:
        after = after or ("", -1)
        owned = self._principal_devices.get(tenant_id, {})
        devices = (
            device
            for p in sorted(set(principal_ids))
            if p >= after[0]
            for d in owned.get(p, ())
            if (p, (device := self._devices[tenant_id, d]).log_index) > after and device.live_at(size)
        )
        return list(itertools.islice(devices, max(limit, 0)))

    async def key_log_tenants(self) -> list[str]:
        return sorted(t for t, leaves in self._key_logs.items() if leaves)

    async def save_cosignature(self, cosignature: Cosignature) -> None:
        sizes = self._cosignatures.setdefault(cosignature.tenant_id, {})
        by_witness = sizes.setdefault(cosignature.size, {})
        held = by_witness.get(cosignature.witness)
        if held is None or held.cosigned_at < cosignature.cosigned_at:
            by_witness[cosignature.witness] = cosignature

    async def served_checkpoint(
        self, tenant_id: str, witnesses: Iterable[str], quorum: int
    ) -> tuple[int, list[Cosignature]]:
        named = set(witnesses)
        sizes = self._cosignatures.get(tenant_id, {})

        def of(size: int) -> list[Cosignature]:
            return sorted((c for w, c in sizes.get(size, {}).items() if w in named), key=lambda c: c.witness)

        if quorum <= 0:
            size = len(self._key_logs.get(tenant_id, ()))
            return size, of(size)
        for size in sorted(sizes, reverse=True):
            if len(cosigned := of(size)) >= quorum:
                return size, cosigned
        return 0, []

    async def witness_sizes(self, tenant_id: str) -> dict[str, int]:
        largest: dict[str, int] = {}
        for size, cosigned in self._cosignatures.get(tenant_id, {}).items():
            for witness in cosigned:
                largest[witness] = max(largest.get(witness, 0), size)
        return largest
