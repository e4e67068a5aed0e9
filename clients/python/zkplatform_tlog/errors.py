"""What the transparency-log primitives raise: ValueErrors that carry a stable `reason`.

The reason is a short kebab-case code that the vector files (clients/testdata/tlog/*.json) name as
the expected outcome of a bad case, so that the Python and TypeScript implementations refuse the
same inputs for the same reason. The message says what is wrong, for people; it quotes sizes and
short identifiers, never whole inputs (notes, proofs, keys).
"""

from __future__ import annotations


class TlogError(ValueError):
    """A refused input: `reason` says which rule it broke (see each subclass for the codes)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class ProofError(TlogError):
    """A Merkle hash, proof or tree size that does not hold (merkle.py).

    Reasons: index-out-of-range, size-order, bad-hash-length, wrong-proof-length, root-mismatch.
    """


class CheckpointError(TlogError):
    """A checkpoint body that is not a C2SP tlog-checkpoint (checkpoint.py).

    Reasons: malformed-checkpoint, bad-origin, bad-size, bad-root-hash, bad-extension.
    """


class KeyFormatError(TlogError):
    """A verifier key (vkey), private key text or key name that is refused (note.py).

    Reasons: malformed-key, bad-key-name, key-id-mismatch, wrong-key-type.
    """


class NoteError(TlogError):
    """A signed note, signature line or cosignature that is refused (note.py).

    Reasons: malformed-note, malformed-signature-line, too-many-signatures, duplicate-signature,
    ambiguous-verifiers, duplicate-signer, no-signers, bad-signature, no-verified-signature,
    unknown-key, malformed-cosignature, bad-timestamp.
    """


class WireError(TlogError):
    """A tlog-witness message that is not what the protocol allows (witness_wire.py).

    Reasons: not-utf8, bad-old-size-line, bad-proof-line, too-many-proof-lines, missing-checkpoint,
    bad-size-body, bad-cosignature-response.
    """
