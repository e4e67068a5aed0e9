// What a failed call says: its reason (an ErrorReason), metadata, field violations, retry delay.
//   node errors.js BASE_URL TOKEN ITEM_ID
import { Code, ErrorReason, clients, errorDetails } from "zkplatform-client";

const [baseUrl, token, itemId] = process.argv.slice(2);

function described(error: unknown) {
  const details = errorDetails(error); // any thrown value; reason is null without the platform's ErrorInfo
  return {
    code: Code[details.code],
    reason: details.reason,
    metadata: details.metadata,
    violations: details.violations.map((violation) => violation.field),
    retryAfterMs: details.retryAfterMs, // on resource_exhausted and unavailable
  };
}

const seen: Record<string, unknown> = {};
const encryptedPayload = { alg: "A256GCM", nonce: "bm9uY2U", ciphertext: "c2VjcmV0" };
const wrappedKeys = [{ recipientId: "alice", wrapAlg: "A256KW", wrappedKey: "a2V5" }];
const { vault, broker } = clients(baseUrl, "connect-binary", { token });

await vault.getItem({ vaultId: "acme-shared", itemId }).catch((error) => (seen.notFound = described(error)));

await vault.createItem({ vaultId: "acme-shared", itemId, kind: "note", encryptedPayload, wrappedKeys });
try {
  // An update on a version this client has not seen: a conflict to resolve.
  await vault.updateItem({ vaultId: "acme-shared", itemId, baseVersion: 7n, kind: "note", encryptedPayload, wrappedKeys });
} catch (error) {
  const details = errorDetails(error);
  if (details.reasonIs(ErrorReason.VERSION_MISMATCH)) seen.conflictAt = Number(details.metadata.currentVersion); // read it again, merge, retry
  seen.conflict = described(error);
}

await vault.listItems({ vaultId: "acme-shared", pageSize: -1 }).catch((error) => (seen.invalid = described(error))); // one violation per field

const minted = await broker.mintUserApiToken({ tenantId: "acme", requestedScopes: ["vault.items.read"], requestedTtlSeconds: 60 });
const reader = clients(baseUrl, "connect-binary", { token: minted.token!.accessToken });
await reader.vault.deleteItem({ vaultId: "acme-shared", itemId, baseVersion: 1n }).catch((error) => (seen.denied = described(error)));

console.log(JSON.stringify(seen));
