// What the transparency-log primitives throw: Errors that carry a stable `reason`, the same
// kebab-case codes the Python package (clients/python/zkplatform_tlog/errors.py) raises and the
// shared vector files (clients/testdata/tlog/*.json) name as the outcome of a bad case, so that
// both implementations refuse the same inputs for the same reason. Messages are for people: they
// quote sizes and key names and IDs (public), never whole inputs (notes, proofs, keys).
//
// One reason exists here only: "unsafe-size", for a size or index that is not a non-negative safe
// integer (sizes are numbers in TypeScript; Python's ints have no such bound).

export type ProofErrorReason = "index-out-of-range" | "size-order" | "bad-hash-length" | "wrong-proof-length" | "root-mismatch" | "unsafe-size";
export type CheckpointErrorReason = "malformed-checkpoint" | "bad-origin" | "bad-size" | "bad-root-hash" | "bad-extension";
export type KeyFormatErrorReason = "malformed-key" | "bad-key-name" | "key-id-mismatch" | "wrong-key-type";
export type NoteErrorReason =
  | "malformed-note"
  | "malformed-signature-line"
  | "too-many-signatures"
  | "duplicate-signature"
  | "ambiguous-verifiers"
  | "duplicate-signer"
  | "no-signers"
  | "bad-signature"
  | "no-verified-signature"
  | "unknown-key"
  | "malformed-cosignature"
  | "bad-timestamp";
export type WireErrorReason =
  | "not-utf8"
  | "bad-old-size-line"
  | "bad-proof-line"
  | "too-many-proof-lines"
  | "missing-checkpoint"
  | "bad-size-body"
  | "bad-cosignature-response";

/** A refused input: `reason` says which rule it broke. */
export abstract class TlogError<Reason extends string = string> extends Error {
  constructor(
    readonly reason: Reason,
    message: string,
  ) {
    super(`${reason}: ${message}`);
  }
}

/** A Merkle hash, proof or tree size that does not hold (merkle.ts). */
export class ProofError extends TlogError<ProofErrorReason> {
  override name = "ProofError";
}

/** A checkpoint text that is not a C2SP tlog-checkpoint, or one that cannot be written (checkpoint.ts). */
export class CheckpointError extends TlogError<CheckpointErrorReason> {
  override name = "CheckpointError";
}

/** A verifier key (vkey), private key text (skey) or key name that is refused (keys.ts). */
export class KeyFormatError extends TlogError<KeyFormatErrorReason> {
  override name = "KeyFormatError";
}

/** A signed note, signature line or cosignature that is refused (note.ts, cosignature.ts). */
export class NoteError extends TlogError<NoteErrorReason> {
  override name = "NoteError";
}

/** A tlog-witness add-checkpoint body that is not what the protocol allows (witness-wire.ts): a 400. */
export class WireError extends TlogError<WireErrorReason> {
  override name = "WireError";
}
