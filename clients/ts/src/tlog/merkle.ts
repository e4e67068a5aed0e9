// The Merkle tree of a transparency log: RFC 9162 section 2.1 (the tree of RFC 6962 section 2.1),
// SHA-256 throughout. Hashing of leaves and nodes (2.1.1), the tree head, inclusion proofs and
// their verification (2.1.3.1, 2.1.3.2), consistency proofs and their verification (2.1.4.1,
// 2.1.4.2). The proofs built here are what RFC 9162 specifies and what transparency-dev/merkle
// builds, checked against its published vectors.
//
// Verification refuses with a ProofError whose reason is the first check that fails, in the order
// the Python package (zkplatform_tlog/merkle.py) checks: the sizes (index-out-of-range, size-order,
// then unsafe-size), the length of every hash given (bad-hash-length), the number of proof hashes
// (wrong-proof-length), then the hashes (root-mismatch). Consistency from the empty tree (old size
// 0), which RFC 9162 leaves undefined, is what C2SP tlog-witness makes of it: the empty tree is
// consistent with every tree, so the proof must be empty and the old root the empty tree's.
//
// Sizes and indexes are numbers: non-negative safe integers (up to 2^53 - 1), anything else is
// refused (unsafe-size). The verification counts with arithmetic, not with the 32-bit bitwise
// operators, so that sizes past 2^32 are counted right.
import { sha256 } from "@noble/hashes/sha2.js";
import { concatBytes, equalBytes, isSafeSize } from "./encoding.js";
import { ProofError } from "./errors.js";

export { ProofError, type ProofErrorReason } from "./errors.js";

/** The size of every hash in the tree (SHA-256). */
export const HASH_SIZE = 32;

const LEAF_PREFIX = Uint8Array.of(0x00);
const NODE_PREFIX = Uint8Array.of(0x01);
// The private copy every comparison uses: EMPTY_ROOT is exported, and a Uint8Array cannot be frozen.
const EMPTY = sha256(new Uint8Array(0));

/** The root hash of the empty tree: SHA-256 of the empty string (RFC 9162 section 2.1.1). */
export const EMPTY_ROOT: Uint8Array = EMPTY.slice();

/** The hash of a leaf: SHA-256(0x00 || data). */
export function leafHash(data: Uint8Array): Uint8Array {
  return sha256(concatBytes(LEAF_PREFIX, data));
}

/**
 * The hash of an interior node: SHA-256(0x01 || left || right). Like RFC 6962's HashChildren (and
 * its published vectors) it hashes children of any length; the proofs and their verification only
 * ever give it 32-byte hashes.
 */
export function nodeHash(left: Uint8Array, right: Uint8Array): Uint8Array {
  return sha256(concatBytes(NODE_PREFIX, left, right));
}

function checkHash(hash: Uint8Array, what: string): void {
  if (!(hash instanceof Uint8Array) || hash.length !== HASH_SIZE) {
    throw new ProofError("bad-hash-length", `${what} is not ${HASH_SIZE} bytes`);
  }
}

// Sizes and indexes are first held to their order, as Python does, whatever their magnitude (an
// index of 2^64 - 1 in a tree of 8 leaves is out of range, however imprecisely a number holds
// it); then to what a number holds exactly (unsafe-size).
function checkOrder(low: number, high: number, strict: boolean, reason: "index-out-of-range" | "size-order", message: string): void {
  if (Number.isInteger(low) && Number.isInteger(high) && (low < 0 || high < 0 || low > high || (strict && low === high))) {
    throw new ProofError(reason, message);
  }
}

function checkSize(value: number, what: string): void {
  if (!isSafeSize(value)) throw new ProofError("unsafe-size", `${what} is not a non-negative safe integer`);
}

function checkLeaves(leafHashes: readonly Uint8Array[]): void {
  leafHashes.forEach((hash) => checkHash(hash, "leaf hash"));
}

/** The largest power of two smaller than n, for n >= 2 (RFC 9162's k). */
function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** MTH(D[n]) of RFC 9162 section 2.1.1, of leaf hashes (not of leaf data). */
export function rootHash(leafHashes: readonly Uint8Array[]): Uint8Array {
  checkLeaves(leafHashes);
  return leafHashes.length === 0 ? EMPTY.slice() : mth(leafHashes, 0, leafHashes.length);
}

// MTH of leafHashes[start:end], end > start.
function mth(leaves: readonly Uint8Array[], start: number, end: number): Uint8Array {
  if (end - start === 1) return leaves[start]!.slice();
  const k = split(end - start);
  return nodeHash(mth(leaves, start, start + k), mth(leaves, start + k, end));
}

/** PATH(index, D[n]) of RFC 9162 section 2.1.3.1: the inclusion proof of one leaf, bottom up. */
export function inclusionProof(leafHashes: readonly Uint8Array[], index: number): Uint8Array[] {
  checkLeaves(leafHashes);
  checkOrder(index, leafHashes.length, true, "index-out-of-range", `leaf index ${index} is not in a tree of ${leafHashes.length} leaves`);
  checkSize(index, "leaf index");
  const path: Uint8Array[] = [];
  // Walk down from the root, collecting the sibling of each subtree the leaf is in; the proof
  // lists them from the leaf up.
  let [start, end, m] = [0, leafHashes.length, index];
  while (end - start > 1) {
    const k = split(end - start);
    if (m < k) {
      path.push(mth(leafHashes, start + k, end));
      end = start + k;
    } else {
      path.push(mth(leafHashes, start, start + k));
      start += k;
      m -= k;
    }
  }
  return path.reverse();
}

/**
 * PROOF(oldSize, D[n]) of RFC 9162 section 2.1.4.1: the consistency proof from the tree of the first
 * oldSize leaves to the tree of all of them. Empty when oldSize is 0 (the empty tree is consistent
 * with every tree) or the tree size.
 */
export function consistencyProof(leafHashes: readonly Uint8Array[], oldSize: number): Uint8Array[] {
  checkLeaves(leafHashes);
  checkOrder(oldSize, leafHashes.length, false, "size-order", `old size ${oldSize} is not between 0 and the tree size ${leafHashes.length}`);
  checkSize(oldSize, "old size");
  if (oldSize === 0) return [];
  const proof: Uint8Array[] = [];
  // SUBPROOF(m, D[start:end], b), unrolled: each step descends into one half and records the other.
  let [start, end, m, whole] = [0, leafHashes.length, oldSize, true];
  while (m !== end - start) {
    const k = split(end - start);
    if (m <= k) {
      proof.push(mth(leafHashes, start + k, end));
      end = start + k;
    } else {
      proof.push(mth(leafHashes, start, start + k));
      start += k;
      m -= k;
      whole = false;
    }
  }
  if (!whole) proof.push(mth(leafHashes, start, end));
  return proof.reverse();
}

/**
 * Verify that the leaf with this hash is at this index of the tree of this size and root (RFC 9162
 * section 2.1.3.2); throws ProofError when it is not, or when an argument is out of range
 * (index >= size, a hash not 32 bytes). RFC 9162's loop runs out of tree exactly when the proof
 * is longer than the path, and ends short of the root exactly when it is shorter: both are
 * wrong-proof-length, found before any hash is compared.
 */
export function verifyInclusion(
  leaf: Uint8Array,
  index: number,
  size: number,
  proof: readonly Uint8Array[],
  root: Uint8Array,
): void {
  checkOrder(index, size, true, "index-out-of-range", `leaf index ${index} is not in a tree of ${size} leaves`);
  checkSize(index, "leaf index");
  checkSize(size, "tree size");
  checkHash(leaf, "leaf hash");
  checkHash(root, "root hash");
  proof.forEach((hash) => checkHash(hash, "proof hash"));

  let [fn, sn, r] = [index, size - 1, leaf];
  for (const p of proof) {
    if (sn === 0) throw new ProofError("wrong-proof-length", `inclusion proof has ${proof.length} hashes, more than the path to the root`);
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        // A right border node with no sibling at these levels: climb until the path turns.
        while (fn % 2 === 0 && fn !== 0) [fn, sn] = [fn / 2, Math.floor(sn / 2)];
      }
    } else {
      r = nodeHash(r, p);
    }
    [fn, sn] = [Math.floor(fn / 2), Math.floor(sn / 2)];
  }
  if (sn !== 0) throw new ProofError("wrong-proof-length", `inclusion proof has ${proof.length} hashes, fewer than the path to the root`);
  if (!equalBytes(r, root)) throw new ProofError("root-mismatch", "inclusion proof does not lead to the root hash");
}

/**
 * Verify that the tree of newSize leaves and newRoot extends the tree of oldSize leaves and oldRoot
 * (RFC 9162 section 2.1.4.2); throws ProofError when it does not, or when an argument is out of
 * range. Equal sizes need an empty proof and equal roots. Old size 0 needs an empty proof and the
 * empty tree's root as the old root (and as the new one when the new size is 0 too).
 */
export function verifyConsistency(
  oldSize: number,
  newSize: number,
  oldRoot: Uint8Array,
  newRoot: Uint8Array,
  proof: readonly Uint8Array[],
): void {
  checkOrder(oldSize, newSize, false, "size-order", `old size ${oldSize} is not between 0 and the new size ${newSize}`);
  checkSize(oldSize, "old size");
  checkSize(newSize, "new size");
  checkHash(oldRoot, "old root hash");
  checkHash(newRoot, "new root hash");
  proof.forEach((hash) => checkHash(hash, "proof hash"));
  if (oldSize === 0 || oldSize === newSize) {
    if (proof.length !== 0) throw new ProofError("wrong-proof-length", `consistency proof has ${proof.length} hashes, want none`);
    if (oldSize === 0 && !equalBytes(oldRoot, EMPTY)) throw new ProofError("root-mismatch", "old root hash is not the root of the empty tree");
    if (newSize === 0 && !equalBytes(newRoot, EMPTY)) throw new ProofError("root-mismatch", "new root hash is not the root of the empty tree");
    if (oldSize === newSize && !equalBytes(oldRoot, newRoot)) throw new ProofError("root-mismatch", "new root hash is not the old one, of a tree of the same size");
    return;
  }
  if (proof.length === 0) throw new ProofError("wrong-proof-length", "consistency proof is empty");

  // Step 2: when the old tree is a complete subtree, its root is the first node of the path.
  const path = isPowerOfTwo(oldSize) ? [oldRoot, ...proof] : [...proof];
  let [fn, sn] = [oldSize - 1, newSize - 1];
  while (fn % 2 === 1) [fn, sn] = [Math.floor(fn / 2), Math.floor(sn / 2)];
  let fr = path[0]!;
  let sr = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0) throw new ProofError("wrong-proof-length", `consistency proof has ${proof.length} hashes, more than the sizes need`);
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) [fn, sn] = [fn / 2, Math.floor(sn / 2)];
      }
    } else {
      sr = nodeHash(sr, c);
    }
    [fn, sn] = [Math.floor(fn / 2), Math.floor(sn / 2)];
  }
  if (sn !== 0) throw new ProofError("wrong-proof-length", `consistency proof has ${proof.length} hashes, fewer than the sizes need`);
  if (!equalBytes(fr, oldRoot)) throw new ProofError("root-mismatch", "old root hash is not where the consistency proof leads");
  if (!equalBytes(sr, newRoot)) throw new ProofError("root-mismatch", "new root hash is not where the consistency proof leads");
}

function isPowerOfTwo(n: number): boolean {
  let k = 1;
  while (k < n) k *= 2;
  return k === n;
}
