// Where a KeyDirectory keeps the key log it verified (key-log.ts's KeyLogState) between runs, as
// the Python package's key_log_store.py keeps it, in the same file format.
//
// What the state holds is what the client trusts: the last checkpoint it verified, so that a log
// rewritten or rolled back behind it is refused; the devices the log made; the alerts and resets
// the application has not acknowledged yet. FileKeyLogStore (key-log-file.ts, Node) keeps it in a
// file, the default; MemoryKeyLogStore only in memory, which must be chosen explicitly: after a
// restart such a client would trust whatever log it is shown next. No node:* import here.
import { restoreState, stateDocument, type KeyLogState, type StateDocument } from "./key-log.js";

/** What a state file says it is: its format and version. Version 1 was the hash chain of client packages 1.1: its files are refused. */
export const STATE_FORMAT = "zkplatform.key-log-state";
export const STATE_VERSION = 2;

/** Keeps a KeyDirectory's verified state. Either method may be async. */
export interface KeyLogStore {
  /** The saved state, or null when there is none yet. */
  load(): KeyLogState | null | Promise<KeyLogState | null>;
  /** Keep `state` in place of the one before, whole or not at all. */
  save(state: KeyLogState): void | Promise<void>;
}

/**
 * A state kept in memory, for one process (and tests): a new process starts with no state and
 * trusts the first log it is shown. Choose it knowingly; FileKeyLogStore is the default.
 */
export class MemoryKeyLogStore implements KeyLogStore {
  constructor(public state: KeyLogState | null = null) {}

  load(): KeyLogState | null {
    return this.state;
  }

  save(state: KeyLogState): void {
    this.state = state;
  }
}

/** The text of a state file: the state's document under its format and version. */
export function formatState(state: KeyLogState): string {
  return JSON.stringify({ format: STATE_FORMAT, version: STATE_VERSION, ...stateDocument(state) });
}

/** The state of a file formatState wrote (the Python package's too); an Error saying what for any other file. */
export function parseState(text: string): KeyLogState {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    throw new Error("the key log state file is not JSON");
  }
  if (typeof document !== "object" || document === null || Array.isArray(document)) throw new Error("not a key log state file");
  const { version, format } = document as { version?: unknown; format?: unknown };
  if (version !== STATE_VERSION) {
    throw new Error(`a key log state file of version ${JSON.stringify(version ?? null)}, not ${STATE_VERSION}: start from a new file (the next verification reads the whole log)`);
  }
  if (format !== STATE_FORMAT) throw new Error("not a key log state file");
  try {
    return restoreState(document as StateDocument);
  } catch (error) {
    if (error instanceof RangeError) throw new Error(error.message);
    throw new Error(`the key log state file is incomplete (${(error as Error).name})`);
  }
}
