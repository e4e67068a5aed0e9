// zkplatform-client/key-directory in browsers: the directory and its state in IndexedDB (or in a
// KeyLogStore of the application's own).
export * from "./key-directory.js";
export { IndexedDbKeyLogStore, IndexedDbSyncStore } from "./indexeddb-store.js";
