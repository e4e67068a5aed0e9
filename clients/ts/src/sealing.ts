// End-to-end encryption of an item's content, in the format of docs/sealing.md (version 2), as the
// Python package's zkplatform_client/sealing.py has it: AES-256-GCM under a key derived from a
// fresh content key, which it commits to; the content key wrapped for each recipient key with HPKE
// (key-wrapping.ts), bound to the item and the recipient; the whole signed by the sealing device
// (sealing-statement.ts), whose signature a reader checks against the key directory it verified,
// learning who sealed. Version 1 payloads still open, read only (sealing-v1.ts), as unsigned.
//
// The server stores what seal() makes and never sees a content key. HKDF and AES-GCM are
// WebCrypto's (globalThis.crypto), HPKE @hpke/core's, Ed25519 @noble/curves'. No node:* import.
import { clone, create } from "@bufbuild/protobuf";
import { base64url, buffer, fromBase64url, sameBytes, sha256, utf8 } from "./bytes.js";
import { DeviceKeyPair } from "./devices.js";
import { EncryptedPayloadSchema, WrappedKeySchema, type EncryptedPayload, type Item, type WrappedKey } from "./gen/zkplatform_api/platform/v1/vault_pb.js";
import { unwrapKey, wrapAlgOf, wrapKey } from "./key-wrapping.js";
import { RecipientKeyPair, RecipientPublicKey, SealingError } from "./recipient-keys.js";
import { SealedItemStatement, verifySealedItem, type SealedItemFields } from "./sealing-statement.js";
import { V1_KEY_TYPES, V1_WRAP_ALG, unwrapV1Key } from "./sealing-v1.js";

export {
  RecipientKeyPair,
  RecipientPublicKey,
  SealingError,
  generateRecipientKey,
  importRecipientKey,
  type Curve,
  type RecipientPrivateJwk,
  type SealingReason,
} from "./recipient-keys.js";
export { WRAP_ALGS } from "./key-wrapping.js";
export { SEALED_ITEM_TYPE, SealedItemStatement } from "./sealing-statement.js";

/** The payload format version this package writes. */
export const PAYLOAD_VERSION = 2;
/** The payload versions it opens: version 1 read only. */
export const PAYLOAD_VERSIONS: readonly number[] = [1, 2];
export const CONTENT_ALG = "A256GCM";
/** The most plaintext one item holds: its ciphertext and tag then fit the API's 49,152 characters. */
export const MAX_PLAINTEXT_BYTES = 36_848;
/** The most wrapped keys an item holds (the API's limit). */
export const MAX_RECIPIENTS = 256;
/** How many versions below the item's a failed signature is tried with, to tell VERSION_MISMATCH (docs/sealing.md). */
export const VERSIONS_TRIED = 64;

const CONTENT_KEY_BYTES = 32;
const NONCE_BYTES = 12;
const COMMITMENT_BYTES = 32;
const SIGNATURE_BYTES = 64;
const HKDF_INFO = "zkplatform sealed item v2";
const ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;
const KIND = /^[a-z][a-z0-9._-]{0,31}$/;

/** What a sealed payload is bound to: it opens only on the item of these ids and kind. */
export interface SealContext {
  tenantId: string;
  vaultId: string;
  itemId: string;
  kind: string;
}

/** A recipient: a public key (a key pair, a directory's RecipientKey: anything with the public `jwk` text), the JWK's text, or a device (its agreement key). */
export type Recipient = string | { readonly jwk: string } | DeviceKeyPair;

/** The key that opens an item: a recipient key pair, or a device's (its agreement key). */
export type Opener = RecipientKeyPair | DeviceKeyPair;

/** What CreateItem (or UpdateItem with `encrypted_payload,wrapped_keys`) takes. */
export interface SealedContent {
  encryptedPayload: EncryptedPayload;
  wrappedKeys: WrappedKey[];
}

/**
 * Where a reader finds the device that signed an item: the verified key log's state (KeyLogState,
 * from KeyDirectory.verify() or .state()) is one. Anything that answers a device id with its
 * principal, signing key and liveness will do; null (or undefined) for a device it does not hold.
 */
export interface SignerDirectory {
  signer(deviceId: string): { readonly principalId: string; readonly signingJwk: string; readonly live: boolean } | null | undefined;
}

/** Who sealed a version 2 item: the signing device, its principal, and whether that device is live in the directory now. */
export interface SealedBy {
  readonly principalId: string;
  readonly deviceId: string;
  readonly live: boolean;
}

/** An opened item: its plaintext, its payload's format version, and who sealed it (null for version 1: unsigned). */
export interface Opened {
  readonly plaintext: Uint8Array;
  readonly formatVersion: 1 | 2;
  readonly sealedBy: SealedBy | null;
}

// The additional authenticated data: these members, in this order, no whitespace. The ids and
// the kind are of restricted alphabets (checked when sealing; the server checks the items it
// stores), so no escaping ever applies.
function additionalData(context: SealContext, version: number): string {
  const { itemId, kind, tenantId, vaultId } = context;
  return `{"itemId":"${itemId}","kind":"${kind}","tenantId":"${tenantId}","v":${version},"vaultId":"${vaultId}"}`;
}

function checkContext(context: SealContext): void {
  for (const name of ["tenantId", "vaultId", "itemId"] as const) {
    if (typeof context[name] !== "string" || !ID.test(context[name])) throw new TypeError(`${name} is 1 to 64 characters of [A-Za-z0-9._:-], the first a letter or digit`);
  }
  if (typeof context.kind !== "string" || !KIND.test(context.kind)) throw new TypeError("kind is 1 to 32 characters of [a-z0-9._-], the first a letter");
}

function contextOf(item: Item): SealContext {
  return { tenantId: item.tenantId, vaultId: item.vaultId, itemId: item.itemId, kind: item.kind };
}

function recipientKeyOf(opener: Opener): RecipientKeyPair {
  if (opener instanceof DeviceKeyPair) return opener.recipientKey();
  if (opener instanceof RecipientKeyPair) return opener;
  throw new TypeError("an item is opened with a RecipientKeyPair or a DeviceKeyPair");
}

function checkSigner(signer: DeviceKeyPair): void {
  if (!(signer instanceof DeviceKeyPair)) throw new TypeError("an item is signed by the sealing device's DeviceKeyPair");
}

function writeVersion(version: number | bigint): bigint {
  const value = typeof version === "bigint" ? version : Number.isSafeInteger(version) ? BigInt(version) : -1n;
  if (value < 1n || value > 2n ** 63n - 1n) throw new TypeError("the version a write creates is an integer from 1 (CreateItem; UpdateItem's base_version + 1)");
  return value;
}

// The recipients' public keys, each once (by key id), in the order first given.
async function publicKeys(recipients: readonly Recipient[]): Promise<RecipientPublicKey[]> {
  if (!Array.isArray(recipients)) throw new TypeError("recipients are a list of public keys");
  const keys = new Map<string, RecipientPublicKey>();
  for (const recipient of recipients) {
    const key =
      recipient instanceof RecipientPublicKey ? recipient
      : recipient instanceof RecipientKeyPair ? recipient.publicKey
      : recipient instanceof DeviceKeyPair ? recipient.recipientKey().publicKey
      : await RecipientPublicKey.fromJwk(typeof recipient === "string" ? recipient : recipient.jwk);
    if (!keys.has(key.keyId)) keys.set(key.keyId, key);
  }
  return [...keys.values()];
}

// The AES-256-GCM key and the commitment: HKDF-SHA256 of the content key, 64 bytes, split.
async function derive(contentKey: Uint8Array, usage: "encrypt" | "decrypt"): Promise<{ aesKey: Awaited<ReturnType<typeof importAes>>; commitment: Uint8Array }> {
  const subtle = globalThis.crypto.subtle;
  const ikm = await subtle.importKey("raw", buffer(contentKey), "HKDF", false, ["deriveBits"]);
  const params = { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: buffer(utf8(HKDF_INFO)) };
  const okm = new Uint8Array(await subtle.deriveBits(params, ikm, 512));
  const aesKey = await importAes(okm.subarray(0, 32), usage);
  const commitment = okm.slice(32);
  okm.fill(0);
  return { aesKey, commitment };
}

function importAes(key: Uint8Array, usage: "encrypt" | "decrypt") {
  return globalThis.crypto.subtle.importKey("raw", buffer(key), { name: "AES-GCM" }, false, [usage]);
}

function sorted(wrappedKeys: WrappedKey[]): WrappedKey[] {
  return wrappedKeys.sort((a, b) => (a.recipientId < b.recipientId ? -1 : a.recipientId > b.recipientId ? 1 : 0));
}

function signed(fields: SealedItemFields, wrappedKeys: readonly WrappedKey[], version: bigint, signer: DeviceKeyPair): string {
  return base64url(signer.sign(new SealedItemStatement(fields, wrappedKeys.map((key) => key.recipientId), version)));
}

/**
 * Seal `plaintext` (at most 36,848 bytes) for 1 to 256 recipient keys (duplicates folded), bound
 * to `context`, signed by the sealing device `signer` for the item version the write creates
 * (1 for CreateItem, the default; base_version + 1 for UpdateItem).
 */
export async function seal(
  plaintext: Uint8Array,
  recipients: readonly Recipient[],
  context: SealContext,
  signer: DeviceKeyPair,
  version: number | bigint = 1,
): Promise<SealedContent> {
  checkSigner(signer);
  const itemVersion = writeVersion(version);
  const keys = await publicKeys(recipients);
  if (keys.length === 0) throw new SealingError("NO_RECIPIENTS", "an item is sealed for at least one recipient key");
  if (keys.length > MAX_RECIPIENTS) throw new SealingError("TOO_LARGE", `an item has at most ${MAX_RECIPIENTS} recipient keys, not ${keys.length}`);
  if (plaintext.length > MAX_PLAINTEXT_BYTES) throw new SealingError("TOO_LARGE", `an item holds at most ${MAX_PLAINTEXT_BYTES} bytes, not ${plaintext.length}`);
  checkContext(context);
  const contentKey = globalThis.crypto.getRandomValues(new Uint8Array(CONTENT_KEY_BYTES));
  const nonce = globalThis.crypto.getRandomValues(new Uint8Array(NONCE_BYTES));
  const aad = base64url(additionalData(context, PAYLOAD_VERSION));
  const { aesKey, commitment } = await derive(contentKey, "encrypt");
  const ciphertext = new Uint8Array(
    await globalThis.crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce, additionalData: buffer(utf8(additionalData(context, PAYLOAD_VERSION))) }, aesKey, buffer(plaintext)),
  );
  const wrappedKeys = sorted(
    await Promise.all(keys.map(async (key) => create(WrappedKeySchema, { recipientId: key.recipientId, wrapAlg: wrapAlgOf(key.curve), wrappedKey: await wrapKey(contentKey, key, aad) }))),
  );
  contentKey.fill(0);
  const fields = { aad, nonce: base64url(nonce), commitment: base64url(commitment), ciphertextSha256: base64url(sha256(ciphertext)), signer: signer.deviceId };
  const encryptedPayload = create(EncryptedPayloadSchema, {
    alg: CONTENT_ALG,
    version: PAYLOAD_VERSION,
    nonce: fields.nonce,
    aad,
    ciphertext: base64url(ciphertext),
    commitment: fields.commitment,
    signer: signer.deviceId,
    signature: signed(fields, wrappedKeys, itemVersion, signer),
  });
  return { encryptedPayload, wrappedKeys };
}

// What opening found, for share and unshare too.
interface Unsealed {
  opened: Opened;
  contentKey: Uint8Array;
}

function refuse(reason: ConstructorParameters<typeof SealingError>[0], message: string): never {
  throw new SealingError(reason, message);
}

// Every check of docs/sealing.md's "Opening", in its order.
async function unseal(item: Item, opener: Opener, directory: SignerDirectory): Promise<Unsealed> {
  // A tombstone keeps no content: say so, not what its empty fields look like.
  if (item.deleted) refuse("DELETED", `the item was deleted (its tombstone is version ${item.version})`);
  const key = recipientKeyOf(opener);
  const payload = item.encryptedPayload ?? create(EncryptedPayloadSchema);

  // 1. MALFORMED: strict decoding, before anything is trusted or tried.
  const nonce = fromBase64url(payload.nonce);
  if (nonce === null || nonce.length !== NONCE_BYTES) refuse("MALFORMED", `the nonce is not ${NONCE_BYTES} bytes of canonical base64url`);
  if (fromBase64url(payload.aad) === null) refuse("MALFORMED", "the aad is not canonical base64url");
  const ciphertext = fromBase64url(payload.ciphertext);
  if (ciphertext === null) refuse("MALFORMED", "the ciphertext is not canonical base64url");
  let signature: Uint8Array = new Uint8Array(0);
  if (payload.version === 2) {
    const commitment = fromBase64url(payload.commitment);
    if (commitment === null || commitment.length !== COMMITMENT_BYTES) refuse("MALFORMED", `the commitment is not ${COMMITMENT_BYTES} bytes of canonical base64url`);
    const decoded = fromBase64url(payload.signature);
    if (decoded === null || decoded.length !== SIGNATURE_BYTES) refuse("MALFORMED", `the signature is not ${SIGNATURE_BYTES} bytes of canonical base64url`);
    signature = decoded;
  }
  const ids = item.wrappedKeys.map((wrapped) => wrapped.recipientId);
  if (new Set(ids).size !== ids.length) refuse("MALFORMED", "two wrapped keys have one recipient_id");
  const mine = item.wrappedKeys.find((wrapped) => wrapped.recipientId === key.recipientId);
  if (mine !== undefined && fromBase64url(mine.wrappedKey) === null) refuse("MALFORMED", "the wrapped key for this key is not canonical base64url");

  // 2. UNSUPPORTED
  if (payload.alg !== CONTENT_ALG || !PAYLOAD_VERSIONS.includes(payload.version)) {
    refuse("UNSUPPORTED", `this package opens payloads of alg ${CONTENT_ALG}, version ${PAYLOAD_VERSIONS.join(" or ")}`);
  }
  const formatVersion = payload.version as 1 | 2;

  // 3. BINDING_MISMATCH
  const aad = additionalData(contextOf(item), formatVersion);
  if (payload.aad !== base64url(aad)) refuse("BINDING_MISMATCH", "the payload was sealed for another item, vault, tenant or kind");

  // 4. the sealer's signature, against the directory
  const sealedBy = formatVersion === 2 ? checkSignature(item, payload, ciphertext, signature, key, directory) : null;

  // 5. NOT_A_RECIPIENT (version 1 wrapped for X25519 and P-256 keys only)
  const wrapAlg = formatVersion === 2 ? wrapAlgOf(key.curve) : V1_WRAP_ALG;
  if (mine === undefined || mine.wrapAlg !== wrapAlg) refuse("NOT_A_RECIPIENT", `the item is not sealed for key ${key.keyId} (${wrapAlg})`);
  if (formatVersion === 1 && !V1_KEY_TYPES.includes(key.curve)) refuse("NOT_A_RECIPIENT", `${V1_WRAP_ALG} wraps for X25519 and P-256 keys, not ${key.curve}`);

  // 6. DECRYPTION_FAILED (the wrapped key); 7. COMMITMENT_MISMATCH; 8. DECRYPTION_FAILED (the content)
  const contentKey = formatVersion === 2 ? await unwrapKey(mine.wrappedKey, key, payload.aad) : await unwrapV1Key(mine.wrappedKey, key);
  let aesKey;
  if (formatVersion === 2) {
    const derived = await derive(contentKey, "decrypt");
    if (!sameBytes(derived.commitment, fromBase64url(payload.commitment)!)) {
      refuse("COMMITMENT_MISMATCH", "the content key is not the one the payload commits to");
    }
    aesKey = derived.aesKey;
  } else {
    aesKey = await importAes(contentKey, "decrypt");
  }
  let plaintext: Uint8Array;
  try {
    plaintext = new Uint8Array(await globalThis.crypto.subtle.decrypt({ name: "AES-GCM", iv: buffer(nonce), additionalData: buffer(utf8(aad)) }, aesKey, buffer(ciphertext)));
  } catch {
    refuse("DECRYPTION_FAILED", "the ciphertext does not match its tag");
  }
  return { opened: { plaintext, formatVersion, sealedBy }, contentKey };
}

// Step 4: SIGNER_UNKNOWN, then the signature over the statement rebuilt from the item; when it
// fails, the reason is told by rebuilding it with other recipients or versions (docs/sealing.md).
function checkSignature(item: Item, payload: EncryptedPayload, ciphertext: Uint8Array, signature: Uint8Array, key: RecipientKeyPair, directory: SignerDirectory): SealedBy {
  const device = directory.signer(payload.signer);
  if (device === null || device === undefined) refuse("SIGNER_UNKNOWN", `the signer ${JSON.stringify(payload.signer)} is not a device of the verified directory`);
  const fields: SealedItemFields = { aad: payload.aad, commitment: payload.commitment, nonce: payload.nonce, ciphertextSha256: base64url(sha256(ciphertext)), signer: payload.signer };
  const recipients = item.wrappedKeys.map((wrapped) => wrapped.recipientId);
  const verifies = (ids: readonly string[], version: bigint) => verifySealedItem(device.signingJwk, new SealedItemStatement(fields, ids, version), signature);
  const sealedBy = { principalId: device.principalId, deviceId: payload.signer, live: device.live };
  if (verifies(recipients, item.version)) return sealedBy;
  const added = recipients.some((id) => verifies(recipients.filter((other) => other !== id), item.version));
  const removed = !recipients.includes(key.recipientId) && verifies([...recipients, key.recipientId], item.version);
  if (added || removed) refuse("RECIPIENTS_MISMATCH", "the item's recipients are not those its sealer signed for");
  for (let version = item.version - 1n; version >= 1n && version >= item.version - BigInt(VERSIONS_TRIED); version--) {
    if (verifies(recipients, version)) refuse("VERSION_MISMATCH", `the payload was signed for version ${version}, not the item's ${item.version}`);
  }
  return refuse("SIGNATURE_INVALID", "the signature is not the signer's of this payload, its recipients and version");
}

/**
 * Open a sealed item with one of its recipients' keys (a RecipientKeyPair, or a DeviceKeyPair's
 * agreement key), checking the sealer's signature against `directory` (the verified key log's
 * state): the plaintext, the format version, and who sealed it (null for version 1, unsigned).
 * SealingError with docs/sealing.md's reason otherwise.
 */
export async function openItem(item: Item, privateKey: Opener, directory: SignerDirectory): Promise<Opened> {
  const { opened, contentKey } = await unseal(item, privateKey, directory);
  contentKey.fill(0);
  return opened;
}

/**
 * The item opened with `privateKey` (every check of openItem) and shared with `recipients` too:
 * its content key wrapped for each recipient key that has no usable wrapped key (an entry of
 * another wrap_alg for it is replaced), the others kept, the whole signed by `signer` for the
 * new recipient list and the version the update creates (the item's plus 1). Send both with
 * UpdateItem, update_mask `encrypted_payload,wrapped_keys`, base_version the item's version.
 * With no recipient to add, it signs again only. A version 1 item is sealed again as version 2,
 * under a new content key, for `recipients` and `privateKey`'s own key (its other recipients are
 * named by id only: pass every one it should keep).
 */
export async function share(item: Item, privateKey: Opener, recipients: readonly Recipient[], signer: DeviceKeyPair, directory: SignerDirectory): Promise<SealedContent> {
  checkSigner(signer);
  const { opened, contentKey } = await unseal(item, privateKey, directory);
  const keys = await publicKeys(recipients);
  const version = item.version + 1n;
  if (opened.formatVersion === 1) {
    contentKey.fill(0);
    return seal(opened.plaintext, [recipientKeyOf(privateKey).publicKey, ...keys], contextOf(item), signer, version);
  }
  const payload = clone(EncryptedPayloadSchema, item.encryptedPayload!);
  const entries = new Map(item.wrappedKeys.map((wrapped) => [wrapped.recipientId, clone(WrappedKeySchema, wrapped)]));
  for (const key of keys) {
    const wrapAlg = wrapAlgOf(key.curve);
    if (entries.get(key.recipientId)?.wrapAlg === wrapAlg) continue;
    entries.set(key.recipientId, create(WrappedKeySchema, { recipientId: key.recipientId, wrapAlg, wrappedKey: await wrapKey(contentKey, key, payload.aad) }));
  }
  contentKey.fill(0);
  if (entries.size > MAX_RECIPIENTS) throw new SealingError("TOO_LARGE", `an item has at most ${MAX_RECIPIENTS} wrapped keys, not ${entries.size}`);
  const wrappedKeys = sorted([...entries.values()]);
  const ciphertextSha256 = base64url(sha256(fromBase64url(payload.ciphertext)!));
  payload.signer = signer.deviceId;
  payload.signature = signed({ aad: payload.aad, commitment: payload.commitment, nonce: payload.nonce, ciphertextSha256, signer: signer.deviceId }, wrappedKeys, version, signer);
  return { encryptedPayload: payload, wrappedKeys };
}

/**
 * The item's content (opened with `privateKey`, every check of openItem) sealed again, under a new
 * content key, for exactly `recipients` (include your own key to read it later), signed by
 * `signer` for the version the update creates: send it with UpdateItem, update_mask
 * `encrypted_payload,wrapped_keys`. A recipient left out cannot open what is written from then on.
 */
export async function unshare(item: Item, privateKey: Opener, recipients: readonly Recipient[], signer: DeviceKeyPair, directory: SignerDirectory): Promise<SealedContent> {
  checkSigner(signer);
  const { opened, contentKey } = await unseal(item, privateKey, directory);
  contentKey.fill(0);
  return seal(opened.plaintext, recipients, contextOf(item), signer, item.version + 1n);
}
