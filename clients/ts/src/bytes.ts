// base64url without padding and SHA-256, as the sealed item format writes them
// (docs/sealing.md); the hashing is WebCrypto's.
import { webcrypto } from "node:crypto";

export function base64url(data: Uint8Array | ArrayBuffer | string): string {
  if (typeof data === "string") return Buffer.from(data, "utf8").toString("base64url");
  return (data instanceof ArrayBuffer ? Buffer.from(data) : Buffer.from(data.buffer, data.byteOffset, data.byteLength)).toString("base64url");
}

// The bytes of base64url text without padding, or null for anything else: Buffer.from skips what
// it cannot read, so a text is taken only when it is exactly the encoding of what it decodes to.
export function fromBase64url(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return null;
  const bytes = Buffer.from(text, "base64url");
  return bytes.toString("base64url") === text ? new Uint8Array(bytes) : null;
}

export async function sha256(data: Uint8Array | string): Promise<Uint8Array> {
  const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
  return new Uint8Array(await webcrypto.subtle.digest("SHA-256", bytes));
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}
