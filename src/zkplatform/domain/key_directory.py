"""The key directory's use cases (directory.proto): devices published and revoked by their own
signed statements, principals reset by an owner or an admin, and the reads a client verifies
its keys with, each at the checkpoint the witnesses cosigned.

Each use case checks the token's scope first, then the contract's checks in its order (those
of a statement on its own are device_statements.py's). A device or a principal of another
tenant is never found: it answers as one that does not exist.

A change is decided on the log as read, then appended by compare-and-set on the log's size
(KeyLogRepository.append_key_log): when another change came first, the log is read again and
the change decided again, so that every entry is checked against the log it extends. Then the
witnesses are sent the new checkpoint, and the answer waits for them a bounded time, so that
it usually carries a checkpoint that holds its entry.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Protocol

from zkplatform.domain import device_statements
from zkplatform.domain.audit import Action, Actor
from zkplatform.domain.auth import Caller
from zkplatform.domain.checkpoints import Checkpoints, ServedCheckpoint
from zkplatform.domain.clock import Clock
from zkplatform.domain.errors import (
    EndorsementRequired,
    EndorserNotLive,
    FieldViolation,
    InvalidArgument,
    KeyAccessDenied,
    KeyExists,
    KeyNotFound,
    KeyRevoked,
    PrincipalNotFound,
    RequestIdReused,
    SignatureInvalid,
    StoreUnavailable,
)
from zkplatform.domain.key_log import AddDevice, Device, Leaf, LogChange, RevokeDevices
from zkplatform.domain.models import Role, Scope
from zkplatform.domain.paging import PageTokens, Position, fitting
from zkplatform.domain.ports.directory import DirectoryRepository
from zkplatform.domain.ports.key_log import KeyLogRepository
from zkplatform.domain.ports.refusals import AlreadyExists
from zkplatform.domain.request_ids import Repeated, RequestId, Reused
from zkplatform_tlog.merkle import consistency_proof, leaf_hash
from zkplatform_tlog.statements import (
    DeviceKeys,
    DeviceRevocation,
    Entry,
    EntrySignature,
    PrincipalReset,
    verify_statement,
)

log = logging.getLogger(__name__)

DEFAULT_PAGE_SIZE: Final = 100
MAX_PAGE_SIZE: Final = 1000
MAX_PRINCIPALS: Final = 100
# Roles that may reset any principal of their tenant.
KEY_MANAGERS: Final = frozenset({Role.OWNER, Role.ADMIN})
# Decisions made again when other changes of the tenant's log keep coming first: far more than
# any real contention, few enough that a call never loops long.
APPEND_ATTEMPTS: Final = 16
DEFAULT_PUSH_TIMEOUT_SECONDS: Final = 5.0
# What a page token is bound to, besides the tenant and the listing's own arguments.
_LOG_LISTING: Final = "key log"
_DEVICE_LISTING: Final = "recipient devices"
# What an entry takes in a page's binary encoding besides its text: index, tags, lengths.
_ENTRY_FRAME_BYTES: Final = 24


class CheckpointPusher(Protocol):
    """Sends a tenant's new checkpoint to the witnesses (domain/witnessing.py's WitnessPusher)."""

    async def push(self, tenant_id: str) -> None:
        """Send the tenant's current checkpoint to every witness now, and keep what they cosign."""
        ...

    def notify(self, tenant_id: str) -> None:
        """Have the tenant's current checkpoint sent soon, without waiting for it."""
        ...


@dataclass(frozen=True, slots=True)
class DeviceAnswer:
    """A device, the entry that published or revoked it, and the checkpoint read after the change."""

    device: Device
    entry: Leaf
    checkpoint: ServedCheckpoint


@dataclass(frozen=True, slots=True)
class ResetAnswer:
    entry: Leaf
    checkpoint: ServedCheckpoint


@dataclass(frozen=True, slots=True)
class DevicesPage:
    devices: tuple[Device, ...]
    checkpoint: ServedCheckpoint
    next_page_token: str  # "" on the last page


@dataclass(frozen=True, slots=True)
class KeyLogPage:
    entries: tuple[Leaf, ...]
    checkpoint: ServedCheckpoint
    # From the tree of start_index entries to the checkpoint's; None when the checkpoint is smaller.
    consistency_proof: tuple[bytes, ...] | None
    next_page_token: str  # "" on the last page


@dataclass(frozen=True, slots=True)
class _Append:
    """A decided change: the entry to append at `size` and what it does."""

    size: int
    entry: bytes
    change: LogChange
    event: tuple[Action, dict[str, str]]


class KeyDirectory:
    def __init__(  # noqa: PLR0913, PLR0917 # the parts it decides with, the pusher and its timeout
        self,
        store: KeyLogRepository,
        principals: DirectoryRepository,
        checkpoints: Checkpoints,
        clock: Clock,
        page_tokens: PageTokens,
        pusher: CheckpointPusher | None = None,
        push_timeout_seconds: float = DEFAULT_PUSH_TIMEOUT_SECONDS,
    ) -> None:
        self._store = store
        self._principals = principals
        self._checkpoints = checkpoints
        self._clock = clock
        self._page_tokens = page_tokens
        self._pusher = pusher
        self._push_timeout = push_timeout_seconds

    @property
    def checkpoints(self) -> Checkpoints:
        return self._checkpoints

    # Publishing

    async def publish_device(
        self, caller: Caller, statement_text: str, signature: str, endorsement: str
    ) -> DeviceAnswer:
        """Add a device to the caller's principal by its signed DeviceKeys statement; a repeat of
        a statement in the log answers its device as it is now."""
        caller.require_scope(Scope.DIRECTORY_KEYS_PUBLISH)
        statement = device_statements.parse(statement_text, DeviceKeys, "a DeviceKeys statement")
        device_statements.require_own(caller, statement)
        now = self._clock()
        for _ in range(APPEND_ATTEMPTS):
            decided = await self._decide_publication(statement, signature, endorsement, now)
            if isinstance(decided, Device):  # the statement is in the log already
                return await self._answer(decided, decided.log_index)
            try:
                appended = await self._append(caller.tenant_id, decided, caller.actor(now))
            except AlreadyExists:  # a concurrent publication of one of the keys came first
                continue
            if appended and isinstance(decided.change, AddDevice):
                return await self._answer(decided.change.device, decided.size, pushed=True)
        raise _too_busy(caller.tenant_id)

    async def _decide_publication(
        self, statement: DeviceKeys, signature: str, endorsement: str, now: int
    ) -> _Append | Device:
        """The publication's entry, decided on the log as read now (its size first); or the
        device, when the statement is one the log holds."""
        size = await self._store.key_log_size(statement.tenant_id)
        held = await self._store.find_device_key(statement.tenant_id, statement.device_id)
        repeat = held if held is not None and device_statements.published_by(held, statement) else None
        if repeat is None:  # a repeat appends nothing: its time is what it was
            device_statements.require_recent(statement.created, now)
        possession = device_statements.decoded_signature(signature, "signature")
        if not verify_statement(statement.signing_jwk, statement, possession):
            raise SignatureInvalid("signature", "is not the new device's signature of the statement")
        devices = await self._store.devices(statement.tenant_id, statement.principal_id)
        endorsed = device_statements.check_endorsement(statement, endorsement, devices)
        if repeat is not None:
            return repeat
        await self._require_new_keys(statement)
        if statement.endorser == "":
            if any(device.live for device in devices):
                raise EndorsementRequired
        elif not any(device.live and device.device_id == statement.endorser for device in devices):
            raise EndorserNotLive(statement.endorser)
        signatures = [EntrySignature(statement.device_id, possession)]
        if endorsed is not None:
            signatures.append(EntrySignature(statement.endorser, endorsed))
        device = device_statements.device_of(statement, size)
        return _Append(
            size,
            Entry(statement, tuple(signatures)).canonical(),
            AddDevice(device),
            (Action.DEVICE_PUBLISHED, {"principal": device.principal_id, "device": device.device_id}),
        )

    async def _require_new_keys(self, statement: DeviceKeys) -> None:
        for key_id in (statement.device_id, statement.agreement_key_id):
            found = await self._store.find_device_key(statement.tenant_id, key_id)
            if found is None:
                continue
            if found.principal_id == statement.principal_id and not found.live:
                raise KeyRevoked(key_id)
            raise KeyExists

    # Revoking

    async def revoke_device(self, caller: Caller, statement_text: str, signature: str) -> DeviceAnswer:
        """Revoke a device of the caller's principal by a live device's DeviceRevocation
        statement; a revoked device is answered as it was revoked."""
        caller.require_scope(Scope.DIRECTORY_KEYS_PUBLISH)
        statement = device_statements.parse(statement_text, DeviceRevocation, "a DeviceRevocation statement")
        device_statements.require_own(caller, statement)
        now = self._clock()
        for _ in range(APPEND_ATTEMPTS):
            size = await self._store.key_log_size(caller.tenant_id)
            devices = {d.device_id: d for d in await self._store.devices(caller.tenant_id, statement.principal_id)}
            target = devices.get(statement.device)
            if target is not None and target.revoked_index is not None:  # nothing to append: its time is moot
                device_statements.check_revoker(statement, signature, devices, live=False)
                return await self._answer(target, target.revoked_index)
            device_statements.require_recent(statement.created, now)
            if target is None:
                raise KeyNotFound(statement.device)
            revoked_by = device_statements.check_revoker(statement, signature, devices, live=True)
            decided = _Append(
                size,
                Entry(statement, (EntrySignature(statement.revoker, revoked_by),)).canonical(),
                RevokeDevices(statement.principal_id, (target.device_id,), statement.created),
                (Action.DEVICE_REVOKED, {"principal": target.principal_id, "device": target.device_id}),
            )
            if await self._append(caller.tenant_id, decided, caller.actor(now)):
                revoked = await self._store.find_device_key(caller.tenant_id, target.device_id)
                return await self._answer(revoked or target, size, pushed=True)
        raise _too_busy(caller.tenant_id)

    # Resetting

    async def reset_principal(self, caller: Caller, principal_id: str, request: RequestId | None) -> ResetAnswer:
        """Revoke every device of a principal of the caller's tenant by an entry the log keys
        sign: for an owner or an admin."""
        caller.require_scope(Scope.DIRECTORY_KEYS_PUBLISH)
        if caller.principal.role not in KEY_MANAGERS:
            raise KeyAccessDenied
        return await self.reset(caller.tenant_id, principal_id, caller.actor(self._clock()), request)

    async def reset(
        self, tenant_id: str, principal_id: str, actor: Actor, request: RequestId | None = None
    ) -> ResetAnswer:
        """Append a reset of a principal of the tenant (also the operator's command)."""
        principal = await self._principals.get_principal(principal_id)
        if principal is None or principal.tenant_id != tenant_id:
            raise PrincipalNotFound(principal_id)
        statement = PrincipalReset(tenant_id, principal_id, actor.at)
        entry = Entry(statement, self._checkpoints.keys.sign_reset(statement)).canonical()
        for _ in range(APPEND_ATTEMPTS):
            size = await self._store.key_log_size(tenant_id)
            live = [device.device_id for device in await self._store.devices(tenant_id, principal_id) if device.live]
            decided = _Append(
                size,
                entry,
                RevokeDevices(principal_id, tuple(live), actor.at),
                (Action.PRINCIPAL_RESET, {"principal": principal_id}),
            )
            outcome = await self._append(tenant_id, decided, actor, request)
            if isinstance(outcome, Reused):
                raise RequestIdReused
            if isinstance(outcome, Repeated):
                index = int(outcome.answer[0])
                return ResetAnswer(await self._leaf(tenant_id, index), await self._checkpoints.served(tenant_id))
            if outcome:
                await self._push(tenant_id)
                leaf = Leaf(size, entry, leaf_hash(entry))
                return ResetAnswer(leaf, await self._checkpoints.served(tenant_id))
        raise _too_busy(tenant_id)

    # Reading

    async def recipient_devices(
        self, caller: Caller, principal_ids: Iterable[str], page_size: int, page_token: str
    ) -> DevicesPage:
        """A page of the live devices of those principals of the caller's tenant (of any other:
        none), at the served checkpoint."""
        caller.require_scope(Scope.DIRECTORY_KEYS_READ)
        wanted = sorted(set(principal_ids))
        if not 1 <= len(wanted) <= MAX_PRINCIPALS:
            raise InvalidArgument([FieldViolation("principalIds", f"must name 1 to {MAX_PRINCIPALS} principals")])
        limit = _page_size(page_size)
        listing = (caller.tenant_id, _DEVICE_LISTING, *wanted)
        after = None
        if page_token:
            position = self._page_tokens.read(page_token, *listing)
            after = (position.after, position.number)
        checkpoint = await self._checkpoints.served(caller.tenant_id)
        # One more than the page: a next page token only when there is something after it.
        found = await self._store.live_devices(caller.tenant_id, wanted, checkpoint.size, after, limit + 1)
        page = tuple(found[:limit])
        next_page_token = ""
        if len(found) > limit:
            last = page[-1]
            next_page_token = self._page_tokens.issue(Position(last.log_index, last.principal_id), *listing)
        return DevicesPage(page, checkpoint, next_page_token)

    async def key_log_page(self, caller: Caller, start_index: int, page_size: int, page_token: str) -> KeyLogPage:
        """A page of the tenant's key log from `start_index` (or where `page_token` says the
        listing stands), below the served checkpoint, with a consistency proof from the tree of
        `start_index` entries to it."""
        caller.require_scope(Scope.DIRECTORY_KEYS_READ)
        if start_index < 0:
            raise InvalidArgument([FieldViolation("startIndex", "must be at least 0")])
        limit = _page_size(page_size)
        listing = (caller.tenant_id, _LOG_LISTING, str(start_index))
        start = self._page_tokens.read(page_token, *listing).number if page_token else start_index
        checkpoint = await self._checkpoints.served(caller.tenant_id)
        leaves = await self._store.key_log_leaves(caller.tenant_id, start, limit, checkpoint.size)
        page = tuple(leaves[: fitting(leaves, lambda leaf: len(leaf.data) + _ENTRY_FRAME_BYTES)])
        proof = None
        if start_index <= checkpoint.size:
            proof = tuple(consistency_proof(checkpoint.leaf_hashes, start_index))
        end = page[-1].index + 1 if page else start
        next_page_token = ""
        if end < checkpoint.size:
            next_page_token = self._page_tokens.issue(Position(end, ""), *listing)
        return KeyLogPage(page, checkpoint, proof, next_page_token)

    # The log

    async def _append(
        self, tenant_id: str, decided: _Append, actor: Actor, request: RequestId | None = None
    ) -> bool | Repeated[tuple[str, ...]] | Reused:
        """Append a decided change: True when appended, False when the log moved (decide again),
        or what a request id's record answers."""
        outcome = await self._store.append_key_log(
            tenant_id,
            decided.size,
            decided.entry,
            change=decided.change,
            event=decided.event,
            actor=actor,
            request=request,
        )
        if isinstance(outcome, Repeated | Reused):
            return outcome
        return outcome is not None

    async def _answer(self, device: Device, index: int, *, pushed: bool = False) -> DeviceAnswer:
        if pushed:
            await self._push(device.tenant_id)
        entry = await self._leaf(device.tenant_id, index)
        return DeviceAnswer(device, entry, await self._checkpoints.served(device.tenant_id))

    async def _leaf(self, tenant_id: str, index: int) -> Leaf:
        leaves = await self._store.key_log_leaves(tenant_id, index, 1, index + 1)
        if not leaves:  # entries are never removed: only a store changed behind our back gets here
            msg = f"the key log of tenant {tenant_id} has no entry {index}"
            raise RuntimeError(msg)
        return leaves[0]

    async def _push(self, tenant_id: str) -> None:
        """Send the new checkpoint to the witnesses, waiting for their cosignatures a bounded time;
        when they do not answer in time, the pusher's loop goes on trying."""
        if self._pusher is None:
            return
        try:
            await asyncio.wait_for(self._pusher.push(tenant_id), self._push_timeout)
        except TimeoutError:
            log.warning(
                "the witnesses did not cosign tenant %s's key log within %g s: the answer carries the"
                " last checkpoint they cosigned",
                tenant_id,
                self._push_timeout,
            )
            self._pusher.notify(tenant_id)
        except Exception:  # the entry is appended whatever the witnesses do; the loop tries again
            log.exception("sending tenant %s's key log checkpoint to the witnesses failed", tenant_id)
            self._pusher.notify(tenant_id)


def _page_size(page_size: int) -> int:
    """AIP-158: 0 means the default; above the maximum, the maximum."""
    if page_size < 0:
        raise InvalidArgument([FieldViolation("pageSize", "must be at least 0 (0 means 100)")])
    return min(page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)


def _too_busy(tenant_id: str) -> StoreUnavailable:
    log.warning("tenant %s's key log kept moving: %d decisions were overtaken", tenant_id, APPEND_ATTEMPTS)
    return StoreUnavailable()
