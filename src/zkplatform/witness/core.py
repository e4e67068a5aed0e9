"""The witness's decision on an add-checkpoint request (C2SP tlog-witness), without HTTP: what
`zkplatform witness serve` answers, and what the development witness answers in process.

A witness of this server knows the server's log keys and accepts the key logs they sign, whose
origins are `<log key name>/<tenant id>/key-log/v1` (docs/key-transparency.md). It cosigns a
checkpoint only if it extends the latest one it cosigned for that origin, as a consistency proof
shows, and then holds the new one: a log that shows two parties two different trees cannot get
both cosigned. The same checkpoint again is cosigned again, with the current time: that is how
the log keeps its cosignatures fresh when nothing changes.

The checks run in the spec's order: the request's syntax (400), the origin (404), the log key's
signature (403), the old size against the checkpoint's (400), the old size against the held one
(409, answering the held size), the proof (422); the last two and the update of the held
checkpoint are one atomic step of the state.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from zkplatform.domain.clock import Clock, system_clock
from zkplatform.witness.state import Held, WitnessState
from zkplatform_tlog.checkpoint import Checkpoint
from zkplatform_tlog.errors import CheckpointError, NoteError, ProofError, WireError
from zkplatform_tlog.merkle import verify_consistency
from zkplatform_tlog.note import CosignatureVerifier, Cosigner, NoteVerifier, open_note
from zkplatform_tlog.witness_wire import (
    SIZE_CONTENT_TYPE,
    STATUS_BAD_REQUEST,
    STATUS_CONFLICT,
    STATUS_FORBIDDEN,
    STATUS_NOT_FOUND,
    STATUS_OK,
    STATUS_UNPROCESSABLE,
    AddCheckpoint,
    encode_cosignatures,
    encode_size,
    parse_add_checkpoint,
)

ORIGIN_SUFFIX: Final = "/key-log/v1"
TEXT: Final = "text/plain; charset=utf-8"
# A tenant id, as platform.v1 restricts it.
_TENANT_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")
# The note's refusals that concern a trusted key's signature (403); any other is a malformed note (400).
_SIGNATURE_REFUSALS: Final = frozenset({"bad-signature", "no-verified-signature", "duplicate-signature"})


@dataclass(frozen=True, slots=True)
class Answer:
    """What add-checkpoint answers: status, body and content type, and for a refusal why, in
    words for the witness's log (sizes, reasons and the origin: nothing secret)."""

    status: int
    body: bytes
    content_type: str
    origin: str = ""
    refusal: str = ""


class WitnessCore:
    """A witness: its cosignature key, the log keys it trusts, and its state."""

    def __init__(
        self,
        cosigner: Cosigner,
        log_keys: Sequence[NoteVerifier],
        state: WitnessState,
        clock: Clock = system_clock,
    ) -> None:
        self._cosigner = cosigner
        self._log_keys = tuple(log_keys)
        self._state = state
        self._clock = clock

    @property
    def verifier(self) -> CosignatureVerifier:
        """The key that checks this witness's cosignatures."""
        return self._cosigner.verifier()

    @property
    def log_names(self) -> list[str]:
        """The names of the logs it witnesses (the first element of their origins)."""
        return sorted({key.name for key in self._log_keys})

    async def add_checkpoint(self, body: bytes) -> Answer:
        try:
            request = parse_add_checkpoint(body)
        except WireError as error:
            return _refused(STATUS_BAD_REQUEST, "", f"malformed request ({error.reason})")
        origin = request.claimed_origin()
        keys = self._keys_for(origin)
        if not keys:
            return _refused(STATUS_NOT_FOUND, "", "unknown origin")
        try:
            text = open_note(request.note, keys).text
        except NoteError as error:
            status = STATUS_FORBIDDEN if error.reason in _SIGNATURE_REFUSALS else STATUS_BAD_REQUEST
            return _refused(status, origin, f"checkpoint note refused ({error.reason})")
        try:
            checkpoint = Checkpoint.parse(text)
        except CheckpointError as error:
            return _refused(STATUS_BAD_REQUEST, origin, f"malformed checkpoint ({error.reason})")
        if request.old_size > checkpoint.size:
            why = f"old size {request.old_size} is above the checkpoint's size {checkpoint.size}"
            return _refused(STATUS_BAD_REQUEST, origin, why)
        return await self._state.update(origin, functools.partial(self._decide, request, checkpoint, text))

    def _keys_for(self, origin: str) -> list[NoteVerifier]:
        """The log keys that may sign `origin`: those named as its log, if it is a tenant's key log."""
        if not origin.endswith(ORIGIN_SUFFIX):
            return []
        log_name, _, tenant_id = origin.removesuffix(ORIGIN_SUFFIX).rpartition("/")
        if not _TENANT_ID.fullmatch(tenant_id):
            return []
        return [key for key in self._log_keys if key.name == log_name]

    def _decide(
        self, request: AddCheckpoint, checkpoint: Checkpoint, text: str, held: Held
    ) -> tuple[Held | None, Answer]:
        """Within the state's transaction: cosign if the request extends what is held."""
        origin = checkpoint.origin
        if request.old_size != held.size:
            why = f"old size {request.old_size} is not the held size {held.size}"
            return None, Answer(STATUS_CONFLICT, encode_size(held.size), SIZE_CONTENT_TYPE, origin, why)
        try:
            verify_consistency(held.size, checkpoint.size, held.root_hash, checkpoint.root_hash, request.proof)
        except ProofError as error:
            # A same-size checkpoint with another root is a fork of what this witness cosigned.
            why = f"not consistent with the held size {held.size} ({error.reason}) at size {checkpoint.size}"
            return None, _refused(STATUS_UNPROCESSABLE, origin, why)
        line = self._cosigner.cosign(text, self._clock())
        return Held(checkpoint.size, checkpoint.root_hash), Answer(STATUS_OK, encode_cosignatures([line]), TEXT)


def _refused(status: int, origin: str, why: str) -> Answer:
    return Answer(status, why.encode() + b"\n", TEXT, origin, why)
