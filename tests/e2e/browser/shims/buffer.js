// The global Buffer of the check programs in a page (esbuild --inject), as far as they use it:
// from (bytes, or text in hex, base64, base64url or UTF-8), alloc, concat, equals and toString.
// The package itself uses none (its browser entry is bundled without it).
const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

function fromBase64(text) {
  const clean = text.replace(/-/g, "+").replace(/_/g, "/").replace(/[^A-Za-z0-9+/]/g, "");
  const binary = atob(clean + "=".repeat((4 - (clean.length % 4)) % 4));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

function toBase64(bytes) {
  let out = "";
  for (let i = 0; i < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    out += B64[(n >> 18) & 63] + B64[(n >> 12) & 63] + (i + 1 < bytes.length ? B64[(n >> 6) & 63] : "=") + (i + 2 < bytes.length ? B64[n & 63] : "=");
  }
  return out;
}

export class Buffer extends Uint8Array {
  static from(value, encoding) {
    if (typeof value !== "string") return new Buffer(value instanceof ArrayBuffer ? new Uint8Array(value) : value);
    if (encoding === "hex") return new Buffer((value.match(/../g) ?? []).map((h) => parseInt(h, 16)));
    if (encoding === "base64" || encoding === "base64url") return new Buffer(fromBase64(value));
    return new Buffer(new TextEncoder().encode(value));
  }
  static alloc(size, fill = 0) {
    return new Buffer(size).fill(fill);
  }
  static concat(parts) {
    const all = new Buffer(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      all.set(p, at);
      at += p.length;
    }
    return all;
  }
  equals(other) {
    return this.length === other.length && this.every((b, i) => b === other[i]);
  }
  toString(encoding) {
    if (encoding === "hex") return [...this].map((b) => b.toString(16).padStart(2, "0")).join("");
    if (encoding === "base64") return toBase64(this);
    if (encoding === "base64url") return toBase64(this).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    return new TextDecoder().decode(this);
  }
}
