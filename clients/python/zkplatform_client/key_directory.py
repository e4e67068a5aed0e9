"""The tenant's key directory, verified against a server that may lie (docs/key-transparency.md):
key_log.py's pure checks run over DirectoryService calls, with the verified state kept in a
KeyLogStore between runs.

`KeyDirectory.verify()` reads ListKeyLog from the size it holds to the last page and verifies
the update (`verify_update`); the state is saved only once a whole verification passed, so that
a log refused once is refused again. `recipient_keys` answers from the verified state alone;
GetRecipientKeys is asked too, but only to refuse (KEY_NOT_LIVE) an answer that names a device
the verified log does not hold live. Publishing, endorsing and revoking sign statements with
this device's keys (devices.py) and record them as this device's first (`Me`), so that its own
changes raise no alert.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from typing import Final

from zkplatform_api.platform.v1.directory_connect import DirectoryServiceClient
from zkplatform_api.platform.v1.directory_pb2 import (
    Device,
    GetRecipientKeysRequest,
    ListKeyLogRequest,
    PublishDeviceRequest,
    RevokeDeviceRequest,
)
from zkplatform_client.devices import DeviceKeyPair, DeviceStatement, endorse
from zkplatform_client.key_log import (
    Alert,
    KeyLogError,
    KeyLogState,
    LoggedDevice,
    LogUpdate,
    Me,
    TrustPolicy,
    acknowledge_alert,
    acknowledge_reset,
    recipient_keys,
    verify_update,
)
from zkplatform_client.key_log_store import KeyLogStore
from zkplatform_client.sealing import RecipientKey
from zkplatform_tlog.checkpoint import Checkpoint
from zkplatform_tlog.errors import CheckpointError
from zkplatform_tlog.statements import b64url

__all__ = ["KeyDirectory"]

# The most entries or devices one page is asked for (the server's own maximum).
PAGE_SIZE: Final = 1000

AlertHandler = Callable[[Alert], Awaitable[object] | object]


class KeyDirectory:
    """A tenant's key directory as this client verified it.

    `client`: a DirectoryService client that authorizes its calls (`clients(...).directory`);
    `tenant_id`: the tenant whose log it is; `policy`: the log keys and witnesses to trust;
    `store`: where the verified state is kept (`FileKeyLogStore(path)`; `MemoryKeyLogStore()`
    forgets it on restart); `me`: this device (its principal; its device ids and statements are
    kept in the store as it makes them), None for a client that is no device; `device`: this
    device's keys, whose id is added to `me`; `on_alert`: called (and awaited, if async) with
    each new alert once the verification that raised it is saved."""

    def __init__(  # noqa: PLR0913 - what a directory is made of, each by name
        self,
        client: DirectoryServiceClient,
        tenant_id: str,
        policy: TrustPolicy,
        store: KeyLogStore,
        *,
        me: Me | None = None,
        device: DeviceKeyPair | None = None,
        clock: Callable[[], float] = time.time,
        on_alert: AlertHandler | None = None,
        page_size: int = PAGE_SIZE,
    ) -> None:
        if device is not None:
            if me is None:
                raise ValueError("a device is a principal's: give me=Me(principal_id) with it")
            me = Me(me.principal_id, [*me.device_ids, device.device_id], me.statements)
        self._client = client
        self._tenant_id = tenant_id
        self._policy = policy
        self._store = store
        self._me = me
        self._device = device
        self._clock = clock
        self._on_alert = on_alert
        self._page_size = page_size
        self._lock = asyncio.Lock()

    @property
    def me(self) -> Me | None:
        return self._me

    async def state(self) -> KeyLogState | None:
        """The last verified state (None before the first verification)."""
        async with self._lock:
            return await self._load()

    async def verify(self) -> KeyLogState:
        """Read the log from the held size (ListKeyLog, every page), verify it, save the new
        state and answer it; KeyLogError, with the state left as it was, when it does not verify."""
        async with self._lock:
            return await self._verify()

    async def recipient_keys(self, principal_ids: Iterable[str]) -> dict[str, list[RecipientKey]]:
        """The agreement keys of each principal's live devices in the log, verified first: what
        `seal` may wrap for. KeyLogError RESET_UNACKNOWLEDGED for a principal reset and not
        acknowledged since (`acknowledge_reset`); KEY_NOT_LIVE when GetRecipientKeys answers a
        device the verified log does not hold live (the server is lying)."""
        asked = list(dict.fromkeys(principal_ids))
        async with self._lock:
            state = await self._verify()
            answer = recipient_keys(state, asked)
            size = await self._cross_check(state, asked)
            if size > state.size:
                # Answered at a checkpoint newer than the one verified a moment ago: a change landed
                # in between. Verified up to it, the answer is checked again, once.
                state = await self._verify()
                answer = recipient_keys(state, asked)
                await self._cross_check(state, asked)
            return answer

    async def publish_first_device(self, keys: DeviceKeyPair) -> Device:
        """Publish `keys` as this principal's first device (PublishDevice, no endorser): the
        device as the server stored it. The server refuses (ENDORSEMENT_REQUIRED) when the
        principal has a live device; the statement is recorded as this device's before it is
        sent, so a device the server published for the principal in its place alerts."""
        me = self._require_me()
        statement = keys.first_device_statement(self._tenant_id, me.principal_id, int(self._clock()))
        await self._remember(statement.text, keys.device_id)
        request = PublishDeviceRequest(statement=statement.text, signature=b64url(statement.signature))
        return (await self._client.publish_device(request)).device

    async def add_device(self, statement: DeviceStatement, endorser_keys: DeviceKeyPair) -> Device:
        """Endorse a new device of this principal with `endorser_keys` (a live device's) and
        publish it: `statement` is the new device's own (`DeviceKeyPair.device_statement` with
        `endorser` this device's id), as it showed it. Recorded as endorsed by this device first."""
        me = self._require_me()
        keys = statement.statement
        if (keys.tenant_id, keys.principal_id) != (self._tenant_id, me.principal_id):
            raise ValueError("the statement is not of this tenant and principal")
        endorsed = endorse(statement, endorser_keys)
        await self._remember(endorsed.text, None)
        request = PublishDeviceRequest(
            statement=endorsed.text,
            signature=b64url(endorsed.signature),
            endorsement=b64url(endorsed.endorsement),
        )
        return (await self._client.publish_device(request)).device

    async def revoke_device(self, device_id: str, revoker_keys: DeviceKeyPair) -> Device:
        """Revoke a device of this principal (this one, or another), signed by `revoker_keys`
        (a live device's): the device as revoked. Recorded as this device's first."""
        me = self._require_me()
        revocation = revoker_keys.revocation(self._tenant_id, me.principal_id, device_id, int(self._clock()))
        await self._remember(revocation.text, None)
        request = RevokeDeviceRequest(statement=revocation.text, signature=b64url(revocation.signature))
        return (await self._client.revoke_device(request)).device

    async def alerts(self) -> list[Alert]:
        """The alerts not acknowledged yet, oldest first."""
        state = await self.state()
        return [] if state is None else list(state.alerts)

    async def acknowledge_alert(self, index: int) -> None:
        """The application has shown the alert of entry `index` (ValueError when none is pending)."""
        async with self._lock:
            state = await self._load()
            if state is None:
                raise ValueError(f"no pending alert of entry {index}")
            await self._save(acknowledge_alert(state, index))

    async def acknowledge_reset(self, principal_id: str, index: int) -> None:
        """The application has accepted the reset of `principal_id` at entry `index`: its new
        devices are sealed for from now on (ValueError when there is no such reset pending)."""
        async with self._lock:
            state = await self._load()
            if state is None:
                raise ValueError(f"no unacknowledged reset of {principal_id} at entry {index}")
            await self._save(acknowledge_reset(state, principal_id, index))

    async def _verify(self) -> KeyLogState:
        state = await self._load()
        start = state.size if state is not None else 0
        entries: list[tuple[int, str]] = []
        page_token = ""
        while True:
            page = await self._client.list_key_log(
                ListKeyLogRequest(start_index=start, page_size=self._page_size, page_token=page_token)
            )
            entries.extend((entry.index, entry.data) for entry in page.entries)
            page_token = page.next_page_token
            if not page_token:
                break
            # A server that pages forever is not followed: every page brings entries, and no more
            # than its checkpoint holds.
            if not page.entries:
                raise KeyLogError("LOG_GAP", "a page of the key log without entries that is not the last")
            if start + len(entries) > _checkpoint_size(page.checkpoint.note):
                raise KeyLogError("LOG_GAP", "the pages hold entries past their checkpoint's size")
        update = LogUpdate(page.checkpoint.note, start, entries, tuple(page.consistency_proof))
        verified, alerts = verify_update(state, update, self._policy, self._tenant_id, self._clock(), self._me)
        await self._save(verified)
        for alert in alerts:
            if self._on_alert is not None:
                called = self._on_alert(alert)
                if inspect.isawaitable(called):
                    await called
        return verified

    async def _cross_check(self, state: KeyLogState, asked: list[str]) -> int:
        """Read GetRecipientKeys (every page) and refuse any device it answers that the verified
        log does not hold live, with these keys, for a principal asked for; the size of the
        checkpoint it was read at (beyond the verified size, nothing is refused yet)."""
        if not asked:
            return state.size
        page_token = ""
        seen: set[str] = set()  # each device answered once: with every one live, the pages end
        while True:
            page = await self._client.get_recipient_keys(
                GetRecipientKeysRequest(principal_ids=asked, page_size=self._page_size, page_token=page_token)
            )
            size = _checkpoint_size(page.checkpoint.note)
            if size > state.size:
                return size
            for device in page.devices:
                logged = state.devices.get(device.device_id)
                again = device.device_id in seen
                seen.add(device.device_id)
                if again or device.principal_id not in asked or logged is None or not _same(logged, device, size):
                    raise KeyLogError(
                        "KEY_NOT_LIVE",
                        f"the server answered device {device.device_id} of {device.principal_id}, "
                        "which the verified log does not hold live",
                    )
            page_token = page.next_page_token
            if not page_token or not page.devices:
                return size

    async def _load(self) -> KeyLogState | None:
        loaded = self._store.load()
        state = await loaded if inspect.isawaitable(loaded) else loaded
        if state is not None and state.tenant_id != self._tenant_id:
            raise ValueError(f"the store holds tenant {state.tenant_id}'s key log, not {self._tenant_id}'s")
        if state is not None and state.me is not None:
            self._me = state.me if self._me is None else state.me.merged(self._me)
        return state

    async def _save(self, state: KeyLogState) -> None:
        saved = self._store.save(state)
        if inspect.isawaitable(saved):
            await saved

    async def _remember(self, statement: str, device_id: str | None) -> None:
        """Record `statement` (and `device_id`) as this device's, saved before it is sent: the
        verified part of the state is left as it is."""
        async with self._lock:
            state = await self._load()
            me = self._require_me().made(statement, device_id)
            self._me = me
            await self._save(replace(state if state is not None else KeyLogState(self._tenant_id), me=me))

    def _require_me(self) -> Me:
        if self._me is None:
            raise ValueError("publishing, endorsing and revoking need this device's principal: KeyDirectory(me=...)")
        return self._me


def _same(logged: LoggedDevice, device: Device, size: int) -> bool:
    return (
        logged.principal_id == device.principal_id
        and logged.signing_jwk == device.signing_jwk
        and logged.agreement_jwk == device.agreement_jwk
        and logged.agreement_key_id == device.agreement_key_id
        and logged.live_at(size)
    )


def _checkpoint_size(note: str) -> int:
    """The size of an answer's checkpoint, parsed only (the cross-check refuses, never trusts)."""
    try:
        return Checkpoint.parse(note[: note.rfind("\n\n") + 1]).size
    except CheckpointError:
        raise KeyLogError("CHECKPOINT_MALFORMED", "the answer's checkpoint is not a checkpoint") from None
