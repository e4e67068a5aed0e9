// Checkpoints, C2SP tlog-checkpoint (c2sp.org/tlog-checkpoint@v1.0.0), "Note text": the origin
// line, the tree size in decimal with no leading zero, the root hash in base64, then optional
// non-empty extension lines, every line ending in a newline. Signing and verifying the note around
// it is note.ts's: a text is to be read only once its note has verified (openCheckpoint does both).
//
// Read strictly, so that a checkpoint has one spelling, with the Python package's reasons in its
// order (zkplatform_tlog/checkpoint.py): the root hash is 32 bytes (an RFC 6962 SHA-256 root) in
// canonical padded base64; the size is a safe integer here (Python takes up to 2^64 - 1); the
// origin may hold anything a note may (the spec only recommends against spaces and '+', and tells
// clients not to assume it).
import { base64, fromBase64, hasControl, isSafeSize, isWellFormed, parseDecimal } from "./encoding.js";
import { CheckpointError, type CheckpointErrorReason } from "./errors.js";
import { HASH_SIZE } from "./merkle.js";
import { openNote, type OpenedNote, type Verifier } from "./note.js";

export { CheckpointError, type CheckpointErrorReason } from "./errors.js";

export interface Checkpoint {
  readonly origin: string;
  readonly size: number;
  readonly rootHash: Uint8Array;
  /** The extension lines, without their newlines; usually none. */
  readonly extensions: readonly string[];
}

function checkLine(line: unknown, reason: CheckpointErrorReason, what: string): void {
  if (typeof line !== "string" || line === "") throw new CheckpointError(reason, `${what} is empty`);
  if (line.includes("\n") || hasControl(line) || !isWellFormed(line)) {
    throw new CheckpointError(reason, `${what} holds a newline, a control character or a lone surrogate`);
  }
}

function check(checkpoint: Checkpoint): void {
  checkLine(checkpoint.origin, "bad-origin", "origin");
  if (!isSafeSize(checkpoint.size)) throw new CheckpointError("bad-size", "tree size is not a non-negative safe integer");
  if (!(checkpoint.rootHash instanceof Uint8Array) || checkpoint.rootHash.length !== HASH_SIZE) {
    throw new CheckpointError("bad-root-hash", `root hash is not ${HASH_SIZE} bytes`);
  }
  checkpoint.extensions.forEach((line) => checkLine(line, "bad-extension", "extension line"));
}

/** The checkpoint of a note text (without the signature lines); throws CheckpointError. */
export function parseCheckpoint(text: string): Checkpoint {
  if (typeof text !== "string" || !text.endsWith("\n")) throw new CheckpointError("malformed-checkpoint", "checkpoint does not end with a newline");
  const [origin, sizeLine, hashLine, ...extensions] = text.slice(0, -1).split("\n");
  if (origin === undefined || sizeLine === undefined || hashLine === undefined) {
    throw new CheckpointError("malformed-checkpoint", "checkpoint has fewer than 3 lines");
  }
  const size = parseDecimal(sizeLine);
  if (size === null) throw new CheckpointError("bad-size", "tree size is not a decimal below 2^53 without leading zeros");
  const rootHash = fromBase64(hashLine);
  if (rootHash === null) throw new CheckpointError("bad-root-hash", "root hash is not canonical padded standard base64");
  const checkpoint = { origin, size, rootHash, extensions };
  check(checkpoint);
  return checkpoint;
}

/** The note text of a checkpoint; throws CheckpointError for one parseCheckpoint could not give. */
export function formatCheckpoint(checkpoint: Checkpoint): string {
  check(checkpoint);
  const { origin, size, rootHash, extensions } = checkpoint;
  return [origin, String(size), base64(rootHash), ...extensions].map((line) => `${line}\n`).join("");
}

/** A signed checkpoint, opened (openNote: throws NoteError) and then read (throws CheckpointError). */
export function openCheckpoint(note: Uint8Array | string, verifiers: readonly Verifier[]): OpenedNote & { readonly checkpoint: Checkpoint } {
  const opened = openNote(note, verifiers);
  return { ...opened, checkpoint: parseCheckpoint(opened.text) };
}
