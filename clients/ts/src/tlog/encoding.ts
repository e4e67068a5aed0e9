// The text and byte encodings the transparency-log formats share, strict in what they read:
// standard base64 with padding (RFC 4648 section 4, as C2SP signed-note, tlog-checkpoint and
// tlog-witness use it), UTF-8 without replacement characters, decimal sizes, and sizes as safe
// integers. Nothing here imports node:* (the module runs in browsers too).

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B64_VALUE = new Map<string, number>([...B64].map((char, i) => [char, i]));

/** Standard base64 with padding. */
export function base64(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i += 3) {
    const [a, b, c] = [bytes[i]!, bytes[i + 1], bytes[i + 2]];
    const n = (a << 16) | ((b ?? 0) << 8) | (c ?? 0);
    out += B64[(n >> 18) & 63]! + B64[(n >> 12) & 63]!;
    out += b === undefined ? "=" : B64[(n >> 6) & 63]!;
    out += c === undefined ? "=" : B64[n & 63]!;
  }
  return out;
}

/**
 * The bytes of canonical standard base64, or null: padding required, no whitespace, and the unused
 * bits of the last character zero. Two spellings of the same bytes would let one signed or hashed
 * line read two ways; a text is taken only when it is exactly the encoding of what it decodes to.
 */
export function fromBase64(text: string): Uint8Array | null {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return null;
  const pad = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  const out = new Uint8Array((text.length / 4) * 3 - pad);
  let o = 0;
  for (let i = 0; i < text.length; i += 4) {
    let n = 0;
    for (let j = 0; j < 4; j++) {
      const char = text[i + j]!;
      n = (n << 6) | (char === "=" ? 0 : B64_VALUE.get(char)!);
    }
    for (const byte of [(n >> 16) & 255, (n >> 8) & 255, n & 255]) if (o < out.length) out[o++] = byte;
  }
  return base64(out) === text ? out : null;
}

const encoder = new TextEncoder();
// fatal: a byte sequence that is not UTF-8 is refused, never read with U+FFFD in its place;
// ignoreBOM: a leading U+FEFF stays part of the text (it is part of what was signed).
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Whether a JavaScript string is well-formed UTF-16 (no lone surrogate, which UTF-8 cannot carry). */
export function isWellFormed(text: string): boolean {
  return !/\p{Surrogate}/u.test(text);
}

/** The UTF-8 bytes of a well-formed string, or null (a lone surrogate would be encoded as U+FFFD). */
export function utf8(text: string): Uint8Array | null {
  return isWellFormed(text) ? encoder.encode(text) : null;
}

/** The text of UTF-8 bytes, or null when they are not UTF-8. */
export function fromUtf8(bytes: Uint8Array): string | null {
  try {
    return decoder.decode(bytes);
  } catch {
    return null;
  }
}

/** Whether a text holds an ASCII control character (below U+0020) other than newline. */
export function hasControl(text: string): boolean {
  return /[\u0000-\u0009\u000b-\u001f]/.test(text);
}

/** A size, index or timestamp these formats carry: a non-negative safe integer. */
export function isSafeSize(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

/**
 * A decimal size with no leading zero (only "0" itself), as tlog-checkpoint and tlog-witness write
 * sizes, or null; sizes past 2^53 - 1 are refused, not rounded.
 */
export function parseDecimal(text: string): number | null {
  if (!/^(0|[1-9][0-9]{0,15})$/.test(text)) return null;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : null;
}

/** The 8 lowercase hex digits of a uint32, as key IDs are written in vkeys. */
export function hex32(value: number): string {
  return (value >>> 0).toString(16).padStart(8, "0");
}

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}
