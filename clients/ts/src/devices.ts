// A device's key material and the statements it signs (docs/key-transparency.md, "Devices"), as
// the Python package's zkplatform_client/devices.py has them.
//
// A device holds an Ed25519 signing key, whose RFC 7638 thumbprint is its device id, and an
// agreement key (X25519, P-256 or X-Wing, a RecipientKeyPair as sealing uses it) that items' keys are
// wrapped for. DeviceKeyPair makes them, exports and imports them as private JWKs or as a key file
// under a passphrase (docs/sealing.md, "Device keys at rest"), and signs the statements of
// statements.ts: its publication as a principal's first device, its publication to be endorsed by
// a device the principal already has (endorse), revocations, and the items it seals
// (sealing-statement.ts). Keys live in memory here; neither util.inspect nor JSON.stringify shows
// a private part, nor does any error. Ed25519 is @noble/curves'; the agreement key is WebCrypto's
// (not extractable), or for X-Wing @hpke/hybridkem-x-wing's; the key file's JWE (PBES2) is
// jose's. No node:* import.
import { ed25519 } from "@noble/curves/ed25519.js";
import { CompactEncrypt, compactDecrypt, decodeProtectedHeader, errors } from "jose";
import { RecipientKeyPair, SealingError, type Curve } from "./recipient-keys.js";
import type { SealedItemStatement } from "./sealing-statement.js";
import {
  DeviceKeys,
  DeviceRevocation,
  b64url,
  b64urlDecode,
  canonicalJson,
  canonicalPublicJwk,
  ed25519Jwk,
  signStatement,
  thumbprint,
  utf8,
  verifyStatement,
} from "./statements.js";

const INSPECT = Symbol.for("nodejs.util.inspect.custom");

/** The `type` of a device key file's plaintext. */
export const KEY_FILE_TYPE = "zkplatform.device-keys-file";
/** PBKDF2-HMAC-SHA512 iterations a key file is written with (OWASP's figure for HMAC-SHA512). */
export const KEY_FILE_ITERATIONS = 210_000;
// The iterations a key file is read with: fewer is too weak to trust; more is past what the Python
// package reads (joserfc's own bound), and a way to stall a reader.
const MIN_ITERATIONS = 100_000;
const MAX_ITERATIONS = 300_000;
const KEY_FILE_MEMBERS = ["agreementKeyJwk", "deviceId", "principalId", "signingKeyJwk", "tenantId", "type"];
const KEY_FILE_ALG = "PBES2-HS512+A256KW";
const KEY_FILE_ENC = "A256GCM";

/** What a key file holds besides the keys: the device's tenant and principal. */
export interface KeyFileOptions {
  tenantId: string;
  principalId: string;
  /** Write the private keys as plain JSON, without a passphrase: only when asked in so many words. */
  unencrypted?: boolean;
  /** PBKDF2 iterations (KEY_FILE_ITERATIONS by default; 100,000 to 300,000). */
  iterations?: number;
}

/** A key file's content: the device and the tenant and principal it is of. */
export interface DeviceKeyFile {
  device: DeviceKeyPair;
  tenantId: string;
  principalId: string;
}

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
 * A device's two private keys: Ed25519 to sign statements, X25519, P-256 or X-Wing to open items
 * (X-Wing, the hybrid ML-KEM-768 + X25519 KEM, keeps what is sealed for the device from a quantum
 * computer of the future; docs/clients.md says when to choose it).
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
   * The keys toJwks() exported (each a JWK object or its JSON text, with its private member): an
   * Ed25519 signing key and an X25519, P-256 or X-Wing agreement key. TypeError when one is not
   * usable or its public members are not those of its private part.
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

  /** This device's Ed25519 signature of a statement's canonical bytes: a key log statement, or a sealed item's. */
  sign(statement: DeviceKeys | DeviceRevocation | SealedItemStatement): Uint8Array {
    return ed25519.sign(utf8(statement.canonical()), this.#seed);
  }

  /**
   * Both private keys in a key file (docs/sealing.md, "Device keys at rest"): a compact JWE under
   * `passphrase` (PBES2-HS512+A256KW, A256GCM, 210,000 iterations), or plain JSON when
   * `options.unencrypted` is true and `passphrase` null. Secret all the same: keep it as the
   * application keeps its secrets.
   */
  async toKeyFile(passphrase: string | null, options: KeyFileOptions): Promise<string> {
    const { tenantId, principalId, unencrypted = false, iterations = KEY_FILE_ITERATIONS } = options;
    if (typeof tenantId !== "string" || typeof principalId !== "string" || !tenantId || !principalId) {
      throw new TypeError("a key file names the device's tenantId and principalId");
    }
    const { signingKeyJwk, privateKeyJwk } = await this.toJwks();
    const text = canonicalJson({ agreementKeyJwk: privateKeyJwk, deviceId: this.deviceId, principalId, signingKeyJwk, tenantId, type: KEY_FILE_TYPE });
    if (unencrypted) {
      if (passphrase !== null) throw new TypeError("an unencrypted key file takes no passphrase (null)");
      return text;
    }
    if (typeof passphrase !== "string" || passphrase === "") {
      throw new TypeError("a key file is encrypted under a passphrase (or written plain with {unencrypted: true} and null)");
    }
    if (!Number.isSafeInteger(iterations) || iterations < MIN_ITERATIONS || iterations > MAX_ITERATIONS) {
      throw new RangeError(`a key file's iterations are from ${MIN_ITERATIONS} to ${MAX_ITERATIONS}`);
    }
    return new CompactEncrypt(utf8(text))
      .setProtectedHeader({ alg: KEY_FILE_ALG, enc: KEY_FILE_ENC })
      .setKeyManagementParameters({ p2c: iterations, p2s: globalThis.crypto.getRandomValues(new Uint8Array(16)) })
      .encrypt(utf8(passphrase));
  }

  /**
   * The device of a key file toKeyFile() wrote (in either package), with its passphrase; a plain
   * one only with `{unencrypted: true}` and null. SealingError: WRONG_PASSPHRASE (or a damaged
   * ciphertext), MALFORMED (not a key file), UNSUPPORTED (another algorithm, or iterations out of
   * bounds).
   */
  static async fromKeyFile(text: string, passphrase: string | null, options: { unencrypted?: boolean } = {}): Promise<DeviceKeyPair> {
    return (await readKeyFile(text, passphrase, options)).device;
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

// The plaintext of a key file, checked: its type, its ids, and keys whose public members match
// their private ones and whose thumbprint is the device id it names.
async function keyFileContent(text: string): Promise<DeviceKeyFile> {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    throw new SealingError("MALFORMED", "the key file's content is not JSON");
  }
  if (typeof document !== "object" || document === null || Array.isArray(document)) throw new SealingError("MALFORMED", "the key file's content is not a JSON object");
  const { agreementKeyJwk, deviceId, principalId, signingKeyJwk, tenantId, type } = document as Record<string, unknown>;
  const members = Object.keys(document).sort();
  if (type !== KEY_FILE_TYPE || members.join() !== KEY_FILE_MEMBERS.join()) throw new SealingError("MALFORMED", `not a ${KEY_FILE_TYPE}`);
  if (typeof tenantId !== "string" || typeof principalId !== "string" || typeof deviceId !== "string" || !tenantId || !principalId) {
    throw new SealingError("MALFORMED", "the key file has no tenantId, principalId or deviceId");
  }
  let device: DeviceKeyPair;
  try {
    device = await DeviceKeyPair.fromJwks(signingKeyJwk as object, agreementKeyJwk as object);
  } catch {
    // Not the error itself: it is about the keys, and says nothing a reader of logs needs.
    throw new SealingError("MALFORMED", "the key file's keys are not an Ed25519 signing key and an X25519, P-256 or X-Wing agreement key, each with its public members");
  }
  if (device.deviceId !== deviceId) throw new SealingError("MALFORMED", "the key file's signing key is not the device it names");
  return { device, tenantId, principalId };
}

/**
 * The device, tenant and principal of a key file (DeviceKeyPair.toKeyFile, in either package),
 * with its passphrase; a plain one only with `{unencrypted: true}` and null. SealingError:
 * WRONG_PASSPHRASE, MALFORMED or UNSUPPORTED, as DeviceKeyPair.fromKeyFile.
 */
export async function readKeyFile(text: string, passphrase: string | null, options: { unencrypted?: boolean } = {}): Promise<DeviceKeyFile> {
  if (typeof text !== "string") throw new TypeError("a key file is a text");
  if (options.unencrypted) {
    if (passphrase !== null) throw new TypeError("an unencrypted key file takes no passphrase (null)");
    if (text.trimStart().startsWith("{")) return keyFileContent(text);
    throw new SealingError("MALFORMED", "not a plain key file (an encrypted one takes its passphrase)");
  }
  if (typeof passphrase !== "string" || passphrase === "") throw new TypeError("a key file is opened with its passphrase (a plain one with {unencrypted: true} and null)");
  let header: Record<string, unknown>;
  try {
    header = decodeProtectedHeader(text.trim());
  } catch {
    throw new SealingError("MALFORMED", text.trimStart().startsWith("{") ? "a plain key file, read only with {unencrypted: true}" : "not a compact JWE");
  }
  if (header.alg !== KEY_FILE_ALG || header.enc !== KEY_FILE_ENC) throw new SealingError("UNSUPPORTED", `a key file is ${KEY_FILE_ALG} with ${KEY_FILE_ENC}`);
  const count = header.p2c;
  if (typeof count !== "number" || !Number.isSafeInteger(count) || count < MIN_ITERATIONS || count > MAX_ITERATIONS) {
    throw new SealingError("UNSUPPORTED", `a key file's p2c is from ${MIN_ITERATIONS} to ${MAX_ITERATIONS}`);
  }
  let plaintext: Uint8Array;
  try {
    const decryptOptions = { keyManagementAlgorithms: [KEY_FILE_ALG], contentEncryptionAlgorithms: [KEY_FILE_ENC], maxPBES2Count: MAX_ITERATIONS };
    ({ plaintext } = await compactDecrypt(text.trim(), utf8(passphrase), decryptOptions));
  } catch (error) {
    if (error instanceof errors.JWEDecryptionFailed) throw new SealingError("WRONG_PASSPHRASE", "the key file does not open with this passphrase (or it is damaged)");
    throw new SealingError("MALFORMED", "not a key file's JWE");
  }
  let content: string;
  try {
    content = new TextDecoder("utf-8", { fatal: true }).decode(plaintext);
  } catch {
    throw new SealingError("MALFORMED", "the key file's content is not UTF-8");
  }
  return keyFileContent(content);
}
