// A vault sync client: list the vault once, then follow its changes from the
// listing's cursor for as long as it runs (WatchChanges, or ListChanges polling);
// or start from a saved state (items, cursor and epoch, through a SyncStore)
// and follow from there.
//
// - Every item is kept by id at its highest version: a listing is not a
//   snapshot, so changes made while its pages were read arrive again after its
//   cursor, and an older copy must never replace a newer one.
// - The cursor is a sequence and the store's epoch (the identity of its
//   history): both are kept and sent back (sinceEpoch), so that a store restored
//   from a backup, whose epoch the restore rotated, is not taken for the one the
//   cursor came from.
// - The sync is caught up (`caughtUp`, and a "caughtUp" event) once it holds
//   every change up to the vault's latest: when a watch's message marked
//   caughtUp (the end of its backlog) is applied, or a ListChanges answer has
//   no more to come. It is not caught up again until then after a dropped
//   stream, a failed poll or a start over; `items` is complete only while it is.
// - A dropped stream, UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED (WATCH_BEHIND),
//   RESOURCE_EXHAUSTED or a silent connection reconnects from the last cursor
//   received, after a bounded, jittered backoff.
// - CURSOR_EXPIRED (deletes this client may not have seen were purged, or the
//   store was restored and its epoch is another) and CURSOR_AHEAD (the
//   server's store is behind what this client saw: a restore) start over with
//   a fresh listing that replaces the local state.
// - A page may hold fewer items or changes than asked (pages stop at 3 MiB):
//   only an empty nextPageToken, or hasMore false, ends a listing.
// - A server's RetryInfo is honoured: the sync waits at least that long.
// - With a store, the state is saved after the listing and after every batch
//   of changes (and heartbeat that moves the cursor); run() starts from the
//   saved state without listing again, and lists again only on CURSOR_EXPIRED
//   or CURSOR_AHEAD.
// - An expired token (TOKEN_EXPIRED) is asked for once more at once: the auth
//   interceptor of a client made with a token provider (or a `headers`
//   function) has a new one by then. A second expiry before anything arrived,
//   and every other UNAUTHENTICATED, PERMISSION_DENIED and answer that
//   retrying cannot change, stop the sync with a SyncStoppedError.
import { fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { errorDetails } from "./error-info.js";
import { ErrorReason } from "./gen/zkplatform_api/platform/v1/errors_pb.js";
import { ItemSchema, type Item, type ItemChange, type VaultService } from "./gen/zkplatform_api/platform/v1/vault_pb.js";

// The version of the state's JSON, as FileSyncStore and IndexedDbSyncStore keep it (the Python package's too).
const STATE_FORMAT = 1;

/** Where a sync of `vaultId` stands: every item seen (by id, tombstones included), and the cursor (sequence and epoch) it resumes from. */
export class SyncState {
  constructor(
    readonly vaultId: string,
    readonly cursor: bigint = 0n,
    readonly epoch: string = "",
    readonly items: ReadonlyMap<string, Item> = new Map(),
  ) {}

  /** JSON that fromJson reads back (and the Python package's SyncState.from_json): the items in the protobuf JSON form, 64-bit integers as strings. */
  toJson(): string {
    const items = [...this.items.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, item]) => toJson(ItemSchema, item));
    return JSON.stringify({ format: STATE_FORMAT, vaultId: this.vaultId, cursor: this.cursor.toString(), epoch: this.epoch, items });
  }

  static fromJson(text: string): SyncState {
    const data = JSON.parse(text) as { format?: number; vaultId: string; cursor: string; epoch: string; items: JsonValue[] };
    if (data.format !== STATE_FORMAT) throw new Error(`not a sync state of format ${STATE_FORMAT}`);
    const items = data.items.map((json) => fromJson(ItemSchema, json, { ignoreUnknownFields: true }));
    return new SyncState(String(data.vaultId), BigInt(data.cursor), String(data.epoch), new Map(items.map((item) => [item.itemId, item])));
  }
}

/** Where a VaultSync keeps its state between runs. Either method may be async. */
export interface SyncStore {
  /** The saved state, or null when there is none yet. */
  load(): SyncState | null | Promise<SyncState | null>;
  /** Keep `state` (a copy the sync will not change) in place of the one before, whole or not at all. */
  save(state: SyncState): void | Promise<void>;
}

/** A state kept in memory: for one process's syncs one after the other, and tests. */
export class MemorySyncStore implements SyncStore {
  constructor(public state: SyncState | null = null) {}
  load(): SyncState | null {
    return this.state;
  }
  save(state: SyncState): void {
    this.state = state;
  }
}

export type SyncRpc = "ListItems" | "ListChanges" | "WatchChanges";

/** What a call carries besides its message: the Authorization header (and a DPoP proof, made per call). */
export type SyncHeaders = Record<string, string> | ((rpc: SyncRpc) => Record<string, string> | Promise<Record<string, string>>);

export interface BackoffOptions {
  /** The first delay before reconnecting, in ms (default 100). */
  initialMs?: number;
  /** The longest delay, in ms (default 5000): delays double up to it. */
  maxMs?: number;
}

export type SyncEvent =
  | { type: "synced"; cursor: bigint; items: number }
  | { type: "resumed"; cursor: bigint; items: number }
  | { type: "changes"; cursor: bigint; changes: ItemChange[] }
  /**
   * `items` now holds every change of the vault up to `cursor`, its latest when the server read
   * it: the vault is complete (`items` here counts the live ones, as in "synced"). Once a stream
   * (each reconnect has its own), or once a poll reaches the latest change after a listing or a
   * failure.
   */
  | { type: "caughtUp"; cursor: bigint; items: number }
  | { type: "heartbeat"; cursor: bigint }
  | { type: "reconnecting"; code: string; reason: string; attempt: number; delayMs: number; cursor: bigint }
  | { type: "restarting"; reason: string; cursor: bigint };

export interface SyncOptions {
  vaultId: string;
  /** What each call carries besides the transport's interceptors; none for clients made with a token (`clients(..., { token })`). */
  headers?: SyncHeaders;
  /** Where the state is loaded from when run() starts, and saved to as it moves. */
  store?: SyncStore;
  /** "watch" (default) streams WatchChanges; "poll" calls ListChanges every pollIntervalMs. */
  mode?: "watch" | "poll";
  pollIntervalMs?: number;
  /** Items per ListItems page and changes per ListChanges answer (default 100, at most 1000). */
  pageSize?: number;
  backoff?: BackoffOptions;
  /**
   * A watch that says nothing (not even a heartbeat) for this long is taken
   * for a dead connection and reopened (default 45000: three heartbeats).
   */
  idleTimeoutMs?: number;
  /** Ends each watch after this long (Connect-Timeout-Ms); the sync then resumes from its cursor. */
  watchTimeoutMs?: number;
  onEvent?: (event: SyncEvent) => void;
  signal?: AbortSignal;
}

/** The sync stopped for good: retrying cannot help (bad token, no access, a request the server refuses). */
export class SyncStoppedError extends Error {
  readonly code: string;
  readonly reason: string | null;
  constructor(vaultId: string, code: string, reason: string | null, message: string) {
    super(`sync of vault ${vaultId} stopped: the server answered ${code}${reason ? ` (${reason})` : ""}: ${message}`);
    this.name = "SyncStoppedError";
    this.code = code;
    this.reason = reason;
  }
}

// Codes after which the same request may succeed later.
const TRANSIENT = new Set<Code>([
  Code.Unavailable,
  Code.DeadlineExceeded,
  Code.Aborted,
  Code.ResourceExhausted,
  Code.Internal,
  Code.Unknown,
  Code.Canceled,
]);

class StartOver extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

class StreamEnded extends Error {}

// The caller aborted: every loop unwinds to run(), which resolves.
class Stopped extends Error {}

export class VaultSync {
  /** Every item seen, by id, at its highest version; tombstones included (they hold the version a delete reached). */
  readonly items = new Map<string, Item>();
  /** The sequence of the last change applied: where the sync resumes. */
  cursor = 0n;
  /** The store's epoch the cursor belongs to ("" before the first listing): sent back with it. */
  epoch = "";
  /** Whether `items` holds every change up to the vault's latest (see the "caughtUp" event). */
  caughtUp = false;

  private readonly options: SyncOptions;
  private readonly vault: Client<typeof VaultService>;
  private attempt = 0;
  private expiredOnce = false;

  constructor(vault: Client<typeof VaultService>, options: SyncOptions) {
    this.vault = vault;
    this.options = options;
  }

  /** The items that are not deleted, by id. */
  liveItems(): Map<string, Item> {
    return new Map([...this.items].filter(([, item]) => !item.deleted));
  }

  /**
   * Sync until `signal` aborts (then it resolves) or the server answers
   * something retrying cannot change (then it rejects with SyncStoppedError).
   */
  async run(): Promise<void> {
    const signal = this.options.signal;
    let listing = !(await this.resume());
    while (!signal?.aborted) {
      try {
        if (listing) await this.list();
        listing = true;
        await (this.options.mode === "poll" ? this.poll() : this.watch());
      } catch (error) {
        if (signal?.aborted || error instanceof Stopped) return;
        if (error instanceof StartOver) {
          this.emit({ type: "restarting", reason: error.reason, cursor: this.cursor });
          await this.pause(error.reason, error.reason);
          continue;
        }
        throw error;
      }
    }
  }

  // Take the store's state, if there is one: whether there was.
  private async resume(): Promise<boolean> {
    const state = await this.options.store?.load();
    if (!state) return false;
    if (state.vaultId !== this.options.vaultId) {
      throw new Error(`the store holds the state of vault ${state.vaultId}, not ${this.options.vaultId}`);
    }
    this.items.clear();
    for (const [id, item] of state.items) this.items.set(id, item);
    this.cursor = state.cursor;
    this.epoch = state.epoch;
    this.emit({ type: "resumed", cursor: this.cursor, items: this.liveItems().size });
    return true;
  }

  private async save(): Promise<void> {
    await this.options.store?.save(new SyncState(this.options.vaultId, this.cursor, this.epoch, new Map(this.items)));
  }

  private succeeded(): void {
    this.attempt = 0;
    this.expiredOnce = false;
  }

  private reachedLatest(): void {
    this.caughtUp = true;
    this.emit({ type: "caughtUp", cursor: this.cursor, items: this.liveItems().size });
  }

  // Apply an answer's changes (or move to its cursor), and save what moved.
  private async follow(changes: ItemChange[], cursor: bigint, epoch: string | undefined, heartbeat: boolean): Promise<void> {
    const before = [this.cursor, this.epoch] as const;
    this.keepEpoch(epoch);
    if (changes.length > 0) this.apply(changes, cursor);
    else if (cursor > this.cursor) this.cursor = cursor;
    if (changes.length > 0 || this.cursor !== before[0] || this.epoch !== before[1]) await this.save();
    if (changes.length > 0) this.emit({ type: "changes", cursor: this.cursor, changes });
    else if (heartbeat) this.emit({ type: "heartbeat", cursor: this.cursor });
  }

  // ListItems to the last page under the first page's cursor, retrying transient failures.
  private async list(): Promise<void> {
    for (;;) {
      try {
        const items = new Map<string, Item>();
        let cursor: bigint | null = null;
        let epoch = "";
        let pageToken = "";
        do {
          const page = await this.vault.listItems(
            { vaultId: this.options.vaultId, pageSize: this.options.pageSize ?? 100, pageToken },
            { headers: await this.headers("ListItems"), signal: this.options.signal },
          );
          for (const item of page.items) items.set(item.itemId, item);
          if (cursor === null) {
            cursor = page.cursor?.sequence ?? 0n;
            epoch = page.cursor?.epoch ?? "";
          }
          pageToken = page.nextPageToken;
        } while (pageToken !== "");
        // A fresh listing replaces everything: a purged tombstone's item must vanish too.
        this.items.clear();
        for (const [id, item] of items) this.items.set(id, item);
        this.cursor = cursor ?? 0n;
        this.epoch = epoch;
        this.succeeded();
        await this.save();
        this.emit({ type: "synced", cursor: this.cursor, items: this.liveItems().size });
        return;
      } catch (error) {
        await this.retryOrThrow(error);
      }
    }
  }

  private async watch(): Promise<void> {
    for (;;) {
      // As fetch does: a signal that already fired fires no "abort" event for the listener below
      // (an application that stops the sync inside its "synced" event), so it is checked first.
      if (this.options.signal?.aborted) throw new Stopped();
      const stream = new AbortController();
      const abort = () => stream.abort();
      this.options.signal?.addEventListener("abort", abort);
      let idle: NodeJS.Timeout | undefined;
      const arm = () => {
        clearTimeout(idle);
        idle = setTimeout(() => stream.abort(new StreamEnded("no message or heartbeat in time")), this.options.idleTimeoutMs ?? 45_000);
      };
      try {
        arm();
        const responses = this.vault.watchChanges(
          { vaultId: this.options.vaultId, sinceSequence: this.cursor, sinceEpoch: this.epoch },
          { headers: await this.headers("WatchChanges"), signal: stream.signal, timeoutMs: this.options.watchTimeoutMs },
        );
        for await (const response of responses) {
          arm();
          this.succeeded();
          // The marker of an empty backlog is no heartbeat: it says caughtUp once applied.
          const cursor = response.cursor?.sequence ?? this.cursor;
          await this.follow(response.changes, cursor, response.cursor?.epoch, !response.caughtUp);
          if (response.caughtUp) this.reachedLatest(); // its changes applied: the backlog is
        }
        throw new StreamEnded("the stream ended");
      } catch (error) {
        const reason = stream.signal.aborted && !this.options.signal?.aborted ? stream.signal.reason : error;
        await this.retryOrThrow(reason);
      } finally {
        clearTimeout(idle);
        this.options.signal?.removeEventListener("abort", abort);
      }
    }
  }

  private async poll(): Promise<void> {
    for (;;) {
      try {
        const page = await this.vault.listChanges(
          {
            vaultId: this.options.vaultId,
            sinceSequence: this.cursor,
            sinceEpoch: this.epoch,
            pageSize: this.options.pageSize ?? 100,
          },
          { headers: await this.headers("ListChanges"), signal: this.options.signal },
        );
        this.succeeded();
        await this.follow(page.changes, page.cursor?.sequence ?? this.cursor, page.cursor?.epoch, false);
        if (!page.hasMore) {
          if (!this.caughtUp) this.reachedLatest();
          await this.sleep(this.options.pollIntervalMs ?? 1000);
        }
        if (this.options.signal?.aborted) throw new Stopped();
      } catch (error) {
        await this.retryOrThrow(error);
      }
    }
  }

  // An answer to a request with our epoch is of it; one to a request without (a listing by a
  // server from before epochs, then one with them) tells us the store's.
  private keepEpoch(epoch: string | undefined): void {
    if (epoch) this.epoch = epoch;
  }

  private apply(changes: ItemChange[], cursor: bigint): void {
    for (const change of changes) {
      const item = change.item;
      if (!item) continue;
      const known = this.items.get(item.itemId);
      if (!known || item.version > known.version) this.items.set(item.itemId, item);
    }
    const last = changes[changes.length - 1].sequence;
    this.cursor = cursor > last ? cursor : last;
  }

  // Transient failures wait and return (the caller retries from its cursor); the rest throw.
  private async retryOrThrow(error: unknown): Promise<void> {
    // Changes may be made while the sync is not following: it is behind until it catches up again.
    this.caughtUp = false;
    if (this.options.signal?.aborted) throw new Stopped();
    if (error instanceof StreamEnded) {
      await this.pause("dropped", error.message);
      return;
    }
    if (!(error instanceof ConnectError)) {
      // Anything else is a network failure below Connect (a reset socket): the server may come back.
      await this.pause("unavailable", error instanceof Error ? error.message : String(error));
      return;
    }
    const details = errorDetails(error);
    const code = Code[error.code];
    const reason = details.reason;
    if (reason !== null && (details.reasonIs(ErrorReason.CURSOR_EXPIRED) || details.reasonIs(ErrorReason.CURSOR_AHEAD))) {
      throw new StartOver(reason);
    }
    if (error.code === Code.Unauthenticated && details.reasonIs(ErrorReason.TOKEN_EXPIRED) && !this.expiredOnce) {
      // The auth interceptor asked its provider for a new token as the call failed: at once,
      // once; a second expiry before anything arrived means no new token came.
      this.expiredOnce = true;
      this.emit({ type: "reconnecting", code, reason: reason!, attempt: this.attempt, delayMs: 0, cursor: this.cursor });
      return;
    }
    if (TRANSIENT.has(error.code)) {
      await this.pause(code, reason ?? error.rawMessage, details.retryAfterMs);
      return;
    }
    throw new SyncStoppedError(this.options.vaultId, code, reason, error.rawMessage);
  }

  // The backoff's jittered delay, or the server's RetryInfo delay when that is longer.
  private async pause(code: string, reason: string, retryAfterMs: number | null = null): Promise<void> {
    this.attempt += 1;
    const initial = this.options.backoff?.initialMs ?? 100;
    const max = this.options.backoff?.maxMs ?? 5000;
    const ceiling = Math.min(max, initial * 2 ** Math.min(this.attempt - 1, 30));
    // Jitter spreads the reconnects of many clients after a server restart.
    const delayMs = Math.max(Math.round(ceiling / 2 + (Math.random() * ceiling) / 2), Math.ceil(retryAfterMs ?? 0));
    this.emit({ type: "reconnecting", code, reason, attempt: this.attempt, delayMs, cursor: this.cursor });
    await this.sleep(delayMs);
    if (this.options.signal?.aborted) throw new Stopped();
  }

  private sleep(ms: number): Promise<void> {
    const signal = this.options.signal;
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener("abort", done);
    });
  }

  private async headers(rpc: SyncRpc): Promise<Record<string, string>> {
    const headers = this.options.headers ?? {};
    return typeof headers === "function" ? headers(rpc) : headers;
  }

  private emit(event: SyncEvent): void {
    this.options.onEvent?.(event);
  }
}
