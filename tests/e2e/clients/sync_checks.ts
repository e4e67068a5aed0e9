// VaultSync of the npm package against a real server: run() settles however its signal is aborted,
// from inside its own events, within SETTLE_MS (or the case reports that it did not); and it says
// when it holds the whole vault ("caughtUp", and the property of that name). Prints one JSON report.
//   node sync_checks.js BASE_URL TOKEN VAULT_ID
import { MemorySyncStore, SyncState, VaultSync, clients, type SyncEvent } from "zkplatform-client";

const [baseUrl, token, vaultId] = process.argv.slice(2);
// Far more than a run needs to unwind (milliseconds), far less than the heartbeat a hung watch sends.
const SETTLE_MS = 10_000;

type Mode = "watch" | "poll";

interface Outcome {
  settled: boolean;
  error: string | null;
  // Each event's type; "caughtUp" and "reconnecting" with the sync's caughtUp property then, and
  // "caughtUp" with the live items it counts.
  events: string[];
}

interface Case {
  mode: Mode;
  stopAt: SyncEvent["type"];
  times?: number; // the how-manieth such event stops it (default the first)
  saved?: SyncState | null;
  watchTimeoutMs?: number;
}

// Runs a sync that aborts its own signal when the event `stopAt` comes; how run() ended.
async function stoppedAt({ mode, stopAt, times = 1, saved = null, watchTimeoutMs }: Case): Promise<Outcome> {
  const { vault } = clients(baseUrl, "connect-binary", { token });
  const controller = new AbortController();
  const events: string[] = [];
  let seen = 0;
  const sync: VaultSync = new VaultSync(vault, {
    vaultId,
    mode,
    store: new MemorySyncStore(saved),
    signal: controller.signal,
    watchTimeoutMs,
    backoff: { initialMs: 10, maxMs: 50 },
    onEvent: (event) => {
      if (event.type === "caughtUp") events.push(`caughtUp:${sync.caughtUp}:${event.items}`);
      else if (event.type === "reconnecting") events.push(`reconnecting:${sync.caughtUp}`);
      else events.push(event.type);
      if (event.type === stopAt && ++seen === times) controller.abort();
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
  report[`${mode}: synced`] = await stoppedAt({ mode, stopAt: "synced" });
  // From a saved state: the watch (or the poll) is where the sync goes next.
  report[`${mode}: resumed`] = await stoppedAt({ mode, stopAt: "resumed", saved: new SyncState(vaultId) });
  report[`${mode}: caughtUp`] = await stoppedAt({ mode, stopAt: "caughtUp" });
  // A saved state at cursor 0: the whole vault comes as changes, then it is caught up.
  report[`${mode}: backlog`] = await stoppedAt({ mode, stopAt: "caughtUp", saved: new SyncState(vaultId) });
}
// Each watch ends after 300 ms and is opened again: behind meanwhile, caught up again by its marker.
report["watch: reconnected"] = await stoppedAt({ mode: "watch", stopAt: "caughtUp", times: 2, watchTimeoutMs: 300 });
process.stdout.write(JSON.stringify(report));
// A run that did not settle still holds its stream open: it must not keep the process alive.
process.exit(0);
