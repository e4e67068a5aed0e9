// zkplatform-client/tlog: the transparency-log primitives, without I/O and without node:* (they run
// in browsers too): the RFC 9162 Merkle tree and its proofs (merkle.ts), C2SP signed notes with
// Ed25519 keys (note.ts), tlog-cosignature cosignature/v1 (cosignature.ts), tlog-checkpoint
// (checkpoint.ts) and the tlog-witness add-checkpoint messages (witness-wire.ts). What they throw
// carries the reasons of the Python package's (errors.ts), checked against the same vectors
// (clients/testdata/tlog). ed25519Verify (ed25519.ts) is the package's one Ed25519 signature check,
// deciding as the Python package's OpenSSL does (clients/testdata/ed25519-speccheck.json).
export {
  CheckpointError,
  KeyFormatError,
  NoteError,
  ProofError,
  TlogError,
  WireError,
  type CheckpointErrorReason,
  type KeyFormatErrorReason,
  type NoteErrorReason,
  type ProofErrorReason,
  type WireErrorReason,
} from "./errors.js";
export {
  EMPTY_ROOT,
  HASH_SIZE,
  consistencyProof,
  inclusionProof,
  leafHash,
  nodeHash,
  rootHash,
  verifyConsistency,
  verifyInclusion,
} from "./merkle.js";
export {
  MAX_SIGNATURES,
  NoteSigner,
  NoteVerifier,
  generateNoteKey,
  openNote,
  parseSignatureLine,
  signNote,
  signatureLine,
  type NoteSignature,
  type OpenedNote,
  type Signer,
  type VerifiedSignature,
  type Verifier,
} from "./note.js";
export { CosignatureVerifier, Cosigner, MAX_TIMESTAMP, generateCosignerKey } from "./cosignature.js";
export { ed25519Verify } from "./ed25519.js";
export { formatCheckpoint, openCheckpoint, parseCheckpoint, type Checkpoint } from "./checkpoint.js";
export {
  ADD_CHECKPOINT_PATH,
  MAX_PROOF_LINES,
  SIZE_CONTENT_TYPE,
  WITNESS_STATUS,
  claimedOrigin,
  encodeAddCheckpoint,
  encodeCosignatures,
  encodeSize,
  parseAddCheckpoint,
  parseCosignatures,
  parseSize,
  type AddCheckpointRequest,
} from "./witness-wire.js";
