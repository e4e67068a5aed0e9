// A device's key material and the statements it signs (docs/key-transparency.md, "Devices"), as
// the Python package's zkplatform_client/devices.py has them.
//
// A device holds an Ed25519 signing key, whose RFC 7638 thumbprint is its device id, and an
// agreement key (X25519 or P-256, a RecipientKeyPair as sealing uses it) that items' keys are
// wrapped for. DeviceKeyPair makes them, exports and imports them as private JWKs, and signs the
// statements of statements.ts: its publication as a principal's first device, its publication to
// be endorsed by a device the principal already has (endorse), and revocations. Keys live in
// memory here; neither util.inspect nor JSON.stringify shows a private part, nor does any error.
// Ed25519 is @noble/curves'; the agreement key is WebCrypto's.
import { ed25519 } from "@noble/curves/ed25519.js";
import { RecipientKeyPair, type Curve } from "./recipient-keys.js";
import {
  DeviceKeys,
  DeviceRevocation,
  b64url,
  b64urlDecode,
  canonicalPublicJwk,
  ed25519Jwk,
  signStatement,
  thumbprint,
  verifyStatement,
} from "./statements.js";

const INSPECT = Symbol.for("nodejs.util.inspect.custom");

export type AgreementCurve = Curve;

/** A DeviceKeys statement as PublishDevice takes it: the statement, the new device's signature and, unless first, the endorser's. */
export class DeviceStatement {
  constructor(
    readonly statement: DeviceKeys,
    /** The new device's Ed25519 signature (64 bytes). */
    readonly signature: Uint8Array,
    /** The endorser's signature; empty for a principal's first device. */
    readonly endorsement: Uint8Array = new Uint8Array(0),
  ) {}

  /** The statement's canonical JSON text: what was signed, and what PublishDevice takes. */
  get text(): string {
    return this.statement.canonical();
  }

  get deviceId(): string {
    return this.statement.deviceId;
  }

  /** PublishDevice's request: the text and the signatures in base64url. */
  request(): { statement: string; signature: string; endorsement: string } {
    return { statement: this.text, signature: b64url(this.signature), endorsement: b64url(this.endorsement) };
  }
}

/** A DeviceRevocation statement and its revoker's signature, as RevokeDevice takes them. */
export class SignedRevocation {
  constructor(
    readonly statement: DeviceRevocation,
    readonly signature: Uint8Array,
  ) {}

  get text(): string {
    return this.statement.canonical();
  }

  /** RevokeDevice's request. */
  request(): { statement: string; signature: string } {
    return { statement: this.text, signature: b64url(this.signature) };
  }
}

function members(jwk: string | object): Record<string, unknown> {
  let value: unknown = jwk;
  if (typeof jwk === "string") {
    try {
      value = JSON.parse(jwk);
    } catch {
      throw new TypeError("a JWK is JSON");
    }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new TypeError("a JWK is a JSON object");
  return value as Record<string, unknown>;
}

function now(created: number | undefined): number {
  return created ?? Math.floor(Date.now() / 1000);
}

/**
 * A device's two private keys: Ed25519 to sign statements, X25519 or P-256 to open items.
 * `toJwks()` is secret (both private keys): keep it where the application keeps its secrets.
 */
export class DeviceKeyPair {
  readonly #seed: Uint8Array;
  /** The public signing key's canonical JWK text. */
  readonly signingJwk: string;
  /** The RFC 7638 thumbprint of the signing key: the device's id in the key log. */
  readonly deviceId: string;

  private constructor(
    seed: Uint8Array,
    /** The agreement key pair: what opens the items sealed for this device (openItem). */
    readonly agreement: RecipientKeyPair,
  ) {
    this.#seed = seed;
    this.signingJwk = ed25519Jwk(ed25519.getPublicKey(seed));
    this.deviceId = thumbprint(this.signingJwk);
  }

  /** The public agreement key's canonical JWK text: what items are sealed for. */
  get agreementJwk(): string {
    return this.agreement.jwk;
  }

  /** The agreement key's RFC 7638 thumbprint: the recipient key id of sealed items. */
  get agreementKeyId(): string {
    return this.agreement.keyId;
  }

  /** The agreement key as sealing opens items with it. */
  recipientKey(): RecipientKeyPair {
    return this.agreement;
  }

  /** A new device: a signing key and an agreement key on `agreement`, from the platform's CSPRNG. */
  static async generate(agreement: AgreementCurve = "X25519"): Promise<DeviceKeyPair> {
    return new DeviceKeyPair(ed25519.utils.randomSecretKey(), await RecipientKeyPair.generate(agreement));
  }

  /**
   * The keys toJwks() exported (each a JWK object or its JSON text, with `d`): an Ed25519 signing
   * key and an X25519 or P-256 agreement key. TypeError when one is not usable or its public
   * members are not those of its private part.
   */
  static async fromJwks(signingKeyJwk: string | object, privateKeyJwk: string | object): Promise<DeviceKeyPair> {
    const signing = members(signingKeyJwk);
    if (signing.kty !== "OKP" || signing.crv !== "Ed25519") throw new TypeError('a signing key is Ed25519 (kty "OKP", crv "Ed25519")');
    let seed: Uint8Array;
    try {
      seed = b64urlDecode(signing.d as string, 32);
    } catch {
      throw new TypeError("the signing key's JWK has no d of 32 bytes in base64url");
    }
    const pair = new DeviceKeyPair(seed, await RecipientKeyPair.fromPrivateJwk(privateKeyJwk));
    let publicText: string;
    try {
      publicText = canonicalPublicJwk(Object.fromEntries(Object.entries(signing).filter(([name]) => name !== "d")), { signing: true });
    } catch (error) {
      throw new TypeError(`the signing key's public members: ${(error as Error).message}`);
    }
    if (publicText !== pair.signingJwk) throw new TypeError("the signing key's public member x is not that of its private part");
    return pair;
  }

  /**
   * Both private keys as JWK objects, under the names the development credentials file uses:
   * `signingKeyJwk` (Ed25519) and `privateKeyJwk` (the agreement key). Secret.
   */
  async toJwks(): Promise<{ signingKeyJwk: Record<string, string>; privateKeyJwk: Record<string, string> }> {
    const { x } = JSON.parse(this.signingJwk) as { x: string };
    const agreement = (await this.agreement.exportPrivateJwk()) as Record<string, string>;
    const sorted = Object.fromEntries(Object.entries(agreement).sort(([a], [b]) => (a < b ? -1 : 1)));
    return { signingKeyJwk: { crv: "Ed25519", d: b64url(this.#seed), kty: "OKP", x }, privateKeyJwk: sorted };
  }

  /**
   * This device's DeviceKeys statement, signed by itself. With `endorser` (a live device of the
   * principal), endorse() adds that device's signature; without, it is the principal's first device.
   */
  deviceStatement(tenantId: string, principalId: string, options: { endorser?: string; created?: number } = {}): DeviceStatement {
    const statement = new DeviceKeys(tenantId, principalId, this.signingJwk, this.agreementJwk, now(options.created), options.endorser ?? "");
    return new DeviceStatement(statement, signStatement(this.#seed, statement));
  }

  /** The statement that publishes this device as the principal's first (no endorser). */
  firstDeviceStatement(tenantId: string, principalId: string, created?: number): DeviceStatement {
    return this.deviceStatement(tenantId, principalId, { created });
  }

  /** A DeviceRevocation of `deviceId` (this device's own, or another of its principal's), signed by this device as the revoker. */
  revocation(tenantId: string, principalId: string, deviceId: string, created?: number): SignedRevocation {
    const statement = new DeviceRevocation(tenantId, principalId, deviceId, this.deviceId, now(created));
    return new SignedRevocation(statement, signStatement(this.#seed, statement));
  }

  /** This device's Ed25519 signature of a statement's canonical bytes. */
  sign(statement: DeviceKeys | DeviceRevocation): Uint8Array {
    return signStatement(this.#seed, statement);
  }

  toJSON(): { deviceId: string; agreementKeyId: string } {
    return { deviceId: this.deviceId, agreementKeyId: this.agreementKeyId };
  }

  toString(): string {
    return `DeviceKeyPair(deviceId=${this.deviceId})`;
  }

  [INSPECT](): string {
    return `DeviceKeyPair { deviceId: '${this.deviceId}' }`;
  }
}

/**
 * `statement` (a new device's, naming `endorser` as its endorser) with the endorser's signature
 * added. Checks first that the statement is what it says: the new device's own signature verifies,
 * and it names this endorser (TypeError otherwise), so that a device endorses only what the new
 * device really signed.
 */
export function endorse(statement: DeviceStatement, endorser: DeviceKeyPair): DeviceStatement {
  const keys = statement.statement;
  if (keys.endorser !== endorser.deviceId) throw new TypeError("the statement does not name this device as its endorser");
  if (!verifyStatement(keys.signingJwk, keys, statement.signature)) throw new TypeError("the statement's signature is not the new device's");
  return new DeviceStatement(keys, statement.signature, endorser.sign(keys));
}
