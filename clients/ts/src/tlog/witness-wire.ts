// The messages of C2SP tlog-witness add-checkpoint (c2sp.org/tlog-witness, "add-checkpoint"): the
// request body ("old <size>\n", zero to MAX_PROOF_LINES consistency proof lines of one base64
// hash each, an empty line, then the signed checkpoint note), the 200 body (one or more
// cosignature lines) and the 409 body (the witness's size and a newline).
//
// Syntax only, with the Python package's reasons in its order (zkplatform_tlog/witness_wire.py):
// whether the note verifies (403, 404), the old size is above the checkpoint's (400) or is not the
// witness's (409), the proof verifies and an empty tree's root is right (422) are for the witness to
// decide, with note.ts, checkpoint.ts and merkle.ts; so a body whose old size is 0 with proof lines
// is read here (the witness answers it with 422). The HTTP layer bounds the body's size. Sizes are
// safe integers here (Python takes up to 2^64 - 1).
import { base64, fromBase64, fromUtf8, isSafeSize, isWellFormed, parseDecimal } from "./encoding.js";
import { NoteError, WireError } from "./errors.js";
import { HASH_SIZE } from "./merkle.js";
import { parseSignatureLine } from "./note.js";

export { WireError, type WireErrorReason } from "./errors.js";

/** POST <submission prefix>/add-checkpoint. */
export const ADD_CHECKPOINT_PATH = "/add-checkpoint";
/** "The client MUST NOT send more than 63 consistency proof lines" (a proof in a tree of 2^64 leaves). */
export const MAX_PROOF_LINES = 63;
/** The media type of the 409 body. */
export const SIZE_CONTENT_TYPE = "text/x.tlog.size";

/** The statuses of add-checkpoint, as tlog-witness gives them. */
export const WITNESS_STATUS = {
  /** Cosigned; the body is the cosignature lines. */
  ok: 200,
  /** The old size is above the checkpoint's size. */
  badRequest: 400,
  /** No signature of a trusted log key, or one that fails to verify. */
  forbidden: 403,
  /** The checkpoint's origin is not a known log. */
  notFound: 404,
  /** The old size is not the witness's; the body is its size (SIZE_CONTENT_TYPE). */
  conflict: 409,
  /** The proof does not verify, or an empty tree's root is wrong. */
  unprocessable: 422,
} as const;

export interface AddCheckpointRequest {
  /** The size of the latest checkpoint the witness cosigned for the origin, as the client has it. */
  readonly oldSize: number;
  /** The consistency proof from oldSize to the checkpoint's size (none from 0). */
  readonly proof: readonly Uint8Array[];
  /** The signed checkpoint note, as sent (unverified). */
  readonly note: string;
}

/** The first line of the request's note, unverified: only to find the log's keys (404 if none). */
export function claimedOrigin(request: AddCheckpointRequest): string {
  const end = request.note.indexOf("\n");
  return end < 0 ? request.note : request.note.slice(0, end);
}

function text(body: Uint8Array | string): string {
  const decoded = typeof body === "string" ? (isWellFormed(body) ? body : null) : fromUtf8(body);
  if (decoded === null) throw new WireError("not-utf8", "body is not UTF-8");
  return decoded;
}

/** The request body of add-checkpoint; throws WireError for a part that could not be read back. */
export function encodeAddCheckpoint(request: AddCheckpointRequest): string {
  const { oldSize, proof, note } = request;
  if (!isSafeSize(oldSize)) throw new WireError("bad-old-size-line", "old size is not a non-negative safe integer");
  if (proof.length > MAX_PROOF_LINES) throw new WireError("too-many-proof-lines", `${proof.length} proof hashes, at most ${MAX_PROOF_LINES}`);
  if (proof.some((hash) => !(hash instanceof Uint8Array) || hash.length !== HASH_SIZE)) {
    throw new WireError("bad-proof-line", `a proof hash is not ${HASH_SIZE} bytes`);
  }
  if (typeof note !== "string" || note === "" || !note.endsWith("\n") || !isWellFormed(note)) {
    throw new WireError("missing-checkpoint", "the checkpoint note is empty or does not end with a newline");
  }
  return `old ${oldSize}\n${proof.map((hash) => `${base64(hash)}\n`).join("")}\n${note}`;
}

/** The request of an add-checkpoint body; throws WireError (a 400). The note is not verified here. */
export function parseAddCheckpoint(body: Uint8Array | string): AddCheckpointRequest {
  const all = text(body);
  const blank = all.indexOf("\n\n");
  const note = blank < 0 ? "" : all.slice(blank + 2);
  if (note === "") throw new WireError("missing-checkpoint", "no blank line followed by a checkpoint note");
  const [oldLine, ...proofLines] = all.slice(0, blank).split("\n") as [string, ...string[]];
  const oldSize = oldLine.startsWith("old ") ? parseDecimal(oldLine.slice(4)) : null;
  if (oldSize === null) throw new WireError("bad-old-size-line", "first line is not 'old <size>' with a decimal size below 2^53");
  if (proofLines.length > MAX_PROOF_LINES) {
    throw new WireError("too-many-proof-lines", `${proofLines.length} proof lines, at most ${MAX_PROOF_LINES}`);
  }
  const proof = proofLines.map((line, i) => {
    const hash = fromBase64(line);
    if (hash === null || hash.length !== HASH_SIZE) throw new WireError("bad-proof-line", `proof line ${i + 1} is not a ${HASH_SIZE}-byte hash in base64`);
    return hash;
  });
  return { oldSize, proof, note };
}

function checkCosignatures(lines: readonly string[]): string {
  if (lines.length === 0) throw new WireError("bad-cosignature-response", "a response needs at least one cosignature line");
  lines.forEach((line, i) => {
    try {
      parseSignatureLine(line);
    } catch (error) {
      if (error instanceof NoteError) throw new WireError("bad-cosignature-response", `line ${i + 1} is not a signature line`);
      throw error;
    }
  });
  return lines.join("");
}

/** The 200 body: one or more signature lines, each with its newline; throws WireError. */
export function encodeCosignatures(lines: readonly string[]): string {
  return checkCosignatures(lines);
}

/**
 * The signature lines of a 200 body, each with its newline, in order; throws WireError unless it
 * is one or more well-formed signature lines. A client appends them to the checkpoint note and
 * opens it with the witness keys it trusts (openNote), which skips the others.
 */
export function parseCosignatures(body: Uint8Array | string): string[] {
  const all = text(body);
  if (!all.endsWith("\n")) throw new WireError("bad-cosignature-response", "response is empty or does not end with a newline");
  const lines = all.slice(0, -1).split("\n").map((line) => `${line}\n`);
  checkCosignatures(lines);
  return lines;
}

/** The 409 body (of type SIZE_CONTENT_TYPE): the witness's latest size and a newline; throws WireError. */
export function encodeSize(size: number): string {
  if (!isSafeSize(size)) throw new WireError("bad-size-body", "size is not a non-negative safe integer");
  return `${size}\n`;
}

/** The size of a 409 body; throws WireError unless it is a decimal and a newline. */
export function parseSize(body: Uint8Array | string): number {
  const all = text(body);
  const size = all.endsWith("\n") ? parseDecimal(all.slice(0, -1)) : null;
  if (size === null) throw new WireError("bad-size-body", "409 body is not a decimal size below 2^53 and a newline");
  return size;
}
