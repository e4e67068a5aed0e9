// Bytes as the sealed item format writes and checks them (docs/sealing.md): base64url without
// padding, read strictly; UTF-8; SHA-256; a comparison in constant time. No node:* import and no
// Buffer: sealing runs in browsers too. The encodings are statements.ts' (one reader for both
// formats), SHA-256 @noble/hashes', the comparison @noble/curves'.
import { equalBytes } from "@noble/curves/utils.js";
import { sha256 as nobleSha256 } from "@noble/hashes/sha2.js";
import { b64url, b64urlDecode, utf8 } from "./statements.js";

export { utf8 };

/** base64url without padding of bytes, or of a text's UTF-8 bytes. */
export function base64url(data: Uint8Array | ArrayBuffer | string): string {
  if (typeof data === "string") return b64url(utf8(data));
  return b64url(data instanceof Uint8Array ? data : new Uint8Array(data));
}

/**
 * The bytes of canonical base64url without padding (the text is exactly the encoding of what it
 * decodes to), or null for anything else.
 */
export function fromBase64url(text: string): Uint8Array | null {
  try {
    return b64urlDecode(text);
  } catch {
    return null;
  }
}

export function sha256(data: Uint8Array | string): Uint8Array {
  return nobleSha256(typeof data === "string" ? utf8(data) : data);
}

/** Whether two byte strings are equal, in time that depends on their length only. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return equalBytes(a, b);
}

export function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((total, part) => total + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** A fresh copy of `bytes` in an ArrayBuffer of its own: what WebCrypto's typings take. */
export function buffer(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  return new Uint8Array(bytes);
}
