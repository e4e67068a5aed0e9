// Recipient keys (docs/sealing.md, "Recipient keys"): X25519 or P-256 key agreement key pairs,
// named by their RFC 7638 thumbprint: a device's agreement key (devices.ts). The public half is
// what a device's statement publishes and what items are sealed for; the private half opens them
// and never leaves the client.
//
// The private key is held twice, both out of reach of what lists or prints a pair: its JWK `d`
// (what a key file keeps) and a WebCrypto key made from it that is never extractable, which the
// key agreement uses. A new private key is a random scalar of @noble/curves (so that no
// extractable WebCrypto key is ever made to read it back), and the public members of an imported
// one are derived from `d` by @noble/curves and compared. WebCrypto is globalThis.crypto: no
// node:* import.
import { x25519 } from "@noble/curves/ed25519.js";
import { p256 } from "@noble/curves/nist.js";
import { base64url, fromBase64url, sha256, toHex } from "./bytes.js";

export type Curve = "X25519" | "P-256";

/** WebCrypto's key type, as this runtime's typings name it. */
export type WebCryptoKey = Awaited<ReturnType<typeof globalThis.crypto.subtle.importKey>>;
type ImportParams = Parameters<typeof globalThis.crypto.subtle.importKey>[2];

/**
 * Why sealing, opening or a key file refused: one of these reasons, never key material in the
 * message. The reasons of opening are docs/sealing.md's, in its order; TOO_LARGE and
 * NO_RECIPIENTS are sealing's; WRONG_PASSPHRASE a key file's.
 */
export type SealingReason =
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

const ALGORITHMS: Record<Curve, ImportParams> = {
  X25519: { name: "X25519" },
  "P-256": { name: "ECDH", namedCurve: "P-256" },
};
const COORDINATE = /^[A-Za-z0-9_-]{43}$/; // 32 bytes, base64url without padding
// The members a JWK may carry besides its key.
const OPTIONAL_MEMBERS = new Set(["kid", "use", "alg", "key_ops", "ext"]);
const INSPECT = Symbol.for("nodejs.util.inspect.custom");

// The RFC 7638 canonical text of a public JWK (its required members, sorted, no whitespace),
// checked for the shape of a supported key; `d` is allowed only where a private key is read.
function canonicalJwk(jwk: unknown, allowPrivate: boolean): { curve: Curve; text: string } {
  if (typeof jwk !== "object" || jwk === null || Array.isArray(jwk)) throw new SealingError("UNSUPPORTED", "a JWK is a JSON object");
  const members = jwk as Record<string, unknown>;
  const curve = members.crv;
  if (members.kty === "OKP" && curve === "X25519") {
    expectMembers(members, ["crv", "kty", "x"], allowPrivate);
    return { curve, text: JSON.stringify({ crv: curve, kty: "OKP", x: members.x }) };
  }
  if (members.kty === "EC" && curve === "P-256") {
    expectMembers(members, ["crv", "kty", "x", "y"], allowPrivate);
    return { curve, text: JSON.stringify({ crv: curve, kty: "EC", x: members.x, y: members.y }) };
  }
  throw new SealingError("UNSUPPORTED", "a recipient key is an X25519 (kty OKP) or P-256 (kty EC) key");
}

function expectMembers(members: Record<string, unknown>, required: string[], allowPrivate: boolean): void {
  for (const name of required.filter((n) => n === "x" || n === "y")) {
    if (typeof members[name] !== "string" || !COORDINATE.test(members[name])) {
      throw new SealingError("UNSUPPORTED", `the JWK's ${name} is not 32 bytes of base64url`);
    }
  }
  for (const name of Object.keys(members)) {
    if (required.includes(name) || OPTIONAL_MEMBERS.has(name)) continue;
    if (name === "d" && allowPrivate) continue;
    // The name only: a private member's value is secret.
    throw new SealingError("UNSUPPORTED", name === "d" ? "a public key was expected: this JWK has the private member d" : `the JWK has a member ${JSON.stringify(name)} a recipient key does not`);
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
    try {
      key = await globalThis.crypto.subtle.importKey("jwk", JSON.parse(text), ALGORITHMS[curve], true, []);
    } catch {
      throw new SealingError("UNSUPPORTED", `not a point of ${curve}`);
    }
    return new RecipientPublicKey(curve, text, base64url(thumbprint), toHex(thumbprint), key);
  }
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

  /** The private key as a JWK with `d`: a secret, to be kept as the application keeps its own. */
  async exportPrivateJwk(): Promise<{ kty: string; crv: string; x: string; y?: string; d: string }> {
    const { kty, crv, x, y } = JSON.parse(this.jwk) as { kty: string; crv: string; x: string; y?: string };
    const d = secretOf(this).d;
    return y === undefined ? { kty, crv, x, d } : { kty, crv, x, y, d };
  }

  /** A new key pair on `curve`, from the platform's CSPRNG. */
  static async generate(curve: Curve = "X25519"): Promise<RecipientKeyPair> {
    if (!Object.hasOwn(ALGORITHMS, curve)) throw new SealingError("UNSUPPORTED", "a recipient key is on X25519 or P-256");
    const d = curve === "X25519" ? x25519.utils.randomSecretKey() : p256.utils.randomSecretKey();
    const [kty, members] = [curve === "X25519" ? "OKP" : "EC", publicMembers(curve, d)];
    return RecipientKeyPair.fromPrivateJwk({ crv: curve, kty, ...members, d: base64url(d) });
  }

  /** A key pair from its private JWK (with `d`), as an object or its JSON text. */
  static async fromPrivateJwk(jwk: string | object): Promise<RecipientKeyPair> {
    const members = parsed(jwk);
    const { curve, text } = canonicalJwk(members, true);
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
const secrets = new WeakMap<RecipientKeyPair, { d: string; privateKey: WebCryptoKey }>();

function secretOf(pair: RecipientKeyPair): { d: string; privateKey: WebCryptoKey } {
  const secret = secrets.get(pair);
  if (secret === undefined) throw new TypeError("not a RecipientKeyPair made by generateRecipientKey or importRecipientKey");
  return secret;
}

/** The pair's private key, as WebCrypto holds it (not extractable). */
export function privateKeyOf(pair: RecipientKeyPair): WebCryptoKey {
  return secretOf(pair).privateKey;
}
