// zkplatform-client/sync in Node: the sync client and its state in a file.
import { readIfExists, replaceAtomically } from "./atomic-file.js";
import { SyncState, type SyncStore } from "./sync.js";

export * from "./sync.js";

/**
 * A state kept in a JSON file (SyncState.toJson), replaced atomically on each save: a temporary
 * file in the same directory, flushed to disk, renamed over the old one. The file holds the items
 * as the server sent them (encrypted): keep it where the app keeps its own data.
 */
export class FileSyncStore implements SyncStore {
  constructor(readonly path: string) {}

  async load(): Promise<SyncState | null> {
    const text = await readIfExists(this.path);
    return text === null ? null : SyncState.fromJson(text);
  }

  save(state: SyncState): Promise<void> {
    return replaceAtomically(this.path, state.toJson());
  }
}
