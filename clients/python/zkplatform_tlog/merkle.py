"""Merkle tree hashing and proofs of RFC 9162 section 2.1 (the tree of RFC 6962, SHA-256).

Owns: the leaf and node hashes (2.1.1), the tree head MTH (2.1.1), inclusion proofs PATH and their
verification (2.1.3.1, 2.1.3.2), consistency proofs PROOF/SUBPROOF and their verification
(2.1.4.1, 2.1.4.2). Hashes are 32-byte SHA-256 digests; sizes and indexes are non-negative ints.

Verification refuses with a ProofError whose reason is the first check that fails, in this order:
the sizes (index-out-of-range, size-order), then the length of every hash given (bad-hash-length),
then the number of proof hashes (wrong-proof-length), then the hashes themselves (root-mismatch).
Consistency from the empty tree (old size 0), which RFC 9162 leaves undefined, is what C2SP
tlog-witness makes of it: the empty tree is consistent with every tree, so the proof must be empty,
and the old root must be the empty tree's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Final

from zkplatform_tlog.errors import ProofError

HASH_SIZE: Final = 32
# MTH({}) = SHA-256() (2.1.1).
EMPTY_ROOT: Final = hashlib.sha256(b"").digest()


def leaf_hash(data: bytes) -> bytes:
    """MTH({d}) = SHA-256(0x00 || d)."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """SHA-256(0x01 || left || right), an interior node."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def root_hash(leaf_hashes: Sequence[bytes]) -> bytes:
    """MTH of the tree whose leaves have these hashes.

    Level by level: pairing neighbours and carrying an odd last node up unchanged builds the same
    tree as the RFC's split at the largest power of two below n, without recursion.
    """
    _check_hashes(leaf_hashes, "leaf hash")
    if not leaf_hashes:
        return EMPTY_ROOT
    level = list(leaf_hashes)
    while len(level) > 1:
        paired = [node_hash(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            paired.append(level[-1])
        level = paired
    return level[0]


def inclusion_proof(leaf_hashes: Sequence[bytes], index: int) -> list[bytes]:
    """PATH(index, D[n]) (2.1.3.1): the hashes that lead from leaf `index` to the root."""
    _check_hashes(leaf_hashes, "leaf hash")
    if not 0 <= index < len(leaf_hashes):
        raise ProofError("index-out-of-range", f"leaf index {index} is not in a tree of {len(leaf_hashes)} leaves")
    return _path(leaf_hashes, index)


def consistency_proof(leaf_hashes: Sequence[bytes], old_size: int) -> list[bytes]:
    """PROOF(old_size, D[n]) (2.1.4.1) from the tree of the first `old_size` leaves to the whole.

    Empty when old_size is 0 (the empty tree is consistent with any tree) or n.
    """
    _check_hashes(leaf_hashes, "leaf hash")
    if not 0 <= old_size <= len(leaf_hashes):
        raise ProofError("size-order", f"old size {old_size} is not between 0 and the tree size {len(leaf_hashes)}")
    if old_size in {0, len(leaf_hashes)}:
        return []
    return _subproof(leaf_hashes, old_size, complete=True)


def verify_inclusion(leaf: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes) -> None:
    """Check that `leaf` (a leaf hash) is leaf `index` of the tree of `size` leaves whose root is
    `root`, by the algorithm of 2.1.3.2; raise ProofError if not."""
    if not 0 <= index < size:
        raise ProofError("index-out-of-range", f"leaf index {index} is not in a tree of {size} leaves")
    _check_hash(leaf, "leaf hash")
    _check_hash(root, "root hash")
    _check_hashes(proof, "proof hash")
    want = _inclusion_proof_length(index, size)
    if len(proof) != want:
        raise ProofError("wrong-proof-length", f"inclusion proof has {len(proof)} hashes, want {want}")
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:  # pragma: no cover - the length check above rules it out; kept from the RFC
            raise ProofError("wrong-proof-length", "inclusion proof is longer than the path to the root")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while fn and not fn & 1:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:  # pragma: no cover - as above
        raise ProofError("wrong-proof-length", "inclusion proof is shorter than the path to the root")
    if r != root:
        raise ProofError("root-mismatch", "inclusion proof does not lead to the root hash")


def verify_consistency(old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]) -> None:
    """Check that the tree of `new_size` leaves with root `new_root` extends the tree of `old_size`
    leaves with root `old_root`, by the algorithm of 2.1.4.2; raise ProofError if not."""
    if not 0 <= old_size <= new_size:
        raise ProofError("size-order", f"old size {old_size} is not between 0 and the new size {new_size}")
    _check_hash(old_root, "old root hash")
    _check_hash(new_root, "new root hash")
    _check_hashes(proof, "proof hash")
    want = 0 if old_size in {0, new_size} else _consistency_proof_length(old_size, new_size)
    if len(proof) != want:
        raise ProofError("wrong-proof-length", f"consistency proof has {len(proof)} hashes, want {want}")
    if old_size == 0:
        # The empty tree is consistent with every tree, and has only one root.
        old_from_proof, new_from_proof = EMPTY_ROOT, EMPTY_ROOT if new_size == 0 else new_root
    elif old_size == new_size:
        old_from_proof, new_from_proof = old_root, old_root
    else:
        old_from_proof, new_from_proof = _consistency_roots(old_size, new_size, old_root, proof)
    if old_from_proof != old_root:
        what = "the root of the empty tree" if old_size == 0 else "where the consistency proof leads"
        raise ProofError("root-mismatch", f"old root hash is not {what}")
    if new_from_proof != new_root:
        what = "the old one, of a tree of the same size" if old_size == new_size else "where the proof leads"
        raise ProofError("root-mismatch", f"new root hash is not {what}")


def _consistency_roots(old_size: int, new_size: int, old_root: bytes, proof: Sequence[bytes]) -> tuple[bytes, bytes]:
    """fr and sr of 2.1.4.2 steps 2-6, for 0 < old_size < new_size and a proof of the right length:
    the old and new roots the proof leads to."""
    path = list(proof)
    if old_size & (old_size - 1) == 0:
        # The old tree is a complete subtree of the new one: its root is the proof's first node.
        path.insert(0, old_root)
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:  # pragma: no cover - the length check rules it out; kept from the RFC
            raise ProofError("wrong-proof-length", "consistency proof is longer than the path to the root")
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while fn and not fn & 1:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:  # pragma: no cover - as above
        raise ProofError("wrong-proof-length", "consistency proof is shorter than the path to the root")
    return fr, sr


def _inclusion_proof_length(index: int, size: int) -> int:
    # Below the level where the paths to `index` and to the last leaf part, one sibling a level
    # ("inner"); above it, one left sibling for each set bit that remains of the index ("border").
    inner = (index ^ (size - 1)).bit_length()
    return inner + (index >> inner).bit_count()


def _consistency_proof_length(old_size: int, new_size: int) -> int:
    # The inclusion proof of the old tree's last leaf, less the levels inside the largest complete
    # subtree that ends the old tree (whose root stands for them), plus that root itself unless the
    # old tree is that subtree (then the verifier already has it: the old root).
    shift = (old_size & -old_size).bit_length() - 1
    length = _inclusion_proof_length(old_size - 1, new_size) - shift
    return length if old_size == 1 << shift else length + 1


def _split(n: int) -> int:
    """k, the largest power of two smaller than n (n > 1)."""
    return 1 << ((n - 1).bit_length() - 1)


def _path(leaves: Sequence[bytes], m: int) -> list[bytes]:
    n = len(leaves)
    if n == 1:
        return []
    k = _split(n)
    if m < k:
        return [*_path(leaves[:k], m), root_hash(leaves[k:])]
    return [*_path(leaves[k:], m - k), root_hash(leaves[:k])]


def _subproof(leaves: Sequence[bytes], m: int, *, complete: bool) -> list[bytes]:
    """SUBPROOF(m, D[n], b) of 2.1.4.1, with b as `complete`."""
    n = len(leaves)
    if m == n:
        return [] if complete else [root_hash(leaves)]
    k = _split(n)
    if m <= k:
        return [*_subproof(leaves[:k], m, complete=complete), root_hash(leaves[k:])]
    return [*_subproof(leaves[k:], m - k, complete=False), root_hash(leaves[:k])]


def _check_hash(value: bytes, what: str) -> None:
    if len(value) != HASH_SIZE:
        raise ProofError("bad-hash-length", f"{what} has {len(value)} bytes, want {HASH_SIZE}")


def _check_hashes(values: Sequence[bytes], what: str) -> None:
    for value in values:
        _check_hash(value, what)
