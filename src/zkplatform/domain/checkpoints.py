"""The key log's checkpoints: the server's log keys, the signed checkpoint of a tenant's log as
it is now (what the witnesses are sent), and the checkpoint the server answers with (the newest
one its witnesses cosigned, with their cosignatures).

The formats are zkplatform_tlog's (C2SP tlog-checkpoint bodies, signed notes, RFC 9162 roots);
docs/key-transparency.md, "Checkpoints", has them. Ed25519 signatures are deterministic, so the
note signed for the witnesses and the one served later for the same size are the same text, and
the cosignatures the witnesses made of one are valid on the other.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from zkplatform.domain.ports.key_log import KeyLogRepository
from zkplatform_tlog.checkpoint import Checkpoint
from zkplatform_tlog.merkle import root_hash
from zkplatform_tlog.note import NoteSigner, NoteVerifier, sign_note
from zkplatform_tlog.statements import EntrySignature, PrincipalReset

# The last element of every origin: the log's format version (docs/key-transparency.md).
LOG_FORMAT = "key-log/v1"


@dataclass(frozen=True, slots=True)
class LogKeys:
    """The server's log signing keys: one, or several during a rotation, all of the log's name.
    Every key signs every checkpoint; every key signs every reset entry."""

    signers: tuple[NoteSigner, ...]

    def __post_init__(self) -> None:
        if not self.signers:
            msg = "a log needs at least one log key"
            raise ValueError(msg)
        if len({signer.name for signer in self.signers}) != 1:
            msg = "every log key must have the same name: the log's"
            raise ValueError(msg)
        if len({signer.key_id for signer in self.signers}) != len(self.signers):
            msg = "the same log key is given twice"
            raise ValueError(msg)

    @property
    def name(self) -> str:
        """The log's name: the first element of every origin."""
        return self.signers[0].name

    def origin(self, tenant_id: str) -> str:
        return f"{self.name}/{tenant_id}/{LOG_FORMAT}"

    def verifiers(self) -> tuple[NoteVerifier, ...]:
        return tuple(signer.verifier() for signer in self.signers)

    def vkeys(self) -> tuple[str, ...]:
        """The verifier keys clients pin."""
        return tuple(verifier.vkey() for verifier in self.verifiers())

    def sign_reset(self, statement: PrincipalReset) -> tuple[EntrySignature, ...]:
        """A reset entry's signatures: one per log key, each named by its 8-hex-digit key hash."""
        text = statement.canonical().decode()
        return tuple(EntrySignature(signer.key_id.hex(), signer.sign(text)) for signer in self.signers)

    def sign(self, checkpoint: Checkpoint) -> str:
        """The checkpoint as a signed note, signed by every log key."""
        return sign_note(checkpoint.body(), self.signers)


def tree_root(leaf_hashes: Sequence[bytes]) -> bytes:
    """The RFC 9162 root of a log of these leaf hashes. O(n) over the whole log on every call:
    the one place to cache roots by (tenant, size) once logs grow long."""
    return root_hash(leaf_hashes)


@dataclass(frozen=True, slots=True)
class LatestCheckpoint:
    """A tenant's log as it is now: its size, its checkpoint signed by the log keys, and the leaf
    hashes of its entries (what consistency proofs to the witnesses are made from)."""

    size: int
    note: str
    leaf_hashes: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class ServedCheckpoint:
    """The checkpoint answers are read at: its size, the note (the log keys' signatures, then the
    witnesses' cosignatures), and the leaf hashes up to it."""

    size: int
    note: str
    leaf_hashes: tuple[bytes, ...]


class Checkpoints:
    """Checkpoints of each tenant's key log, over the store."""

    def __init__(self, store: KeyLogRepository, keys: LogKeys, witnesses: Iterable[str], quorum: int) -> None:
        self._store = store
        self._keys = keys
        self._witnesses = tuple(witnesses)  # the names of the witness keys whose cosignatures count
        if not 0 <= quorum <= len(self._witnesses):
            msg = f"the witness quorum must be from 0 to the {len(self._witnesses)} witness(es) configured"
            raise ValueError(msg)
        self._quorum = quorum

    @property
    def keys(self) -> LogKeys:
        return self._keys

    @property
    def quorum(self) -> int:
        return self._quorum

    def note(self, tenant_id: str, leaf_hashes: Sequence[bytes]) -> str:
        """The signed checkpoint of the tenant's log of these leaf hashes."""
        return self._keys.sign(Checkpoint(self._keys.origin(tenant_id), len(leaf_hashes), tree_root(leaf_hashes)))

    async def latest(self, tenant_id: str) -> LatestCheckpoint:
        """The tenant's log at its current size, signed: what the witnesses are sent."""
        size = await self._store.key_log_size(tenant_id)
        hashes = tuple(await self._store.key_log_hashes(tenant_id, size))
        return LatestCheckpoint(len(hashes), self.note(tenant_id, hashes), hashes)

    async def served(self, tenant_id: str) -> ServedCheckpoint:
        """The newest checkpoint of the tenant's log that the quorum of witnesses cosigned, with
        every cosignature held for it (with no witness configured: the log as it is now)."""
        size, cosignatures = await self._store.served_checkpoint(tenant_id, self._witnesses, self._quorum)
        hashes = tuple(await self._store.key_log_hashes(tenant_id, size))
        if len(hashes) != size:  # the store answered a size its log does not hold: never serve it
            msg = f"the store's served checkpoint of tenant {tenant_id} ({size}) is beyond its log ({len(hashes)})"
            raise RuntimeError(msg)
        lines = "".join(cosignature.line for cosignature in cosignatures if cosignature.witness in self._witnesses)
        return ServedCheckpoint(size, self.note(tenant_id, hashes) + lines, hashes)
