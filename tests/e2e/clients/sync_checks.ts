// VaultSync of the npm package stopped from inside its own events: run() settles however the
// signal is aborted, within SETTLE_MS, or the case reports that it did not. Prints one JSON report.
//   node sync_checks.js BASE_URL TOKEN VAULT_ID
import { MemorySyncStore, SyncState, VaultSync, clients, type SyncEvent } from "zkplatform-client";

const [baseUrl, token, vaultId] = process.argv.slice(2);
// Far more than a run needs to unwind (milliseconds), far less than the heartbeat a hung watch sends.
const SETTLE_MS = 10_000;

type Mode = "watch" | "poll";

interface Outcome {
  settled: boolean;
  error: string | null;
  events: string[];
}

// Runs a sync that aborts its own signal when the event `stopAt` comes; how run() ended.
async function stoppedAt(mode: Mode, stopAt: SyncEvent["type"], saved: SyncState | null = null): Promise<Outcome> {
  const { vault } = clients(baseUrl, "connect-binary", { token });
  const controller = new AbortController();
  const events: string[] = [];
  const sync = new VaultSync(vault, {
    vaultId,
    mode,
    store: new MemorySyncStore(saved),
    signal: controller.signal,
    onEvent: (event) => {
      events.push(event.type);
      if (event.type === stopAt) controller.abort();
    },
  });
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), SETTLE_MS);
  });
  try {
    const ended = await Promise.race([sync.run().then(() => "settled" as const), late]);
    return { settled: ended === "settled", error: null, events };
  } catch (error) {
    return { settled: true, error: error instanceof Error ? error.message : String(error), events };
  } finally {
    clearTimeout(timer);
  }
}

const report: Record<string, Outcome> = {};
for (const mode of ["watch", "poll"] as const) {
  report[`${mode}: synced`] = await stoppedAt(mode, "synced");
  // From a saved state: the watch (or the poll) is where the sync goes next.
  report[`${mode}: resumed`] = await stoppedAt(mode, "resumed", new SyncState(vaultId));
}
process.stdout.write(JSON.stringify(report));
// A run that did not settle still holds its stream open: it must not keep the process alive.
process.exit(0);
