// Signed notes, C2SP signed-note (c2sp.org/signed-note@v1.0.0): "Format" (the text, a blank line,
// signature lines "— <name> base64(key ID || signature)"), "Signatures" (unknown keys ignored, a
// known key's signature verified, a note no known key signed refused), and Ed25519 note keys of
// signature type 0x01 ("Ed25519 signatures", "Verifier keys"). Timestamped cosignatures (type 0x04)
// are cosignature.ts's; they go through signNote and openNote like any signer and verifier.
//
// Opening follows the spec and golang.org/x/mod/sumdb/note, stricter where the spec leaves room,
// as the Python package does (zkplatform_tlog/note.py): at most MAX_SIGNATURES signature lines
// (the spec asks for at least 16; sumdb/note allows 100), every line counted; lines of unknown keys
// (name and key ID not both known) kept but not checked; a known key's signature must verify, or
// the whole note is refused; a known key signs a note once (sumdb/note skips a repeated line
// unchecked, which the spec's "MUST verify" does not allow); base64 canonical; at least one known
// key must have signed.
import { base64, concatBytes, fromBase64, fromUtf8, hasControl, hex32, utf8 } from "./encoding.js";
import { NoteError } from "./errors.js";
import { TYPE_ED25519, checkKeyName, ed25519Sign, ed25519Verify, formatVkey, generateKey, isValidName, parseSkey, parseVkey } from "./keys.js";

export { KeyFormatError, NoteError, type KeyFormatErrorReason, type NoteErrorReason } from "./errors.js";

/** The most signature lines a note may carry. */
export const MAX_SIGNATURES = 100;

const SIG_PREFIX = "\u2014 "; // em dash, space
const KEY_ID_SIZE = 4;

/** What signs a note: a key name, its key ID, and a signature over the note text's UTF-8 bytes. */
export interface Signer {
  readonly name: string;
  /** The key ID, as an unsigned 32-bit integer. */
  readonly keyHash: number;
  sign(message: Uint8Array): Uint8Array;
}

/** A known key: the signature lines whose name and key ID are both its own are its to check. */
export interface Verifier {
  readonly name: string;
  readonly keyHash: number;
  /** Whether the signature (the bytes after the key ID) is this key's over the note text's bytes. */
  verify(message: Uint8Array, signature: Uint8Array): boolean;
  /** The timestamp of a verified signature, for timestamped types (cosignature/v1). */
  timestampOf?(signature: Uint8Array): bigint;
}

/** One signature line: "— <name> base64(key ID || signature)\n". */
export interface NoteSignature {
  readonly name: string;
  readonly keyHash: number;
  /** The bytes after the key ID. */
  readonly signature: Uint8Array;
}

/** A signature line of a known key, verified; a cosignature's carries its timestamp. */
export interface VerifiedSignature extends NoteSignature {
  /** For a timestamped cosignature: its time, in POSIX seconds. */
  readonly timestamp?: bigint;
}

/** A note whose signatures from known keys all verified (at least one). */
export interface OpenedNote {
  /** The note text, ending in a newline, without the blank line and the signatures. */
  readonly text: string;
  /** The known keys' signatures, in the order of the note's lines. */
  readonly verified: readonly VerifiedSignature[];
  /** The lines of unknown keys, unchecked, in the order of the note's lines. */
  readonly unverified: readonly NoteSignature[];
}

/** An Ed25519 note signer (signature type 0x01). The seed stays in a private field. */
export class NoteSigner implements Signer {
  readonly #seed: Uint8Array;

  private constructor(
    readonly name: string,
    readonly keyHash: number,
    seed: Uint8Array,
    readonly vkey: string,
  ) {
    this.#seed = seed;
  }

  /** From PRIVATE+KEY+<name>+<key ID>+base64(0x01 || seed); throws KeyFormatError. */
  static fromSkey(skey: string): NoteSigner {
    const key = parseSkey(skey, TYPE_ED25519);
    return new NoteSigner(key.name, key.keyHash, key.seed!, formatVkey(key.name, TYPE_ED25519, key.publicKey));
  }

  sign(message: Uint8Array): Uint8Array {
    return ed25519Sign(this.#seed, message);
  }

  verifier(): NoteVerifier {
    return NoteVerifier.fromVkey(this.vkey);
  }
}

/** An Ed25519 note verifier (signature type 0x01). */
export class NoteVerifier implements Verifier {
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

  /** From <name>+<key ID>+base64(0x01 || public key); throws KeyFormatError. */
  static fromVkey(vkey: string): NoteVerifier {
    const key = parseVkey(vkey, TYPE_ED25519);
    return new NoteVerifier(key.name, key.keyHash, vkey, key.publicKey);
  }

  verify(message: Uint8Array, signature: Uint8Array): boolean {
    return ed25519Verify(this.#publicKey, message, signature);
  }
}

/**
 * An Ed25519 note key pair (signature type 0x01): the skey is secret, the vkey public. Fresh, or of
 * a 32-byte seed (for test vectors only); throws KeyFormatError for a name signed-note refuses.
 */
export function generateNoteKey(name: string, seed?: Uint8Array): { skey: string; vkey: string } {
  return generateKey(name, TYPE_ED25519, seed);
}

function keyOf(name: string, keyHash: number): string {
  return `${name}+${hex32(keyHash)}`;
}

/** The signature line, with its final newline. */
export function signatureLine(signature: NoteSignature): string {
  const { name, keyHash } = signature;
  const id = Uint8Array.of(keyHash >>> 24, (keyHash >>> 16) & 255, (keyHash >>> 8) & 255, keyHash & 255);
  return `${SIG_PREFIX}${name} ${base64(concatBytes(id, signature.signature))}\n`;
}

/** The signature of one line, which must end with its newline; throws NoteError malformed-signature-line. */
export function parseSignatureLine(line: string): NoteSignature {
  const malformed = () => new NoteError("malformed-signature-line", "signature line is not '— <name> <base64>' and a newline");
  if (typeof line !== "string" || !line.startsWith(SIG_PREFIX) || !line.endsWith("\n")) throw malformed();
  const body = line.slice(SIG_PREFIX.length, -1);
  if (body.includes("\n") || hasControl(body) || utf8(body) === null) throw malformed();
  const space = body.indexOf(" ");
  const [name, encoded] = space < 0 ? [body, ""] : [body.slice(0, space), body.slice(space + 1)];
  if (!isValidName(name)) throw new NoteError("malformed-signature-line", "signature line has an invalid key name");
  const bytes = fromBase64(encoded);
  if (bytes === null || bytes.length <= KEY_ID_SIZE) {
    throw new NoteError("malformed-signature-line", "signature is not canonical base64 of a key ID and signature");
  }
  const keyHash = ((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!) >>> 0;
  return { name, keyHash, signature: bytes.slice(KEY_ID_SIZE) };
}

/**
 * The signed note of a text (ending in a newline, with no control character but newline) by each
 * signer, in order; throws NoteError: malformed-note, no-signers, too-many-signatures,
 * duplicate-signer (two with one name and key ID); KeyFormatError for a signer's invalid name.
 */
export function signNote(text: string, signers: readonly Signer[]): string {
  const message = typeof text === "string" ? utf8(text) : null;
  if (message === null || !text.endsWith("\n") || hasControl(text)) {
    throw new NoteError("malformed-note", "note text must end with a newline and hold no control characters");
  }
  if (signers.length === 0) throw new NoteError("no-signers", "a note needs at least one signature");
  if (signers.length > MAX_SIGNATURES) throw new NoteError("too-many-signatures", `${signers.length} signers, at most ${MAX_SIGNATURES}`);
  if (new Set(signers.map((signer) => keyOf(signer.name, signer.keyHash))).size !== signers.length) {
    throw new NoteError("duplicate-signer", "two signers share a key name and key ID");
  }
  signers.forEach((signer) => checkKeyName(signer.name));
  const lines = signers.map((signer) => signatureLine({ name: signer.name, keyHash: signer.keyHash, signature: signer.sign(message) }));
  return `${text}\n${lines.join("")}`;
}

/**
 * Open a signed note against the known keys: its text, the known keys' signatures (all verified)
 * and the unknown keys' lines (unchecked). Throws NoteError: ambiguous-verifiers (two verifiers
 * with one name and key ID), malformed-note, too-many-signatures, malformed-signature-line,
 * duplicate-signature (a known key's second line), bad-signature, no-verified-signature.
 */
export function openNote(note: Uint8Array | string, verifiers: readonly Verifier[]): OpenedNote {
  const known = new Map<string, Verifier>();
  for (const verifier of verifiers) {
    const key = keyOf(verifier.name, verifier.keyHash);
    if (known.has(key)) throw new NoteError("ambiguous-verifiers", `two verifiers share the key ${key}`);
    known.set(key, verifier);
  }

  const text = typeof note === "string" ? (utf8(note) === null ? null : note) : fromUtf8(note);
  if (text === null || hasControl(text)) throw new NoteError("malformed-note", "note is not UTF-8, or holds a control character");
  // The text ends at the last blank line: signature lines never hold one, the text may.
  const split = text.lastIndexOf("\n\n");
  if (split < 0) throw new NoteError("malformed-note", "note has no blank line before its signatures");
  const [body, block] = [text.slice(0, split + 1), text.slice(split + 2)];
  if (!block.endsWith("\n")) throw new NoteError("malformed-note", "note has no signature lines, or its last does not end with a newline");
  const lines = block.slice(0, -1).split("\n");
  if (lines.length > MAX_SIGNATURES) throw new NoteError("too-many-signatures", `note has ${lines.length} signatures, at most ${MAX_SIGNATURES}`);

  const message = utf8(body)!;
  const verified: VerifiedSignature[] = [];
  const unverified: NoteSignature[] = [];
  for (const line of lines) {
    const signature = parseSignatureLine(`${line}\n`);
    const key = keyOf(signature.name, signature.keyHash);
    const verifier = known.get(key);
    if (verifier === undefined) {
      unverified.push(signature);
      continue;
    }
    if (verified.some((seen) => keyOf(seen.name, seen.keyHash) === key)) {
      throw new NoteError("duplicate-signature", `the key ${key} signs the note more than once`);
    }
    if (!verifier.verify(message, signature.signature)) throw new NoteError("bad-signature", `the signature of the known key ${key} does not verify`);
    const timestamp = verifier.timestampOf?.(signature.signature);
    verified.push(timestamp === undefined ? signature : { ...signature, timestamp });
  }
  if (verified.length === 0) throw new NoteError("no-verified-signature", "no known key signed the note");
  return { text: body, verified, unverified };
}
