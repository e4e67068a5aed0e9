// The transparency-log primitives of the npm package (zkplatform-client/tlog), as a consumer imports
// them; prints a JSON report {cases: [{file, name, ok, detail}]} that tests/e2e/test_ts_tlog.py reads.
//   node tlog_checks.js TLOG_TESTDATA_DIR ED25519_SPECCHECK_JSON
// - every case of every clients/testdata/tlog/*.json vector file: one report case per element of
//   each of its members other than "about" (one for a member that is not a list); a file or member
//   this script has no runner for is a failing case, so that nothing is skipped unseen;
// - "generated": random trees of 1 to 70 leaves, every inclusion and consistency proof verified,
//   and each mutated (hashes, lengths, leaves, indexes, sizes, roots) and refused, or accepted only
//   where the mutated claim is true and the proof is the one for it;
// - "ed25519-speccheck.json": each case of "Taming the Many EdDSAs" (clients/testdata) through the
//   package's one Ed25519 check, ed25519Verify; the detail starts with its verdict (accepted or
//   refused), which must be OpenSSL's, the Python package's (test_ts_tlog.py compares the lists);
// - "builtin": what the vector files do not cover yet: checkpoints (C2SP tlog-checkpoint's example
//   and refusals), the tlog-witness add-checkpoint messages (its example body), notes signed by a
//   log and cosigned, signatures only a cofactored check accepts refused in notes and cosignatures,
//   and that no key material shows in what a key object or an error prints.
import { createHash } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { inspect } from "node:util";
import { ed25519 } from "@noble/curves/ed25519.js";
import {
  ADD_CHECKPOINT_PATH,
  CheckpointError,
  CosignatureVerifier,
  Cosigner,
  EMPTY_ROOT,
  KeyFormatError,
  MAX_PROOF_LINES,
  NoteError,
  NoteSigner,
  NoteVerifier,
  ProofError,
  SIZE_CONTENT_TYPE,
  TlogError,
  WITNESS_STATUS,
  WireError,
  claimedOrigin,
  consistencyProof,
  ed25519Verify,
  encodeAddCheckpoint,
  encodeCosignatures,
  encodeSize,
  formatCheckpoint,
  generateCosignerKey,
  generateNoteKey,
  inclusionProof,
  leafHash,
  nodeHash,
  openCheckpoint,
  openNote,
  parseAddCheckpoint,
  parseCheckpoint,
  parseCosignatures,
  parseSignatureLine,
  parseSize,
  rootHash,
  signNote,
  signatureLine,
  verifyConsistency,
  verifyInclusion,
  type Verifier,
} from "zkplatform-client/tlog";

interface Case {
  file: string;
  name: string;
  ok: boolean;
  detail: string;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const cases: Case[] = [];

/** A check passes when it returns (its detail) and fails when it throws (the error's message). */
function check(file: string, name: string, run: () => string): void {
  try {
    cases.push({ file, name, ok: true, detail: run() });
  } catch (error) {
    cases.push({ file, name, ok: false, detail: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
  }
}

function fail(message: string): never {
  throw new Error(message);
}

function expect(condition: boolean, message: string): void {
  if (!condition) fail(message);
}

// What a call ends with: null when it returns, the reason of a TlogError; anything else is a bug.
function outcome(call: () => unknown): string | null {
  try {
    call();
    return null;
  } catch (error) {
    if (error instanceof TlogError) return error.reason;
    throw error;
  }
}

/** The call ends as the vector says (want null: it returns); what it returned, if it did. */
function attempt<T>(want: string | null, call: () => T): T | undefined {
  let value: T | undefined;
  const got = outcome(() => {
    value = call();
  });
  expect(got === want, `want ${want ?? "success"}, got ${got ?? "success"}`);
  return value;
}

/** As attempt, for a case's detail: the outcome. */
function expectOutcome(want: string | null, call: () => unknown): string {
  attempt(want, call);
  return want ?? "ok";
}

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex");
const fromHex = (text: string): Uint8Array => {
  expect(/^([0-9a-f]{2})*$/.test(text), "a vector field is not lowercase hex");
  return new Uint8Array(Buffer.from(text, "hex"));
};
const same = (a: Uint8Array, b: Uint8Array): boolean => Buffer.from(a).equals(Buffer.from(b));
const sameList = (a: readonly Uint8Array[], b: readonly Uint8Array[]): boolean => a.length === b.length && a.every((x, i) => same(x, b[i]));
const sha256 = (data: Uint8Array | string): Uint8Array => new Uint8Array(createHash("sha256").update(data).digest());

// The vector files' fields, read strictly: a field of another type than the runner expects fails the case.
function field(object: JsonObject, key: string): Json {
  expect(key in object, `the vector has no "${key}"`);
  return object[key];
}
function str(object: JsonObject, key: string): string {
  const value = field(object, key);
  return typeof value === "string" ? value : fail(`"${key}" is not a string`);
}
function strOrNull(object: JsonObject, key: string): string | null {
  const value = field(object, key);
  return value === null || typeof value === "string" ? value : fail(`"${key}" is not a string or null`);
}
function num(object: JsonObject, key: string): number {
  const value = field(object, key);
  // Integers past 2^53 arrive as decimal strings (readVectors): as numbers, however imprecise.
  if (typeof value === "string" && /^-?[0-9]+$/.test(value)) return Number(value);
  return typeof value === "number" ? value : fail(`"${key}" is not a number`);
}
function big(object: JsonObject, key: string): bigint {
  const value = field(object, key);
  if (typeof value === "number" && Number.isSafeInteger(value)) return BigInt(value);
  return typeof value === "string" && /^-?[0-9]+$/.test(value) ? BigInt(value) : fail(`"${key}" is not an integer`);
}
function list(object: JsonObject, key: string): Json[] {
  const value = field(object, key);
  return Array.isArray(value) ? value : fail(`"${key}" is not a list`);
}
function obj(value: Json, what: string): JsonObject {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? value : fail(`${what} is not an object`);
}
const strings = (values: Json[], what: string): string[] => values.map((v) => (typeof v === "string" ? v : fail(`${what} holds a non-string`)));
const hashes = (object: JsonObject, key: string): Uint8Array[] => strings(list(object, key), key).map(fromHex);

/**
 * A vector file; integers of 16 digits or more become decimal strings first, as JSON.parse would
 * round them (the timestamps 2^63 - 1 and 2^63, the index 2^64 - 1).
 */
function readVectors(path: string): JsonObject {
  const text = readFileSync(path, "utf8").replace(/("\s*:\s*)(-?[0-9]{16,})(?=\s*[,}\]])/g, '$1"$2"');
  return obj(JSON.parse(text) as Json, path);
}

// --- merkle.json ----------------------------------------------------------------------------------

function merkleVectors(file: string, data: JsonObject): Record<string, (item: JsonObject) => string> {
  const tree = obj(field(data, "tree"), "tree");
  const leaves = strings(list(tree, "leaves"), "leaves").map((leaf) => leafHash(fromHex(leaf)));
  const roots = strings(list(tree, "roots"), "roots").map(fromHex);
  const rootOf = (size: number): Uint8Array => roots[size] ?? fail(`no tree.roots[${size}]`);
  return {
    hashes: (item) => {
      const kind = str(item, "kind");
      const want = fromHex(str(item, "hash"));
      const got =
        kind === "empty" ? EMPTY_ROOT
        : kind === "leaf" ? leafHash(fromHex(str(item, "data")))
        : kind === "node" ? nodeHash(fromHex(str(item, "left")), fromHex(str(item, "right")))
        : fail(`unknown hash kind ${kind}`);
      expect(same(got, want), `${kind} hash differs`);
      return kind;
    },
    tree: () => {
      const levels = list(tree, "nodeHashes").map((level, l) => strings(Array.isArray(level) ? level : fail("nodeHashes"), `level ${l}`).map(fromHex));
      roots.forEach((root, n) => expect(same(rootHash(leaves.slice(0, n)), root), `root of the first ${n} leaves differs`));
      levels.forEach((level, l) =>
        level.forEach((node, i) => expect(same(rootHash(leaves.slice(i * 2 ** l, (i + 1) * 2 ** l)), node), `node ${l}/${i} differs`)),
      );
      return `${roots.length} roots, ${levels.flat().length} nodes`;
    },
    inclusionProofs: (item) => {
      const [index, size, proof] = [num(item, "index"), num(item, "size"), hashes(item, "proof")];
      expect(sameList(inclusionProof(leaves.slice(0, size), index), proof), "inclusionProof differs");
      verifyInclusion(leaves[index], index, size, proof, rootOf(size));
      return `leaf ${index} of ${size}`;
    },
    consistencyProofs: (item) => {
      const [oldSize, newSize, proof] = [num(item, "oldSize"), num(item, "newSize"), hashes(item, "proof")];
      expect(sameList(consistencyProof(leaves.slice(0, newSize), oldSize), proof), "consistencyProof differs");
      verifyConsistency(oldSize, newSize, rootOf(oldSize), rootOf(newSize), proof);
      return `${oldSize} to ${newSize}`;
    },
    inclusionProbes: (item) =>
      expectOutcome(strOrNull(item, "error"), () =>
        verifyInclusion(fromHex(str(item, "leafHash")), num(item, "index"), num(item, "size"), hashes(item, "proof"), fromHex(str(item, "root"))),
      ),
    consistencyProbes: (item) =>
      expectOutcome(strOrNull(item, "error"), () =>
        verifyConsistency(
          num(item, "oldSize"),
          num(item, "newSize"),
          fromHex(str(item, "oldRoot")),
          fromHex(str(item, "newRoot")),
          hashes(item, "proof"),
        ),
      ),
  };
}

// --- note.json ------------------------------------------------------------------------------------

function verifierOf(item: JsonObject): Verifier {
  const kind = str(item, "kind");
  const vkey = str(item, "vkey");
  return kind === "note" ? NoteVerifier.fromVkey(vkey) : kind === "cosignature" ? CosignatureVerifier.fromVkey(vkey) : fail(`unknown key kind ${kind}`);
}

// Every substring but the whole, and every copy with one character replaced by the next code point.
function manglings(key: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < key.length; i++) for (let j = i + 1; j <= key.length; j++) if (i !== 0 || j !== key.length) out.push(key.slice(i, j));
  for (let i = 0; i < key.length; i++) out.push(key.slice(0, i) + String.fromCodePoint(key.codePointAt(i)! + 1) + key.slice(i + 1));
  return out;
}

function noteVectors(): Record<string, (item: JsonObject) => string> {
  return {
    keygen: (item) => {
      const [kind, name, seed] = [str(item, "kind"), str(item, "name"), fromHex(str(item, "seed"))];
      const pair = kind === "note" ? generateNoteKey(name, seed) : kind === "cosignature" ? generateCosignerKey(name, seed) : fail(`unknown kind ${kind}`);
      expect(pair.skey === str(item, "skey"), "skey differs");
      expect(pair.vkey === str(item, "vkey"), "vkey differs");
      return kind;
    },
    vkeys: (item) => {
      const [error, kind, vkey] = [strOrNull(item, "error"), str(item, "kind"), str(item, "vkey")];
      const verifier = attempt(error, () => (kind === "note" ? NoteVerifier.fromVkey(vkey) : CosignatureVerifier.fromVkey(vkey)));
      if (verifier !== undefined) {
        expect(verifier.name === str(item, "name"), "name differs");
        expect(verifier.keyHash.toString(16).padStart(8, "0") === str(item, "keyId"), "key ID differs");
        expect(hex(verifier.publicKey) === str(item, "publicKey"), "public key differs");
        expect(verifier.vkey === vkey, "vkey differs");
      }
      return error ?? kind;
    },
    skeys: (item) => {
      const [error, kind, skey] = [strOrNull(item, "error"), str(item, "kind"), str(item, "skey")];
      const signer = attempt(error, () => (kind === "note" ? NoteSigner.fromSkey(skey) : Cosigner.fromSkey(skey)));
      if (signer !== undefined) expect(signer.vkey === str(item, "vkey"), "vkey differs");
      return error ?? kind;
    },
    keyManglings: (item) => {
      const [kind, key] = [str(item, "kind"), str(item, "key")];
      const parse = kind === "note-vkey" ? (k: string) => NoteVerifier.fromVkey(k) : kind === "note-skey" ? (k: string) => NoteSigner.fromSkey(k) : fail(`unknown kind ${kind}`);
      parse(key);
      const mangled = manglings(key);
      const accepted = mangled.filter((k) => outcome(() => parse(k)) === null);
      expect(accepted.length === 0, `${accepted.length} of ${mangled.length} manglings accepted`);
      return `${mangled.length} manglings refused`;
    },
    sign: (item) => {
      const error = strOrNull(item, "error");
      const signers = strings(list(item, "skeys"), "skeys").map((skey) => NoteSigner.fromSkey(skey));
      const note = attempt(error, () => signNote(str(item, "text"), signers));
      if (note !== undefined) expect(note === str(item, "note"), "note differs");
      return error ?? "ok";
    },
    open: (item) => {
      const error = strOrNull(item, "error");
      const verifiers = list(item, "vkeys").map((v) => verifierOf(obj(v, "vkeys[]")));
      const opened = attempt(error, () => openNote(str(item, "note"), verifiers));
      if (opened !== undefined) {
        expect(opened.text === str(item, "text"), "text differs");
        expect(JSON.stringify(opened.verified.map(signatureLine)) === JSON.stringify(list(item, "verified")), "verified lines differ");
        expect(JSON.stringify(opened.unverified.map(signatureLine)) === JSON.stringify(list(item, "unverified")), "unverified lines differ");
      }
      return error ?? `${opened?.verified.length} verified, ${opened?.unverified.length} unverified`;
    },
    cosign: (item) => {
      const error = strOrNull(item, "error");
      const cosigner = Cosigner.fromSkey(str(item, "skey"));
      const line = attempt(error, () => cosigner.cosign(str(item, "checkpoint"), big(item, "timestamp")));
      if (line !== undefined) expect(line === str(item, "line"), "line differs");
      return error ?? "ok";
    },
    cosignatureLines: (item) => {
      const error = strOrNull(item, "error");
      const verifier = CosignatureVerifier.fromVkey(str(item, "vkey"));
      const timestamp = attempt(error, () => verifier.verifyLine(str(item, "checkpoint"), str(item, "line")));
      if (timestamp !== undefined) expect(timestamp === big(item, "timestamp"), "timestamp differs");
      return error ?? `time ${timestamp}`;
    },
  };
}

// --- checkpoint.json and witness-wire.json --------------------------------------------------------

/**
 * Sizes are numbers here, so a size past 2^53 - 1 is refused where the Python package (whose
 * vectors these are) takes any size below 2^64: a case whose success needs one must end in the
 * refusal named here instead, and says so in its detail ("deviation: ..."), which
 * test_ts_tlog.py holds to a known list.
 */
function sizeOutcome(sizes: string[], want: string | null, refusal: string): { want: string | null; deviation: string } {
  const unsafe = sizes.some((size) => BigInt(size) > BigInt(Number.MAX_SAFE_INTEGER));
  if (want !== null || !unsafe) return { want, deviation: "" };
  return { want: refusal, deviation: `deviation: a size beyond 2^53 - 1 is refused (${refusal}); Python takes it` };
}

function checkpointVectors(): Record<string, (item: JsonObject) => string> {
  return {
    parse: (item) => {
      const body = str(item, "body");
      const error = strOrNull(item, "error");
      const { want, deviation } = sizeOutcome(error === null ? [str(item, "size")] : [], error, "bad-size");
      const checkpoint = attempt(want, () => parseCheckpoint(body));
      if (checkpoint !== undefined) {
        expect(checkpoint.origin === str(item, "origin"), "origin differs");
        expect(String(checkpoint.size) === str(item, "size"), "size differs");
        expect(hex(checkpoint.rootHash) === str(item, "rootHash"), "root hash differs");
        expect(JSON.stringify(checkpoint.extensions) === JSON.stringify(list(item, "extensions")), "extensions differ");
        expect(formatCheckpoint(checkpoint) === body, "does not format back");
      }
      return deviation || (want ?? "ok");
    },
    construct: (item) => {
      const error = strOrNull(item, "error");
      const size = str(item, "size");
      const { want, deviation } = sizeOutcome(error === null ? [size] : [], error, "bad-size");
      const checkpoint = { origin: str(item, "origin"), size: Number(size), rootHash: fromHex(str(item, "rootHash")), extensions: strings(list(item, "extensions"), "extensions") };
      const body = attempt(want, () => formatCheckpoint(checkpoint));
      if (body !== undefined) expect(body === str(item, "body"), "body differs");
      return deviation || (want ?? "ok");
    },
  };
}

function bodyOf(item: JsonObject): Uint8Array {
  return "bodyHex" in item ? fromHex(str(item, "bodyHex")) : new TextEncoder().encode(str(item, "body"));
}

function witnessWireVectors(): Record<string, (item: JsonObject) => string> {
  const decode = (bytes: string | Uint8Array) => (typeof bytes === "string" ? bytes : new TextDecoder().decode(bytes));
  return {
    constants: (item) => {
      expect(ADD_CHECKPOINT_PATH === str(item, "path"), "path differs");
      expect(SIZE_CONTENT_TYPE === str(item, "sizeContentType"), "size content type differs");
      expect(MAX_PROOF_LINES === num(item, "maxProofLines"), "maxProofLines differs");
      expect(JSON.stringify(WITNESS_STATUS) === JSON.stringify(obj(field(item, "statuses"), "statuses")), "statuses differ");
      return "ok";
    },
    requests: (item) => {
      const body = bodyOf(item);
      const error = strOrNull(item, "error");
      const { want, deviation } = sizeOutcome(error === null ? [str(item, "oldSize")] : [], error, "bad-old-size-line");
      const request = attempt(want, () => parseAddCheckpoint(body));
      if (request !== undefined) {
        expect(String(request.oldSize) === str(item, "oldSize"), "old size differs");
        expect(sameList(request.proof, hashes(item, "proof")), "proof differs");
        expect(request.note === str(item, "note"), "note differs");
        expect(claimedOrigin(request) === str(item, "claimedOrigin"), "claimed origin differs");
        expect(encodeAddCheckpoint(request) === decode(body), "does not encode back");
      }
      return deviation || (want ?? "ok");
    },
    encode: (item) => {
      const error = strOrNull(item, "error");
      const oldSize = str(item, "oldSize");
      const { want, deviation } = sizeOutcome(error === null ? [oldSize] : [], error, "bad-old-size-line");
      const body = attempt(want, () => encodeAddCheckpoint({ oldSize: Number(oldSize), proof: hashes(item, "proof"), note: str(item, "note") }));
      if (body !== undefined) expect(body === str(item, "body"), "body differs");
      return deviation || (want ?? "ok");
    },
    responses: (item) => {
      const body = bodyOf(item);
      const lines = attempt(strOrNull(item, "error"), () => parseCosignatures(body));
      if (lines !== undefined) {
        expect(JSON.stringify(lines) === JSON.stringify(list(item, "lines")), "lines differ");
        expect(encodeCosignatures(lines) === decode(body), "does not encode back");
      }
      return strOrNull(item, "error") ?? `${lines?.length} lines`;
    },
    sizes: (item) => {
      const body = str(item, "body");
      const error = strOrNull(item, "error");
      const { want, deviation } = sizeOutcome(error === null ? [str(item, "size")] : [], error, "bad-size-body");
      const size = attempt(want, () => parseSize(body));
      if (size !== undefined) {
        expect(String(size) === str(item, "size"), "size differs");
        expect(encodeSize(size) === body, "does not encode back");
      }
      return deviation || (want ?? "ok");
    },
  };
}

const RUNNERS: Record<string, (file: string, data: JsonObject) => Record<string, (item: JsonObject) => string>> = {
  "merkle.json": merkleVectors,
  "note.json": noteVectors,
  "checkpoint.json": checkpointVectors,
  "witness-wire.json": witnessWireVectors,
};

function runVectorFile(directory: string, file: string): void {
  const data = readVectors(join(directory, file));
  const runners = RUNNERS[file]?.(file, data) ?? {};
  for (const [member, value] of Object.entries(data)) {
    if (member === "about") continue;
    const items = Array.isArray(value) ? value : [value];
    items.forEach((item, i) => {
      const label = Array.isArray(value) ? `${member}[${i}]` : member;
      const desc = item !== null && typeof item === "object" && !Array.isArray(item) && typeof item.desc === "string" ? `: ${item.desc}` : "";
      const runner = runners[member];
      check(file, `${label}${desc}`, () => (runner ? runner(obj(item, label)) : fail(`tlog_checks.ts has no runner for ${file} ${member}`)));
    });
  }
}

// --- generated: random trees ----------------------------------------------------------------------

const MAX_LEAVES = 70;
// Leaf data from a fixed seed: a failure is the same on every run.
// Leaves of 1 to 32 bytes, all different; two more than the largest tree (for its n + 1).
const LEAVES = Array.from({ length: MAX_LEAVES + 2 }, (_, i) => leafHash(sha256(`tlog_checks leaf ${i}`).subarray(0, 1 + (i % 32))));

// The root by another algorithm than rootHash's split at the largest power of two: level by level,
// pairing neighbours and carrying an odd last node up.
function referenceRoot(leaves: readonly Uint8Array[]): Uint8Array {
  if (leaves.length === 0) return sha256(new Uint8Array(0));
  let level = [...leaves];
  while (level.length > 1) {
    const next: Uint8Array[] = [];
    for (let i = 0; i + 1 < level.length; i += 2) next.push(sha256(Buffer.concat([Uint8Array.of(1), level[i], level[i + 1]])));
    if (level.length % 2 === 1) next.push(level[level.length - 1]);
    level = next;
  }
  return level[0];
}

const ROOTS = LEAVES.map((_, n) => referenceRoot(LEAVES.slice(0, n)));

function flipped(proof: readonly Uint8Array[], at: number): Uint8Array[] {
  return proof.map((hash, i) => (i === at ? hash.map((byte, j) => (j === i % 32 ? byte ^ 1 : byte)) : hash));
}

function expectReason(want: string, call: () => unknown, what: string): void {
  const got = outcome(call);
  expect(got === want, `${what}: want ${want}, got ${got ?? "success"}`);
}

// Accepted exactly when the claim is true and the proof is the one for it (the generator, held to
// the published vectors above, says which); otherwise refused with a ProofError.
function expectIff(accept: boolean, call: () => unknown, what: string): void {
  const got = outcome(call);
  expect((got === null) === accept, `${what}: want ${accept ? "success" : "a refusal"}, got ${got ?? "success"}`);
}

function checkTree(n: number): string {
  const leaves = LEAVES.slice(0, n);
  const root = rootHash(leaves);
  expect(same(root, ROOTS[n]), "rootHash differs from the level-by-level root");
  const paths = leaves.map((_, i) => inclusionProof(leaves, i));
  let verified = 0;
  for (let i = 0; i < n; i++) {
    const proof = paths[i];
    verifyInclusion(leaves[i], i, n, proof, root);
    verified++;
    proof.forEach((_, at) => expectReason("root-mismatch", () => verifyInclusion(leaves[i], i, n, flipped(proof, at), root), `inclusion ${i}: hash ${at} flipped`));
    if (proof.length > 0) {
      expectReason("wrong-proof-length", () => verifyInclusion(leaves[i], i, n, proof.slice(1), root), `inclusion ${i}: first hash dropped`);
      expectReason("wrong-proof-length", () => verifyInclusion(leaves[i], i, n, proof.slice(0, -1), root), `inclusion ${i}: last hash dropped`);
    }
    expectReason("wrong-proof-length", () => verifyInclusion(leaves[i], i, n, [...proof, root], root), `inclusion ${i}: a hash appended`);
    expectReason("root-mismatch", () => verifyInclusion(LEAVES[n], i, n, proof, root), `inclusion ${i}: another leaf`);
    expectReason("root-mismatch", () => verifyInclusion(leaves[i], i, n, proof, ROOTS[n + 1]), `inclusion ${i}: another root`);
    expectReason("bad-hash-length", () => verifyInclusion(leaves[i].subarray(1), i, n, proof, root), `inclusion ${i}: a 31-byte leaf hash`);
    expectReason("index-out-of-range", () => verifyInclusion(leaves[i], n, n, proof, root), `inclusion ${i}: index n`);
    for (const j of [i - 1, i + 1].filter((j) => j >= 0 && j < n)) {
      expectIff(sameList(proof, paths[j]), () => verifyInclusion(leaves[j], j, n, proof, root), `inclusion ${i}: proof given for leaf ${j}`);
      expectIff(false, () => verifyInclusion(leaves[i], j, n, proof, root), `inclusion ${i}: claimed at index ${j}`);
    }
    for (const m of [n - 1, n + 1, 2 * n, Math.floor(n / 2)].filter((m) => m > i && m <= MAX_LEAVES + 1 && m !== n)) {
      const truth = inclusionProof(LEAVES.slice(0, m), i);
      expectIff(sameList(proof, truth), () => verifyInclusion(leaves[i], i, m, proof, ROOTS[m]), `inclusion ${i}: given for size ${m}`);
    }
  }
  for (let m = 0; m <= n; m++) {
    const proof = consistencyProof(leaves, m);
    verifyConsistency(m, n, ROOTS[m], root, proof);
    verified++;
    proof.forEach((_, at) => expectReason("root-mismatch", () => verifyConsistency(m, n, ROOTS[m], root, flipped(proof, at)), `consistency ${m}: hash ${at} flipped`));
    if (proof.length > 0) {
      expectReason("wrong-proof-length", () => verifyConsistency(m, n, ROOTS[m], root, proof.slice(1)), `consistency ${m}: first hash dropped`);
      expectReason("wrong-proof-length", () => verifyConsistency(m, n, ROOTS[m], root, proof.slice(0, -1)), `consistency ${m}: last hash dropped`);
    }
    expectReason("wrong-proof-length", () => verifyConsistency(m, n, ROOTS[m], root, [...proof, root]), `consistency ${m}: a hash appended`);
    // From the empty tree, any tree: the new root is not checked.
    expectIff(m === 0, () => verifyConsistency(m, n, ROOTS[m], ROOTS[n + 1], proof), `consistency ${m}: another new root`);
    if (m < n) {
      expectReason("root-mismatch", () => verifyConsistency(m, n, root, ROOTS[m], proof), `consistency ${m}: roots swapped`);
      expectReason("size-order", () => verifyConsistency(n, m, root, ROOTS[m], proof), `consistency ${m}: sizes swapped`);
    }
    if (m > 0) expectReason("root-mismatch", () => verifyConsistency(m, n, ROOTS[m - 1], root, proof), `consistency ${m}: another old root`);
    for (const k of [m - 1, m + 1].filter((k) => k >= 0 && k <= n)) {
      const truth = consistencyProof(leaves, k);
      expectIff(sameList(proof, truth), () => verifyConsistency(k, n, ROOTS[k], root, proof), `consistency ${m}: given from size ${k}`);
    }
    for (const k of [n - 1, n + 1].filter((k) => k >= m && k <= MAX_LEAVES + 1)) {
      const truth = consistencyProof(LEAVES.slice(0, k), m);
      expectIff(sameList(proof, truth), () => verifyConsistency(m, k, ROOTS[m], ROOTS[k], proof), `consistency ${m}: given to size ${k}`);
    }
  }
  return `${verified} proofs verified, and their mutations refused`;
}

// --- builtin --------------------------------------------------------------------------------------

// C2SP tlog-checkpoint's and tlog-witness's examples.
const SOFA = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n";
const WITNESS_EXAMPLE = [
  "old 20852014",
  "PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=",
  "jrJZDmY8Y7SyJE0MWLpLozkIVMSMZcD5kvuKxPC3swk=",
  "5+pKlUdi2LeF/BcMHBn+Ku6yhPGNCswZZD1X/6QgPd8=",
  "/6WVhPs2CwSsb5rYBH5cjHV/wSmA79abXAwhXw3Kj/0=",
  "",
  "example.com/behind-the-sofa",
  "20852163",
  "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=",
  "",
  "— example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=",
  "— example.com/behind-the-sofa opLqBQsREYCgu6xQkYQwJr9fo45a62DN9EdmHXnZdXNqlcVGlCum2Wks+49/V6267UEjw6QUXTS5Rovnzv++qbSzm9Q=",
  "",
].join("\n");

function builtinCheckpoints(): void {
  const file = "builtin";
  check(file, "checkpoint: the tlog-checkpoint example", () => {
    const checkpoint = parseCheckpoint(SOFA);
    expect(checkpoint.origin === "example.com/behind-the-sofa" && checkpoint.size === 20852163, "origin or size differs");
    expect(Buffer.from(checkpoint.rootHash).toString("base64") === "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=", "root differs");
    expect(checkpoint.extensions.length === 0 && formatCheckpoint(checkpoint) === SOFA, "does not format back");
    const extended = `${SOFA}ext one\next two\n`;
    expect(formatCheckpoint(parseCheckpoint(extended)) === extended, "extension lines do not format back");
    return "ok";
  });
  const refusals: [string, string, string][] = [
    ["no final newline", SOFA.slice(0, -1), "malformed-checkpoint"],
    ["two lines", "example.com/behind-the-sofa\n20852163\n", "malformed-checkpoint"],
    ["a leading zero", SOFA.replace("\n20852163\n", "\n020852163\n"), "bad-size"],
    ["a plus sign", SOFA.replace("\n20852163\n", "\n+20852163\n"), "bad-size"],
    ["a space", SOFA.replace("\n20852163\n", "\n 20852163\n"), "bad-size"],
    ["size 2^53 (beyond a safe integer; Python takes it)", SOFA.replace("\n20852163\n", "\n9007199254740992\n"), "bad-size"],
    ["an empty origin", SOFA.replace("example.com/behind-the-sofa", ""), "bad-origin"],
    ["a control character in the origin", SOFA.replace("example.com", "example\u0001com"), "bad-origin"],
    ["a 31-byte root", SOFA.replace("CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=", Buffer.alloc(31).toString("base64")), "bad-root-hash"],
    ["a root without padding", SOFA.replace("xq2I=", "xq2I"), "bad-root-hash"],
    ["non-canonical base64", SOFA.replace("xq2I=", "xq2J="), "bad-root-hash"],
    ["an empty extension line", `${SOFA}\n`, "bad-extension"],
  ];
  for (const [name, text, reason] of refusals) check(file, `checkpoint: ${name}`, () => expectOutcome(reason, () => parseCheckpoint(text)));
  check(file, "checkpoint: format refuses what parse would", () => {
    const good = parseCheckpoint(SOFA);
    expectReason("bad-origin", () => formatCheckpoint({ ...good, origin: "a\nb" }), "origin with a newline");
    expectReason("bad-size", () => formatCheckpoint({ ...good, size: -1 }), "negative size");
    expectReason("bad-size", () => formatCheckpoint({ ...good, size: 2 ** 53 }), "size 2^53");
    expectReason("bad-root-hash", () => formatCheckpoint({ ...good, rootHash: new Uint8Array(33) }), "33-byte root");
    expectReason("bad-extension", () => formatCheckpoint({ ...good, extensions: [""] }), "empty extension");
    return "ok";
  });
}

function builtinWire(): void {
  const file = "builtin";
  check(file, "witness: the tlog-witness example request", () => {
    const request = parseAddCheckpoint(new TextEncoder().encode(WITNESS_EXAMPLE));
    expect(request.oldSize === 20852014 && request.proof.length === 4, "old size or proof differs");
    expect(request.note === WITNESS_EXAMPLE.slice(WITNESS_EXAMPLE.indexOf("example.com/")), "note differs");
    expect(encodeAddCheckpoint(request) === WITNESS_EXAMPLE, "does not encode back");
    return "ok";
  });
  const proofLine = Buffer.alloc(32, 7).toString("base64");
  const body = (old: string, lines: string[]) => [`old ${old}`, ...lines, "", SOFA].join("\n");
  const refusals: [string, string | Uint8Array, string][] = [
    ["63 proof lines", body("1", Array(MAX_PROOF_LINES).fill(proofLine)), ""],
    ["64 proof lines", body("1", Array(MAX_PROOF_LINES + 1).fill(proofLine)), "too-many-proof-lines"],
    ["old 0 with a proof (the witness's 422)", body("0", [proofLine]), ""],
    ["a leading zero", body("01", []), "bad-old-size-line"],
    ["two spaces", body(" 1", []), "bad-old-size-line"],
    ["old 2^53 (beyond a safe integer; Python takes it)", body("9007199254740992", []), "bad-old-size-line"],
    ["no old line", ["", "", SOFA].join("\n"), "bad-old-size-line"],
    ["a 31-byte proof hash", body("1", [Buffer.alloc(31).toString("base64")]), "bad-proof-line"],
    ["a proof line without padding", body("1", [proofLine.replace(/=+$/, "")]), "bad-proof-line"],
    ["no empty line", `old 1\n${proofLine}\n`, "missing-checkpoint"],
    ["nothing after the empty line", `old 1\n${proofLine}\n\n`, "missing-checkpoint"],
    ["not UTF-8", Uint8Array.of(0x6f, 0x6c, 0x64, 0x20, 0x31, 0x0a, 0x0a, 0xff, 0x0a), "not-utf8"],
  ];
  for (const [name, request, reason] of refusals) check(file, `witness: ${name}`, () => expectOutcome(reason || null, () => parseAddCheckpoint(request)));
  check(file, "witness: encoding refuses what parsing would", () => {
    const good = { oldSize: 1, proof: [new Uint8Array(32)], note: `${SOFA}\n— a AAAAAAA=\n` };
    expect(parseAddCheckpoint(encodeAddCheckpoint(good)).oldSize === 1, "does not parse back");
    expectReason("bad-old-size-line", () => encodeAddCheckpoint({ ...good, oldSize: -1 }), "old size -1");
    expectReason("bad-old-size-line", () => encodeAddCheckpoint({ ...good, oldSize: 1.5 }), "old size 1.5");
    expectReason("too-many-proof-lines", () => encodeAddCheckpoint({ ...good, proof: Array(64).fill(new Uint8Array(32)) }), "64 hashes");
    expectReason("bad-proof-line", () => encodeAddCheckpoint({ ...good, proof: [new Uint8Array(31)] }), "a 31-byte hash");
    expectReason("missing-checkpoint", () => encodeAddCheckpoint({ ...good, note: "" }), "no note");
    return "ok";
  });
  check(file, "witness: responses (cosignature lines, the 409 size)", () => {
    const lines = ["— witness.example/w1 AAAAAAA=\n", "— witness.example/w2 AAAAAAA=\n"];
    expect(JSON.stringify(parseCosignatures(encodeCosignatures(lines))) === JSON.stringify(lines), "cosignature lines do not parse back");
    expectReason("bad-cosignature-response", () => parseCosignatures(""), "empty response");
    expectReason("bad-cosignature-response", () => parseCosignatures("— w AAAAAAA="), "no final newline");
    expectReason("bad-cosignature-response", () => parseCosignatures("not a line\n"), "not a signature line");
    expectReason("bad-cosignature-response", () => encodeCosignatures([]), "no lines");
    expect(parseSize(encodeSize(20852163)) === 20852163, "size does not parse back");
    expectReason("bad-size-body", () => parseSize("020852163\n"), "leading zero");
    expectReason("bad-size-body", () => parseSize("20852163"), "no newline");
    return "ok";
  });
}

function builtinNotes(): void {
  const file = "builtin";
  const log = NoteSigner.fromSkey(generateNoteKey("log.example/tlog-checks", sha256("log seed")).skey);
  const [w1, w2] = ["w1", "w2"].map((w) => Cosigner.fromSkey(generateCosignerKey(`witness.example/${w}`, sha256(w)).skey));
  check(file, "note: a checkpoint signed by a log, then cosigned by two witnesses", () => {
    const signed = signNote(SOFA, [log]);
    const lines = [w1.cosign(SOFA, 1679315147), w2.cosign(SOFA, 2n ** 63n - 1n)];
    const opened = openCheckpoint(signed + lines.join(""), [log.verifier(), w1.verifier(), w2.verifier()]);
    expect(opened.checkpoint.size === 20852163 && opened.verified.length === 3 && opened.unverified.length === 0, "not all verified");
    expect(opened.verified[1].timestamp === 1679315147n && opened.verified[2].timestamp === 2n ** 63n - 1n, "timestamps differ");
    expect(opened.verified[0].timestamp === undefined, "the log's signature has a timestamp");
    expect(w1.verifier().verifyLine(SOFA, lines[0]) === 1679315147n, "verifyLine's timestamp differs");
    const logOnly = openNote(signed + lines.join(""), [log.verifier()]);
    expect(logOnly.verified.length === 1 && logOnly.unverified.length === 2, "witness lines not kept unverified");
    // As a Signer, a cosigner signs at the current time.
    const now = openNote(signNote(SOFA, [w1]), [w1.verifier()]).verified[0].timestamp ?? 0n;
    expect(now >= BigInt(Math.floor(Date.now() / 1000)) - 5n, "a Signer cosignature is not of now");
    return "ok";
  });
  check(file, "note: a cosignature over another checkpoint, and a witness line under the log's key", () => {
    const other = SOFA.replace("20852163", "20852164");
    expectReason("bad-signature", () => w1.verifier().verifyLine(other, w1.cosign(SOFA, 1)), "another checkpoint");
    expectReason("unknown-key", () => w2.verifier().verifyLine(SOFA, w1.cosign(SOFA, 1)), "another witness");
    expectReason("bad-signature", () => openNote(`${SOFA}\n${w1.cosign(other, 1)}`, [w1.verifier()]), "opened over another checkpoint");
    expectReason("malformed-checkpoint", () => w1.cosign("not a checkpoint\n", 1), "not a checkpoint");
    expectReason("bad-timestamp", () => w1.cosign(SOFA, 0), "timestamp 0");
    expectReason("bad-timestamp", () => w1.cosign(SOFA, 2n ** 63n), "timestamp 2^63");
    expectReason("bad-timestamp", () => w1.cosign(SOFA, 2 ** 53), "an unsafe number");
    return "ok";
  });
  check(file, "note: no key material in what keys and errors show", () => {
    const { skey } = generateNoteKey("secret.example/key");
    // PRIVATE+KEY+<name>+<hash>+<key>: the key's standard base64 may itself hold a "+".
    const secret = skey.split("+").slice(4).join("+");
    const signer = NoteSigner.fromSkey(skey);
    const cosigner = Cosigner.fromSkey(generateCosignerKey("secret.example/cosigner").skey);
    const shown = [inspect(signer), inspect(cosigner), JSON.stringify(signer), JSON.stringify(cosigner), String(Object.keys(signer))];
    expect(!shown.some((text) => text.includes(secret) || text.includes(hex(Buffer.from(secret, "base64").subarray(1)))), "a seed shows");
    const note = "a secret text line\n";
    const errors = [
      () => openNote(`${note}\n${signatureLine({ name: signer.name, keyHash: signer.keyHash, signature: new Uint8Array(64) })}`, [signer.verifier()]),
      () => openNote(`${note}\n— x AAAAAAA=\n`, [signer.verifier()]),
      () => NoteSigner.fromSkey(`${skey}x`),
      () => NoteSigner.fromSkey(skey.replace("PRIVATE", "private")),
      () => NoteVerifier.fromVkey(`${signer.vkey}x`),
    ].map((call) => {
      try {
        call();
        return "";
      } catch (error) {
        return error instanceof Error ? `${error.message} ${inspect(error)}` : "";
      }
    });
    expect(errors.every((text) => text !== ""), "a call did not fail");
    expect(!errors.some((text) => text.includes("secret text") || text.includes(secret)), "an error shows its input");
    return `${shown.length} key views, ${errors.length} errors`;
  });
  check(file, "note: errors are the package's classes", () => {
    expect(outcome(() => NoteVerifier.fromVkey("x")) === "malformed-key", "vkey");
    const classes = [
      [() => verifyInclusion(new Uint8Array(32), 0, 0, [], new Uint8Array(32)), ProofError],
      [() => parseCheckpoint(""), CheckpointError],
      [() => NoteVerifier.fromVkey("x"), KeyFormatError],
      [() => openNote("", []), NoteError],
      [() => parseAddCheckpoint(""), WireError],
    ] as const;
    for (const [call, type] of classes) {
      try {
        call();
        fail("no error");
      } catch (error) {
        expect(error instanceof type && error instanceof TlogError, `not a ${type.name}`);
      }
    }
    return "ok";
  });
}

// --- ed25519-speccheck.json -------------------------------------------------------------------------

const OPENSSL = "OpenSSL-3.0";

function runSpeccheck(path: string): void {
  const file = "ed25519-speccheck.json";
  list(readVectors(path), "cases").forEach((item, i) => {
    const c = obj(item, `cases[${i}]`);
    check(file, `cases[${i}]: ${str(c, "desc")}`, () => {
      const accepted = ed25519Verify(fromHex(str(c, "pub_key")), fromHex(str(c, "message")), fromHex(str(c, "signature")));
      const verdict = accepted ? "accepted" : "refused";
      const openssl = field(obj(field(c, "verdicts"), "verdicts"), OPENSSL);
      expect(typeof openssl === "boolean", `no ${OPENSSL} verdict`);
      expect(accepted === openssl, `${verdict}: ${OPENSSL} ${openssl ? "accepts" : "refuses"} it`);
      return verdict;
    });
  });
}

// --- signatures only a cofactored check accepts ---------------------------------------------------

const ORDER = 2n ** 252n + 27742317777372353535851937790883648493n; // L
const FIELD = 2n ** 255n - 19n;
const SIGN_BIT = 1n << 255n;
const littleEndian = (bytes: Uint8Array): bigint => BigInt(`0x${hex(bytes.slice().reverse()) || "0"}`);
const toLittleEndian = (value: bigint): Uint8Array => Uint8Array.from({ length: 32 }, (_, i) => Number((value >> BigInt(8 * i)) & 0xffn));
const sha512 = (...parts: Uint8Array[]): Uint8Array => new Uint8Array(createHash("sha512").update(Buffer.concat(parts)).digest());

/**
 * `signature` (the seed's own of `message`) with R moved by the point of order 2, (0, -1): R' =
 * (-x, -y), and S' = r + k'a made for R' with the same nonce r. [S']B - [k']A is R, not R': the
 * cofactorless check (OpenSSL's) refuses it, the cofactored one ([8]R' = [8]R) accepts it. As
 * scripts/ed25519_cofactored.py makes them.
 */
function cofactoredOnly(seed: Uint8Array, publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): Uint8Array {
  const clamped = sha512(seed).subarray(0, 32);
  clamped[0]! &= 248;
  clamped[31]! &= 127;
  clamped[31]! |= 64;
  const a = littleEndian(clamped);
  const challenge = (r: Uint8Array): bigint => littleEndian(sha512(r, publicKey, message)) % ORDER;
  const nonce = (((littleEndian(signature.subarray(32)) - challenge(signature.subarray(0, 32)) * a) % ORDER) + ORDER) % ORDER;
  const encoded = littleEndian(signature.subarray(0, 32));
  const moved = toLittleEndian((FIELD - (encoded & (SIGN_BIT - 1n))) | ((encoded & SIGN_BIT) ^ SIGN_BIT));
  return new Uint8Array(Buffer.concat([moved, toLittleEndian((nonce + challenge(moved) * a) % ORDER)]));
}

// <name>+<hash>+<key>: the key's standard base64 may itself hold a "+".
const publicKeyOf = (vkey: string): Uint8Array => new Uint8Array(Buffer.from(vkey.split("+").slice(2).join("+"), "base64")).subarray(1);

function builtinCofactoredOnly(): void {
  const file = "builtin";
  const seed = sha256("cofactored-only seed");
  check(file, "ed25519: a note signature only a cofactored check accepts is refused", () => {
    const signer = NoteSigner.fromSkey(generateNoteKey("log.example/cofactored", seed).skey);
    const verifier = signer.verifier();
    const message = new TextEncoder().encode(SOFA);
    const publicKey = publicKeyOf(verifier.vkey);
    const forged = cofactoredOnly(seed, publicKey, message, signer.sign(message));
    // What the case is: noble's own check (zip215: false) accepts it.
    expect(ed25519.verify(forged, message, publicKey, { zip215: false }), "not a cofactored-only signature");
    expect(!ed25519Verify(publicKey, message, forged) && !verifier.verify(message, forged), "accepted");
    const line = signatureLine({ name: signer.name, keyHash: signer.keyHash, signature: forged });
    expectReason("bad-signature", () => openNote(`${SOFA}\n${line}`, [verifier]), "the note");
    return "refused";
  });
  check(file, "ed25519: a cosignature only a cofactored check accepts is refused", () => {
    const cosigner = Cosigner.fromSkey(generateCosignerKey("witness.example/cofactored", seed).skey);
    const verifier = cosigner.verifier();
    const signed = parseSignatureLine(cosigner.cosign(SOFA, 1679315147)).signature;
    const message = new TextEncoder().encode(`cosignature/v1\ntime 1679315147\n${SOFA}`);
    const publicKey = publicKeyOf(verifier.vkey);
    expect(ed25519Verify(publicKey, message, signed.subarray(8)), "the cosignature's message is not the one signed");
    const forged = new Uint8Array(Buffer.concat([signed.subarray(0, 8), cofactoredOnly(seed, publicKey, message, signed.subarray(8))]));
    expect(ed25519.verify(forged.subarray(8), message, publicKey, { zip215: false }), "not a cofactored-only signature");
    expect(!verifier.verify(new TextEncoder().encode(SOFA), forged), "accepted");
    const line = signatureLine({ name: cosigner.name, keyHash: cosigner.keyHash, signature: forged });
    expectReason("bad-signature", () => verifier.verifyLine(SOFA, line), "the cosignature line");
    return "refused";
  });
}

// --- main -----------------------------------------------------------------------------------------

const [directory, speccheck] = process.argv.slice(2);
if (!directory || !speccheck) fail("usage: node tlog_checks.js TLOG_TESTDATA_DIR ED25519_SPECCHECK_JSON");
for (const file of readdirSync(directory).filter((name) => name.endsWith(".json")).sort()) {
  try {
    runVectorFile(directory, file);
  } catch (error) {
    cases.push({ file, name: "(the file)", ok: false, detail: error instanceof Error ? error.message : String(error) });
  }
}
for (let n = 1; n <= MAX_LEAVES; n++) check("generated", `tree of ${n} leaves`, () => checkTree(n));
builtinCheckpoints();
builtinWire();
builtinNotes();
builtinCofactoredOnly();
try {
  runSpeccheck(speccheck);
} catch (error) {
  cases.push({ file: "ed25519-speccheck.json", name: "(the file)", ok: false, detail: error instanceof Error ? error.message : String(error) });
}
console.log(JSON.stringify({ cases }));
