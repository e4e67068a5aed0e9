// The content key of a sealed item wrapped for each recipient key (docs/sealing.md, version 2):
// HPKE (RFC 9180) base mode, single shot, with the suite of the key's type, `info` binding the
// item's additional data and the recipient's key id, empty `aad`. The wrapped key is enc || ct.
//
// A suite is one entry of SUITES, keyed by the recipient key's type: a key type is added here
// (and its keys in recipient-keys.ts). HPKE is @hpke/core's (over WebCrypto), its X-Wing KEM
// @hpke/hybridkem-x-wing's (KEM 0x647A: ML-KEM-768 and X25519, mlkem's and @noble's); nothing
// here is a primitive by hand.
import { Aes256Gcm, CipherSuite, DhkemP256HkdfSha256, DhkemX25519HkdfSha256, HkdfSha256 } from "@hpke/core";
import { XWing } from "@hpke/hybridkem-x-wing";
import { base64url, buffer, concatBytes, fromBase64url, utf8 } from "./bytes.js";
import { RecipientKeyPair, RecipientPublicKey, SealingError, privateKeyOf, type Curve } from "./recipient-keys.js";
import { canonicalJson } from "./statements.js";

interface Suite {
  /** The wrapped key's `wrap_alg`. */
  readonly wrapAlg: string;
  /** The length of the KEM's encapsulated key (Nenc), which the wrapped key starts with. */
  readonly encBytes: number;
  readonly hpke: CipherSuite;
}

const suite = (wrapAlg: string, kem: DhkemX25519HkdfSha256 | DhkemP256HkdfSha256 | XWing, encBytes: number): Suite => ({
  wrapAlg,
  encBytes,
  hpke: new CipherSuite({ kem, kdf: new HkdfSha256(), aead: new Aes256Gcm() }),
});

const SUITES: Record<Curve, Suite> = {
  X25519: suite("HPKE-Base-X25519-SHA256-A256GCM", new DhkemX25519HkdfSha256(), 32),
  "P-256": suite("HPKE-Base-P256-SHA256-A256GCM", new DhkemP256HkdfSha256(), 65),
  "X-Wing": suite("HPKE-Base-XWing-SHA256-A256GCM", new XWing(), 1120),
};

/** The `wrap_alg` of the HPKE suite of a key type. */
export function wrapAlgOf(curve: Curve): string {
  return SUITES[curve].wrapAlg;
}

/** Every `wrap_alg` this package writes, by key type. */
export const WRAP_ALGS: Readonly<Record<Curve, string>> = Object.freeze(
  Object.fromEntries(Object.entries(SUITES).map(([curve, { wrapAlg }]) => [curve, wrapAlg])) as Record<Curve, string>,
);

// The HPKE info: the item's aad as the payload sends it, and the recipient key's base64url id.
function info(aad: string, keyId: string): Uint8Array<ArrayBuffer> {
  return buffer(utf8(canonicalJson({ aad, keyId, type: "zkplatform.item-key" })));
}

/** `contentKey` wrapped for `recipient`: the `wrapped_key` text (base64url of enc || ct). */
export async function wrapKey(contentKey: Uint8Array, recipient: RecipientPublicKey, aad: string): Promise<string> {
  const { hpke } = SUITES[recipient.curve];
  const { enc, ct } = await hpke.seal({ recipientPublicKey: recipient.cryptoKey, info: info(aad, recipient.keyId) }, buffer(contentKey));
  return base64url(concatBytes(new Uint8Array(enc), new Uint8Array(ct)));
}

/**
 * The content key a `wrapped_key` holds for `pair` (its text already found canonical), or
 * DECRYPTION_FAILED: HPKE does not open it, or what it holds is not 32 bytes.
 */
export async function unwrapKey(wrappedKey: string, pair: RecipientKeyPair, aad: string): Promise<Uint8Array> {
  const { hpke, encBytes } = SUITES[pair.curve];
  const bytes = fromBase64url(wrappedKey) ?? new Uint8Array(0);
  let contentKey: Uint8Array;
  try {
    if (bytes.length <= encBytes) throw new RangeError("shorter than the encapsulated key");
    const recipientKey = { privateKey: privateKeyOf(pair), publicKey: pair.publicKey.cryptoKey };
    const enc = buffer(bytes.subarray(0, encBytes));
    contentKey = new Uint8Array(await hpke.open({ recipientKey, enc, info: info(aad, pair.keyId) }, buffer(bytes.subarray(encBytes))));
  } catch {
    throw new SealingError("DECRYPTION_FAILED", `the content key wrapped for key ${pair.keyId} does not open`);
  }
  if (contentKey.length !== 32) throw new SealingError("DECRYPTION_FAILED", "the wrapped content key is not 32 bytes");
  return contentKey;
}
