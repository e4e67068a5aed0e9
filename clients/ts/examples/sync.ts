// Keep a vault's replica in a file: resume from it (no listing) after a restart of either side,
// list again only when the server says the cursor expired. Prints each event as a JSON line.
//   node sync.js BASE_URL TOKEN VAULT_ID STATE_FILE [TOKEN_TTL_SECONDS]
import { FileSyncStore, VaultSync, clients } from "zkplatform-client";

const [baseUrl, token, vaultId, stateFile, ttl = "3600"] = process.argv.slice(2);
const { broker } = clients(baseUrl, "connect-binary", { token });

// The sync's calls carry short-lived read-only tokens, minted again whenever one expires
// (during a watch too: the sync reconnects from its cursor with the new one).
async function readOnlyToken(): Promise<string> {
  const minted = await broker.mintUserApiToken({ tenantId: "acme", requestedScopes: ["vault.items.read"], requestedTtlSeconds: Number(ttl) });
  return minted.token!.accessToken;
}

const { vault } = clients(baseUrl, "connect-binary", { token: readOnlyToken, httpVersion: "2" });
// Loads stateFile when it exists (else lists the vault), saves it after every change.
const sync = new VaultSync(vault, {
  vaultId,
  store: new FileSyncStore(stateFile),
  onEvent: (event) => {
    const line: Record<string, unknown> = { event: event.type, cursor: event.cursor.toString() };
    if (event.type === "synced" || event.type === "resumed" || event.type === "changes") {
      line.items = Object.fromEntries([...sync.liveItems()].map(([id, item]) => [id, item.version.toString()]));
    }
    if (event.type === "reconnecting" || event.type === "restarting") line.reason = event.reason;
    console.log(JSON.stringify(line));
  },
});
await sync.run(); // until an AbortSignal (`signal`) aborts; rejects with SyncStoppedError on a refusal
