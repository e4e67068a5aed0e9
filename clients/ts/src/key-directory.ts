// Recipient keys a client can trust: DirectoryService's answers checked against the tenant's key
// log as this client verified it (key-log.ts), the last verified head kept in a store between
// runs. A log that was truncated, forked or rewritten, or a key the log does not vouch for, is a
// KeyLogError the application sees; the store keeps the last good head, so the next call
// refuses the same log again.
import { create } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { KeyLogHeadSchema, type DirectoryService, type KeyLogEntry, type RecipientKey } from "./gen/zkplatform_api/platform/v1/directory_pb.js";
import { readIfExists, replaceAtomically } from "./atomic-file.js";
import { KeyLogError, KeyLogState, checkRecipientKeys, extendKeyLog } from "./key-log.js";

export {
  EMPTY_LOG_HASH,
  KeyLogError,
  KeyLogState,
  canonicalEntry,
  checkRecipientKeys,
  extendKeyLog,
  type KeyLogReason,
  type LoggedKey,
} from "./key-log.js";

/** Where a KeyDirectory keeps the last verified state between runs. Either method may be async. */
export interface KeyLogStore {
  /** The saved state, or null when there is none yet. */
  load(): KeyLogState | null | Promise<KeyLogState | null>;
  /** Keep `state` in place of the one before, whole or not at all. */
  save(state: KeyLogState): void | Promise<void>;
}

/** A state kept in memory: for one process, and tests. */
export class MemoryKeyLogStore implements KeyLogStore {
  constructor(public state: KeyLogState | null = null) {}
  load(): KeyLogState | null {
    return this.state;
  }
  save(state: KeyLogState): void {
    this.state = state;
  }
}

/**
 * A state kept in a JSON file (KeyLogState.toJson, which the Python package reads and writes too),
 * replaced atomically on each save: a temporary file in the same directory, flushed to disk,
 * renamed over the old one. It holds public keys only.
 */
export class FileKeyLogStore implements KeyLogStore {
  constructor(readonly path: string) {}

  async load(): Promise<KeyLogState | null> {
    const text = await readIfExists(this.path);
    return text === null ? null : KeyLogState.fromJson(text);
  }

  save(state: KeyLogState): Promise<void> {
    return replaceAtomically(this.path, state.toJson());
  }
}

// GetRecipientKeys answers again when the log moved on between it and the listing that
// verified its head: at the same head, keys left out can be told (KEY_HIDDEN).
const ANSWER_ATTEMPTS = 3;
const PAGE_SIZE = 1000;

/** The tenant's recipient keys, each checked against the key log this client verified. */
export class KeyDirectory {
  constructor(
    private readonly directory: Client<typeof DirectoryService>,
    private readonly store: KeyLogStore = new MemoryKeyLogStore(),
  ) {}

  /** The last verified state (the empty log's before the first verification). */
  async state(): Promise<KeyLogState> {
    return (await this.store.load()) ?? new KeyLogState();
  }

  /**
   * ListKeyLog after the verified size, every page, verified and saved (only once all of it
   * passed): the new state. KeyLogError when the log does not extend what was verified before.
   */
  async verify(): Promise<KeyLogState> {
    const state = await this.state();
    const entries: KeyLogEntry[] = [];
    let pageToken = "";
    for (;;) {
      const page = await this.directory.listKeyLog({ sinceIndex: state.size, pageSize: PAGE_SIZE, pageToken });
      entries.push(...page.entries);
      pageToken = page.nextPageToken;
      if (pageToken === "") {
        const verified = await extendKeyLog(state, entries, page.logHead ?? create(KeyLogHeadSchema));
        if (verified.size !== state.size || verified.tenantId !== state.tenantId) await this.store.save(verified);
        return verified;
      }
    }
  }

  /**
   * The live keys of `principalIds` (GetRecipientKeys), once the log is verified up to the
   * answer's head at least and each key checked against it: what seal() may wrap for.
   */
  async recipientKeys(principalIds: readonly string[]): Promise<RecipientKey[]> {
    let state = await this.state();
    for (let attempt = 1; ; attempt++) {
      const answer = await this.directory.getRecipientKeys({ principalIds: [...principalIds] });
      const size = answer.logHead?.size ?? 0n;
      if (size < state.size) {
        throw new KeyLogError("LOG_TRUNCATED", `the answer's log head is at ${size}, below the ${state.size} entries verified before`);
      }
      if (size > state.size) state = await this.verify();
      if (size < state.size && attempt < ANSWER_ATTEMPTS) continue; // the log moved on meanwhile
      if (size > state.size) throw new KeyLogError("LOG_TRUNCATED", `the log lists ${state.size} entries, below the answer's head at ${size}`);
      return checkRecipientKeys(state, principalIds, answer);
    }
  }

  /**
   * Publish a key pair's public key (PublishKey; a RecipientKeyPair or RecipientPublicKey), then
   * verify the log up to its publication: the key as the directory stores it. KEY_NOT_LIVE when
   * the verified log does not have it live, published by the caller.
   */
  async publish(key: { readonly jwk: string; readonly keyId: string }): Promise<RecipientKey> {
    const published = (await this.directory.publishKey({ publicKeyJwk: key.jwk })).key;
    const logged = (await this.verify()).keys.get(key.keyId);
    if (published === undefined || logged === undefined || logged.revoked || published.keyId !== key.keyId || logged.principalId !== published.principalId) {
      throw new KeyLogError("KEY_NOT_LIVE", `the verified log has no live key ${key.keyId} published by the caller`);
    }
    return published;
  }
}
