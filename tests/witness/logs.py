"""Key logs for the witness's tests: leaves, signed checkpoints and add-checkpoint requests, made
with zkplatform_tlog as the server makes them."""

from __future__ import annotations

from dataclasses import dataclass, field

from zkplatform_tlog.checkpoint import Checkpoint
from zkplatform_tlog.merkle import consistency_proof, leaf_hash, root_hash
from zkplatform_tlog.note import NoteSigner, NoteVerifier, generate_signer_key, sign_note
from zkplatform_tlog.witness_wire import encode_add_checkpoint

LOG_NAME = "keys.example.test"


def log_signer(name: str = LOG_NAME) -> NoteSigner:
    return NoteSigner.from_skey(generate_signer_key(name)[0])


@dataclass
class TestLog:
    """One tenant's key log: entries made up as needed, checkpoints signed by `signer`."""

    __test__ = False  # not a test class, whatever its name

    tenant_id: str = "acme"
    signer: NoteSigner = field(default_factory=log_signer)
    salt: str = ""  # another salt makes another log of the same origin: a fork

    @property
    def origin(self) -> str:
        return f"{self.signer.name}/{self.tenant_id}/key-log/v1"

    @property
    def verifier(self) -> NoteVerifier:
        return self.signer.verifier()

    def hashes(self, size: int) -> list[bytes]:
        return [leaf_hash(f"{self.salt}entry {index}".encode()) for index in range(size)]

    def body(self, size: int) -> str:
        return Checkpoint(self.origin, size, root_hash(self.hashes(size))).body()

    def note(self, size: int, *signers: NoteSigner) -> str:
        return sign_note(self.body(size), signers or (self.signer,))

    def request(self, old: int, size: int, *, proof: list[bytes] | None = None, note: str | None = None) -> bytes:
        """An add-checkpoint body from `old` to `size`, with the right proof unless given one."""
        if proof is None:
            proof = consistency_proof(self.hashes(size), old) if old <= size else []
        return encode_add_checkpoint(old, proof, note if note is not None else self.note(size))
