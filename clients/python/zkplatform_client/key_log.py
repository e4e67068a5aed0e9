"""The key log as a client verifies it (docs/key-transparency.md, "What a client does when it
verifies"): the pure core, no I/O and no clock, which the TypeScript package mirrors step for
step and clients/testdata/key-transparency.json pins for both.

`verify_update(state, update, policy, tenant_id, now, me)` takes the state a client verified
before (None for none) and what ListKeyLog answered from its size (`LogUpdate`), and answers
the new state with the alerts that update raised, or raises `KeyLogError` naming the first
check that failed, in this order:

1. the checkpoint: a note (CHECKPOINT_MALFORMED) signed by a pinned log key
   (CHECKPOINT_UNSIGNED), of the tenant's origin (CHECKPOINT_ORIGIN), cosigned by the
   policy's quorum of known witnesses (BELOW_QUORUM), the quorum's oldest cosignature at most
   `max_age_seconds` old (CHECKPOINT_STALE);
2. the log: not shorter than the held one (LOG_TRUNCATED), the consistency proof from the held
   checkpoint (LOG_FORKED), the entries from the held size to the checkpoint's without a gap
   (LOG_GAP), the root of every entry the checkpoint's (LOG_FORKED);
3. each new entry, replayed on the directory the entries before it made: well formed
   (ENTRY_MALFORMED) of a known format and type (ENTRY_UNSUPPORTED), of this tenant
   (ENTRY_MALFORMED); then by type,
   - DeviceKeys: a device id and an agreement key no device of the log has (ENTRY_MALFORMED:
     a replayed entry would bring a revoked device back); signatures keyed exactly [the
     device, then its endorser if it names one] (SIGNATURE_INVALID); the device's own
     signature (SIGNATURE_INVALID); no endorser only while the principal has no live device,
     an endorser only a live device of the principal (NOT_ENDORSED); the endorser's
     signature (SIGNATURE_INVALID);
   - DeviceRevocation: the device a live device of the principal (ENTRY_MALFORMED); one
     signature, keyed by the revoker (SIGNATURE_INVALID); the revoker a live device of the
     principal (NOT_ENDORSED); its signature (SIGNATURE_INVALID);
   - PrincipalReset: every signature keyed by a pinned log key's hash verifies with it, and
     there is one (SIGNATURE_INVALID); others are ignored (a key rotated out);
4. the alerts of this device (`Me`, docs/key-transparency.md "Owners are told: the alert
   rule", over the whole log as it stands, each entry raising one at most), and the resets
   of other principals, unacknowledged.

A failed update changes nothing: the caller keeps the state it had. `recipient_keys` answers
the live devices' agreement keys of a verified state; `acknowledge_reset` and
`acknowledge_alert` are what the application says back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from zkplatform_client.sealing import RecipientKey
from zkplatform_tlog.checkpoint import Checkpoint
from zkplatform_tlog.errors import CheckpointError, NoteError, ProofError
from zkplatform_tlog.merkle import EMPTY_ROOT, leaf_hash, root_hash, verify_consistency
from zkplatform_tlog.note import CosignatureVerifier, NoteVerifier, cosignature_timestamp, open_note
from zkplatform_tlog.statements import (
    DeviceKeys,
    DeviceRevocation,
    Entry,
    PrincipalReset,
    StatementError,
    ed25519_jwk,
    parse_entry,
    parse_statement,
    verify_statement,
)

__all__ = [
    "LOG_FORMAT",
    "Alert",
    "AlertKind",
    "KeyLogError",
    "KeyLogReason",
    "KeyLogState",
    "LogRecord",
    "LogUpdate",
    "LoggedDevice",
    "Me",
    "Reset",
    "TrustPolicy",
    "acknowledge_alert",
    "acknowledge_reset",
    "recipient_keys",
    "verify_update",
]

# The last element of every origin (`<log name>/<tenant id>/key-log/v1`): the log's format.
LOG_FORMAT: Final = "key-log/v1"

KeyLogReason = Literal[
    "CHECKPOINT_MALFORMED",
    "CHECKPOINT_UNSIGNED",
    "CHECKPOINT_ORIGIN",
    "BELOW_QUORUM",
    "CHECKPOINT_STALE",
    "LOG_TRUNCATED",
    "LOG_FORKED",
    "LOG_GAP",
    "ENTRY_MALFORMED",
    "ENTRY_UNSUPPORTED",
    "SIGNATURE_INVALID",
    "NOT_ENDORSED",
    "RESET_UNACKNOWLEDGED",
    "KEY_NOT_LIVE",
]
AlertKind = Literal["DEVICE_ADDED", "DEVICE_REVOKED", "PRINCIPAL_RESET"]

# NoteError reasons of a note that is not one at all, as against one that is not signed right.
_MALFORMED_NOTE: Final = frozenset({"malformed-note", "malformed-signature-line", "too-many-signatures"})


class KeyLogError(Exception):
    """A log, checkpoint or entry not to trust, or keys not to seal for; `reason` names the
    check (the module's docstring has them in their order, plus RESET_UNACKNOWLEDGED and
    KEY_NOT_LIVE of `recipient_keys` and KeyDirectory). The message never holds a key."""

    def __init__(self, reason: KeyLogReason, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason: KeyLogReason = reason
        self.message = message


@dataclass(frozen=True)
class TrustPolicy:
    """What a client trusts, from its operator, out of band: the log's note verifier keys
    (`log_keys`, two during a rotation), the witnesses' cosignature verifier keys, how many of
    them must have cosigned a checkpoint (`quorum`), and how old the quorum's oldest
    cosignature may be. A quorum of 0 trusts the server alone (no split-view protection, no
    freshness): only with no witnesses and `allow_no_witnesses=True`. ValueError otherwise."""

    log_keys: Sequence[str]
    witnesses: Sequence[str]
    quorum: int
    max_age_seconds: int = 3600
    allow_no_witnesses: bool = False
    log_verifiers: tuple[NoteVerifier, ...] = field(init=False, repr=False, compare=False)
    witness_verifiers: tuple[CosignatureVerifier, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "log_keys", tuple(self.log_keys))
        object.__setattr__(self, "witnesses", tuple(self.witnesses))
        if not self.log_keys:
            raise ValueError("a trust policy needs at least one log key")
        logs = tuple(NoteVerifier.from_vkey(vkey) for vkey in self.log_keys)
        witnesses = tuple(CosignatureVerifier.from_vkey(vkey) for vkey in self.witnesses)
        if len({(v.name, v.key_id) for v in logs}) != len(logs):
            raise ValueError("a log key is given twice")
        if len({(v.name, v.key_id) for v in witnesses}) != len(witnesses):
            raise ValueError("a witness is given twice")
        if self.quorum == 0:
            if witnesses or not self.allow_no_witnesses:
                raise ValueError(
                    "a quorum of 0 trusts the server alone: only with no witnesses and allow_no_witnesses=True"
                )
        elif not 1 <= self.quorum <= len(witnesses):
            raise ValueError(f"the quorum must be from 1 to the {len(witnesses)} witness(es) given")
        if self.max_age_seconds <= 0:
            raise ValueError("max_age_seconds must be positive")
        object.__setattr__(self, "log_verifiers", logs)
        object.__setattr__(self, "witness_verifiers", witnesses)


@dataclass(frozen=True)
class LogUpdate:
    """What ListKeyLog answered from `start_index` (the size the client holds): the last page's
    checkpoint note and consistency proof, and every page's entries as (index, data)."""

    checkpoint: str
    start_index: int
    entries: Sequence[tuple[int, str]]
    consistency_proof: Sequence[bytes] = ()


@dataclass(frozen=True)
class Me:
    """This device, for the alerts of docs/key-transparency.md, "Owners are told": its
    principal, its device ids (every one it ever published) and the canonical texts of the
    statements it made (its publications and revocations) or endorsed."""

    principal_id: str
    device_ids: Sequence[str] = ()
    statements: Sequence[str] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "device_ids", tuple(dict.fromkeys(self.device_ids)))
        object.__setattr__(self, "statements", tuple(dict.fromkeys(self.statements)))

    def made(self, statement: str, device_id: str | None = None) -> Me:
        """This device, having made (or endorsed) `statement`, and published `device_id`."""
        ids = [*self.device_ids, device_id] if device_id else self.device_ids
        return Me(self.principal_id, ids, [*self.statements, statement])

    def merged(self, other: Me) -> Me:
        """Both records of this device in one (ValueError for two principals)."""
        if other.principal_id != self.principal_id:
            raise ValueError(f"this state is principal {self.principal_id}'s, not {other.principal_id}'s")
        return Me(self.principal_id, [*self.device_ids, *other.device_ids], [*self.statements, *other.statements])


@dataclass(frozen=True)
class Alert:
    """An entry about this device's own principal that it did not make: a device added or
    revoked, or a reset (`device_id` "" for a reset)."""

    index: int
    kind: AlertKind
    device_id: str


@dataclass(frozen=True)
class Reset:
    """A reset of `principal_id`, the log's entry `index`."""

    principal_id: str
    index: int


@dataclass(frozen=True)
class LoggedDevice:
    """A device as the verified log made it: published by entry `index`, revoked by entry
    `revoked_index` (a revocation's or a reset's), live while that is None."""

    device_id: str
    principal_id: str
    signing_jwk: str
    agreement_jwk: str
    agreement_key_id: str
    endorser: str
    index: int
    revoked_index: int | None = None

    @property
    def live(self) -> bool:
        return self.revoked_index is None

    def live_at(self, size: int) -> bool:
        """Live in the log's first `size` entries."""
        return self.index < size and (self.revoked_index is None or self.revoked_index >= size)


@dataclass(frozen=True)
class LogRecord:
    """What an entry did, for the alerts: its kind, the device (or "" for a reset) and the
    canonical text of its statement."""

    index: int
    principal_id: str
    kind: AlertKind
    device_id: str
    statement: str


@dataclass(frozen=True)
class KeyLogState:
    """A tenant's key log as this client verified it: the checkpoint (size, root, note), every
    entry's data, the devices they made and the resets among them; the alerts not yet
    acknowledged and the entries whose alerts were, the resets of other principals not yet
    acknowledged and those that were; and this device (`me`)."""

    tenant_id: str
    size: int = 0
    root: bytes = EMPTY_ROOT
    note: str = ""
    entries: tuple[str, ...] = ()
    devices: Mapping[str, LoggedDevice] = field(default_factory=dict)  # by device id, in log order
    resets: tuple[Reset, ...] = ()
    alerts: tuple[Alert, ...] = ()
    acknowledged_alerts: tuple[int, ...] = ()
    unacknowledged_resets: tuple[Reset, ...] = ()
    acknowledged_resets: tuple[Reset, ...] = ()
    me: Me | None = None
    leaf_hashes: tuple[bytes, ...] = field(default=(), repr=False, compare=False)
    records: tuple[LogRecord, ...] = field(default=(), repr=False, compare=False)  # one an entry

    def principals(self) -> list[str]:
        """Every principal the log names: those of devices, in log order, then those of resets only."""
        named = [device.principal_id for device in self.devices.values()]
        named += [reset.principal_id for reset in self.resets]
        return list(dict.fromkeys(named))

    def devices_of(self, principal_id: str) -> list[LoggedDevice]:
        """The principal's devices, live and revoked, in log order."""
        return [device for device in self.devices.values() if device.principal_id == principal_id]

    def live_devices(self, principal_id: str) -> list[LoggedDevice]:
        return [device for device in self.devices_of(principal_id) if device.live]

    def device(self, device_id: str) -> LoggedDevice | None:
        """The device `device_id` as the verified log holds it, live or revoked (None when the
        log never published it): what sealing.py's `open_item` checks a signer against."""
        return self.devices.get(device_id)


def verify_update(  # noqa: PLR0913, PLR0917 - the signature both packages share
    state: KeyLogState | None,
    update: LogUpdate,
    policy: TrustPolicy,
    tenant_id: str,
    now: float,
    me: Me | None,
) -> tuple[KeyLogState, list[Alert]]:
    """The state after `update`, and the alerts it raised; KeyLogError (the module's docstring
    has the checks and their order) with nothing changed otherwise. `me` is this device (None:
    a client that is no device raises no alert and holds every reset unacknowledged)."""
    held = state if state is not None else KeyLogState(tenant_id)
    if held.tenant_id != tenant_id:
        raise ValueError(f"this state is tenant {held.tenant_id}'s log, not {tenant_id}'s")
    checkpoint = open_checkpoint(update.checkpoint, policy, tenant_id, now)
    _check_extends(held, checkpoint, update)
    hashes = held.leaf_hashes or tuple(leaf_hash(data.encode()) for data in held.entries)
    new_entries = tuple(data for _, data in update.entries)
    hashes += tuple(leaf_hash(data.encode()) for data in new_entries)
    if root_hash(hashes) != checkpoint.root_hash:
        raise KeyLogError("LOG_FORKED", f"the entries do not make the checkpoint's root (size {checkpoint.size})")

    log = _Directory(dict(held.devices), list(held.resets))
    replayed = [log.replay(index, data, tenant_id, policy) for index, data in update.entries]
    records = held.records + tuple(replayed)
    raised = {alert.index for alert in held.alerts} | set(held.acknowledged_alerts)
    alerts = [alert for alert in _alerts(me, records, log, checkpoint.size) if alert.index not in raised]
    others = [
        Reset(r.principal_id, r.index)
        for r in replayed
        if r.kind == "PRINCIPAL_RESET" and (me is None or r.principal_id != me.principal_id)
    ]
    verified = KeyLogState(
        tenant_id=tenant_id,
        size=checkpoint.size,
        root=checkpoint.root_hash,
        note=update.checkpoint,
        entries=held.entries + new_entries,
        devices=log.devices,
        resets=tuple(log.resets),
        alerts=held.alerts + tuple(alerts),
        acknowledged_alerts=held.acknowledged_alerts,
        unacknowledged_resets=held.unacknowledged_resets + tuple(others),
        acknowledged_resets=held.acknowledged_resets,
        me=me,
        leaf_hashes=hashes,
        records=records,
    )
    return verified, alerts


def open_checkpoint(note: str, policy: TrustPolicy, tenant_id: str, now: float) -> Checkpoint:
    """The checkpoint of `note` once step 1 passed (the module's docstring); KeyLogError otherwise."""
    try:
        opened = open_note(note, policy.log_verifiers)
    except NoteError as error:
        if error.reason in _MALFORMED_NOTE:
            raise KeyLogError("CHECKPOINT_MALFORMED", f"the checkpoint is not a signed note: {error}") from None
        raise KeyLogError("CHECKPOINT_UNSIGNED", f"no pinned log key signed the checkpoint: {error}") from None
    try:
        checkpoint = Checkpoint.parse(opened.text)
    except CheckpointError as error:
        raise KeyLogError("CHECKPOINT_MALFORMED", f"the checkpoint's body: {error}") from None
    origins = {f"{signature.name}/{tenant_id}/{LOG_FORMAT}" for signature in opened.verified}
    if checkpoint.origin not in origins:
        raise KeyLogError("CHECKPOINT_ORIGIN", f"the checkpoint is not of tenant {tenant_id}'s key log")
    times = sorted(_cosigned(note, policy.witness_verifiers), reverse=True)
    if len(times) < policy.quorum:
        raise KeyLogError(
            "BELOW_QUORUM", f"{len(times)} known witness(es) cosigned the checkpoint, {policy.quorum} needed"
        )
    if policy.quorum and now - times[policy.quorum - 1] > policy.max_age_seconds:
        age = int(now - times[policy.quorum - 1])
        raise KeyLogError(
            "CHECKPOINT_STALE", f"the quorum's oldest cosignature is {age} s old, over {policy.max_age_seconds} s"
        )
    return checkpoint


def _cosigned(note: str, witnesses: Iterable[CosignatureVerifier]) -> list[int]:
    """The times of the valid cosignatures of each known witness (one a witness): a line that
    does not verify does not count."""
    times = []
    for witness in witnesses:
        try:
            opened = open_note(note, [witness])
        except NoteError:
            continue
        times.append(cosignature_timestamp(opened.verified[0].signature))
    return times


def _check_extends(held: KeyLogState, checkpoint: Checkpoint, update: LogUpdate) -> None:
    """Step 2 of the module's docstring, but the root: the checkpoint extends the held one and
    the update's entries are exactly those in between."""
    if checkpoint.size < held.size:
        raise KeyLogError("LOG_TRUNCATED", f"the checkpoint's size {checkpoint.size} is below the held {held.size}")
    try:
        verify_consistency(held.size, checkpoint.size, held.root, checkpoint.root_hash, list(update.consistency_proof))
    except ProofError as error:
        raise KeyLogError(
            "LOG_FORKED", f"the checkpoint at {checkpoint.size} does not extend the held one at {held.size}: {error}"
        ) from None
    if update.start_index != held.size:
        raise KeyLogError("LOG_GAP", f"the entries start at {update.start_index}, not at the held size {held.size}")
    for expected, (index, _) in enumerate(update.entries, start=held.size):
        if index != expected:
            raise KeyLogError("LOG_GAP", f"entry {index} where entry {expected} was due")
    end = held.size + len(update.entries)
    if end != checkpoint.size:
        raise KeyLogError("LOG_GAP", f"the entries end at {end}, not at the checkpoint's size {checkpoint.size}")


@dataclass
class _Directory:
    """The devices and resets of the log, as entries are replayed onto it."""

    devices: dict[str, LoggedDevice]
    resets: list[Reset]

    def live(self, principal_id: str) -> list[LoggedDevice]:
        return [d for d in self.devices.values() if d.principal_id == principal_id and d.live]

    def replay(self, index: int, data: str, tenant_id: str, policy: TrustPolicy | None) -> LogRecord:
        """Apply entry `index`, checked first (step 3) against `policy`; unchecked without one (a
        state read back from its store, verified when it was saved)."""
        try:
            entry = parse_entry(data)
        except StatementError as error:
            raise KeyLogError(error.reason, f"entry {index}: {error}") from None
        statement = entry.statement
        if statement.tenant_id != tenant_id:
            raise KeyLogError("ENTRY_MALFORMED", f"entry {index} is of another tenant")
        text = statement.canonical().decode()
        if isinstance(statement, DeviceKeys):
            if policy is not None:
                self._check_device(index, entry, statement)
            self.devices[statement.device_id] = LoggedDevice(
                statement.device_id,
                statement.principal_id,
                statement.signing_jwk,
                statement.agreement_jwk,
                statement.agreement_key_id,
                statement.endorser,
                index,
            )
            return LogRecord(index, statement.principal_id, "DEVICE_ADDED", statement.device_id, text)
        if isinstance(statement, DeviceRevocation):
            if policy is not None:
                self._check_revocation(index, entry, statement)
            self.devices[statement.device] = replace(self.devices[statement.device], revoked_index=index)
            return LogRecord(index, statement.principal_id, "DEVICE_REVOKED", statement.device, text)
        if policy is not None:
            _check_reset(index, entry, statement, policy)
        for device in self.live(statement.principal_id):
            self.devices[device.device_id] = replace(device, revoked_index=index)
        self.resets.append(Reset(statement.principal_id, index))
        return LogRecord(index, statement.principal_id, "PRINCIPAL_RESET", "", text)

    def _check_device(self, index: int, entry: Entry, statement: DeviceKeys) -> None:
        device_id, endorser = statement.device_id, statement.endorser
        if device_id in self.devices:
            raise KeyLogError("ENTRY_MALFORMED", f"entry {index} publishes device {device_id} again")
        if any(d.agreement_key_id == statement.agreement_key_id for d in self.devices.values()):
            raise KeyLogError("ENTRY_MALFORMED", f"entry {index} publishes an agreement key another device has")
        signers = [device_id, endorser] if endorser else [device_id]
        if [signature.key_id for signature in entry.signatures] != signers:
            raise KeyLogError(
                "SIGNATURE_INVALID", f"entry {index}'s signatures are not the device's then its endorser's"
            )
        if not verify_statement(statement.signing_jwk, statement, entry.signatures[0].signature):
            raise KeyLogError("SIGNATURE_INVALID", f"entry {index}: the new device's signature does not verify")
        live = self.live(statement.principal_id)
        if not endorser:
            if live:
                raise KeyLogError(
                    "NOT_ENDORSED", f"entry {index}: a first device of {statement.principal_id}, who has live devices"
                )
            return
        endorsing = next((d for d in live if d.device_id == endorser), None)
        if endorsing is None:
            raise KeyLogError(
                "NOT_ENDORSED", f"entry {index}: the endorser is not a live device of {statement.principal_id}"
            )
        if not verify_statement(endorsing.signing_jwk, statement, entry.signatures[1].signature):
            raise KeyLogError("SIGNATURE_INVALID", f"entry {index}: the endorser's signature does not verify")

    def _check_revocation(self, index: int, entry: Entry, statement: DeviceRevocation) -> None:
        live = {d.device_id: d for d in self.live(statement.principal_id)}
        if statement.device not in live:
            raise KeyLogError(
                "ENTRY_MALFORMED", f"entry {index} revokes a device that is not a live device of its principal"
            )
        if [signature.key_id for signature in entry.signatures] != [statement.revoker]:
            raise KeyLogError("SIGNATURE_INVALID", f"entry {index}'s signature is not its revoker's")
        revoker = live.get(statement.revoker)
        if revoker is None:
            raise KeyLogError(
                "NOT_ENDORSED", f"entry {index}: the revoker is not a live device of {statement.principal_id}"
            )
        if not verify_statement(revoker.signing_jwk, statement, entry.signatures[0].signature):
            raise KeyLogError("SIGNATURE_INVALID", f"entry {index}: the revoker's signature does not verify")


def _check_reset(index: int, entry: Entry, statement: PrincipalReset, policy: TrustPolicy) -> None:
    """Every signature by a pinned log key verifies, and there is one (others are ignored: a key
    rotated out of the policy)."""
    keys = {verifier.key_id.hex(): verifier for verifier in policy.log_verifiers}
    signed = False
    for signature in entry.signatures:
        verifier = keys.get(signature.key_id)
        if verifier is None:
            continue
        jwk = ed25519_jwk(Ed25519PublicKey.from_public_bytes(verifier.public_key))
        if not verify_statement(jwk, statement, signature.signature):
            raise KeyLogError("SIGNATURE_INVALID", f"entry {index}: the log key's signature does not verify")
        signed = True
    if not signed:
        raise KeyLogError("SIGNATURE_INVALID", f"entry {index}: a reset that no pinned log key signed")


def _alerts(me: Me | None, records: Sequence[LogRecord], log: _Directory, size: int) -> list[Alert]:
    """The entries of the whole log that the rule of docs/key-transparency.md, "Owners are told",
    makes alerts of, as it stands now (the caller leaves out those that raised one before)."""
    if me is None:
        return []
    boundary = _exempt_through(me, log, size)
    mine = set(me.device_ids)
    made = set(me.statements)
    return [
        Alert(r.index, r.kind, r.device_id)
        for r in records
        if r.principal_id == me.principal_id
        and r.index > boundary
        and r.statement not in made
        and not (r.kind == "DEVICE_ADDED" and r.device_id in mine)
    ]


def _exempt_through(me: Me, log: _Directory, size: int) -> int:
    """The last index of the principal's history before this device joined, which raises no
    alert: before its endorsed publication (its endorser answered for it), or through the
    principal's last reset before its first-device publication (nothing of the principal may
    come between: it had no live device). A device not in the log yet joins at its size, as a
    first device if `me` holds its first-device statement."""
    mine = [d for d in log.devices.values() if d.device_id in me.device_ids and d.principal_id == me.principal_id]
    if mine:
        anchor = min(mine, key=lambda d: d.index)
        at, first = anchor.index, not anchor.endorser
    else:
        at, first = size, any(_is_first_device(text, me.principal_id) for text in me.statements)
    if not first:
        return at - 1
    resets = [r.index for r in log.resets if r.principal_id == me.principal_id and r.index < at]
    return max(resets, default=-1)


def _is_first_device(text: str, principal_id: str) -> bool:
    try:
        statement = parse_statement(text)
    except StatementError:
        return False
    return isinstance(statement, DeviceKeys) and statement.principal_id == principal_id and not statement.endorser


def recipient_keys(state: KeyLogState, principal_ids: Iterable[str]) -> dict[str, list[RecipientKey]]:
    """The agreement keys of the live devices of each principal (in log order; none for a
    principal the log does not name), what `seal` may wrap for; KeyLogError
    RESET_UNACKNOWLEDGED for a principal with a live device published after a reset the
    application has not acknowledged (`acknowledge_reset`)."""
    answer: dict[str, list[RecipientKey]] = {}
    for principal_id in dict.fromkeys(principal_ids):
        live = state.live_devices(principal_id)
        for reset in state.unacknowledged_resets:
            if reset.principal_id == principal_id and any(device.index > reset.index for device in live):
                raise KeyLogError(
                    "RESET_UNACKNOWLEDGED",
                    f"{principal_id} was reset (entry {reset.index}) and has a new device: acknowledge the reset first",
                )
        answer[principal_id] = [
            RecipientKey(device.agreement_key_id, device.agreement_jwk, principal_id, device.device_id)
            for device in live
        ]
    return answer


def acknowledge_reset(state: KeyLogState, principal_id: str, index: int) -> KeyLogState:
    """The state once the application acknowledged the reset of `principal_id` at entry `index`
    (ValueError when there is no such unacknowledged reset)."""
    reset = Reset(principal_id, index)
    if reset not in state.unacknowledged_resets:
        raise ValueError(f"no unacknowledged reset of {principal_id} at entry {index}")
    remaining = tuple(r for r in state.unacknowledged_resets if r != reset)
    return replace(state, unacknowledged_resets=remaining, acknowledged_resets=(*state.acknowledged_resets, reset))


def acknowledge_alert(state: KeyLogState, index: int) -> KeyLogState:
    """The state without the alert of entry `index`, which raises none again (ValueError when
    none is pending)."""
    remaining = tuple(alert for alert in state.alerts if alert.index != index)
    if len(remaining) == len(state.alerts):
        raise ValueError(f"no pending alert of entry {index}")
    return replace(state, alerts=remaining, acknowledged_alerts=(*state.acknowledged_alerts, index))


def restore_state(document: Mapping[str, Any]) -> KeyLogState:
    """A state from `state_document`'s output, its directory made again from its entries (not
    checked again: they were when it was saved); ValueError when the document is not whole
    (its entries do not make its checkpoint's root)."""
    tenant_id = str(document["tenantId"])
    checkpoint = document["checkpoint"]
    entries = tuple(str(data) for data in document["entries"])
    hashes = tuple(leaf_hash(data.encode()) for data in entries)
    root = bytes.fromhex(str(checkpoint["rootHex"]))
    if len(entries) != int(checkpoint["size"]) or root_hash(hashes) != root:
        raise ValueError("the key log state's entries do not make its checkpoint")
    log = _Directory({}, [])
    try:
        records = tuple(log.replay(index, data, tenant_id, None) for index, data in enumerate(entries))
    except (KeyLogError, KeyError) as error:
        raise ValueError(f"the key log state holds an entry that does not replay: {error}") from None
    me = document.get("me")
    return KeyLogState(
        tenant_id=tenant_id,
        size=len(entries),
        root=root,
        note=str(checkpoint["note"]),
        entries=entries,
        devices=log.devices,
        resets=tuple(log.resets),
        alerts=tuple(Alert(int(a["index"]), a["kind"], str(a["deviceId"])) for a in document["alerts"]),
        acknowledged_alerts=tuple(int(index) for index in document["acknowledgedAlerts"]),
        unacknowledged_resets=_resets(document["unacknowledgedResets"]),
        acknowledged_resets=_resets(document["acknowledgedResets"]),
        me=None if me is None else Me(str(me["principalId"]), me["deviceIds"], me["statements"]),
        leaf_hashes=hashes,
        records=records,
    )


def state_document(state: KeyLogState) -> dict[str, Any]:
    """The state as JSON values (`restore_state` reads them back): what its stores keep."""
    me = state.me
    return {
        "tenantId": state.tenant_id,
        "checkpoint": {"size": state.size, "rootHex": state.root.hex(), "note": state.note},
        "entries": list(state.entries),
        "alerts": [{"index": a.index, "kind": a.kind, "deviceId": a.device_id} for a in state.alerts],
        "acknowledgedAlerts": list(state.acknowledged_alerts),
        "unacknowledgedResets": [_reset(r) for r in state.unacknowledged_resets],
        "acknowledgedResets": [_reset(r) for r in state.acknowledged_resets],
        "me": None
        if me is None
        else {"principalId": me.principal_id, "deviceIds": list(me.device_ids), "statements": list(me.statements)},
    }


def _reset(reset: Reset) -> dict[str, Any]:
    return {"principalId": reset.principal_id, "index": reset.index}


def _resets(documents: Iterable[Mapping[str, Any]]) -> tuple[Reset, ...]:
    return tuple(Reset(str(d["principalId"]), int(d["index"])) for d in documents)
