// The key encodings of C2SP signed-note ("Signatures": key names and key IDs; "Verifier keys")
// shared by note.ts (signature type 0x01) and cosignature.ts (type 0x04, C2SP tlog-cosignature),
// and the private key text of golang.org/x/mod/sumdb/note:
//   vkey:  <name>+<8 lowercase hex key ID>+base64(type || 32-byte Ed25519 public key)
//   skey:  PRIVATE+KEY+<name>+<8 lowercase hex key ID>+base64(type || 32-byte Ed25519 seed)
// key ID = the first 4 bytes of SHA-256(name || 0x0A || type || public key), big-endian.
// Checked in the order the Python package checks (zkplatform_tlog/note.py), for the same reasons.
// Internal to src/tlog: the barrel (index.ts) exports none of it.
import { ed25519 } from "@noble/curves/ed25519.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { base64, concatBytes, fromBase64, hasControl, hex32, utf8 } from "./encoding.js";
import { KeyFormatError } from "./errors.js";

// The signature check note.ts and cosignature.ts use: the package's one (ed25519.ts).
export { ed25519Verify } from "./ed25519.js";

/** Signature type bytes of C2SP signed-note, "Signature types". */
export const TYPE_ED25519 = 0x01;
export const TYPE_COSIGNATURE_V1 = 0x04;

const ED25519_KEY_SIZE = 32;

/**
 * Whether signed-note allows a key name: non-empty, no Unicode space (the White_Space property,
 * which is also Go's unicode.IsSpace), no plus, and nothing a note cannot hold (ASCII control
 * characters, lone surrogates).
 */
export function isValidName(name: string): boolean {
  return typeof name === "string" && name !== "" && !/[\p{White_Space}+]/u.test(name) && !hasControl(name) && utf8(name) !== null;
}

export function checkKeyName(name: string): void {
  if (!isValidName(name)) throw new KeyFormatError("bad-key-name", "key name is empty or holds a space, '+' or a control character");
}

/** The key ID of a public key of a signature type, as an unsigned 32-bit integer. */
export function keyId(name: string, type: number, publicKey: Uint8Array): number {
  const digest = sha256(concatBytes(utf8(name)!, Uint8Array.of(0x0a, type), publicKey));
  return ((digest[0]! << 24) | (digest[1]! << 16) | (digest[2]! << 8) | digest[3]!) >>> 0;
}

export interface ParsedKey {
  readonly name: string;
  readonly keyHash: number;
  /** The 32-byte Ed25519 public key. */
  readonly publicKey: Uint8Array;
  /** The 32-byte Ed25519 seed, of a private key only. */
  readonly seed?: Uint8Array;
}

// <name>+<hex>+<base64>, cut at its first two pluses (the base64 may hold pluses, a name may not).
function splitKey(text: string): { name: string; hex: string; material: Uint8Array } {
  const first = text.indexOf("+");
  const second = first < 0 ? -1 : text.indexOf("+", first + 1);
  if (second < 0) throw new KeyFormatError("malformed-key", "key is not <name>+<key ID>+<base64>");
  const [name, hex] = [text.slice(0, first), text.slice(first + 1, second)];
  checkKeyName(name);
  if (!/^[0-9a-f]{8}$/.test(hex)) throw new KeyFormatError("malformed-key", "key ID is not 8 lowercase hex digits");
  const material = fromBase64(text.slice(second + 1));
  if (material === null || material.length === 0) throw new KeyFormatError("malformed-key", "key material is not canonical, non-empty standard base64");
  return { name, hex, material };
}

function checkType(material: Uint8Array, type: number, what: string): void {
  if (material[0] !== type) throw new KeyFormatError("wrong-key-type", `key has signature type ${material[0]}, want ${type}`);
  if (material.length !== 1 + ED25519_KEY_SIZE) throw new KeyFormatError("malformed-key", `Ed25519 ${what} is not ${ED25519_KEY_SIZE} bytes`);
}

/** A vkey of this signature type. Its key ID is checked first (over whatever type and key it has), as sumdb/note does. */
export function parseVkey(vkey: string, type: number): ParsedKey {
  if (typeof vkey !== "string") throw new KeyFormatError("malformed-key", "a vkey is a string");
  const { name, hex, material } = splitKey(vkey);
  if (hex32(keyId(name, material[0]!, material.subarray(1))) !== hex) {
    throw new KeyFormatError("key-id-mismatch", `key ID ${hex} is not the one of the name and key`);
  }
  checkType(material, type, "key");
  const publicKey = material.slice(1);
  if (!isPoint(publicKey)) throw new KeyFormatError("malformed-key", "key is not an Ed25519 public key");
  return { name, keyHash: parseInt(hex, 16), publicKey };
}

/** An skey of this signature type; its key ID is checked against the public key its seed derives. */
export function parseSkey(skey: string, type: number): ParsedKey {
  const prefix = "PRIVATE+KEY+";
  if (typeof skey !== "string" || !skey.startsWith(prefix)) throw new KeyFormatError("malformed-key", "private key does not start with PRIVATE+KEY+");
  const { name, hex, material } = splitKey(skey.slice(prefix.length));
  checkType(material, type, "seed");
  const seed = material.slice(1);
  const publicKey = ed25519.getPublicKey(seed);
  const keyHash = keyId(name, type, publicKey);
  if (hex32(keyHash) !== hex) throw new KeyFormatError("key-id-mismatch", `key ID ${hex} is not the one of the name and key`);
  return { name, keyHash, publicKey, seed };
}

// A canonical encoding of a point of the curve (RFC 8032 section 5.1.3), as verification needs.
function isPoint(publicKey: Uint8Array): boolean {
  try {
    ed25519.Point.fromBytes(publicKey, false);
    return true;
  } catch {
    return false;
  }
}

export function formatVkey(name: string, type: number, publicKey: Uint8Array): string {
  return `${name}+${hex32(keyId(name, type, publicKey))}+${base64(concatBytes(Uint8Array.of(type), publicKey))}`;
}

/** A key pair of this signature type, as skey and vkey: fresh, or of a 32-byte seed (for test vectors). */
export function generateKey(name: string, type: number, seed?: Uint8Array): { skey: string; vkey: string } {
  checkKeyName(name);
  if (seed !== undefined && !(seed instanceof Uint8Array && seed.length === ED25519_KEY_SIZE)) {
    throw new KeyFormatError("malformed-key", `a seed is ${ED25519_KEY_SIZE} bytes`);
  }
  const secret = seed === undefined ? ed25519.utils.randomSecretKey() : seed.slice();
  const publicKey = ed25519.getPublicKey(secret);
  const hash = hex32(keyId(name, type, publicKey));
  return {
    skey: `PRIVATE+KEY+${name}+${hash}+${base64(concatBytes(Uint8Array.of(type), secret))}`,
    vkey: formatVkey(name, type, publicKey),
  };
}

export function ed25519Sign(seed: Uint8Array, message: Uint8Array): Uint8Array {
  return ed25519.sign(message, seed);
}
