// The key log state in a file (Node): the default store of a KeyDirectory. The file is read
// whole and replaced whole (atomic-file.ts), in the format the Python package reads and writes
// too (key-log-store.ts).
import { readIfExists, replaceAtomically } from "./atomic-file.js";
import type { KeyLogState } from "./key-log.js";
import { formatState, parseState, type KeyLogStore } from "./key-log-store.js";

/**
 * A state kept in a JSON file, replaced atomically on each save. It holds public keys and signed
 * statements only, but what it says is what the client trusts: keep it where the application
 * keeps its own data, one file per tenant and device.
 */
export class FileKeyLogStore implements KeyLogStore {
  constructor(readonly path: string) {}

  async load(): Promise<KeyLogState | null> {
    const text = await readIfExists(this.path);
    return text === null ? null : parseState(text);
  }

  save(state: KeyLogState): Promise<void> {
    return replaceAtomically(this.path, formatState(state));
  }
}
