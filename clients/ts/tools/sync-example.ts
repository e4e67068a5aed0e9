// Sync a vault and print what happens as JSON lines (the tests read them):
// {"event":"state",...} after the listing and after every batch of changes,
// {"event":"reconnecting"|"restarting",...} on the way, {"event":"stopped",...}
// (exit 1) when the server refuses for good. SIGTERM or SIGINT ends it (exit 0).
//   node dist-tools/sync-example.js BASE_URL TOKEN VAULT_ID [watch|poll]
import { SyncStoppedError, VaultSync, bearer, clients, type SyncEvent } from "zkplatform-client";

const USAGE = "usage: node dist-tools/sync-example.js BASE_URL TOKEN VAULT_ID [watch|poll]";

function print(line: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

async function main(): Promise<void> {
  const [baseUrl, token, vaultId, mode = "watch", ...rest] = process.argv.slice(2);
  if (!baseUrl || !token || !vaultId || rest.length > 0 || (mode !== "watch" && mode !== "poll")) {
    console.error(`sync-example: bad arguments\n${USAGE}`);
    process.exit(2);
  }
  const stop = new AbortController();
  process.on("SIGTERM", () => stop.abort());
  process.on("SIGINT", () => stop.abort());

  const { vault } = clients(baseUrl, "connect-binary");
  const sync: VaultSync = new VaultSync(vault, {
    vaultId,
    headers: bearer(token).headers,
    mode,
    pollIntervalMs: 200,
    backoff: { initialMs: 50, maxMs: 1000 },
    signal: stop.signal,
    onEvent: (event: SyncEvent) => {
      if (event.type === "synced" || event.type === "changes") {
        const items = Object.fromEntries([...sync.liveItems()].map(([id, item]) => [id, item.version.toString()]));
        print({ event: "state", after: event.type, cursor: event.cursor.toString(), epoch: sync.epoch, items });
      } else if (event.type === "reconnecting") {
        print({ event: event.type, code: event.code, attempt: event.attempt, cursor: event.cursor.toString() });
      } else if (event.type === "restarting") {
        print({ event: event.type, reason: event.reason, cursor: event.cursor.toString() });
      }
    },
  });
  try {
    await sync.run();
  } catch (error) {
    if (!(error instanceof SyncStoppedError)) throw error;
    print({ event: "stopped", code: error.code, reason: error.reason, message: error.message });
    process.exit(1);
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
