// Delete an item, repeat the delete, provoke a version conflict, mint a token
// and call without one; print what happened as JSON (the tests read it).
//   node dist-tools/demo.js BASE_URL PROTOCOL TOKEN VAULT_ID ITEM_ID OTHER_ITEM_ID
import { Code, ConnectError } from "@connectrpc/connect";
import { bearer, clients, decodeErrorInfo, type Protocol } from "zkplatform-client";

const USAGE = "usage: node dist-tools/demo.js BASE_URL PROTOCOL TOKEN VAULT_ID ITEM_ID OTHER_ITEM_ID";
const PROTOCOLS: readonly Protocol[] = ["connect-json", "connect-binary", "grpc", "grpc-web"];

// A wrong invocation is the caller's to fix: say how to call it (exit 2, as for usage errors), no stack trace.
function usage(problem: string): never {
  console.error(`demo: ${problem}\n${USAGE}\n  PROTOCOL is one of ${PROTOCOLS.join(", ")}`);
  process.exit(2);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.length !== 6 || args.some((arg) => arg === "")) {
    usage(`expected 6 non-empty arguments, got ${args.filter((arg) => arg !== "").length}`);
  }
  const [baseUrl, protocol, token, vaultId, itemId, otherItemId] = args;
  if (!(PROTOCOLS as readonly string[]).includes(protocol)) {
    usage(`unknown protocol ${JSON.stringify(protocol)}`);
  }
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
