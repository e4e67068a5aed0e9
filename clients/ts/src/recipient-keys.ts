// Recipient keys (docs/sealing.md, "Recipient keys"): X25519 or P-256 key agreement key pairs,
// named by their RFC 7638 thumbprint: a device's agreement key (devices.ts). The public half is
// what a device's statement publishes and what items are sealed for; the private half opens them and never leaves the client. Key generation
// and import are WebCrypto's, which also checks that a private JWK's `d` and public members agree.
import { webcrypto } from "node:crypto";
import { base64url, sha256 } from "./bytes.js";

export type Curve = "X25519" | "P-256";

/** Why sealing or opening refused: one of these reasons, never key material in the message. */
export type SealingReason = "UNSUPPORTED" | "BINDING_MISMATCH" | "NOT_A_RECIPIENT" | "DECRYPTION_FAILED" | "TOO_LARGE" | "NO_RECIPIENTS";

export class SealingError extends Error {
  constructor(
    readonly reason: SealingReason,
    message: string,
  ) {
    super(`${reason}: ${message}`);
    this.name = "SealingError";
  }
}

const ALGORITHMS: Record<Curve, webcrypto.EcKeyImportParams | webcrypto.Algorithm> = {
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
    /** The RFC 7638 thumbprint, base64url (43 characters): a device's `agreement_key_id`, the JWE's `kid`. */
    readonly keyId: string,
    /** The same thumbprint as 64 lowercase hexadecimal digits: a wrapped key's `recipient_id`. */
    readonly recipientId: string,
    /** The key as WebCrypto holds it, to wrap content keys for. */
    readonly cryptoKey: webcrypto.CryptoKey,
  ) {}

  /** A public JWK, as an object or its JSON text (a GetRecipientKeys key's `jwk`); a private one is refused. */
  static async fromJwk(jwk: string | object): Promise<RecipientPublicKey> {
    const { curve, text } = canonicalJwk(parsed(jwk), false);
    const thumbprint = await sha256(text);
    let key: webcrypto.CryptoKey;
    try {
      key = await webcrypto.subtle.importKey("jwk", JSON.parse(text) as webcrypto.JsonWebKey, ALGORITHMS[curve], true, []);
    } catch {
      throw new SealingError("UNSUPPORTED", `not a point of ${curve}`);
    }
    return new RecipientPublicKey(curve, text, base64url(thumbprint), Buffer.from(thumbprint).toString("hex"), key);
  }
}

/**
 * A recipient key pair: what opens the items sealed for its public half. Make one with
 * generateRecipientKey(), keep exportPrivateJwk()'s JWK somewhere safe, and read it back with
 * importRecipientKey(). Neither util.inspect nor JSON.stringify shows the private key.
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
  async exportPrivateJwk(): Promise<webcrypto.JsonWebKey> {
    const { kty, crv, x, y, d } = await webcrypto.subtle.exportKey("jwk", privateKeyOf(this));
    return y === undefined ? { kty, crv, x, d } : { kty, crv, x, y, d };
  }

  /** A new key pair on `curve`, from the platform's CSPRNG. */
  static async generate(curve: Curve = "X25519"): Promise<RecipientKeyPair> {
    if (!Object.hasOwn(ALGORITHMS, curve)) throw new SealingError("UNSUPPORTED", "a recipient key is on X25519 or P-256");
    const pair = (await webcrypto.subtle.generateKey(ALGORITHMS[curve], true, ["deriveBits"])) as webcrypto.CryptoKeyPair;
    const { kty, crv, x, y } = await webcrypto.subtle.exportKey("jwk", pair.publicKey);
    return RecipientKeyPair.of(await RecipientPublicKey.fromJwk(y === undefined ? { kty, crv, x } : { kty, crv, x, y }), pair.privateKey);
  }

  /** A key pair from its private JWK (with `d`), as an object or its JSON text. */
  static async fromPrivateJwk(jwk: string | object): Promise<RecipientKeyPair> {
    const members = parsed(jwk);
    const { curve, text } = canonicalJwk(members, true);
    const d = (members as Record<string, unknown>).d;
    if (typeof d !== "string" || !COORDINATE.test(d)) throw new SealingError("UNSUPPORTED", "a private JWK has d, 32 bytes of base64url");
    let privateKey: webcrypto.CryptoKey;
    try {
      privateKey = await webcrypto.subtle.importKey("jwk", { ...JSON.parse(text), d }, ALGORITHMS[curve], true, ["deriveBits"]);
    } catch {
      // WebCrypto's own error says nothing of the key either; this one says what to check.
      throw new SealingError("UNSUPPORTED", `not a ${curve} private key whose public members match it`);
    }
    return RecipientKeyPair.of(await RecipientPublicKey.fromJwk(text), privateKey);
  }

  private static of(publicKey: RecipientPublicKey, privateKey: webcrypto.CryptoKey): RecipientKeyPair {
    const pair = new RecipientKeyPair(publicKey);
    privateKeys.set(pair, privateKey);
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
const privateKeys = new WeakMap<RecipientKeyPair, webcrypto.CryptoKey>();

export function privateKeyOf(pair: RecipientKeyPair): webcrypto.CryptoKey {
  const key = privateKeys.get(pair);
  if (key === undefined) throw new TypeError("not a RecipientKeyPair made by generateRecipientKey or importRecipientKey");
  return key;
}
