// The stores of a browser: a KeyDirectory's verified state and a VaultSync's state in IndexedDB,
// each a record of one object store, in the same JSON the file stores of Node write (so that an
// application can move it). A record is written whole in one transaction, read whole: a page
// closed mid-save leaves the state saved before. Any other place the application prefers is a
// KeyLogStore or SyncStore of its own (two methods).
import type { KeyLogState } from "./key-log.js";
import { formatState, parseState, type KeyLogStore } from "./key-log-store.js";
import { SyncState, type SyncStore } from "./sync.js";

const OBJECT_STORE = "state";

type Database = ReturnType<IndexedDb["open"]>["result"];
interface IndexedDb {
  open(name: string, version?: number): {
    result: {
      objectStoreNames: { contains(name: string): boolean };
      createObjectStore(name: string): unknown;
      transaction(store: string, mode: "readonly" | "readwrite"): {
        objectStore(name: string): { get(key: string): Request<unknown>; put(value: string, key: string): unknown };
        oncomplete: (() => void) | null;
        onerror: (() => void) | null;
        onabort: (() => void) | null;
        error: unknown;
      };
      close(): void;
    };
    onupgradeneeded: (() => void) | null;
    onsuccess: (() => void) | null;
    onerror: (() => void) | null;
    error: unknown;
  };
}
interface Request<T> {
  result: T;
  onsuccess: (() => void) | null;
  onerror: (() => void) | null;
  error: unknown;
}

function indexedDb(): IndexedDb {
  const db = (globalThis as { indexedDB?: IndexedDb }).indexedDB;
  if (db === undefined) throw new TypeError("this place has no IndexedDB: give a KeyLogStore or SyncStore of your own");
  return db;
}

function openDatabase(name: string): Promise<Database> {
  return new Promise((resolve, reject) => {
    const request = indexedDb().open(name, 1);
    request.onupgradeneeded = () => {
      if (!request.result.objectStoreNames.contains(OBJECT_STORE)) request.result.createObjectStore(OBJECT_STORE);
    };
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

async function read(database: string, key: string): Promise<string | null> {
  const db = await openDatabase(database);
  try {
    return await new Promise((resolve, reject) => {
      const request = db.transaction(OBJECT_STORE, "readonly").objectStore(OBJECT_STORE).get(key);
      request.onsuccess = () => resolve(typeof request.result === "string" ? request.result : null);
      request.onerror = () => reject(request.error);
    });
  } finally {
    db.close();
  }
}

async function write(database: string, key: string, text: string): Promise<void> {
  const db = await openDatabase(database);
  try {
    await new Promise<void>((resolve, reject) => {
      const transaction = db.transaction(OBJECT_STORE, "readwrite");
      transaction.objectStore(OBJECT_STORE).put(text, key);
      transaction.oncomplete = () => resolve();
      transaction.onerror = () => reject(transaction.error);
      transaction.onabort = () => reject(transaction.error);
    });
  } finally {
    db.close();
  }
}

/** A KeyDirectory's verified state in IndexedDB: one record per `key` (say, per tenant and device) of `database`. */
export class IndexedDbKeyLogStore implements KeyLogStore {
  constructor(
    readonly key: string,
    readonly database = "zkplatform-client",
  ) {}

  async load(): Promise<KeyLogState | null> {
    const text = await read(this.database, `key-log:${this.key}`);
    return text === null ? null : parseState(text);
  }

  save(state: KeyLogState): Promise<void> {
    return write(this.database, `key-log:${this.key}`, formatState(state));
  }
}

/** A VaultSync's state in IndexedDB: one record per `key` (say, per vault) of `database`. It holds the items as the server sent them (sealed). */
export class IndexedDbSyncStore implements SyncStore {
  constructor(
    readonly key: string,
    readonly database = "zkplatform-client",
  ) {}

  async load(): Promise<SyncState | null> {
    const text = await read(this.database, `sync:${this.key}`);
    return text === null ? null : SyncState.fromJson(text);
  }

  save(state: SyncState): Promise<void> {
    return write(this.database, `sync:${this.key}`, state.toJson());
  }
}
