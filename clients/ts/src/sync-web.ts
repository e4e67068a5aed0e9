// zkplatform-client/sync in browsers: the sync client and its state in IndexedDB (or in a
// SyncStore of the application's own).
export * from "./sync.js";
export { IndexedDbSyncStore } from "./indexeddb-store.js";
