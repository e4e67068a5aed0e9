// Delete an item, repeat the delete, provoke a version conflict, mint a token
// and call without one; print what happened as JSON (the tests read it).
//   node dist/demo.js BASE_URL PROTOCOL TOKEN VAULT_ID ITEM_ID OTHER_ITEM_ID
import { Code, ConnectError } from "@connectrpc/connect";
import { bearer, clients, decodeErrorInfo, type Protocol } from "./client.js";

async function main(): Promise<void> {
  const [baseUrl, protocol, token, vaultId, itemId, otherItemId] = process.argv.slice(2);
  const { vault, broker } = clients(baseUrl, protocol as Protocol);
  const auth = bearer(token);

  const deleted = await vault.deleteItem({ vaultId, itemId, baseVersion: 1n }, auth);
  const repeated = await vault.deleteItem({ vaultId, itemId, baseVersion: 1n }, auth);

  let conflict: unknown = null;
  try {
    await vault.deleteItem({ vaultId, itemId: otherItemId, baseVersion: 7n }, auth);
  } catch (error) {
    const e = ConnectError.from(error);
    // Details received from a server are raw: {type, value (bytes), debug}.
    const detail = e.details.find((d) => "type" in d && d.type === "google.rpc.ErrorInfo");
    const info = detail && "type" in detail ? decodeErrorInfo(detail.value) : null;
    conflict = { code: Code[e.code], info };
  }

  const minted = await broker.mintUserApiToken(
    { tenantId: "acme", requestedScopes: ["vault.items.read"], requestedTtlSeconds: 120 },
    auth,
  );

  let unauthenticated: string | null = null;
  try {
    await vault.deleteItem({ vaultId, itemId, baseVersion: 1n });
  } catch (error) {
    unauthenticated = Code[ConnectError.from(error).code];
  }

  console.log(
    JSON.stringify({
      deleted: { version: deleted.item?.version.toString(), deleted: deleted.item?.deleted, sequence: deleted.cursor?.sequence.toString() },
      repeatedSame: repeated.cursor?.sequence === deleted.cursor?.sequence && repeated.item?.version === deleted.item?.version,
      conflict,
      minted: { scopes: minted.token?.scopes, principalId: minted.token?.principalId, prefix: minted.token?.accessToken.slice(0, 4) },
      unauthenticated,
    }),
  );
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
