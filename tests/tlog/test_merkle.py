"""zkplatform_tlog.merkle against clients/testdata/tlog/merkle.json (transparency-dev/merkle's RFC
6962 vectors and probes), and generated trees: every proof made verifies, every change refused."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import cache
from typing import Any, ParamSpec

import pytest

from tests.tlog.vectors import case_id, load, outcome
from zkplatform_tlog.errors import ProofError
from zkplatform_tlog.merkle import (
    EMPTY_ROOT,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    node_hash,
    root_hash,
    verify_consistency,
    verify_inclusion,
)

VECTORS = load("merkle.json")
LEAF_HASHES = [leaf_hash(bytes.fromhex(leaf)) for leaf in VECTORS["tree"]["leaves"]]


def hexes(values: list[str]) -> list[bytes]:
    return [bytes.fromhex(value) for value in values]


@pytest.mark.parametrize("case", VECTORS["hashes"], ids=lambda case: case["kind"])
def test_hashes(case: dict[str, Any]) -> None:
    if case["kind"] == "empty":
        got = EMPTY_ROOT
    elif case["kind"] == "leaf":
        got = leaf_hash(bytes.fromhex(case["data"]))
    else:
        got = node_hash(bytes.fromhex(case["left"]), bytes.fromhex(case["right"]))
    assert got.hex() == case["hash"]


def test_tree_roots_and_nodes() -> None:
    tree = VECTORS["tree"]
    assert [root_hash(LEAF_HASHES[:size]).hex() for size in range(len(LEAF_HASHES) + 1)] == tree["roots"]
    for level, nodes in enumerate(tree["nodeHashes"]):
        width = 1 << level
        assert [root_hash(LEAF_HASHES[i * width : (i + 1) * width]).hex() for i in range(len(nodes))] == nodes


@pytest.mark.parametrize("case", VECTORS["inclusionProofs"], ids=lambda case: f"{case['index']}:{case['size']}")
def test_inclusion_proofs(case: dict[str, Any]) -> None:
    leaves, index, proof = LEAF_HASHES[: case["size"]], case["index"], hexes(case["proof"])
    assert inclusion_proof(leaves, index) == proof
    verify_inclusion(leaves[index], index, len(leaves), proof, bytes.fromhex(VECTORS["tree"]["roots"][len(leaves)]))


@pytest.mark.parametrize("case", VECTORS["consistencyProofs"], ids=lambda case: f"{case['oldSize']}:{case['newSize']}")
def test_consistency_proofs(case: dict[str, Any]) -> None:
    roots, proof = VECTORS["tree"]["roots"], hexes(case["proof"])
    assert consistency_proof(LEAF_HASHES[: case["newSize"]], case["oldSize"]) == proof
    old, new = case["oldSize"], case["newSize"]
    verify_consistency(old, new, bytes.fromhex(roots[old]), bytes.fromhex(roots[new]), proof)


@pytest.mark.parametrize("case", VECTORS["inclusionProbes"], ids=case_id)
def test_inclusion_probes(case: dict[str, Any]) -> None:
    leaf, root, proof = bytes.fromhex(case["leafHash"]), bytes.fromhex(case["root"]), hexes(case["proof"])
    outcome(lambda: verify_inclusion(leaf, case["index"], case["size"], proof, root), case["error"])


@pytest.mark.parametrize("case", VECTORS["consistencyProbes"], ids=case_id)
def test_consistency_probes(case: dict[str, Any]) -> None:
    old_root, new_root, proof = bytes.fromhex(case["oldRoot"]), bytes.fromhex(case["newRoot"]), hexes(case["proof"])
    outcome(lambda: verify_consistency(case["oldSize"], case["newSize"], old_root, new_root, proof), case["error"])


def test_probes_agree_with_upstream_but_for_the_deviations() -> None:
    """Every upstream probe is refused or accepted as upstream says, except the one the file's
    `deviations` names; every reason is documented."""
    differing = []
    for case in VECTORS["inclusionProbes"] + VECTORS["consistencyProbes"]:
        assert case["error"] is None or case["error"] in VECTORS["about"]["reasons"]
        if case["upstreamWantErr"] is not None and case["upstreamWantErr"] != (case["error"] is not None):
            differing.append(case["source"].split()[-1])
    assert differing == ["testdata/consistency/additional/sizes-are-equal-one-and-proof-is-empty.json"]
    assert all(name in VECTORS["about"]["deviations"][1] for name in differing)


# Generated trees: every size up to MAX_SIZE, leaves of varied pseudo-random bytes (the same each run).
MAX_SIZE = 70
P = ParamSpec("P")
LEAVES = [leaf_hash(b"%d" % i + hashlib.sha256(b"%d" % i).digest()[: i % 33]) for i in range(MAX_SIZE + 2)]


@cache
def root(size: int) -> bytes:
    return root_hash(LEAVES[:size])


@cache
def path(index: int, size: int) -> tuple[bytes, ...]:
    return tuple(inclusion_proof(LEAVES[:size], index))


@cache
def proof(old: int, new: int) -> tuple[bytes, ...]:
    return tuple(consistency_proof(LEAVES[:new], old))


def refused(reason: str | None, call: Callable[P, None], *args: P.args, **kwargs: P.kwargs) -> None:
    """`call(*args)` raises ProofError, for `reason` unless it is None."""
    with pytest.raises(ProofError) as raised:
        call(*args, **kwargs)
    assert reason is None or raised.value.reason == reason, str(raised.value)


def flipped(value: bytes, bit: int) -> bytes:
    bit %= 8 * len(value)
    return value[: bit // 8] + bytes([value[bit // 8] ^ (1 << bit % 8)]) + value[bit // 8 + 1 :]


def changed(proof: list[bytes], index: int, bit: int) -> list[bytes]:
    return [*proof[:index], flipped(proof[index], bit), *proof[index + 1 :]]


def test_generated_inclusion_proofs() -> None:
    for size in range(1, MAX_SIZE + 1):
        for index in range(size):
            leaf, good, good_root = LEAVES[index], list(path(index, size)), root(size)
            verify_inclusion(leaf, index, size, good, good_root)
            # Another size, with that size's own root: accepted only if the proofs are the same.
            for other in range(index + 1, size + 3):
                if list(path(index, other)) == good:
                    verify_inclusion(leaf, index, other, good, root(other))
                else:
                    refused(None, verify_inclusion, leaf, index, other, good, root(other))
            for other in {index - 1, index + 1, index ^ 2} - {index}:
                refused(None, verify_inclusion, leaf, other, size, good, good_root)
            refused("root-mismatch", verify_inclusion, LEAVES[size], index, size, good, good_root)
            refused("root-mismatch", verify_inclusion, leaf, index, size, good, flipped(good_root, size + index))
            for i in range(len(good)):
                refused("root-mismatch", verify_inclusion, leaf, index, size, changed(good, i, 7 * i + size), good_root)
            for bad in (good[:-1], [*good, good_root], [good_root, *good]):
                if bad != good:
                    refused("wrong-proof-length", verify_inclusion, leaf, index, size, bad, good_root)


def test_generated_consistency_proofs() -> None:
    for new in range(MAX_SIZE + 1):
        for old in range(new + 1):
            good, roots = list(proof(old, new)), (root(old), root(new))
            verify_consistency(old, new, *roots, good)
            # Other sizes, with their own roots: accepted only if the proofs are the same.
            for other_old in range(max(old - 1, 0), old + 2):
                for other_new in range(max(new - 1, other_old), new + 2):
                    other_roots = root(other_old), root(other_new)
                    if list(proof(other_old, other_new)) == good:
                        verify_consistency(other_old, other_new, *other_roots, good)
                    else:
                        refused(None, verify_consistency, other_old, other_new, *other_roots, good)
            refused("size-order", verify_consistency, new + 1, new, *roots, good)
            refused("root-mismatch", verify_consistency, old, new, flipped(roots[0], old), roots[1], good)
            if old > 0 or new == 0:
                # From the empty tree to a larger one, any new root is consistent.
                refused("root-mismatch", verify_consistency, old, new, roots[0], flipped(roots[1], new), good)
            for i in range(len(good)):
                refused("root-mismatch", verify_consistency, old, new, *roots, changed(good, i, 5 * i + old))
            for bad in (good[:-1], [*good, roots[1]], [roots[0], *good]):
                if bad != good:
                    refused("wrong-proof-length", verify_consistency, old, new, *roots, bad)


def test_proof_generation_refuses_what_is_not_in_the_tree() -> None:
    for leaves, index in ((LEAVES[:5], 5), (LEAVES[:5], -1), ([], 0)):
        with pytest.raises(ProofError, match="leaf index"):
            inclusion_proof(leaves, index)
    for old in (6, -1):
        with pytest.raises(ProofError, match="old size"):
            consistency_proof(LEAVES[:5], old)
    with pytest.raises(ProofError, match="5 bytes"):
        root_hash([b"short"])
    assert root_hash([]) == EMPTY_ROOT
    assert consistency_proof([], 0) == []


def test_large_tree_without_deep_recursion() -> None:
    leaves = [leaf_hash(i.to_bytes(4, "big")) for i in range(5000)]
    verify_inclusion(leaves[4321], 4321, 5000, inclusion_proof(leaves, 4321), root_hash(leaves))
    verify_consistency(3333, 5000, root_hash(leaves[:3333]), root_hash(leaves), consistency_proof(leaves, 3333))


def test_messages_are_short() -> None:
    with pytest.raises(ProofError) as raised:
        verify_consistency(5, 8, root(5), root(8), [root(1)] * 60)
    assert len(str(raised.value)) < 100
