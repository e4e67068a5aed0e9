// Version 1's wrapped content keys, read only (docs/sealing.md, "Version 1 payloads"): a compact
// JWE with ECDH-ES+A256KW and A256GCM, base64url encoded as a whole. Nothing writes them any
// more; items sealed before version 2 still open. The JWE is jose's.
import { compactDecrypt } from "jose";
import { fromBase64url } from "./bytes.js";
import { RecipientKeyPair, SealingError, privateKeyOf, type Curve } from "./recipient-keys.js";

export const V1_WRAP_ALG = "ECDH-ES+A256KW";
/** The key types version 1 wrapped for: an X-Wing key is never a version 1 recipient. */
export const V1_KEY_TYPES: readonly Curve[] = ["X25519", "P-256"];
const CONTENT_ALG = "A256GCM";
const latin1 = new TextDecoder("latin1");

/** The content key (the AES-256-GCM key itself) a version 1 `wrapped_key` holds for `pair`, or DECRYPTION_FAILED. */
export async function unwrapV1Key(wrappedKey: string, pair: RecipientKeyPair): Promise<Uint8Array> {
  let contentKey: Uint8Array;
  try {
    const jwe = fromBase64url(wrappedKey);
    if (jwe === null) throw new RangeError("not base64url");
    const options = { keyManagementAlgorithms: [V1_WRAP_ALG], contentEncryptionAlgorithms: [CONTENT_ALG] };
    ({ plaintext: contentKey } = await compactDecrypt(latin1.decode(jwe), privateKeyOf(pair), options));
  } catch {
    throw new SealingError("DECRYPTION_FAILED", `the content key wrapped for key ${pair.keyId} does not decrypt`);
  }
  if (contentKey.length !== 32) throw new SealingError("DECRYPTION_FAILED", "the wrapped content key is not 32 bytes");
  return contentKey;
}
