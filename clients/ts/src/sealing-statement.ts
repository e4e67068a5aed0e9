// What the sealer of a version 2 item signs (docs/sealing.md, "The signature"): the canonical JSON
// of the payload's fields, the SHA-256 of its ciphertext, the sorted recipient ids and the item
// version the write creates; and the check of that signature with a signing key of the verified
// directory. Ed25519 is tlog/ed25519.ts' check, the canonical JSON statements.ts'. No node:* import.
import { JsonNumber, b64urlDecode, canonicalJson, utf8 } from "./statements.js";
import { ed25519Verify } from "./tlog/ed25519.js";

export const SEALED_ITEM_TYPE = "zkplatform.sealed-item";
export const SEALED_ITEM_FORMAT = 2;

export interface SealedItemFields {
  /** The payload's `aad`, `commitment` and `nonce` as sent (base64url). */
  readonly aad: string;
  readonly commitment: string;
  readonly nonce: string;
  /** base64url of the SHA-256 of the ciphertext's bytes (with the tag). */
  readonly ciphertextSha256: string;
  /** The signing device's id. */
  readonly signer: string;
}

/** A sealed item's statement: its payload's fields, for these recipients, at this item version. */
export class SealedItemStatement {
  readonly recipients: readonly string[];

  constructor(
    readonly fields: SealedItemFields,
    recipients: Iterable<string>,
    readonly version: bigint,
  ) {
    // Ascending code unit order: recipient ids are 64 lowercase hexadecimal digits.
    this.recipients = [...recipients].sort();
  }

  canonical(): string {
    const { aad, ciphertextSha256, commitment, nonce, signer } = this.fields;
    const version = new JsonNumber(this.version.toString(), this.version);
    return canonicalJson({ aad, ciphertextSha256, commitment, format: SEALED_ITEM_FORMAT, nonce, recipients: this.recipients, signer, type: SEALED_ITEM_TYPE, version });
  }
}

/** Whether `signature` (64 bytes) is the Ed25519 signature of `statement` by the canonical Ed25519 JWK `signingJwk`, decided as the Python package's OpenSSL decides it (tlog/ed25519.ts). */
export function verifySealedItem(signingJwk: string, statement: SealedItemStatement, signature: Uint8Array): boolean {
  try {
    const x = b64urlDecode((JSON.parse(signingJwk) as { x: string }).x, 32);
    return ed25519Verify(x, utf8(statement.canonical()), signature);
  } catch {
    return false;
  }
}
