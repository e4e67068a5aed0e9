// Recipient keys (docs/sealing.md, "Recipient keys"): X25519, P-256 or X-Wing (the hybrid
// ML-KEM-768 + X25519 KEM of draft-connolly-cfrg-xwing-kem) key pairs, named by their RFC 7638
// thumbprint: a device's agreement key (devices.ts). The public half is what a device's statement
// publishes and what items are sealed for; the private half opens them and never leaves the client.
//
// The private key is held twice, both out of reach of what lists or prints a pair: its JWK's
// private member (`d`; X-Wing's `priv`, its 32-byte seed), what a key file keeps, and the key the
// KEM uses: for X25519 and P-256 a WebCrypto key made from `d` that is never extractable; for
// X-Wing, which WebCrypto lacks, @hpke/hybridkem-x-wing's key of the seed (its own object, no
// WebCrypto key). A new X25519 or P-256 private key is a random scalar of @noble/curves (so that
// no extractable WebCrypto key is ever made to read it back), a new X-Wing key a random seed; the
// public members of an imported one are derived from its private member (@noble/curves, or
// X-Wing's own expansion of the seed) and compared. WebCrypto is globalThis.crypto: no node:* import.
import { XWing } from "@hpke/hybridkem-x-wing";
import { x25519 } from "@noble/curves/ed25519.js";
import { p256 } from "@noble/curves/nist.js";
import { base64url, buffer, fromBase64url, sha256, toHex } from "./bytes.js";
import { XWING, canonicalPublicJwk } from "./statements.js";

/** A recipient key's type: a JWK's `crv` (X25519, P-256), or X-Wing's `alg`. */
export type Curve = "X25519" | "P-256" | "X-Wing";

/** A private JWK as exportPrivateJwk() gives it: X25519's or P-256's with `d`, or X-Wing's with `priv` (its seed). */
export type RecipientPrivateJwk = { kty: "OKP" | "EC"; crv: "X25519" | "P-256"; x: string; y?: string; d: string } | { alg: "X-Wing"; kty: "AKP"; pub: string; priv: string };

/** WebCrypto's key type, as this runtime's typings name it. */
export type WebCryptoKey = Awaited<ReturnType<typeof globalThis.crypto.subtle.importKey>>;
type ImportParams = Parameters<typeof globalThis.crypto.subtle.importKey>[2];

/**
 * Why sealing, opening or a key file refused: one of these reasons, never key material in the
 * message. The reasons of opening are docs/sealing.md's, in its order (DELETED: a tombstone, which
 * has no content); TOO_LARGE and NO_RECIPIENTS are sealing's; WRONG_PASSPHRASE a key file's.
 */
export type SealingReason =
  | "DELETED"
  | "MALFORMED"
  | "UNSUPPORTED"
  | "BINDING_MISMATCH"
  | "SIGNER_UNKNOWN"
  | "SIGNATURE_INVALID"
  | "RECIPIENTS_MISMATCH"
  | "VERSION_MISMATCH"
  | "NOT_A_RECIPIENT"
  | "DECRYPTION_FAILED"
  | "COMMITMENT_MISMATCH"
  | "WRONG_PASSPHRASE"
  | "TOO_LARGE"
  | "NO_RECIPIENTS";

export class SealingError extends Error {
  constructor(
    readonly reason: SealingReason,
    message: string,
  ) {
    super(`${reason}: ${message}`);
    this.name = "SealingError";
  }
}

// The key types WebCrypto holds; X-Wing's keys are @hpke/hybridkem-x-wing's.
const ALGORITHMS: Record<Exclude<Curve, "X-Wing">, ImportParams> = {
  X25519: { name: "X25519" },
  "P-256": { name: "ECDH", namedCurve: "P-256" },
};
const COORDINATE = /^[A-Za-z0-9_-]{43}$/; // 32 bytes, base64url without padding
const XWING_KEM = new XWing();
// The members a JWK may carry besides its key.
const OPTIONAL_MEMBERS = new Set(["kid", "use", "alg", "key_ops", "ext"]);
const INSPECT = Symbol.for("nodejs.util.inspect.custom");

// The RFC 7638 canonical text of a public JWK (its required members, sorted, no whitespace),
// checked for the shape of a supported key; the private member (`d`, X-Wing's `priv`) is allowed
// only where a private key is read.
function canonicalJwk(jwk: unknown, allowPrivate: boolean): { curve: Curve; text: string } {
  if (typeof jwk !== "object" || jwk === null || Array.isArray(jwk)) throw new SealingError("UNSUPPORTED", "a JWK is a JSON object");
  const members = jwk as Record<string, unknown>;
  const curve = members.crv;
  if (members.kty === "OKP" && curve === "X25519") {
    expectMembers(members, ["crv", "kty", "x"], allowPrivate ? "d" : null);
    return { curve, text: JSON.stringify({ crv: curve, kty: "OKP", x: members.x }) };
  }
  if (members.kty === "EC" && curve === "P-256") {
    expectMembers(members, ["crv", "kty", "x", "y"], allowPrivate ? "d" : null);
    return { curve, text: JSON.stringify({ crv: curve, kty: "EC", x: members.x, y: members.y }) };
  }
  if (members.kty === "AKP" && members.alg === XWING) {
    expectMembers(members, ["alg", "kty", "pub"], allowPrivate ? "priv" : null);
    return { curve: XWING, text: JSON.stringify({ alg: XWING, kty: "AKP", pub: members.pub }) };
  }
  throw new SealingError("UNSUPPORTED", "a recipient key is an X25519 (kty OKP), P-256 (kty EC) or X-Wing (kty AKP, alg X-Wing) key");
}

function expectMembers(members: Record<string, unknown>, required: string[], privateMember: "d" | "priv" | null): void {
  for (const name of required.filter((n) => n === "x" || n === "y")) {
    if (typeof members[name] !== "string" || !COORDINATE.test(members[name])) {
      throw new SealingError("UNSUPPORTED", `the JWK's ${name} is not 32 bytes of base64url`);
    }
  }
  if (required.includes("pub") && typeof members.pub !== "string") throw new SealingError("UNSUPPORTED", "the JWK's pub is not a string");
  for (const name of Object.keys(members)) {
    if (required.includes(name) || OPTIONAL_MEMBERS.has(name)) continue;
    if (name === privateMember) continue;
    // The name only: a private member's value is secret.
    const isPrivate = name === "d" || name === "priv";
    throw new SealingError("UNSUPPORTED", isPrivate && privateMember === null ? `a public key was expected: this JWK has the private member ${name}` : `the JWK has a member ${JSON.stringify(name)} a recipient key does not`);
  }
}

function parsed(jwk: string | object): unknown {
  if (typeof jwk !== "string") return jwk;
  try {
    return JSON.parse(jwk);
  } catch {
    throw new SealingError("UNSUPPORTED", "the JWK is not JSON");
  }
}

/** A recipient's public key: its canonical JWK text, its key id and the recipient id items name it by. */
export class RecipientPublicKey {
  private constructor(
    readonly curve: Curve,
    /** The canonical JWK text, as a device's statement holds it: `{"crv":"X25519","kty":"OKP","x":"..."}`. */
    readonly jwk: string,
    /** The RFC 7638 thumbprint, base64url (43 characters): a device's `agreement_key_id`, the `keyId` of a wrapped key's HPKE info. */
    readonly keyId: string,
    /** The same thumbprint as 64 lowercase hexadecimal digits: a wrapped key's `recipient_id`. */
    readonly recipientId: string,
    /** The key as WebCrypto holds it, to wrap content keys for. */
    readonly cryptoKey: WebCryptoKey,
  ) {}

  /** A public JWK, as an object or its JSON text (a GetRecipientKeys key's `jwk`); a private one is refused. */
  static async fromJwk(jwk: string | object): Promise<RecipientPublicKey> {
    const { curve, text } = canonicalJwk(parsed(jwk), false);
    const thumbprint = sha256(text);
    let key: WebCryptoKey;
    if (curve === XWING) {
      key = await xwingPublicKey(JSON.parse(text) as Record<string, unknown>);
    } else {
      try {
        key = await globalThis.crypto.subtle.importKey("jwk", JSON.parse(text), ALGORITHMS[curve], true, []);
      } catch {
        throw new SealingError("UNSUPPORTED", `not a point of ${curve}`);
      }
    }
    return new RecipientPublicKey(curve, text, base64url(thumbprint), toHex(thumbprint), key);
  }
}

// An X-Wing public key as the KEM seals to it, once the key directory's reader has checked it as
// it checks a device's (statements.ts: FIPS 203's check of the ML-KEM-768 part, an X25519 part of
// no small order).
async function xwingPublicKey(members: Record<string, unknown>): Promise<WebCryptoKey> {
  try {
    canonicalPublicJwk(members, { signing: false });
  } catch (error) {
    throw new SealingError("UNSUPPORTED", `not an X-Wing public key: ${(error as Error).message}`);
  }
  return XWING_KEM.deserializePublicKey(buffer(fromBase64url(members.pub as string)!));
}

// The public key (`pub`, base64url) of an X-Wing seed, as X-Wing's key generation expands it
// (draft-connolly-cfrg-xwing-kem): @hpke/hybridkem-x-wing's.
async function xwingPublic(seed: Uint8Array): Promise<string> {
  const { publicKey } = await XWING_KEM.generateKeyPairDerand(buffer(seed));
  return base64url(await XWING_KEM.serializePublicKey(publicKey));
}

// The public members of the private scalar `d` (32 bytes), by @noble/curves: X25519's u, or
// P-256's affine x and y. Throws for a scalar that is no private key of the curve.
function publicMembers(curve: Curve, d: Uint8Array): { x: string; y?: string } {
  if (curve === "X25519") return { x: base64url(x25519.getPublicKey(d)) };
  const point = p256.getPublicKey(d, false); // 0x04 || x || y
  return { x: base64url(point.subarray(1, 33)), y: base64url(point.subarray(33, 65)) };
}

/**
 * A recipient key pair: what opens the items sealed for its public half. Make one with
 * generateRecipientKey(), keep exportPrivateJwk()'s JWK somewhere safe (a device's key file,
 * devices.ts), and read it back with importRecipientKey(). Neither util.inspect nor
 * JSON.stringify shows the private key; its WebCrypto key is not extractable.
 */
export class RecipientKeyPair {
  private constructor(readonly publicKey: RecipientPublicKey) {}

  get curve(): Curve {
    return this.publicKey.curve;
  }
  /** The public half's canonical JWK text: what a device publishes, and what seal() takes. */
  get jwk(): string {
    return this.publicKey.jwk;
  }
  get keyId(): string {
    return this.publicKey.keyId;
  }
  get recipientId(): string {
    return this.publicKey.recipientId;
  }

  /** The private key as a JWK with `d` (X-Wing's with `priv`, its seed): a secret, to be kept as the application keeps its own. */
  async exportPrivateJwk(): Promise<RecipientPrivateJwk> {
    const secret = secretOf(this).d;
    if (this.curve === XWING) return { alg: XWING, kty: "AKP", pub: (JSON.parse(this.jwk) as { pub: string }).pub, priv: secret };
    const { kty, crv, x, y } = JSON.parse(this.jwk) as { kty: "OKP" | "EC"; crv: "X25519" | "P-256"; x: string; y?: string };
    return y === undefined ? { kty, crv, x, d: secret } : { kty, crv, x, y, d: secret };
  }

  /** A new key pair of `curve` (X25519, P-256 or X-Wing), from the platform's CSPRNG. */
  static async generate(curve: Curve = "X25519"): Promise<RecipientKeyPair> {
    if (curve === XWING) {
      const seed = globalThis.crypto.getRandomValues(new Uint8Array(32));
      return RecipientKeyPair.fromPrivateJwk({ alg: XWING, kty: "AKP", pub: await xwingPublic(seed), priv: base64url(seed) });
    }
    if (!Object.hasOwn(ALGORITHMS, curve)) throw new SealingError("UNSUPPORTED", "a recipient key is X25519, P-256 or X-Wing");
    const d = curve === "X25519" ? x25519.utils.randomSecretKey() : p256.utils.randomSecretKey();
    const [kty, members] = [curve === "X25519" ? "OKP" : "EC", publicMembers(curve, d)];
    return RecipientKeyPair.fromPrivateJwk({ crv: curve, kty, ...members, d: base64url(d) });
  }

  /** A key pair from its private JWK (with `d`; X-Wing's with `priv`), as an object or its JSON text. */
  static async fromPrivateJwk(jwk: string | object): Promise<RecipientKeyPair> {
    const members = parsed(jwk);
    const { curve, text } = canonicalJwk(members, true);
    if (curve === XWING) return RecipientKeyPair.fromXWingJwk(members as Record<string, unknown>, text);
    const d = (members as Record<string, unknown>).d;
    const scalar = typeof d === "string" && COORDINATE.test(d) ? fromBase64url(d) : null;
    if (scalar === null) throw new SealingError("UNSUPPORTED", "a private JWK has d, 32 bytes of base64url");
    const publicKey = await RecipientPublicKey.fromJwk(text);
    const { x, y } = JSON.parse(text) as { x: string; y?: string };
    let derived: { x: string; y?: string };
    try {
      derived = publicMembers(curve, scalar);
    } catch {
      throw new SealingError("UNSUPPORTED", `d is not a private key of ${curve}`);
    }
    // Only the names: the message says what to check, never a value of the key.
    if (derived.x !== x || derived.y !== y) throw new SealingError("UNSUPPORTED", `not a ${curve} private key whose public members match it`);
    let privateKey: WebCryptoKey;
    try {
      privateKey = await globalThis.crypto.subtle.importKey("jwk", { ...JSON.parse(text), d }, ALGORITHMS[curve], false, ["deriveBits"]);
    } catch {
      throw new SealingError("UNSUPPORTED", `not a ${curve} private key whose public members match it`);
    }
    const pair = new RecipientKeyPair(publicKey);
    secrets.set(pair, { d: d as string, privateKey });
    return pair;
  }

  // An X-Wing private JWK: its seed (`priv`, 32 bytes), whose public key must be the JWK's `pub`.
  private static async fromXWingJwk(members: Record<string, unknown>, text: string): Promise<RecipientKeyPair> {
    const priv = members.priv;
    const seed = typeof priv === "string" && COORDINATE.test(priv) ? fromBase64url(priv) : null;
    if (seed === null) throw new SealingError("UNSUPPORTED", "an X-Wing private JWK has priv, its 32-byte seed in base64url");
    const publicKey = await RecipientPublicKey.fromJwk(text);
    // Only the names: the message says what to check, never a value of the key.
    if ((await xwingPublic(seed)) !== (JSON.parse(text) as { pub: string }).pub) {
      throw new SealingError("UNSUPPORTED", "not an X-Wing private key whose public member pub matches it");
    }
    const pair = new RecipientKeyPair(publicKey);
    secrets.set(pair, { d: priv as string, privateKey: await XWING_KEM.deserializePrivateKey(buffer(seed)) });
    return pair;
  }

  toJSON(): { curve: Curve; keyId: string; jwk: string } {
    return { curve: this.curve, keyId: this.keyId, jwk: this.jwk };
  }

  [INSPECT](): string {
    return `RecipientKeyPair { curve: '${this.curve}', keyId: '${this.keyId}' }`;
  }
}

/** A new key pair on `curve` (X25519 by default), from the platform's CSPRNG. */
export function generateRecipientKey(curve: Curve = "X25519"): Promise<RecipientKeyPair> {
  return RecipientKeyPair.generate(curve);
}

/** A key pair from its private JWK (with `d`), as an object or its JSON text. */
export function importRecipientKey(jwk: string | object): Promise<RecipientKeyPair> {
  return RecipientKeyPair.fromPrivateJwk(jwk);
}

// Each pair's private key, out of the object's own members: nothing that lists or prints a
// pair can reach it. Only this package's modules read it (the package exports map hides this one).
// `d` is the private JWK member's value (X-Wing's `priv`); `privateKey` the key the KEM uses.
const secrets = new WeakMap<RecipientKeyPair, { d: string; privateKey: WebCryptoKey }>();

function secretOf(pair: RecipientKeyPair): { d: string; privateKey: WebCryptoKey } {
  const secret = secrets.get(pair);
  if (secret === undefined) throw new TypeError("not a RecipientKeyPair made by generateRecipientKey or importRecipientKey");
  return secret;
}

/** The pair's private key, as the KEM uses it: WebCrypto's (not extractable), or X-Wing's. */
export function privateKeyOf(pair: RecipientKeyPair): WebCryptoKey {
  return secretOf(pair).privateKey;
}
