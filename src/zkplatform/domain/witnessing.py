"""Getting each tenant's key log checkpoints cosigned: the server's side of C2SP tlog-witness.

`WitnessPusher.push` sends a tenant's latest checkpoint to every witness at once, each with a
consistency proof from the largest size that witness cosigned, and keeps the cosignatures that
verify (store.save_cosignature); the served checkpoint is the newest one a quorum cosigned
(domain/checkpoints.py). `run` pushes every tenant at an interval, so that cosignatures stay
fresh while nothing changes, and a tenant sooner when `notify` is told its log grew.

A witness is only ever a source of cosignatures: one that is down, slow, refusing or answering
garbage is logged (one line) and skipped, and never fails or blocks a push to the others, nor
the caller. How a request reaches a witness (HTTP, or in process for the development witness)
is the WitnessEndpoint's: zkplatform/witness/endpoints.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from zkplatform.domain.checkpoints import LatestCheckpoint
from zkplatform.domain.clock import Clock
from zkplatform.domain.key_log import Cosignature
from zkplatform.domain.ports.key_log import KeyLogRepository
from zkplatform_tlog.errors import TlogError
from zkplatform_tlog.merkle import consistency_proof
from zkplatform_tlog.note import CosignatureVerifier
from zkplatform_tlog.witness_wire import (
    STATUS_CONFLICT,
    STATUS_OK,
    encode_add_checkpoint,
    parse_cosignatures,
    parse_size,
)

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S: Final = 10.0
# A 409 names the witness's size; asking again with it succeeds unless the witness moved again
# meanwhile (another server of the same log pushed): a few tries, not a loop.
ATTEMPTS: Final = 3
# A cosignature dated further ahead than this is refused: it would look fresh for longer than it is.
MAX_CLOCK_SKEW_S: Final = 300
# Tenants pushed at once in a round: bounds the requests in flight to each witness.
PARALLEL_TENANTS: Final = 8


class WitnessEndpoint(Protocol):
    """Where add-checkpoint requests to one witness go."""

    @property
    def name(self) -> str:
        """The witness, for log lines (its URL, say)."""
        ...

    async def add_checkpoint(self, body: bytes) -> tuple[int, bytes, str]:
        """POST the request body; the answer's status, body and content type. Any exception
        is the endpoint failing (the push logs it and goes on)."""
        ...


@dataclass(frozen=True, slots=True)
class Witness:
    """A witness the server pushes to: where to reach it, and the key its cosignatures verify
    with (whose name is the witness's name in the store)."""

    endpoint: WitnessEndpoint
    verifier: CosignatureVerifier

    @property
    def name(self) -> str:
        return self.verifier.name


class _Skip(Exception):
    """This witness gives nothing this time; the message says why, for the log."""


class WitnessPusher:
    def __init__(
        self,
        store: KeyLogRepository,
        witnesses: Sequence[Witness],
        latest: Callable[[str], Awaitable[LatestCheckpoint]],
        clock: Clock,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self._store = store
        self._witnesses = tuple(witnesses)
        self._latest = latest
        self._clock = clock
        self._timeout = timeout
        self._pending: set[str] = set()
        self._wakeup = asyncio.Event()

    def notify(self, tenant_id: str) -> None:
        """The tenant's log grew: `run` pushes it now rather than at its next round."""
        self._pending.add(tenant_id)
        self._wakeup.set()

    async def push(self, tenant_id: str) -> None:
        """Send the tenant's latest checkpoint to every witness, keeping the cosignatures that
        verify. Never raises (but for cancellation): failures are logged."""
        if not self._witnesses:
            return
        try:
            latest = await self._latest(tenant_id)
            cosigned = await self._store.witness_sizes(tenant_id)
        except Exception as error:  # noqa: BLE001 # a store that fails now: the next round tries again
            log.warning("cannot push tenant %s's checkpoint to its witnesses (%s)", tenant_id, type(error).__name__)
            return
        await asyncio.gather(
            *(self._push_to(witness, tenant_id, latest, cosigned.get(witness.name, 0)) for witness in self._witnesses)
        )

    async def run(self, interval: float) -> None:
        """Push every tenant now and every `interval` seconds, and a notified tenant at once;
        until cancelled."""
        loop = asyncio.get_running_loop()
        next_round = loop.time()
        while True:
            with contextlib.suppress(TimeoutError):  # the round is due
                await asyncio.wait_for(self._wakeup.wait(), max(0.0, next_round - loop.time()))
            self._wakeup.clear()
            if loop.time() >= next_round:
                next_round = loop.time() + interval
                self._pending.clear()
                tenants = await self._all_tenants()
            else:
                tenants, self._pending = sorted(self._pending), set()
            await self._push_all(tenants)

    async def _all_tenants(self) -> list[str]:
        try:
            return await self._store.key_log_tenants()
        except Exception as error:  # noqa: BLE001 # as in push
            log.warning("cannot list the key logs to push to the witnesses (%s)", type(error).__name__)
            return []

    async def _push_all(self, tenants: Sequence[str]) -> None:
        slots = asyncio.Semaphore(PARALLEL_TENANTS)

        async def one(tenant_id: str) -> None:
            async with slots:
                await self.push(tenant_id)

        await asyncio.gather(*(one(tenant_id) for tenant_id in tenants))

    async def _push_to(self, witness: Witness, tenant_id: str, latest: LatestCheckpoint, old: int) -> None:
        try:
            cosignature = await self._cosignature(witness, tenant_id, latest, old)
            await self._store.save_cosignature(cosignature)
        except _Skip as skip:
            log.warning(
                "witness %s (%s) did not cosign tenant %s's checkpoint of size %d: %s",
                witness.name,
                witness.endpoint.name,
                tenant_id,
                latest.size,
                skip,
            )
        except Exception as error:  # noqa: BLE001 # whatever went wrong with this witness, the others go on
            log.warning(
                "pushing tenant %s's checkpoint to witness %s failed (%s)",
                tenant_id,
                witness.name,
                type(error).__name__,
            )

    async def _cosignature(self, witness: Witness, tenant_id: str, latest: LatestCheckpoint, old: int) -> Cosignature:
        """Ask the witness, from the size it holds, following its 409s; its verified cosignature."""
        for _ in range(ATTEMPTS):
            if old > latest.size:
                # It cosigned more of this log than the log holds: a rollback, or a split view.
                msg = f"it holds size {old}, beyond the log's"
                raise _Skip(msg)
            body = encode_add_checkpoint(old, consistency_proof(latest.leaf_hashes, old), latest.note)
            status, answer, _ = await self._call(witness, body)
            if status == STATUS_OK:
                return self._verified(witness, tenant_id, latest, answer)
            if status != STATUS_CONFLICT:
                msg = f"it answered {status}"
                raise _Skip(msg)
            try:
                old = parse_size(answer)
            except TlogError:
                msg = "it answered 409 without its size"
                raise _Skip(msg) from None
        msg = f"its size kept moving ({ATTEMPTS} conflicts)"
        raise _Skip(msg)

    async def _call(self, witness: Witness, body: bytes) -> tuple[int, bytes, str]:
        try:
            async with asyncio.timeout(self._timeout):
                return await witness.endpoint.add_checkpoint(body)
        except TimeoutError:
            msg = f"no answer within {self._timeout:g} s"
            raise _Skip(msg) from None
        except Exception as error:  # noqa: BLE001 # the transport's: refused, reset, a bad URL, too long an answer
            msg = f"the call failed ({type(error).__name__})"
            raise _Skip(msg) from None

    def _verified(self, witness: Witness, tenant_id: str, latest: LatestCheckpoint, answer: bytes) -> Cosignature:
        """The witness's cosignature among the answer's lines, verified against the checkpoint."""
        checkpoint_body = latest.note[: latest.note.index("\n\n") + 1]
        try:
            lines = parse_cosignatures(answer)
        except TlogError:
            msg = "its answer is not signature lines"
            raise _Skip(msg) from None
        for line in lines:
            try:
                cosigned_at = witness.verifier.verify_line(checkpoint_body, line)
            except TlogError:
                continue  # another key's line, or a bad one: only a valid line of its key counts
            if cosigned_at > self._clock() + MAX_CLOCK_SKEW_S:
                msg = f"its cosignature is dated {cosigned_at}, ahead of this server's clock"
                raise _Skip(msg)
            return Cosignature(tenant_id, latest.size, witness.name, cosigned_at, line)
        msg = "no valid cosignature by its key in its answer"
        raise _Skip(msg)
