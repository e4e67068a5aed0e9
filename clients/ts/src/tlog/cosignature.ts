// Ed25519 checkpoint cosignatures, C2SP tlog-cosignature (c2sp.org/tlog-cosignature), "Format" and
// "Ed25519 signed message": a note signature of type 0x04, whose key ID is over
// name || 0x0A || 0x04 || public key and whose bytes after the key ID are a timestamped_signature
// (u64 big-endian POSIX seconds || 64-byte Ed25519 signature) over the message
//   "cosignature/v1\ntime <seconds>\n" || the checkpoint's note text.
// Only checkpoints are cosigned: a body that is not one (tlog-checkpoint, read strictly) is neither
// signed (CheckpointError) nor taken as signed. Timestamps are u64 values the spec bounds at
// 2^63 - 1, past what a number holds exactly: they are bigints (a safe-integer number is taken
// too). The ML-DSA-44 cosignature (type 0x06) is not here.
import { parseCheckpoint } from "./checkpoint.js";
import { concatBytes, fromUtf8, hex32, utf8 } from "./encoding.js";
import { CheckpointError, NoteError } from "./errors.js";
import { TYPE_COSIGNATURE_V1, ed25519Sign, ed25519Verify, formatVkey, generateKey, parseSkey, parseVkey } from "./keys.js";
import { parseSignatureLine, signatureLine, type Signer, type Verifier } from "./note.js";

const TIMESTAMP_SIZE = 8;
const COSIGNATURE_SIZE = TIMESTAMP_SIZE + 64;
/** tlog-cosignature: the timestamp "MUST NOT exceed 2^63 - 1". */
export const MAX_TIMESTAMP = (1n << 63n) - 1n;

/** What a cosignature/v1 signs ("Ed25519 signed message"); `${bigint}` is its decimal, no leading zero. */
function signedMessage(body: string, timestamp: bigint): Uint8Array {
  return utf8(`cosignature/v1\ntime ${timestamp}\n${body}`)!;
}

function isCheckpoint(body: string): boolean {
  try {
    parseCheckpoint(body);
    return true;
  } catch (error) {
    if (error instanceof CheckpointError) return false;
    throw error;
  }
}

/** The timestamp of a timestamped_signature (the bytes after the key ID), or null past 2^63 - 1. */
function timestampOf(signature: Uint8Array): bigint | null {
  const value = new DataView(signature.buffer, signature.byteOffset, TIMESTAMP_SIZE).getBigUint64(0);
  return value <= MAX_TIMESTAMP ? value : null;
}

/** A witness's Ed25519 cosignature/v1 private key (type 0x04). The seed stays in a private field. */
export class Cosigner implements Signer {
  readonly #seed: Uint8Array;

  private constructor(
    readonly name: string,
    readonly keyHash: number,
    seed: Uint8Array,
    readonly vkey: string,
  ) {
    this.#seed = seed;
  }

  /** From PRIVATE+KEY+<name>+<key ID>+base64(0x04 || seed), the key ID that of the 0x04 key; throws KeyFormatError. */
  static fromSkey(skey: string): Cosigner {
    const key = parseSkey(skey, TYPE_COSIGNATURE_V1);
    return new Cosigner(key.name, key.keyHash, key.seed!, formatVkey(key.name, TYPE_COSIGNATURE_V1, key.publicKey));
  }

  /**
   * The signature line (with its newline) cosigning a checkpoint's note text at a time in POSIX
   * seconds, from 1 (tlog-witness forbids 0) to 2^63 - 1. Throws NoteError bad-timestamp,
   * CheckpointError for a body that is not a checkpoint.
   */
  cosign(body: string, timestamp: bigint | number): string {
    return signatureLine({ name: this.name, keyHash: this.keyHash, signature: this.timestamped(body, timestamp) });
  }

  /** As a note Signer (signNote): the timestamped signature of a checkpoint text, at the current time. */
  sign(message: Uint8Array): Uint8Array {
    const body = fromUtf8(message);
    if (body === null) throw new NoteError("malformed-note", "the cosigned text is not UTF-8");
    return this.timestamped(body, BigInt(Math.floor(Date.now() / 1000)));
  }

  verifier(): CosignatureVerifier {
    return CosignatureVerifier.fromVkey(this.vkey);
  }

  private timestamped(body: string, timestamp: bigint | number): Uint8Array {
    const time = typeof timestamp === "number" && Number.isSafeInteger(timestamp) ? BigInt(timestamp) : timestamp;
    if (typeof time !== "bigint" || time < 1n || time > MAX_TIMESTAMP) {
      throw new NoteError("bad-timestamp", "cosignature timestamp must be an integer between 1 and 2^63 - 1");
    }
    parseCheckpoint(body);
    const stamp = new Uint8Array(TIMESTAMP_SIZE);
    new DataView(stamp.buffer).setBigUint64(0, time);
    return concatBytes(stamp, ed25519Sign(this.#seed, signedMessage(body, time)));
  }
}

/** A witness's Ed25519 cosignature/v1 public key (type 0x04); also a note Verifier, for openNote. */
export class CosignatureVerifier implements Verifier {
  readonly #publicKey: Uint8Array;

  private constructor(
    readonly name: string,
    readonly keyHash: number,
    readonly vkey: string,
    publicKey: Uint8Array,
  ) {
    this.#publicKey = publicKey;
  }

  /** The 32-byte Ed25519 public key (a copy). */
  get publicKey(): Uint8Array {
    return this.#publicKey.slice();
  }

  /** From <name>+<key ID>+base64(0x04 || public key); throws KeyFormatError. */
  static fromVkey(vkey: string): CosignatureVerifier {
    const key = parseVkey(vkey, TYPE_COSIGNATURE_V1);
    return new CosignatureVerifier(key.name, key.keyHash, vkey, key.publicKey);
  }

  /** As a note Verifier: whether a timestamped signature is this key's over a checkpoint's note text. */
  verify(message: Uint8Array, signature: Uint8Array): boolean {
    if (signature.length !== COSIGNATURE_SIZE) return false;
    const timestamp = timestampOf(signature);
    const body = fromUtf8(message);
    if (timestamp === null || body === null || !isCheckpoint(body)) return false;
    return ed25519Verify(this.#publicKey, signedMessage(body, timestamp), signature.subarray(TIMESTAMP_SIZE));
  }

  /** The timestamp of a signature verify() accepted. */
  timestampOf(signature: Uint8Array): bigint {
    const timestamp = signature.length === COSIGNATURE_SIZE ? timestampOf(signature) : null;
    if (timestamp === null) throw new NoteError("bad-timestamp", "cosignature timestamp exceeds 2^63 - 1");
    return timestamp;
  }

  /**
   * The timestamp (POSIX seconds) of a signature line (with its newline) that is this key's
   * cosignature of a checkpoint's note text. Throws NoteError: malformed-signature-line,
   * unknown-key (another name or key ID), malformed-cosignature (not 72 bytes), bad-timestamp,
   * bad-signature; CheckpointError for a body that is not a checkpoint.
   */
  verifyLine(body: string, line: string): bigint {
    const signature = parseSignatureLine(line);
    if (signature.name !== this.name || signature.keyHash !== this.keyHash) {
      throw new NoteError("unknown-key", `the line is signed by ${signature.name}+${hex32(signature.keyHash)}`);
    }
    if (signature.signature.length !== COSIGNATURE_SIZE) {
      throw new NoteError("malformed-cosignature", `cosignature has ${signature.signature.length} bytes, want ${COSIGNATURE_SIZE}`);
    }
    const timestamp = this.timestampOf(signature.signature);
    parseCheckpoint(body);
    if (!ed25519Verify(this.#publicKey, signedMessage(body, timestamp), signature.signature.subarray(TIMESTAMP_SIZE))) {
      throw new NoteError("bad-signature", `the cosignature of ${this.name} does not verify`);
    }
    return timestamp;
  }
}

/**
 * A cosignature/v1 key pair (type 0x04): the skey is secret, the vkey public. Fresh, or of a
 * 32-byte seed (for test vectors only).
 */
export function generateCosignerKey(name: string, seed?: Uint8Array): { skey: string; vkey: string } {
  return generateKey(name, TYPE_COSIGNATURE_V1, seed);
}
