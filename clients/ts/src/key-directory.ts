// The tenant's key directory, verified against a server that may lie (docs/key-transparency.md),
// as the Python package's key_directory.py has it: key-log.ts's pure checks run over
// DirectoryService calls, with the verified state kept in a KeyLogStore between runs.
//
// KeyDirectory.verify() reads ListKeyLog from the size it holds to the last page and verifies the
// update (verifyUpdate); the state is saved only once a whole verification passed, so that a log
// refused once is refused again. recipientKeys answers from the verified state alone;
// GetRecipientKeys is asked too, but only to refuse (KEY_NOT_LIVE) an answer that names a device
// the verified log does not hold live. Publishing, endorsing and revoking sign statements with
// this device's keys (devices.ts) and record them as this device's first (Me), so that its own
// changes raise no alert.
//
// Nothing here imports Node's: key-directory-node.ts adds FileKeyLogStore (key-log-file.ts,
// node:fs) for Node, indexeddb-store.ts IndexedDbKeyLogStore for browsers.
import type { Client } from "@connectrpc/connect";
import type { Device, DirectoryService } from "./gen/zkplatform_api/platform/v1/directory_pb.js";
import { endorse, type DeviceKeyPair, type DeviceStatement } from "./devices.js";
import {
  KeyLogError,
  KeyLogState,
  Me,
  TrustPolicy,
  acknowledgeAlert,
  acknowledgeReset,
  recipientKeys,
  verifyUpdate,
  type Alert,
  type LoggedDevice,
  type RecipientKey,
  type TrustPolicyInit,
} from "./key-log.js";
import type { KeyLogStore } from "./key-log-store.js";
import { CheckpointError, parseCheckpoint } from "./tlog/index.js";

export * from "./key-log.js";
export { MemoryKeyLogStore, STATE_FORMAT, STATE_VERSION, formatState, parseState, type KeyLogStore } from "./key-log-store.js";

/** The most entries or devices one page is asked for (the server's own maximum). */
export const PAGE_SIZE = 1000;

export type AlertHandler = (alert: Alert) => unknown;

export interface KeyDirectoryOptions {
  /** This device's principal (its device ids and statements are kept in the store as it makes them); none for a client that is no device. */
  me?: Me;
  /** This device's keys, whose id is added to `me`. */
  device?: DeviceKeyPair;
  /** Unix seconds now (Date.now by default). */
  clock?: () => number;
  /** Called (and awaited, if it answers a promise) with each new alert once the verification that raised it is saved. */
  onAlert?: AlertHandler;
  pageSize?: number;
}

/**
 * A tenant's key directory as this client verified it.
 *
 * `client`: a DirectoryService client that authorizes its calls (`clients(...).directory`);
 * `tenantId`: the tenant whose log it is; `policy`: the log keys and witnesses to trust; `store`:
 * where the verified state is kept (`new FileKeyLogStore(path)`; `new MemoryKeyLogStore()` forgets
 * it on restart).
 */
export class KeyDirectory {
  readonly #client: Client<typeof DirectoryService>;
  readonly #policy: TrustPolicy;
  readonly #store: KeyLogStore;
  readonly #clock: () => number;
  readonly #pageSize: number;
  readonly #handlers: AlertHandler[] = [];
  #me: Me | null;
  // Calls that read and save the state run one after the other.
  #queue: Promise<unknown> = Promise.resolve();

  constructor(
    client: Client<typeof DirectoryService>,
    readonly tenantId: string,
    policy: TrustPolicy | TrustPolicyInit,
    store: KeyLogStore,
    options: KeyDirectoryOptions = {},
  ) {
    let me = options.me ?? null;
    if (options.device !== undefined) {
      if (me === null) throw new TypeError("a device is a principal's: give me: new Me(principalId) with it");
      me = new Me(me.principalId, [...me.deviceIds, options.device.deviceId], me.statements);
    }
    if (store === undefined || store === null) throw new TypeError("give a store: new FileKeyLogStore(path), or knowingly a MemoryKeyLogStore");
    this.#client = client;
    this.#policy = TrustPolicy.of(policy);
    this.#store = store;
    this.#me = me;
    this.#clock = options.clock ?? (() => Date.now() / 1000);
    this.#pageSize = options.pageSize ?? PAGE_SIZE;
    if (options.onAlert !== undefined) this.#handlers.push(options.onAlert);
  }

  get me(): Me | null {
    return this.#me;
  }

  /** Call `handler` with each new alert from now on (after onAlert's); the function returned stops it. */
  onAlert(handler: AlertHandler): () => void {
    this.#handlers.push(handler);
    return () => {
      const at = this.#handlers.indexOf(handler);
      if (at >= 0) this.#handlers.splice(at, 1);
    };
  }

  /** The last verified state (null before the first verification). */
  state(): Promise<KeyLogState | null> {
    return this.#locked(() => this.#load());
  }

  /**
   * Read the log from the held size (ListKeyLog, every page), verify it, save the new state and
   * answer it; KeyLogError, with the state left as it was, when it does not verify.
   */
  verify(): Promise<KeyLogState> {
    return this.#locked(() => this.#verify());
  }

  /**
   * The agreement keys of each principal's live devices in the log, verified first: what seal()
   * may wrap for. KeyLogError RESET_UNACKNOWLEDGED for a principal reset and not acknowledged
   * since (acknowledgeReset); KEY_NOT_LIVE when GetRecipientKeys answers a device the verified log
   * does not hold live (the server is lying).
   */
  recipientKeys(principalIds: Iterable<string>): Promise<Map<string, RecipientKey[]>> {
    const asked = [...new Set(principalIds)];
    return this.#locked(async () => {
      let state = await this.#verify();
      let answer = recipientKeys(state, asked);
      const size = await this.#crossCheck(state, asked);
      if (size > state.size) {
        // Answered at a checkpoint newer than the one verified a moment ago: a change landed in
        // between. Verified up to it, the answer is checked again, once.
        state = await this.#verify();
        answer = recipientKeys(state, asked);
        await this.#crossCheck(state, asked);
      }
      return answer;
    });
  }

  /**
   * Publish `keys` as this principal's first device (PublishDevice, no endorser): the device as
   * the server stored it. The server refuses (ENDORSEMENT_REQUIRED) when the principal has a live
   * device; the statement is recorded as this device's before it is sent, so a device the server
   * published for the principal in its place alerts.
   */
  async publishFirstDevice(keys: DeviceKeyPair): Promise<Device | undefined> {
    const me = this.#requireMe();
    const statement = keys.firstDeviceStatement(this.tenantId, me.principalId, Math.trunc(this.#clock()));
    await this.#remember(statement.text, keys.deviceId);
    const { statement: text, signature } = statement.request();
    return (await this.#client.publishDevice({ statement: text, signature })).device;
  }

  /**
   * Endorse a new device of this principal with `endorserKeys` (a live device's) and publish it:
   * `statement` is the new device's own (DeviceKeyPair.deviceStatement with `endorser` this
   * device's id), as it showed it. Recorded as endorsed by this device first.
   */
  async addDevice(statement: DeviceStatement, endorserKeys: DeviceKeyPair): Promise<Device | undefined> {
    const me = this.#requireMe();
    const keys = statement.statement;
    if (keys.tenantId !== this.tenantId || keys.principalId !== me.principalId) throw new TypeError("the statement is not of this tenant and principal");
    const endorsed = endorse(statement, endorserKeys);
    await this.#remember(endorsed.text, null);
    return (await this.#client.publishDevice(endorsed.request())).device;
  }

  /**
   * Revoke a device of this principal (this one, or another), signed by `revokerKeys` (a live
   * device's): the device as revoked. Recorded as this device's first.
   */
  async revokeDevice(deviceId: string, revokerKeys: DeviceKeyPair): Promise<Device | undefined> {
    const me = this.#requireMe();
    const revocation = revokerKeys.revocation(this.tenantId, me.principalId, deviceId, Math.trunc(this.#clock()));
    await this.#remember(revocation.text, null);
    return (await this.#client.revokeDevice(revocation.request())).device;
  }

  /** The alerts not acknowledged yet, oldest first. */
  async alerts(): Promise<Alert[]> {
    const state = await this.state();
    return state === null ? [] : [...state.alerts];
  }

  /** The application has shown the alert of entry `index` (RangeError when none is pending). */
  acknowledgeAlert(index: number): Promise<void> {
    return this.#locked(async () => {
      const state = await this.#load();
      if (state === null) throw new RangeError(`no pending alert of entry ${index}`);
      await this.#save(acknowledgeAlert(state, index));
    });
  }

  /**
   * The application has accepted the reset of `principalId` at entry `index`: its new devices are
   * sealed for from now on (RangeError when there is no such reset pending).
   */
  acknowledgeReset(principalId: string, index: number): Promise<void> {
    return this.#locked(async () => {
      const state = await this.#load();
      if (state === null) throw new RangeError(`no unacknowledged reset of ${principalId} at entry ${index}`);
      await this.#save(acknowledgeReset(state, principalId, index));
    });
  }

  #locked<T>(call: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(call, call);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #verify(): Promise<KeyLogState> {
    const state = await this.#load();
    const start = state?.size ?? 0;
    const entries: { index: number; data: string }[] = [];
    let pageToken = "";
    for (;;) {
      const page = await this.#client.listKeyLog({ startIndex: BigInt(start), pageSize: this.#pageSize, pageToken });
      entries.push(...page.entries.map((entry) => ({ index: Number(entry.index), data: entry.data })));
      pageToken = page.nextPageToken;
      if (pageToken === "") {
        const update = { checkpoint: page.checkpoint?.note ?? "", startIndex: start, entries, consistencyProof: page.consistencyProof };
        const { state: verified, alerts } = verifyUpdate(state, update, this.#policy, this.tenantId, this.#clock(), this.#me);
        await this.#save(verified);
        for (const alert of alerts) for (const handler of [...this.#handlers]) await handler(alert);
        return verified;
      }
      // A server that pages forever is not followed: every page brings entries, and no more than
      // its checkpoint holds.
      if (page.entries.length === 0) throw new KeyLogError("LOG_GAP", "a page of the key log without entries that is not the last");
      if (start + entries.length > checkpointSize(page.checkpoint?.note ?? "")) {
        throw new KeyLogError("LOG_GAP", "the pages hold entries past their checkpoint's size");
      }
    }
  }

  // Read GetRecipientKeys (every page) and refuse any device it answers that the verified log does
  // not hold live, with these keys, for a principal asked for; the size of the checkpoint it was
  // read at (beyond the verified size, nothing is refused yet).
  async #crossCheck(state: KeyLogState, asked: string[]): Promise<number> {
    if (asked.length === 0) return state.size;
    let pageToken = "";
    const seen = new Set<string>(); // each device answered once: with every one live, the pages end
    for (;;) {
      const page = await this.#client.getRecipientKeys({ principalIds: asked, pageSize: this.#pageSize, pageToken });
      const size = checkpointSize(page.checkpoint?.note ?? "");
      if (size > state.size) return size;
      for (const device of page.devices) {
        const logged = state.devices.get(device.deviceId);
        const again = seen.has(device.deviceId);
        seen.add(device.deviceId);
        if (again || !asked.includes(device.principalId) || logged === undefined || !same(logged, device, size)) {
          throw new KeyLogError("KEY_NOT_LIVE", `the server answered device ${device.deviceId} of ${device.principalId}, which the verified log does not hold live`);
        }
      }
      pageToken = page.nextPageToken;
      if (pageToken === "" || page.devices.length === 0) return size;
    }
  }

  async #load(): Promise<KeyLogState | null> {
    const state = await this.#store.load();
    if (state !== null && state.tenantId !== this.tenantId) throw new TypeError(`the store holds tenant ${state.tenantId}'s key log, not ${this.tenantId}'s`);
    if (state?.me) this.#me = this.#me === null ? state.me : state.me.merged(this.#me);
    return state;
  }

  async #save(state: KeyLogState): Promise<void> {
    await this.#store.save(state);
  }

  // Record `statement` (and `deviceId`) as this device's, saved before it is sent: the verified
  // part of the state is left as it is.
  #remember(statement: string, deviceId: string | null): Promise<void> {
    return this.#locked(async () => {
      const state = await this.#load();
      const me = this.#requireMe().made(statement, deviceId ?? undefined);
      this.#me = me;
      await this.#save((state ?? new KeyLogState(this.tenantId)).with({ me }));
    });
  }

  #requireMe(): Me {
    if (this.#me === null) throw new TypeError("publishing, endorsing and revoking need this device's principal: new KeyDirectory(..., { me })");
    return this.#me;
  }
}

function same(logged: LoggedDevice, device: Device, size: number): boolean {
  return (
    logged.principalId === device.principalId &&
    logged.signingJwk === device.signingJwk &&
    logged.agreementJwk === device.agreementJwk &&
    logged.agreementKeyId === device.agreementKeyId &&
    logged.index < size &&
    (logged.revokedIndex === null || logged.revokedIndex >= size)
  );
}

// The size of an answer's checkpoint, parsed only (the cross-check refuses, never trusts).
function checkpointSize(note: string): number {
  try {
    return parseCheckpoint(note.slice(0, note.lastIndexOf("\n\n") + 1)).size;
  } catch (error) {
    if (error instanceof CheckpointError) throw new KeyLogError("CHECKPOINT_MALFORMED", "the answer's checkpoint is not a checkpoint");
    throw error;
  }
}
