// End-to-end encryption of an item's content, in the format of docs/sealing.md: AES-256-GCM under
// a fresh content key, with additional data that binds the ciphertext to its tenant, vault, item
// and kind; the content key wrapped for each recipient key in a compact JWE (ECDH-ES+A256KW).
// The server stores what seal() makes and never sees a content key. AES-GCM is WebCrypto's,
// the JWE jose's.
import { webcrypto } from "node:crypto";
import { clone, create } from "@bufbuild/protobuf";
import { CompactEncrypt, compactDecrypt } from "jose";
import { base64url, fromBase64url } from "./bytes.js";
import { RecipientKeyPair, RecipientPublicKey, SealingError, privateKeyOf } from "./recipient-keys.js";
import {
  EncryptedPayloadSchema,
  WrappedKeySchema,
  type EncryptedPayload,
  type Item,
  type WrappedKey,
} from "./gen/zkplatform_api/platform/v1/vault_pb.js";

export {
  RecipientKeyPair,
  RecipientPublicKey,
  SealingError,
  generateRecipientKey,
  importRecipientKey,
  type Curve,
  type SealingReason,
} from "./recipient-keys.js";

/** The payload format version this package writes and opens. */
export const PAYLOAD_VERSION = 1;
export const CONTENT_ALG = "A256GCM";
export const WRAP_ALG = "ECDH-ES+A256KW";
/** The most plaintext one item holds: its ciphertext and tag then fit the API's 49,152 characters. */
export const MAX_PLAINTEXT_BYTES = 36_848;
/** The most wrapped keys an item holds (the API's limit). */
export const MAX_RECIPIENTS = 256;

const CONTENT_KEY_BYTES = 32;
const NONCE_BYTES = 12;
const ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;
const KIND = /^[a-z][a-z0-9._-]{0,31}$/;

/** What a sealed payload is bound to: it opens only on the item of these ids and kind. */
export interface SealContext {
  tenantId: string;
  vaultId: string;
  itemId: string;
  kind: string;
}

/** A recipient: a public key (a key pair, a directory's RecipientKey: anything with the public `jwk` text), or the JWK's text. */
export type Recipient = string | { readonly jwk: string };

/** What CreateItem (or UpdateItem with `encrypted_payload,wrapped_keys`) takes. */
export interface SealedContent {
  encryptedPayload: EncryptedPayload;
  wrappedKeys: WrappedKey[];
}

// The additional authenticated data: these members, in this order, no whitespace. The ids and
// the kind are of restricted alphabets (checked when sealing; the server checks the items it
// stores), so no escaping ever applies.
function additionalData(context: SealContext): Uint8Array {
  const { itemId, kind, tenantId, vaultId } = context;
  return Buffer.from(`{"itemId":"${itemId}","kind":"${kind}","tenantId":"${tenantId}","v":${PAYLOAD_VERSION},"vaultId":"${vaultId}"}`, "utf8");
}

function checkContext(context: SealContext): void {
  for (const name of ["tenantId", "vaultId", "itemId"] as const) {
    if (!ID.test(context[name])) throw new TypeError(`${name} is 1 to 64 characters of [A-Za-z0-9._:-], the first a letter or digit`);
  }
  if (!KIND.test(context.kind)) throw new TypeError("kind is 1 to 32 characters of [a-z0-9._-], the first a letter");
}

function contextOf(item: Item): SealContext {
  return { tenantId: item.tenantId, vaultId: item.vaultId, itemId: item.itemId, kind: item.kind };
}

// The recipients' public keys, each once (by key id), in the order first given.
async function publicKeys(recipients: readonly Recipient[]): Promise<RecipientPublicKey[]> {
  const keys = new Map<string, RecipientPublicKey>();
  for (const recipient of recipients) {
    const key =
      recipient instanceof RecipientPublicKey ? recipient
      : recipient instanceof RecipientKeyPair ? recipient.publicKey
      : await RecipientPublicKey.fromJwk(typeof recipient === "string" ? recipient : recipient.jwk);
    if (!keys.has(key.keyId)) keys.set(key.keyId, key);
  }
  return [...keys.values()];
}

async function wrap(contentKey: Uint8Array, recipient: RecipientPublicKey): Promise<WrappedKey> {
  const jwe = await new CompactEncrypt(contentKey).setProtectedHeader({ alg: WRAP_ALG, enc: CONTENT_ALG, kid: recipient.keyId }).encrypt(recipient.cryptoKey);
  return create(WrappedKeySchema, { recipientId: recipient.recipientId, wrapAlg: WRAP_ALG, wrappedKey: base64url(jwe) });
}

function aesKey(contentKey: Uint8Array, usage: "encrypt" | "decrypt"): Promise<webcrypto.CryptoKey> {
  return webcrypto.subtle.importKey("raw", contentKey, { name: "AES-GCM" }, false, [usage]);
}

/** Seal `plaintext` (at most 36,848 bytes) for 1 to 256 recipient keys (duplicates folded), bound to `context`. */
export async function seal(plaintext: Uint8Array, recipients: readonly Recipient[], context: SealContext): Promise<SealedContent> {
  const keys = await publicKeys(recipients);
  if (keys.length === 0) throw new SealingError("NO_RECIPIENTS", "an item is sealed for at least one recipient key");
  if (keys.length > MAX_RECIPIENTS) throw new SealingError("TOO_LARGE", `an item has at most ${MAX_RECIPIENTS} recipient keys, not ${keys.length}`);
  if (plaintext.length > MAX_PLAINTEXT_BYTES) throw new SealingError("TOO_LARGE", `an item holds at most ${MAX_PLAINTEXT_BYTES} bytes, not ${plaintext.length}`);
  checkContext(context);
  const contentKey = webcrypto.getRandomValues(new Uint8Array(CONTENT_KEY_BYTES));
  const nonce = webcrypto.getRandomValues(new Uint8Array(NONCE_BYTES));
  const aad = additionalData(context);
  const ciphertext = await webcrypto.subtle.encrypt({ name: "AES-GCM", iv: nonce, additionalData: aad }, await aesKey(contentKey, "encrypt"), plaintext);
  const encryptedPayload = create(EncryptedPayloadSchema, {
    alg: CONTENT_ALG,
    version: PAYLOAD_VERSION,
    nonce: base64url(nonce),
    aad: base64url(aad),
    ciphertext: base64url(ciphertext),
  });
  return { encryptedPayload, wrappedKeys: await Promise.all(keys.map((key) => wrap(contentKey, key))) };
}

// The content key and the plaintext, after every check of docs/sealing.md's "Opening", in its order.
async function opened(item: Item, privateKey: RecipientKeyPair): Promise<{ contentKey: Uint8Array; plaintext: Uint8Array }> {
  const payload = item.encryptedPayload;
  if (payload === undefined || payload.alg !== CONTENT_ALG || payload.version !== PAYLOAD_VERSION) {
    throw new SealingError("UNSUPPORTED", `this package opens payloads of alg ${CONTENT_ALG}, version ${PAYLOAD_VERSION}`);
  }
  const aad = additionalData(contextOf(item));
  if (payload.aad !== base64url(aad)) {
    throw new SealingError("BINDING_MISMATCH", "the payload was sealed for another item, vault, tenant or kind");
  }
  const wrapped = item.wrappedKeys.find((key) => key.recipientId === privateKey.recipientId && key.wrapAlg === WRAP_ALG);
  if (wrapped === undefined) throw new SealingError("NOT_A_RECIPIENT", `the item is not sealed for key ${privateKey.keyId}`);
  const contentKey = await unwrap(wrapped, privateKey);
  const nonce = fromBase64url(payload.nonce);
  const ciphertext = fromBase64url(payload.ciphertext);
  if (nonce === null || ciphertext === null || nonce.length !== NONCE_BYTES) {
    throw new SealingError("DECRYPTION_FAILED", "the payload's nonce or ciphertext is malformed");
  }
  try {
    const plaintext = await webcrypto.subtle.decrypt({ name: "AES-GCM", iv: nonce, additionalData: aad }, await aesKey(contentKey, "decrypt"), ciphertext);
    return { contentKey, plaintext: new Uint8Array(plaintext) };
  } catch {
    throw new SealingError("DECRYPTION_FAILED", "the ciphertext does not match its tag");
  }
}

async function unwrap(wrapped: WrappedKey, privateKey: RecipientKeyPair): Promise<Uint8Array> {
  const jwe = fromBase64url(wrapped.wrappedKey);
  let contentKey: Uint8Array;
  try {
    if (jwe === null) throw new Error("not base64url");
    const options = { keyManagementAlgorithms: [WRAP_ALG], contentEncryptionAlgorithms: [CONTENT_ALG] };
    ({ plaintext: contentKey } = await compactDecrypt(Buffer.from(jwe).toString("latin1"), privateKeyOf(privateKey), options));
  } catch {
    throw new SealingError("DECRYPTION_FAILED", `the content key wrapped for key ${privateKey.keyId} does not decrypt`);
  }
  if (contentKey.length !== CONTENT_KEY_BYTES) throw new SealingError("DECRYPTION_FAILED", "the wrapped content key is not 32 bytes");
  return contentKey;
}

/** The plaintext of a sealed item, opened with one of its recipients' key pairs. */
export async function openItem(item: Item, privateKey: RecipientKeyPair): Promise<Uint8Array> {
  return (await opened(item, privateKey)).plaintext;
}

/**
 * The item's wrapped keys followed by the content key wrapped for each recipient key it lacks
 * (the item opened with `privateKey` first, as openItem does): send them with UpdateItem,
 * update_mask `wrapped_keys`. Keys already there, and keys of another wrap_alg, stay as they are.
 */
export async function share(item: Item, privateKey: RecipientKeyPair, recipients: readonly Recipient[]): Promise<WrappedKey[]> {
  const { contentKey } = await opened(item, privateKey);
  const present = new Set(item.wrappedKeys.map((key) => key.recipientId));
  const added = (await publicKeys(recipients)).filter((key) => !present.has(key.recipientId));
  const total = item.wrappedKeys.length + added.length;
  if (total > MAX_RECIPIENTS) throw new SealingError("TOO_LARGE", `an item has at most ${MAX_RECIPIENTS} wrapped keys, not ${total}`);
  const wrapped = await Promise.all(added.map((key) => wrap(contentKey, key)));
  return [...item.wrappedKeys.map((key) => clone(WrappedKeySchema, key)), ...wrapped];
}

/**
 * The item's content sealed again, under a new content key, for exactly `recipients` (include
 * your own key to read it later): send it with UpdateItem, update_mask
 * `encrypted_payload,wrapped_keys`. A recipient left out cannot open what is written from then on.
 */
export async function unshare(item: Item, privateKey: RecipientKeyPair, recipients: readonly Recipient[]): Promise<SealedContent> {
  const { plaintext } = await opened(item, privateKey);
  return seal(plaintext, recipients, contextOf(item));
}
