// The verification of a tenant's key log (docs/sealing.md, "Trusting a recipient's key"), with no
// I/O: a verified state extended by the entries a server lists after it, and a GetRecipientKeys
// answer checked against a verified state. Each hash is SHA-256(previous hash || the entry's
// canonical bytes), as directory.proto's KeyLogEntry says; the hashing is WebCrypto's.
import { base64url, equalBytes, fromBase64url, sha256 } from "./bytes.js";
import {
  KeyLogAction,
  KeyLogActionSchema,
  type GetRecipientKeysResponse,
  type KeyLogEntry,
  type KeyLogHead,
  type RecipientKey,
} from "./gen/zkplatform_api/platform/v1/directory_pb.js";

export type KeyLogReason = "LOG_TRUNCATED" | "LOG_FORKED" | "LOG_GAP" | "THUMBPRINT_MISMATCH" | "KEY_NOT_LIVE" | "KEY_HIDDEN";

/** The key log, or a key answered from it, is not what this client verified: trust no key from it. */
export class KeyLogError extends Error {
  constructor(
    readonly reason: KeyLogReason,
    message: string,
  ) {
    super(`${reason}: ${message}`);
    this.name = "KeyLogError";
  }
}

/** A key as the verified log has it. */
export interface LoggedKey {
  readonly principalId: string;
  /** The canonical JWK text. */
  readonly jwk: string;
  readonly revoked: boolean;
}

// The version of the JSON format KeyLogState.toJson writes (the same as the Python package's).
const STATE_VERSION = 1;
/** The hash of the empty log: 32 zero bytes, base64url. */
export const EMPTY_LOG_HASH = base64url(new Uint8Array(32));

/** The last head a client verified, with every key the log holds up to it. */
export class KeyLogState {
  constructor(
    /** The tenant whose log this is; "" until the first entry names it. */
    readonly tenantId: string = "",
    readonly size: bigint = 0n,
    /** base64url of the head's hash. */
    readonly hash: string = EMPTY_LOG_HASH,
    /** By key id. */
    readonly keys: ReadonlyMap<string, LoggedKey> = new Map(),
  ) {}

  /** JSON that fromJson reads back, and the Python package's KeyLogState too. */
  toJson(): string {
    const keys = Object.fromEntries(
      [...this.keys].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([id, key]) => [id, { principalId: key.principalId, jwk: key.jwk, revoked: key.revoked }]),
    );
    return JSON.stringify({ version: STATE_VERSION, tenantId: this.tenantId, size: Number(this.size), hash: this.hash, keys });
  }

  static fromJson(text: string): KeyLogState {
    const data = JSON.parse(text) as { version?: unknown; tenantId?: unknown; size?: unknown; hash?: unknown; keys?: unknown };
    if (data.version !== STATE_VERSION) throw new Error(`not a key log state of version ${STATE_VERSION}`);
    if (typeof data.tenantId !== "string" || !Number.isSafeInteger(data.size) || (data.size as number) < 0 || typeof data.hash !== "string") {
      throw new Error("a key log state has tenantId, size and hash");
    }
    if (typeof data.keys !== "object" || data.keys === null) throw new Error("a key log state has keys");
    const keys = new Map<string, LoggedKey>();
    for (const [id, key] of Object.entries(data.keys as Record<string, Record<string, unknown>>)) {
      if (typeof key.principalId !== "string" || typeof key.jwk !== "string" || typeof key.revoked !== "boolean") {
        throw new Error(`key ${id} of the key log state lacks principalId, jwk or revoked`);
      }
      keys.set(id, { principalId: key.principalId, jwk: key.jwk, revoked: key.revoked });
    }
    return new KeyLogState(data.tenantId, BigInt(data.size as number), data.hash, keys);
  }
}

// The enum value's name in the proto file (KEY_LOG_ACTION_PUBLISHED; the generated TypeScript
// enum drops the prefix), which the canonical bytes hold.
function actionName(entry: KeyLogEntry): string {
  const name = KeyLogActionSchema.value[entry.action]?.name;
  // Binary answers keep an unknown value as a number, whose name this client cannot know: it
  // cannot recompute the hash, and says so rather than blame the server.
  if (name === undefined) throw new KeyLogError("LOG_FORKED", `entry ${entry.index} has an action (${entry.action}) this client does not know: update it to verify the log`);
  return name;
}

/** The canonical bytes of an entry (directory.proto, KeyLogEntry), as text: what its hash covers. */
export function canonicalEntry(entry: KeyLogEntry): string {
  const text = JSON.stringify;
  const time = (entry.time?.seconds ?? 0n).toString();
  return `{"action":${text(actionName(entry))},"jwk":${entry.jwk},"keyId":${text(entry.keyId)},"principalId":${text(entry.principalId)},"tenantId":${text(entry.tenantId)},"time":${time}}`;
}

async function chained(previous: Uint8Array, entry: KeyLogEntry): Promise<Uint8Array> {
  const data = Buffer.from(canonicalEntry(entry), "utf8");
  const joined = new Uint8Array(previous.length + data.length);
  joined.set(previous);
  joined.set(data, previous.length);
  return sha256(joined);
}

function hashBytes(hash: string, what: string): Uint8Array {
  const bytes = fromBase64url(hash);
  if (bytes === null || bytes.length !== 32) throw new KeyLogError("LOG_FORKED", `${what} is not a SHA-256 hash in base64url`);
  return bytes;
}

/**
 * The state after `entries`, as ListKeyLog answered them after `state.size`, up to `head` (the
 * last page's): the entries must follow on from state.size without a gap and end at the head
 * (LOG_GAP), each hash must be recomputed from the one before, the head's too (LOG_FORKED), and
 * the head must not be below the state (LOG_TRUNCATED). `state` itself is never changed.
 */
export async function extendKeyLog(state: KeyLogState, entries: readonly KeyLogEntry[], head: KeyLogHead): Promise<KeyLogState> {
  if (head.size < state.size) {
    throw new KeyLogError("LOG_TRUNCATED", `the log's head is at ${head.size}, below the ${state.size} entries verified before`);
  }
  let tenantId = state.tenantId;
  let size = state.size;
  let hash = hashBytes(state.hash, "the verified head's hash");
  const keys = new Map(state.keys);
  for (const entry of entries) {
    if (entry.index !== size + 1n) throw new KeyLogError("LOG_GAP", `entry ${entry.index} came where entry ${size + 1n} was due`);
    hash = await chained(hash, entry);
    if (entry.hash !== base64url(hash)) throw new KeyLogError("LOG_FORKED", `entry ${entry.index}'s hash is not that of the log verified before it`);
    size = entry.index;
    if (tenantId === "") tenantId = entry.tenantId;
    if (entry.tenantId !== tenantId) throw new KeyLogError("LOG_FORKED", `entry ${entry.index} is of tenant ${entry.tenantId}, in the log of ${tenantId}`);
    if (base64url(await sha256(entry.jwk)) !== entry.keyId) {
      throw new KeyLogError("THUMBPRINT_MISMATCH", `entry ${entry.index}'s key id is not the SHA-256 of its key`);
    }
    const known = keys.get(entry.keyId);
    if (entry.action === KeyLogAction.PUBLISHED && known === undefined) {
      keys.set(entry.keyId, { principalId: entry.principalId, jwk: entry.jwk, revoked: false });
    } else if (entry.action === KeyLogAction.REVOKED) {
      // A revoked key stays revoked: a later publication of it does not bring it back.
      keys.set(entry.keyId, { principalId: known?.principalId ?? entry.principalId, jwk: entry.jwk, revoked: true });
    }
  }
  if (size !== head.size) throw new KeyLogError("LOG_GAP", `the entries end at ${size}, the log's head is at ${head.size}`);
  if (!equalBytes(hashBytes(head.hash, "the log's head hash"), hash)) {
    throw new KeyLogError("LOG_FORKED", `the log's head at ${head.size} is not the hash of the entries verified up to it`);
  }
  return new KeyLogState(tenantId, size, base64url(hash), keys);
}

/**
 * The keys of a GetRecipientKeys answer for `principalIds`, in its order, once each is checked
 * against a state verified up to the answer's head or beyond: its key id is the SHA-256 of its
 * JWK (THUMBPRINT_MISMATCH); the log has it published by its principal, one of those asked
 * for, and not revoked (KEY_NOT_LIVE); and, when the answer's head is the state's, no live key
 * of those principals is left out (KEY_HIDDEN).
 */
export async function checkRecipientKeys(state: KeyLogState, principalIds: readonly string[], answer: GetRecipientKeysResponse): Promise<RecipientKey[]> {
  const head = answer.logHead;
  const size = head?.size ?? 0n;
  if (size > state.size) throw new Error(`verify the key log up to ${size} before checking keys answered at that head`);
  if (size === state.size && head?.hash !== state.hash) {
    throw new KeyLogError("LOG_FORKED", `the answer's head at ${size} is not the head verified at that size`);
  }
  const asked = new Set(principalIds);
  for (const key of answer.keys) {
    if (base64url(await sha256(key.jwk)) !== key.keyId) {
      throw new KeyLogError("THUMBPRINT_MISMATCH", `key ${key.keyId} of ${key.principalId} is not the SHA-256 of its JWK`);
    }
    const logged = state.keys.get(key.keyId);
    if (logged === undefined || logged.revoked || logged.principalId !== key.principalId || !asked.has(key.principalId) || key.tenantId !== state.tenantId) {
      throw new KeyLogError("KEY_NOT_LIVE", `the verified log has no live key ${key.keyId} published by ${key.principalId}`);
    }
  }
  if (size === state.size) {
    const answered = new Set(answer.keys.map((key) => key.keyId));
    for (const [keyId, logged] of state.keys) {
      if (!logged.revoked && asked.has(logged.principalId) && !answered.has(keyId)) {
        throw new KeyLogError("KEY_HIDDEN", `the answer leaves out ${logged.principalId}'s live key ${keyId}`);
      }
    }
  }
  return [...answer.keys];
}
