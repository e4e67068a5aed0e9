// Create an item, repeat the create, update it, read it back (with HTTP GET on
// the Connect protocols), page through the vault, and provoke ALREADY_EXISTS
// and a version conflict; print what happened as JSON (the tests read it).
//   node dist-tools/items.js BASE_URL PROTOCOL TOKEN VAULT_ID NEW_ITEM_ID
import { ConnectError } from "@connectrpc/connect";
import { bearer, clients, describeError, type Item, type Protocol } from "zkplatform-client";

const USAGE = "usage: node dist-tools/items.js BASE_URL PROTOCOL TOKEN VAULT_ID NEW_ITEM_ID";
const PROTOCOLS: readonly Protocol[] = ["connect-json", "connect-binary", "grpc", "grpc-web"];

function usage(problem: string): never {
  console.error(`items: ${problem}\n${USAGE}\n  PROTOCOL is one of ${PROTOCOLS.join(", ")}`);
  process.exit(2);
}

// What a client encrypted and wrapped itself; the server only stores it.
function content(note: string) {
  return {
    kind: "login",
    titleHash: `th-${note}`,
    encryptedPayload: { alg: "A256GCM", nonce: "bm9uY2UtMTIzNA", ciphertext: Buffer.from(`secret ${note}`).toString("base64url") },
    wrappedKeys: [{ recipientId: "alice", wrapAlg: "ECDH-ES+A256KW", wrappedKey: "d3JhcHBlZC1rZXk" }],
  };
}

async function failure(call: () => Promise<unknown>): Promise<ReturnType<typeof describeError> | null> {
  try {
    await call();
    return null;
  } catch (error) {
    if (!(error instanceof ConnectError)) throw error;
    return describeError(error);
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.length !== 5 || args.some((arg) => arg === "")) {
    usage(`expected 5 non-empty arguments, got ${args.filter((arg) => arg !== "").length}`);
  }
  const [baseUrl, protocol, token, vaultId, itemId] = args;
  if (!(PROTOCOLS as readonly string[]).includes(protocol)) {
    usage(`unknown protocol ${JSON.stringify(protocol)}`);
  }
  const { vault } = clients(baseUrl, protocol as Protocol, { httpGet: true });
  const auth = bearer(token);

  const created = await vault.createItem({ vaultId, itemId, ...content("1") }, auth);
  const repeated = await vault.createItem({ vaultId, itemId, ...content("1") }, auth);
  const exists = await failure(() => vault.createItem({ vaultId, itemId, ...content("other") }, auth));
  const updated = await vault.updateItem({ vaultId, itemId, baseVersion: 1n, ...content("2") }, auth);
  const stale = await failure(() => vault.updateItem({ vaultId, itemId, baseVersion: 1n, ...content("3") }, auth));

  let cacheControl: string | null = null;
  const got = await vault.getItem({ vaultId, itemId }, { ...auth, onHeader: (h) => (cacheControl = h.get("cache-control")) });

  // A full listing: every page under one cursor; changes after it come from the cursor.
  const items: Item[] = [];
  const cursors = new Set<string>();
  let pageToken = "";
  let pages = 0;
  do {
    const page = await vault.listItems({ vaultId, pageSize: 2, pageToken }, auth);
    items.push(...page.items);
    cursors.add(page.cursor?.sequence.toString() ?? "");
    pageToken = page.nextPageToken;
    pages += 1;
  } while (pageToken !== "");

  console.log(
    JSON.stringify({
      created: { version: created.item?.version.toString(), sequence: created.cursor?.sequence.toString() },
      repeatedSame: repeated.cursor?.sequence === created.cursor?.sequence && repeated.item?.version === 1n,
      exists,
      updated: { version: updated.item?.version.toString(), titleHash: updated.item?.titleHash },
      stale,
      got: { version: got.item?.version.toString(), ciphertext: got.item?.encryptedPayload?.ciphertext },
      cacheControl,
      listed: { pages, cursors: [...cursors], itemIds: items.map((i) => i.itemId) },
      unauthenticated: (await failure(() => vault.getItem({ vaultId, itemId })))?.code ?? null,
    }),
  );
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
