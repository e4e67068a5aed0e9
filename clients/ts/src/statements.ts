// The key log's statements and entries (docs/key-transparency.md, "Formats"): their canonical JSON,
// strict parsing, key ids, and the Ed25519 signatures over them. A port of the Python package's
// zkplatform_tlog/statements.py that decides every text the same way: the same texts are canonical,
// the same are refused, with the same reason (ENTRY_MALFORMED or ENTRY_UNSUPPORTED).
//
// Pure: no I/O, no clock, no node:* import (it runs in browsers too). Ed25519 and P-256 are
// @noble/curves', SHA-256 @noble/hashes'.
import { ed25519 } from "@noble/curves/ed25519.js";
import { p256 } from "@noble/curves/nist.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { ed25519Verify } from "./tlog/ed25519.js";

export const FORMAT = 1;
export const DEVICE_KEYS = "zkplatform.device-keys";
export const DEVICE_REVOCATION = "zkplatform.device-revocation";
export const PRINCIPAL_RESET = "zkplatform.principal-reset";

// Ids of tenants and principals, as platform.v1 restricts them; key ids are 43 base64url characters.
const ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;
const KEY_ID = /^[A-Za-z0-9_-]{43}$/;
const LOG_KEY_HASH = /^[0-9a-f]{8}$/;
const B64URL = /^[A-Za-z0-9_-]*$/;
// The most any Unix-seconds field may hold: what every client language represents exactly.
const MAX_SAFE_INTEGER = 2n ** 53n - 1n;
// An entry carries 1 to this many signatures.
const MAX_SIGNATURES = 8;
// Deeper JSON than this is refused as malformed (Python refuses what its recursion limit stops).
const MAX_DEPTH = 500;

export type StatementErrorReason = "ENTRY_MALFORMED" | "ENTRY_UNSUPPORTED";

/**
 * A statement or an entry that is not well formed (ENTRY_MALFORMED), or of a format or a type this
 * code does not know (ENTRY_UNSUPPORTED: the reader needs an update).
 */
export class StatementError extends Error {
  constructor(
    readonly reason: StatementErrorReason,
    message: string,
  ) {
    super(`${reason}: ${message}`);
    this.name = "StatementError";
  }
}

// -- base64url and key ids -------------------------------------------------------------------

const B64URL_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const B64URL_VALUE = new Map([...B64URL_ALPHABET].map((char, i) => [char, i]));
const encoder = new TextEncoder();

/** base64url without padding. */
export function b64url(data: Uint8Array): string {
  let out = "";
  for (let i = 0; i < data.length; i += 3) {
    const [a, b, c] = [data[i]!, data[i + 1], data[i + 2]];
    const n = (a << 16) | ((b ?? 0) << 8) | (c ?? 0);
    out += B64URL_ALPHABET[(n >> 18) & 63]! + B64URL_ALPHABET[(n >> 12) & 63]!;
    if (b !== undefined) out += B64URL_ALPHABET[(n >> 6) & 63]!;
    if (c !== undefined) out += B64URL_ALPHABET[n & 63]!;
  }
  return out;
}

/**
 * Strict base64url without padding: canonical (re-encoding gives the same text) and, when `length`
 * is given, exactly that many bytes; throws RangeError otherwise.
 */
export function b64urlDecode(text: string, length?: number): Uint8Array {
  if (typeof text !== "string" || !B64URL.test(text) || text.length % 4 === 1) throw new RangeError("not base64url");
  const out = new Uint8Array(Math.floor((text.length * 3) / 4));
  let bits = 0;
  let value = 0;
  let o = 0;
  for (const char of text) {
    value = (value << 6) | B64URL_VALUE.get(char)!;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (value >> bits) & 255;
    }
  }
  if (b64url(out) !== text) throw new RangeError("not canonical base64url");
  if (length !== undefined && out.length !== length) throw new RangeError(`not ${length} bytes`);
  return out;
}

/** The UTF-8 bytes of a text. */
export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

/** The RFC 7638 SHA-256 thumbprint of a JWK in canonical form, base64url without padding. */
export function thumbprint(canonicalJwk: string): string {
  return b64url(sha256(utf8(canonicalJwk)));
}

/** The canonical JWK text of a 32-byte Ed25519 public key. */
export function ed25519Jwk(publicKey: Uint8Array): string {
  return canonicalJson({ crv: "Ed25519", kty: "OKP", x: b64url(publicKey) });
}

// -- canonical JSON --------------------------------------------------------------------------

/**
 * A number as JSON text gave it: an integer (no fraction, no exponent) keeps its exact value, so
 * that an integer past 2^53 is told from its neighbours as Python's json module tells it.
 */
export class JsonNumber {
  constructor(
    readonly text: string,
    /** The exact value of an integer literal; null for a float (a fraction, an exponent, NaN, Infinity). */
    readonly integer: bigint | null,
  ) {}
}

/** A parsed JSON value: objects are Maps (members in the text's order, the last of a repeated name). */
export type Json = null | boolean | string | JsonNumber | Json[] | JsonObject;
export type JsonObject = Map<string, Json>;

// Code point order (Python's sort of str), not UTF-16 code unit order (JavaScript's default).
function byCodePoint(a: string, b: string): number {
  const [x, y] = [[...a], [...b]];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

const ESCAPES: Record<string, string> = { '"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f" };

function jsonString(text: string): string {
  return `"${text.replace(/["\\\u0000-\u001f]/g, (char) => ESCAPES[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`)}"`;
}

// The text Python's float repr gives (what json.dumps writes for a float): the shortest digits
// that read back, in fixed notation for exponents from -4 to 15, else d.ddde+XX.
function pythonFloat(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "Infinity";
  if (value === -Infinity) return "-Infinity";
  const sign = value < 0 || Object.is(value, -0) ? "-" : "";
  if (value === 0) return `${sign}0.0`;
  const [mantissa, exponentText] = Math.abs(value).toExponential().split("e") as [string, string];
  const digits = mantissa.replace(".", "");
  const exponent = Number(exponentText);
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) return `${sign}0.${"0".repeat(-exponent - 1)}${digits}`;
    const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, "0");
    return `${sign}${whole}.${digits.slice(exponent + 1) || "0"}`;
  }
  const shown = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  return `${sign}${shown}e${exponent < 0 ? "-" : "+"}${String(Math.abs(exponent)).padStart(2, "0")}`;
}

/**
 * The canonical text of a JSON value: members sorted by code point, no whitespace, strings escaped
 * only where JSON requires it. Takes plain values (objects, arrays, strings, safe integers,
 * booleans, null) and parsed ones (Maps, JsonNumbers).
 */
export function canonicalJson(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "string") return jsonString(value);
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw new TypeError("canonical JSON holds integers only");
    return String(value);
  }
  if (value instanceof JsonNumber) return value.integer === null ? pythonFloat(Number(value.text)) : value.integer.toString();
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const members = value instanceof Map ? [...value.entries()] : typeof value === "object" ? Object.entries(value) : null;
  if (members === null) throw new TypeError(`canonical JSON cannot hold a ${typeof value}`);
  members.sort(([a], [b]) => byCodePoint(a, b));
  return `{${members.map(([name, member]) => `${jsonString(name)}:${canonicalJson(member)}`).join(",")}}`;
}

// A JSON reader that accepts exactly what Python's json.loads accepts (NaN and Infinity too), so
// that a text is refused, or found not canonical, exactly where the Python package finds it so.
class JsonReader {
  private at = 0;
  constructor(private readonly text: string) {}

  document(): Json {
    const value = this.value(0);
    this.space();
    if (this.at !== this.text.length) throw new SyntaxError("extra data");
    return value;
  }

  private space(): void {
    while (" \t\n\r".includes(this.text[this.at] ?? "x")) this.at++;
  }

  private value(depth: number): Json {
    if (depth > MAX_DEPTH) throw new SyntaxError("too deep");
    this.space();
    const char = this.text[this.at];
    if (char === "{") return this.object(depth);
    if (char === "[") return this.array(depth);
    if (char === '"') return this.string();
    for (const [word, value] of [["null", null], ["true", true], ["false", false]] as const) {
      if (this.text.startsWith(word, this.at)) {
        this.at += word.length;
        return value;
      }
    }
    for (const word of ["NaN", "Infinity", "-Infinity"]) {
      if (this.text.startsWith(word, this.at)) {
        this.at += word.length;
        return new JsonNumber(word, null);
      }
    }
    const number = /^(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?/.exec(this.text.slice(this.at));
    if (number === null) throw new SyntaxError("expected a value");
    this.at += number[0].length;
    const integer = number[2] === undefined && number[3] === undefined;
    return new JsonNumber(number[0], integer ? BigInt(number[1]!) : null);
  }

  private object(depth: number): JsonObject {
    const members: JsonObject = new Map();
    this.at++;
    this.space();
    if (this.text[this.at] === "}") {
      this.at++;
      return members;
    }
    for (;;) {
      this.space();
      if (this.text[this.at] !== '"') throw new SyntaxError("expected a member name");
      const name = this.string();
      this.space();
      if (this.text[this.at++] !== ":") throw new SyntaxError("expected ':'");
      members.set(name, this.value(depth + 1));
      this.space();
      const next = this.text[this.at++];
      if (next === "}") return members;
      if (next !== ",") throw new SyntaxError("expected ',' or '}'");
    }
  }

  private array(depth: number): Json[] {
    const items: Json[] = [];
    this.at++;
    this.space();
    if (this.text[this.at] === "]") {
      this.at++;
      return items;
    }
    for (;;) {
      items.push(this.value(depth + 1));
      this.space();
      const next = this.text[this.at++];
      if (next === "]") return items;
      if (next !== ",") throw new SyntaxError("expected ',' or ']'");
    }
  }

  private string(): string {
    let out = "";
    this.at++;
    for (;;) {
      const char = this.text[this.at++];
      if (char === undefined) throw new SyntaxError("unterminated string");
      if (char === '"') return out;
      if (char < " ") throw new SyntaxError("control character in a string");
      if (char !== "\\") {
        out += char;
        continue;
      }
      const escape = this.text[this.at++];
      const simple = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" }[escape ?? ""];
      if (simple !== undefined) {
        out += simple;
      } else if (escape === "u" && /^[0-9a-fA-F]{4}$/.test(this.text.slice(this.at, this.at + 4))) {
        out += String.fromCharCode(parseInt(this.text.slice(this.at, this.at + 4), 16));
        this.at += 4;
      } else {
        throw new SyntaxError("invalid escape");
      }
    }
  }
}

function malformed(message: string): StatementError {
  return new StatementError("ENTRY_MALFORMED", message);
}

// The JSON object a canonical text holds; ENTRY_MALFORMED when it is not JSON, not an object, or
// not the canonical text of what it holds.
function canonicalDocument(text: string, what: string): JsonObject {
  let document: Json;
  try {
    document = new JsonReader(text).document();
  } catch {
    throw malformed(`the ${what} is not JSON`);
  }
  if (!(document instanceof Map)) throw malformed(`the ${what} must be a JSON object`);
  // A lone surrogate cannot be UTF-8: no canonical text holds one.
  if (/\p{Surrogate}/u.test(text) || canonicalJson(document) !== text) {
    throw malformed(`the ${what} is not in canonical form (members sorted, no whitespace)`);
  }
  return document;
}

// -- public JWKs -----------------------------------------------------------------------------

// Agreement key types: kty/crv and the members RFC 7638 hashes for each.
const AGREEMENT_CURVES: Record<string, readonly string[]> = { "OKP/X25519": ["crv", "kty", "x"], "EC/P-256": ["crv", "kty", "x", "y"] };
// X-Wing, the hybrid ML-KEM-768 + X25519 KEM (draft-connolly-cfrg-xwing-kem), the third agreement
// key type. No JWK form of it is standard: ours is the "AKP" key type of the JOSE/COSE drafts for
// post-quantum keys (draft-ietf-cose-dilithium), {"alg":"X-Wing","kty":"AKP","pub":...}, `pub` the
// 1216-byte public key (ML-KEM-768's encapsulation key, 1184 bytes, then X25519's, 32) and the
// RFC 7638 thumbprint over alg, kty and pub, as those drafts define it for AKP keys.
export const XWING = "X-Wing";
export const XWING_PUBLIC_BYTES = 1216;
const XWING_MEMBERS = ["alg", "kty", "pub"] as const;
const MLKEM768_PUBLIC_BYTES = 1184;
// ML-KEM's modulus: every coefficient of an encapsulation key is below it (FIPS 203 section 7.2).
const MLKEM_Q = 3329;
// The prime of Curve25519's field (RFC 7748 section 4.1): a coordinate is canonical below it.
const P25519 = 2n ** 255n - 19n;
// The y-coordinates, the sign bit aside, of Ed25519's eight points of small order: the identity
// (1), the point of order 2 (p - 1), the two of order 4 (0) and the four of order 8. libsodium's
// list (ge25519_has_small_order); Chalkias, Garillot, Nikolaenko, "Taming the many EdDSAs" (2020).
// With the sign bit ignored, it holds the "negative zero" encodings of the first two as well.
const ED25519_ORDER_8_Y = 2707385501144840649318225287225658788936804267575313519463743609750303402022n;
const ED25519_SMALL_ORDER_Y = new Set([0n, 1n, ED25519_ORDER_8_Y, P25519 - ED25519_ORDER_8_Y, P25519 - 1n]);
// The canonical u-coordinates of X25519's points of small order, on the curve and on its twist:
// those an exchange with gives the all-zero secret whatever the private key (RFC 7748 section
// 6.1), which the Python package finds by such an exchange. The same list as @noble/curves'
// x25519 refuses (and https://cr.yp.to/ecdh.html#validate): compared here rather than found by an
// exchange, which costs milliseconds in JavaScript for every device a replay reads.
const X25519_SMALL_ORDER_U = new Set([
  0n,
  1n,
  P25519 - 1n,
  325606250916557431795983626356110631294008115727848805560023387167927233504n,
  39382357235489614581723060781553021112529911719440698176882885853963445705823n,
]);

function littleEndian(bytes: Uint8Array): bigint {
  let value = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) value = (value << 8n) | BigInt(bytes[i]!);
  return value;
}

// An Ed25519 public key that a signature can bind: canonical, and of no small order, whose
// "signatures" anyone makes (the identity verifies every message under s*B = R). A key that is
// no point of the curve is taken, as the Python package takes it: no signature by it verifies.
function requireEd25519(x: Uint8Array): void {
  const y = littleEndian(x) & ((1n << 255n) - 1n);
  if (y >= P25519) throw new RangeError("an Ed25519 key must be canonical: its y below 2^255 - 19 (RFC 8032 section 5.1.3)");
  if (ED25519_SMALL_ORDER_Y.has(y)) throw new RangeError("an Ed25519 key must not be a point of small order: anyone can make its signatures");
}

// An X25519 public key that items can be sealed for: canonical (so that one key has one id), and
// of no small order (an exchange with it gives the all-zero secret).
function requireX25519(x: Uint8Array): void {
  const u = littleEndian(x);
  if (u >= P25519) throw new RangeError("an X25519 key must be canonical: below 2^255 - 19, bit 255 clear (RFC 7748 section 5)");
  if (X25519_SMALL_ORDER_U.has(u)) {
    throw new RangeError("an X25519 key must not be of small order: every exchange with it gives the all-zero secret (RFC 7748 section 6.1)");
  }
}

// FIPS 203 section 7.2's check of an ML-KEM-768 encapsulation key, the one the Python package's
// cryptography makes when it imports one (and mlkem's, only inside an asynchronous encapsulation;
// statements are read synchronously): its 768 coefficients, 12 bits each in little-endian order
// (ByteDecode12), all below q. A comparison of integers, no primitive; its length the caller's.
function requireMlKem768(key: Uint8Array): void {
  for (let i = 0; i < MLKEM768_PUBLIC_BYTES - 32; i += 3) {
    const [b0, b1, b2] = [key[i]!, key[i + 1]!, key[i + 2]!];
    if ((b0 | ((b1 & 0x0f) << 8)) >= MLKEM_Q || ((b1 >> 4) | (b2 << 4)) >= MLKEM_Q) {
      throw new RangeError("the X-Wing key's ML-KEM-768 part is no encapsulation key (FIPS 203 section 7.2)");
    }
  }
}

// The canonical JWK text of an X-Wing public key: its ML-KEM-768 part checked as FIPS 203 says,
// its X25519 part as any X25519 agreement key (canonical, of no small order).
function xwingJwk(members: Record<string, unknown> | JsonObject): string {
  const names = memberNames(members);
  if (names.length !== XWING_MEMBERS.length || !XWING_MEMBERS.every((name) => names.includes(name))) {
    throw new RangeError(`an X-Wing public key has exactly the members ${XWING_MEMBERS.join(", ")}`);
  }
  const pub = member(members, "pub");
  if (typeof pub !== "string") throw new RangeError("a JWK's members must be strings");
  const key = b64urlDecode(pub, XWING_PUBLIC_BYTES);
  requireMlKem768(key.subarray(0, MLKEM768_PUBLIC_BYTES));
  try {
    requireX25519(key.subarray(MLKEM768_PUBLIC_BYTES));
  } catch (error) {
    throw new RangeError(`the X-Wing key's X25519 part: ${(error as Error).message}`);
  }
  return canonicalJson(Object.fromEntries(XWING_MEMBERS.map((name) => [name, member(members, name)])));
}

function memberNames(members: Record<string, unknown> | JsonObject): string[] {
  return members instanceof Map ? [...members.keys()] : Object.keys(members);
}

function member(members: Record<string, unknown> | JsonObject, name: string): unknown {
  return members instanceof Map ? members.get(name) : Object.hasOwn(members, name) ? members[name] : undefined;
}

/**
 * The canonical JWK text of a public key given as JWK members: an Ed25519 key when `signing`, else
 * an X25519, P-256 or X-Wing agreement key. Exactly the RFC 7638 members, each a canonical
 * coordinate of a usable key: no point of small order (Ed25519, X25519), none off the curve
 * (P-256, whose points all have its prime order), an X-Wing key whose ML-KEM-768 part passes
 * FIPS 203's checks and whose X25519 part is an X25519 key of these; throws RangeError saying
 * what is wrong otherwise.
 */
export function canonicalPublicJwk(members: Record<string, unknown> | JsonObject, options: { signing: boolean }): string {
  const [kty, crv] = [member(members, "kty"), member(members, "crv")];
  let required: readonly string[] | undefined;
  if (options.signing) {
    if (kty !== "OKP" || crv !== "Ed25519") throw new RangeError('a signing key must be Ed25519 (kty "OKP", crv "Ed25519")');
    required = ["crv", "kty", "x"];
  } else {
    if (kty === "AKP" && member(members, "alg") === XWING) return xwingJwk(members);
    required = typeof kty === "string" && typeof crv === "string" ? AGREEMENT_CURVES[`${kty}/${crv}`] : undefined;
    if (required === undefined) throw new RangeError('an agreement key must be X25519 (kty "OKP"), P-256 (kty "EC") or X-Wing (kty "AKP")');
  }
  const names = memberNames(members);
  if (names.length !== required.length || !required.every((name) => names.includes(name))) {
    throw new RangeError(`a ${String(crv)} public key has exactly the members ${required.join(", ")}`);
  }
  if (!required.every((name) => typeof member(members, name) === "string")) throw new RangeError("a JWK's members must be strings");
  const x = b64urlDecode(member(members, "x") as string, 32);
  if (crv === "Ed25519") requireEd25519(x);
  if (crv === "X25519") requireX25519(x);
  if (crv === "P-256") {
    const y = b64urlDecode(member(members, "y") as string, 32);
    const point = new Uint8Array(65);
    point.set([4]);
    point.set(x, 1);
    point.set(y, 33);
    try {
      p256.Point.fromBytes(point);
    } catch {
      throw new RangeError("the key is not a point of P-256");
    }
  }
  return canonicalJson(Object.fromEntries(required.map((name) => [name, member(members, name)])));
}

// -- statements ------------------------------------------------------------------------------

/**
 * A device's publication: its signing and agreement keys (canonical JWK texts), signed by itself
 * and, unless it is its principal's first device, endorsed by the device `endorser`.
 */
export class DeviceKeys {
  readonly type = DEVICE_KEYS;
  constructor(
    readonly tenantId: string,
    readonly principalId: string,
    readonly signingJwk: string,
    readonly agreementJwk: string,
    readonly created: number,
    /** A device id, or "" for a first device. */
    readonly endorser: string,
  ) {}

  get deviceId(): string {
    return thumbprint(this.signingJwk);
  }

  get agreementKeyId(): string {
    return thumbprint(this.agreementJwk);
  }

  document(): Record<string, unknown> {
    return {
      agreementKey: JSON.parse(this.agreementJwk),
      created: this.created,
      endorser: this.endorser,
      format: FORMAT,
      principalId: this.principalId,
      signingKey: JSON.parse(this.signingJwk),
      tenantId: this.tenantId,
      type: DEVICE_KEYS,
    };
  }

  /** The canonical text: what is signed, and what PublishDevice takes. */
  canonical(): string {
    return canonicalJson(this.document());
  }
}

/** The revocation of the device `device`, signed by the live device `revoker` of the same principal. */
export class DeviceRevocation {
  readonly type = DEVICE_REVOCATION;
  constructor(
    readonly tenantId: string,
    readonly principalId: string,
    readonly device: string,
    readonly revoker: string,
    readonly created: number,
  ) {}

  document(): Record<string, unknown> {
    return {
      created: this.created,
      device: this.device,
      format: FORMAT,
      principalId: this.principalId,
      revoker: this.revoker,
      tenantId: this.tenantId,
      type: DEVICE_REVOCATION,
    };
  }

  canonical(): string {
    return canonicalJson(this.document());
  }
}

/** An operator's reset of a principal: all its devices revoked, signed by the log key. */
export class PrincipalReset {
  readonly type = PRINCIPAL_RESET;
  constructor(
    readonly tenantId: string,
    readonly principalId: string,
    readonly created: number,
  ) {}

  document(): Record<string, unknown> {
    return { created: this.created, format: FORMAT, principalId: this.principalId, tenantId: this.tenantId, type: PRINCIPAL_RESET };
  }

  canonical(): string {
    return canonicalJson(this.document());
  }
}

export type Statement = DeviceKeys | DeviceRevocation | PrincipalReset;

export interface EntrySignature {
  /** A device id, or for a reset the log key's 8-hex-digit key hash. */
  readonly keyId: string;
  /** 64 bytes of Ed25519. */
  readonly signature: Uint8Array;
}

/**
 * A leaf of the key log: a statement as signed, with its signatures in the order the format fixes
 * (docs/key-transparency.md, "Entries").
 */
export class Entry {
  constructor(
    readonly statement: Statement,
    readonly signatures: readonly EntrySignature[],
  ) {}

  canonical(): string {
    return canonicalJson({
      format: FORMAT,
      signatures: this.signatures.map(({ keyId, signature }) => ({ keyId, signature: b64url(signature) })),
      statement: this.statement.document(),
    });
  }
}

/** The Ed25519 signature of a statement's canonical bytes by a 32-byte seed. */
export function signStatement(seed: Uint8Array, statement: Statement): Uint8Array {
  return ed25519.sign(utf8(statement.canonical()), seed);
}

/**
 * Whether `signature` is the Ed25519 signature of the statement by the key `signingJwk` (a
 * canonical Ed25519 JWK text), decided as the Python package's OpenSSL decides it (tlog/ed25519.ts).
 */
export function verifyStatement(signingJwk: string, statement: Statement, signature: Uint8Array): boolean {
  const x = b64urlDecode((JSON.parse(signingJwk) as { x: string }).x, 32);
  return ed25519Verify(x, utf8(statement.canonical()), signature);
}

/** The statement a canonical JSON text holds; throws StatementError saying what is wrong otherwise. */
export function parseStatement(text: string): Statement {
  return statementOf(canonicalDocument(text, "statement"));
}

/** The entry a leaf's canonical JSON text holds; throws StatementError saying what is wrong otherwise. */
export function parseEntry(text: string): Entry {
  const document = canonicalDocument(text, "entry");
  checkFormat(document, "entry");
  exactly(document, ["format", "signatures", "statement"], "entry");
  const statement = document.get("statement");
  const signatures = document.get("signatures");
  if (!(statement instanceof Map)) throw malformed("the entry's statement must be an object");
  if (!Array.isArray(signatures) || signatures.length < 1 || signatures.length > MAX_SIGNATURES) {
    throw malformed(`the entry's signatures must be a list of 1 to ${MAX_SIGNATURES}`);
  }
  const parsed = statementOf(statement);
  return new Entry(parsed, signatures.map(signatureOf));
}

// The checks in the Python package's order, so that a text wrong in two ways is refused for the
// same one of them.
function statementOf(document: JsonObject): Statement {
  checkFormat(document, "statement");
  const kind = document.get("type");
  const tenantId = id(document, "tenantId");
  const principalId = id(document, "principalId");
  const created = seconds(document, "created");
  if (kind === DEVICE_KEYS) {
    exactly(document, ["agreementKey", "created", "endorser", "format", "principalId", "signingKey", "tenantId", "type"], kind);
    const endorser = document.get("endorser");
    if (!(endorser === "" || (typeof endorser === "string" && KEY_ID.test(endorser)))) throw malformed("endorser must be a device id or empty");
    const signing = jwk(document, "signingKey", true);
    const agreement = jwk(document, "agreementKey", false);
    return new DeviceKeys(tenantId, principalId, signing, agreement, created, endorser);
  }
  if (kind === DEVICE_REVOCATION) {
    exactly(document, ["created", "device", "format", "principalId", "revoker", "tenantId", "type"], kind);
    return new DeviceRevocation(tenantId, principalId, keyId(document, "device"), keyId(document, "revoker"), created);
  }
  if (kind === PRINCIPAL_RESET) {
    exactly(document, ["created", "format", "principalId", "tenantId", "type"], kind);
    return new PrincipalReset(tenantId, principalId, created);
  }
  if (typeof kind === "string") {
    throw new StatementError("ENTRY_UNSUPPORTED", `the statement type ${JSON.stringify([...kind].slice(0, 64).join(""))} is unknown here: update the client`);
  }
  throw malformed("a statement's type must be a string");
}

function signatureOf(document: Json): EntrySignature {
  if (!(document instanceof Map) || document.size !== 2 || !document.has("keyId") || !document.has("signature")) {
    throw malformed("a signature has exactly keyId and signature");
  }
  const [keyId, signature] = [document.get("keyId"), document.get("signature")];
  if (!(typeof keyId === "string" && (KEY_ID.test(keyId) || LOG_KEY_HASH.test(keyId)))) {
    throw malformed("a signature's keyId must be a device id or a log key hash");
  }
  try {
    if (typeof signature !== "string") throw new RangeError("not a string");
    return { keyId, signature: b64urlDecode(signature, 64) };
  } catch {
    throw malformed("a signature must be 64 bytes in base64url");
  }
}

function checkFormat(document: JsonObject, what: string): void {
  const version = document.get("format");
  if (!(version instanceof JsonNumber) || version.integer === null) throw malformed(`the ${what} has no format version`);
  if (version.integer !== BigInt(FORMAT)) {
    throw new StatementError("ENTRY_UNSUPPORTED", `the ${what} format ${version.integer} is unknown here: update the client`);
  }
}

function exactly(document: JsonObject, members: readonly string[], what: string): void {
  if (document.size !== members.length || !members.every((name) => document.has(name))) {
    throw malformed(`a ${what} has exactly the members ${members.join(", ")}`);
  }
}

function id(document: JsonObject, name: string): string {
  const value = document.get(name);
  if (!(typeof value === "string" && ID.test(value))) throw malformed(`${name} must be an id`);
  return value;
}

function keyId(document: JsonObject, name: string): string {
  const value = document.get(name);
  if (!(typeof value === "string" && KEY_ID.test(value))) throw malformed(`${name} must be a key id (43 base64url characters)`);
  return value;
}

function seconds(document: JsonObject, name: string): number {
  const value = document.get(name);
  if (!(value instanceof JsonNumber) || value.integer === null || value.integer < 0n || value.integer > MAX_SAFE_INTEGER) {
    throw malformed(`${name} must be Unix seconds`);
  }
  return Number(value.integer);
}

function jwk(document: JsonObject, name: string, signing: boolean): string {
  const members = document.get(name);
  if (!(members instanceof Map)) throw malformed(`${name} must be a JWK object`);
  try {
    return canonicalPublicJwk(members, { signing });
  } catch (error) {
    throw malformed(`${name}: ${error instanceof Error ? error.message : String(error)}`);
  }
}
