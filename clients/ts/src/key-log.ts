// The key log as a client verifies it (docs/key-transparency.md, "What a client does when it
// verifies"): the pure core, with no I/O, no clock and no node:* import, step for step the Python
// package's zkplatform_client/key_log.py; clients/testdata/key-transparency.json pins both.
//
// verifyUpdate(state, update, policy, tenantId, now, me) takes the state a client verified before
// (null for none) and what ListKeyLog answered from its size, and answers the new state with the
// alerts that update raised, or throws KeyLogError naming the first check that failed, in this
// order:
//
// 1. the checkpoint: a note (CHECKPOINT_MALFORMED) signed by a pinned log key
//    (CHECKPOINT_UNSIGNED), of the tenant's origin (CHECKPOINT_ORIGIN), cosigned by the policy's
//    quorum of known witnesses (BELOW_QUORUM), the quorum's oldest cosignature at most
//    maxAgeSeconds old (CHECKPOINT_STALE);
// 2. the log: not shorter than the held one (LOG_TRUNCATED), the consistency proof from the held
//    checkpoint (LOG_FORKED), the entries from the held size to the checkpoint's without a gap
//    (LOG_GAP), the root of every entry the checkpoint's (LOG_FORKED);
// 3. each new entry, replayed on the directory the entries before it made: well formed and of
//    this tenant (ENTRY_MALFORMED), of a known format and type (ENTRY_UNSUPPORTED), signed as its
//    statement requires (SIGNATURE_INVALID), endorsed or revoked by a live device of its principal
//    (NOT_ENDORSED);
// 4. the alerts of this device (Me, docs/key-transparency.md "Owners are told: the alert rule",
//    over the whole log as it stands, each entry raising one at most), and the resets of other
//    principals, unacknowledged.
//
// A failed update changes nothing: the caller keeps the state it had. recipientKeys answers the
// live devices' agreement keys of a verified state; acknowledgeReset and acknowledgeAlert are what
// the application says back. The formats are the tlog primitives' (tlog/) and the statements'
// (statements.ts); nothing here re-implements them.
import {
  CheckpointError,
  CosignatureVerifier,
  EMPTY_ROOT,
  NoteError,
  NoteVerifier,
  ProofError,
  leafHash,
  openNote,
  parseCheckpoint,
  rootHash,
  verifyConsistency,
  type Checkpoint,
  type Verifier,
} from "./tlog/index.js";
import {
  DeviceKeys,
  DeviceRevocation,
  StatementError,
  parseEntry,
  parseStatement,
  utf8,
  verifyStatement,
  type Entry,
  type PrincipalReset,
} from "./statements.js";

/** The last element of every origin (`<log name>/<tenant id>/key-log/v1`): the log's format. */
export const LOG_FORMAT = "key-log/v1";
export const DEFAULT_MAX_AGE_SECONDS = 3600;

export type KeyLogReason =
  | "CHECKPOINT_MALFORMED"
  | "CHECKPOINT_UNSIGNED"
  | "CHECKPOINT_ORIGIN"
  | "BELOW_QUORUM"
  | "CHECKPOINT_STALE"
  | "LOG_TRUNCATED"
  | "LOG_FORKED"
  | "LOG_GAP"
  | "ENTRY_MALFORMED"
  | "ENTRY_UNSUPPORTED"
  | "SIGNATURE_INVALID"
  | "NOT_ENDORSED"
  | "RESET_UNACKNOWLEDGED"
  | "KEY_NOT_LIVE";

export type AlertKind = "DEVICE_ADDED" | "DEVICE_REVOKED" | "PRINCIPAL_RESET";

/**
 * A log, checkpoint or entry not to trust, or keys not to seal for; `reason` names the check (the
 * module's comment has them in their order, plus RESET_UNACKNOWLEDGED and KEY_NOT_LIVE of
 * recipientKeys and KeyDirectory). The message never holds a key.
 */
export class KeyLogError extends Error {
  constructor(
    readonly reason: KeyLogReason,
    message: string,
  ) {
    super(`${reason}: ${message}`);
    this.name = "KeyLogError";
  }
}

/** A trust policy as the operator gives it (docs/key-transparency.md, "The trust a client is configured with"). */
export interface TrustPolicyInit {
  /** The log's note verifier keys (`<name>+<key ID>+<base64>`): one, or two during a rotation. */
  readonly logKeys: readonly string[];
  /** The witnesses' cosignature verifier keys. */
  readonly witnesses: readonly string[];
  /** How many of the witnesses must have cosigned a checkpoint. */
  readonly quorum: number;
  /** How old the quorum's oldest cosignature may be, in seconds: 3600 by default. */
  readonly maxAgeSeconds?: number;
  /** A quorum of 0 trusts the server alone (no split-view protection, no freshness): only with no witnesses and this set. */
  readonly allowNoWitnesses?: boolean;
}

/**
 * What a client trusts, from its operator, out of band: the log's note verifier keys, the
 * witnesses' cosignature verifier keys, how many of them must have cosigned a checkpoint, and how
 * old the quorum's oldest cosignature may be. TypeError when it is not a usable policy.
 */
export class TrustPolicy {
  readonly logKeys: readonly string[];
  readonly witnesses: readonly string[];
  readonly quorum: number;
  readonly maxAgeSeconds: number;
  readonly allowNoWitnesses: boolean;
  readonly logVerifiers: readonly NoteVerifier[];
  readonly witnessVerifiers: readonly CosignatureVerifier[];

  constructor(init: TrustPolicyInit) {
    this.logKeys = [...init.logKeys];
    this.witnesses = [...init.witnesses];
    this.quorum = init.quorum;
    this.maxAgeSeconds = init.maxAgeSeconds ?? DEFAULT_MAX_AGE_SECONDS;
    this.allowNoWitnesses = init.allowNoWitnesses ?? false;
    if (this.logKeys.length === 0) throw new TypeError("a trust policy needs at least one log key");
    this.logVerifiers = this.logKeys.map((vkey) => NoteVerifier.fromVkey(vkey));
    this.witnessVerifiers = this.witnesses.map((vkey) => CosignatureVerifier.fromVkey(vkey));
    if (distinct(this.logVerifiers) !== this.logVerifiers.length) throw new TypeError("a log key is given twice");
    if (distinct(this.witnessVerifiers) !== this.witnessVerifiers.length) throw new TypeError("a witness is given twice");
    if (this.quorum === 0) {
      if (this.witnessVerifiers.length > 0 || !this.allowNoWitnesses) {
        throw new TypeError("a quorum of 0 trusts the server alone: only with no witnesses and allowNoWitnesses");
      }
    } else if (!Number.isInteger(this.quorum) || this.quorum < 1 || this.quorum > this.witnessVerifiers.length) {
      throw new TypeError(`the quorum must be from 1 to the ${this.witnessVerifiers.length} witness(es) given`);
    }
    if (!(this.maxAgeSeconds > 0)) throw new TypeError("maxAgeSeconds must be positive");
  }

  /** A policy as it is given, or as the operator's settings spell it. */
  static of(policy: TrustPolicy | TrustPolicyInit): TrustPolicy {
    return policy instanceof TrustPolicy ? policy : new TrustPolicy(policy);
  }
}

function keyOf(verifier: Verifier): string {
  return `${verifier.name}+${hex32(verifier.keyHash)}`;
}

function hex32(value: number): string {
  return (value >>> 0).toString(16).padStart(8, "0");
}

function distinct(verifiers: readonly Verifier[]): number {
  return new Set(verifiers.map(keyOf)).size;
}

/** What ListKeyLog answered from startIndex (the size the client holds): the last page's checkpoint note and consistency proof, every page's entries. */
export interface LogUpdate {
  readonly checkpoint: string;
  readonly startIndex: number;
  readonly entries: readonly { readonly index: number; readonly data: string }[];
  readonly consistencyProof?: readonly Uint8Array[];
}

/**
 * This device, for the alerts of docs/key-transparency.md, "Owners are told": its principal, its
 * device ids (every one it ever published) and the canonical texts of the statements it made
 * (its publications and revocations) or endorsed.
 */
export class Me {
  readonly deviceIds: readonly string[];
  readonly statements: readonly string[];

  constructor(
    readonly principalId: string,
    deviceIds: Iterable<string> = [],
    statements: Iterable<string> = [],
  ) {
    this.deviceIds = [...new Set(deviceIds)];
    this.statements = [...new Set(statements)];
  }

  /** This device, having made (or endorsed) `statement`, and published `deviceId`. */
  made(statement: string, deviceId?: string): Me {
    return new Me(this.principalId, deviceId ? [...this.deviceIds, deviceId] : this.deviceIds, [...this.statements, statement]);
  }

  /** Both records of this device in one (TypeError for two principals). */
  merged(other: Me): Me {
    if (other.principalId !== this.principalId) throw new TypeError(`this state is principal ${this.principalId}'s, not ${other.principalId}'s`);
    return new Me(this.principalId, [...this.deviceIds, ...other.deviceIds], [...this.statements, ...other.statements]);
  }
}

/** An entry about this device's own principal that it did not make: a device added or revoked, or a reset (`deviceId` "" for a reset). */
export interface Alert {
  readonly index: number;
  readonly kind: AlertKind;
  readonly deviceId: string;
}

/** A reset of `principalId`, the log's entry `index`. */
export interface Reset {
  readonly principalId: string;
  readonly index: number;
}

/** A device as the verified log made it: published by entry `index`, revoked by entry `revokedIndex` (a revocation's or a reset's), live while that is null. */
export interface LoggedDevice {
  readonly deviceId: string;
  readonly principalId: string;
  readonly signingJwk: string;
  readonly agreementJwk: string;
  readonly agreementKeyId: string;
  readonly endorser: string;
  readonly index: number;
  readonly revokedIndex: number | null;
}

/** What an entry did, for the alerts: its kind, the device (or "" for a reset) and the canonical text of its statement. */
export interface LogRecord {
  readonly index: number;
  readonly principalId: string;
  readonly kind: AlertKind;
  readonly deviceId: string;
  readonly statement: string;
}

/** A public key to seal for: its RFC 7638 thumbprint and canonical JWK text, and the device of a principal it is, as the verified log has it. */
export interface RecipientKey {
  readonly keyId: string;
  readonly jwk: string;
  readonly principalId: string;
  readonly deviceId: string;
}

interface StateFields {
  readonly tenantId: string;
  readonly size: number;
  readonly root: Uint8Array;
  readonly note: string;
  readonly entries: readonly string[];
  readonly devices: ReadonlyMap<string, LoggedDevice>;
  readonly resets: readonly Reset[];
  readonly alerts: readonly Alert[];
  readonly acknowledgedAlerts: readonly number[];
  readonly unacknowledgedResets: readonly Reset[];
  readonly acknowledgedResets: readonly Reset[];
  readonly me: Me | null;
  readonly leafHashes: readonly Uint8Array[];
  readonly records: readonly LogRecord[];
}

/**
 * A tenant's key log as this client verified it: the checkpoint (size, root, note), every entry's
 * data, the devices they made and the resets among them; the alerts not yet acknowledged and the
 * entries whose alerts were, the resets of other principals not yet acknowledged and those that
 * were; and this device (`me`).
 */
export class KeyLogState implements StateFields {
  readonly tenantId: string;
  readonly size: number;
  readonly root: Uint8Array;
  /** The last verified checkpoint, a signed note; "" before the first. */
  readonly note: string;
  readonly entries: readonly string[];
  /** By device id, in log order. */
  readonly devices: ReadonlyMap<string, LoggedDevice>;
  readonly resets: readonly Reset[];
  readonly alerts: readonly Alert[];
  /** The entries whose alerts the application acknowledged: they raise none again. */
  readonly acknowledgedAlerts: readonly number[];
  readonly unacknowledgedResets: readonly Reset[];
  readonly acknowledgedResets: readonly Reset[];
  readonly me: Me | null;
  readonly leafHashes: readonly Uint8Array[];
  /** What each entry did, one an entry. */
  readonly records: readonly LogRecord[];

  constructor(tenantId: string, fields: Partial<Omit<StateFields, "tenantId">> = {}) {
    this.tenantId = tenantId;
    this.size = fields.size ?? 0;
    this.root = fields.root ?? EMPTY_ROOT;
    this.note = fields.note ?? "";
    this.entries = fields.entries ?? [];
    this.devices = fields.devices ?? new Map();
    this.resets = fields.resets ?? [];
    this.alerts = fields.alerts ?? [];
    this.acknowledgedAlerts = fields.acknowledgedAlerts ?? [];
    this.unacknowledgedResets = fields.unacknowledgedResets ?? [];
    this.acknowledgedResets = fields.acknowledgedResets ?? [];
    this.me = fields.me ?? null;
    this.leafHashes = fields.leafHashes ?? [];
    this.records = fields.records ?? [];
  }

  /** A copy with some fields replaced. */
  with(fields: Partial<Omit<StateFields, "tenantId">>): KeyLogState {
    return new KeyLogState(this.tenantId, { ...this.fields(), ...fields });
  }

  private fields(): Omit<StateFields, "tenantId"> {
    const { size, root, note, entries, devices, resets, alerts, acknowledgedAlerts, unacknowledgedResets, acknowledgedResets, me, leafHashes, records } = this;
    return { size, root, note, entries, devices, resets, alerts, acknowledgedAlerts, unacknowledgedResets, acknowledgedResets, me, leafHashes, records };
  }

  /** Every principal the log names: those of devices, in log order, then those of resets only. */
  principals(): string[] {
    return [...new Set([...[...this.devices.values()].map((d) => d.principalId), ...this.resets.map((r) => r.principalId)])];
  }

  /** The principal's devices, live and revoked, in log order. */
  devicesOf(principalId: string): LoggedDevice[] {
    return [...this.devices.values()].filter((device) => device.principalId === principalId);
  }

  liveDevices(principalId: string): LoggedDevice[] {
    return this.devicesOf(principalId).filter((device) => device.revokedIndex === null);
  }

  /**
   * The device `deviceId` as a sealed item's signer (sealing's SignerDirectory): its principal,
   * its signing key and whether it is live; null for a device this log never published.
   */
  signer(deviceId: string): SignerEntry | null {
    const device = this.devices.get(deviceId);
    if (device === undefined) return null;
    return { principalId: device.principalId, signingJwk: device.signingJwk, live: device.revokedIndex === null };
  }
}

/** A device as a reader of sealed items needs it: the principal it is of, its Ed25519 signing key (canonical JWK text), whether it is live. */
export interface SignerEntry {
  readonly principalId: string;
  readonly signingJwk: string;
  readonly live: boolean;
}

/**
 * The state after `update`, and the alerts it raised; KeyLogError (the module's comment has the
 * checks and their order) with nothing changed otherwise. `me` is this device (null: a client that
 * is no device raises no alert and holds every reset unacknowledged).
 */
export function verifyUpdate(
  state: KeyLogState | null,
  update: LogUpdate,
  policy: TrustPolicy | TrustPolicyInit,
  tenantId: string,
  now: number,
  me: Me | null,
): { state: KeyLogState; alerts: Alert[] } {
  const trust = TrustPolicy.of(policy);
  const held = state ?? new KeyLogState(tenantId);
  if (held.tenantId !== tenantId) throw new TypeError(`this state is tenant ${held.tenantId}'s log, not ${tenantId}'s`);
  const checkpoint = openCheckpoint(update.checkpoint, trust, tenantId, now);
  checkExtends(held, checkpoint, update);
  const newEntries = update.entries.map(({ data }) => data);
  const heldHashes = held.leafHashes.length === held.size ? held.leafHashes : held.entries.map((data) => leafHash(utf8(data)));
  const hashes = [...heldHashes, ...newEntries.map((data) => leafHash(utf8(data)))];
  if (!sameBytes(rootHash(hashes), checkpoint.rootHash)) {
    throw new KeyLogError("LOG_FORKED", `the entries do not make the checkpoint's root (size ${checkpoint.size})`);
  }

  const log = new Directory(new Map(held.devices), [...held.resets]);
  const replayed = update.entries.map(({ index, data }) => log.replay(index, data, tenantId, trust));
  const records = [...held.records, ...replayed];
  const raised = new Set([...held.alerts.map((alert) => alert.index), ...held.acknowledgedAlerts]);
  const alerts = alertsOf(me, records, log, checkpoint.size).filter((alert) => !raised.has(alert.index));
  const others = replayed.filter((r) => r.kind === "PRINCIPAL_RESET" && (me === null || r.principalId !== me.principalId)).map(({ principalId, index }) => ({ principalId, index }));
  const verified = new KeyLogState(tenantId, {
    size: checkpoint.size,
    root: checkpoint.rootHash,
    note: update.checkpoint,
    entries: [...held.entries, ...newEntries],
    devices: log.devices,
    resets: log.resets,
    alerts: [...held.alerts, ...alerts],
    acknowledgedAlerts: held.acknowledgedAlerts,
    unacknowledgedResets: [...held.unacknowledgedResets, ...others],
    acknowledgedResets: held.acknowledgedResets,
    me,
    leafHashes: hashes,
    records,
  });
  return { state: verified, alerts };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

// -- step 1: the checkpoint ----------------------------------------------------------------------

// NoteError reasons of a note that is not one at all, as against one that is not signed right.
const MALFORMED_NOTE = new Set(["malformed-note", "malformed-signature-line", "too-many-signatures"]);

/** The checkpoint of `note` once step 1 passed (the module's comment); KeyLogError otherwise. */
function openCheckpoint(note: string, policy: TrustPolicy, tenantId: string, now: number): Checkpoint {
  let opened: ReturnType<typeof openNote>;
  try {
    opened = openNote(note, policy.logVerifiers);
  } catch (error) {
    if (!(error instanceof NoteError)) throw error;
    if (MALFORMED_NOTE.has(error.reason)) {
      throw new KeyLogError("CHECKPOINT_MALFORMED", `the checkpoint is not a signed note: ${error.message}`);
    }
    throw new KeyLogError("CHECKPOINT_UNSIGNED", `no pinned log key signed the checkpoint: ${error.message}`);
  }
  let checkpoint: Checkpoint;
  try {
    checkpoint = parseCheckpoint(opened.text);
  } catch (error) {
    if (error instanceof CheckpointError) throw new KeyLogError("CHECKPOINT_MALFORMED", `the checkpoint's body: ${error.message}`);
    throw error;
  }
  const origins = new Set(opened.verified.map((signature) => `${signature.name}/${tenantId}/${LOG_FORMAT}`));
  if (!origins.has(checkpoint.origin)) throw new KeyLogError("CHECKPOINT_ORIGIN", `the checkpoint is not of tenant ${tenantId}'s key log`);
  const times = cosigned(note, policy.witnessVerifiers).sort((a, b) => b - a);
  if (times.length < policy.quorum) {
    throw new KeyLogError("BELOW_QUORUM", `${times.length} known witness(es) cosigned the checkpoint, ${policy.quorum} needed`);
  }
  if (policy.quorum > 0 && now - times[policy.quorum - 1]! > policy.maxAgeSeconds) {
    const age = Math.trunc(now - times[policy.quorum - 1]!);
    throw new KeyLogError("CHECKPOINT_STALE", `the quorum's oldest cosignature is ${age} s old, over ${policy.maxAgeSeconds} s`);
  }
  return checkpoint;
}

// The times of the valid cosignatures of each known witness (one a witness): a line that does not
// verify does not count.
function cosigned(note: string, witnesses: readonly CosignatureVerifier[]): number[] {
  const times: number[] = [];
  for (const witness of witnesses) {
    let opened: ReturnType<typeof openNote>;
    try {
      opened = openNote(note, [witness]);
    } catch (error) {
      if (error instanceof NoteError) continue;
      throw error;
    }
    times.push(Number(opened.verified[0]!.timestamp!));
  }
  return times;
}

// -- step 2: the log -----------------------------------------------------------------------------

// The checkpoint extends the held one and the update's entries are exactly those in between.
function checkExtends(held: KeyLogState, checkpoint: Checkpoint, update: LogUpdate): void {
  if (checkpoint.size < held.size) throw new KeyLogError("LOG_TRUNCATED", `the checkpoint's size ${checkpoint.size} is below the held ${held.size}`);
  const proof = update.consistencyProof ?? [];
  try {
    verifyConsistency(held.size, checkpoint.size, held.root, checkpoint.rootHash, proof);
  } catch (error) {
    if (!(error instanceof ProofError)) throw error;
    throw new KeyLogError("LOG_FORKED", `the checkpoint at ${checkpoint.size} does not extend the held one at ${held.size}: ${error.message}`);
  }
  if (update.startIndex !== held.size) throw new KeyLogError("LOG_GAP", `the entries start at ${update.startIndex}, not at the held size ${held.size}`);
  update.entries.forEach(({ index }, i) => {
    if (index !== held.size + i) throw new KeyLogError("LOG_GAP", `entry ${index} where entry ${held.size + i} was due`);
  });
  const end = held.size + update.entries.length;
  if (end !== checkpoint.size) throw new KeyLogError("LOG_GAP", `the entries end at ${end}, not at the checkpoint's size ${checkpoint.size}`);
}

// -- step 3: the entries -------------------------------------------------------------------------

// The devices and resets of the log, as entries are replayed onto it.
class Directory {
  constructor(
    readonly devices: Map<string, LoggedDevice>,
    readonly resets: Reset[],
  ) {}

  live(principalId: string): LoggedDevice[] {
    return [...this.devices.values()].filter((d) => d.principalId === principalId && d.revokedIndex === null);
  }

  // Apply entry `index`, checked first (step 3) against `policy`; unchecked without one (a state
  // read back from its store, verified when it was saved).
  replay(index: number, data: string, tenantId: string, policy: TrustPolicy | null): LogRecord {
    let entry: Entry;
    try {
      entry = parseEntry(data);
    } catch (error) {
      if (error instanceof StatementError) throw new KeyLogError(error.reason, `entry ${index}: ${error.message}`);
      throw error;
    }
    const statement = entry.statement;
    if (statement.tenantId !== tenantId) throw new KeyLogError("ENTRY_MALFORMED", `entry ${index} is of another tenant`);
    const text = statement.canonical();
    if (statement instanceof DeviceKeys) {
      if (policy !== null) this.checkDevice(index, entry, statement);
      const { deviceId, principalId, signingJwk, agreementJwk, agreementKeyId, endorser } = statement;
      this.devices.set(deviceId, { deviceId, principalId, signingJwk, agreementJwk, agreementKeyId, endorser, index, revokedIndex: null });
      return { index, principalId, kind: "DEVICE_ADDED", deviceId, statement: text };
    }
    if (statement instanceof DeviceRevocation) {
      if (policy !== null) this.checkRevocation(index, entry, statement);
      const revoked = this.devices.get(statement.device);
      if (revoked === undefined) throw new KeyLogError("ENTRY_MALFORMED", `entry ${index} revokes a device the log does not have`);
      this.devices.set(statement.device, { ...revoked, revokedIndex: index });
      return { index, principalId: statement.principalId, kind: "DEVICE_REVOKED", deviceId: statement.device, statement: text };
    }
    if (policy !== null) checkReset(index, entry, statement, policy);
    for (const device of this.live(statement.principalId)) this.devices.set(device.deviceId, { ...device, revokedIndex: index });
    this.resets.push({ principalId: statement.principalId, index });
    return { index, principalId: statement.principalId, kind: "PRINCIPAL_RESET", deviceId: "", statement: text };
  }

  private checkDevice(index: number, entry: Entry, statement: DeviceKeys): void {
    const { deviceId, endorser } = statement;
    if (this.devices.has(deviceId)) throw new KeyLogError("ENTRY_MALFORMED", `entry ${index} publishes device ${deviceId} again`);
    if ([...this.devices.values()].some((d) => d.agreementKeyId === statement.agreementKeyId)) {
      throw new KeyLogError("ENTRY_MALFORMED", `entry ${index} publishes an agreement key another device has`);
    }
    const signers = endorser ? [deviceId, endorser] : [deviceId];
    if (entry.signatures.length !== signers.length || entry.signatures.some((signature, i) => signature.keyId !== signers[i])) {
      throw new KeyLogError("SIGNATURE_INVALID", `entry ${index}'s signatures are not the device's then its endorser's`);
    }
    if (!verifyStatement(statement.signingJwk, statement, entry.signatures[0]!.signature)) {
      throw new KeyLogError("SIGNATURE_INVALID", `entry ${index}: the new device's signature does not verify`);
    }
    const live = this.live(statement.principalId);
    if (!endorser) {
      if (live.length > 0) throw new KeyLogError("NOT_ENDORSED", `entry ${index}: a first device of ${statement.principalId}, who has live devices`);
      return;
    }
    const endorsing = live.find((d) => d.deviceId === endorser);
    if (endorsing === undefined) throw new KeyLogError("NOT_ENDORSED", `entry ${index}: the endorser is not a live device of ${statement.principalId}`);
    if (!verifyStatement(endorsing.signingJwk, statement, entry.signatures[1]!.signature)) {
      throw new KeyLogError("SIGNATURE_INVALID", `entry ${index}: the endorser's signature does not verify`);
    }
  }

  private checkRevocation(index: number, entry: Entry, statement: DeviceRevocation): void {
    const live = new Map(this.live(statement.principalId).map((d) => [d.deviceId, d]));
    if (!live.has(statement.device)) throw new KeyLogError("ENTRY_MALFORMED", `entry ${index} revokes a device that is not a live device of its principal`);
    if (entry.signatures.length !== 1 || entry.signatures[0]!.keyId !== statement.revoker) {
      throw new KeyLogError("SIGNATURE_INVALID", `entry ${index}'s signature is not its revoker's`);
    }
    const revoker = live.get(statement.revoker);
    if (revoker === undefined) throw new KeyLogError("NOT_ENDORSED", `entry ${index}: the revoker is not a live device of ${statement.principalId}`);
    if (!verifyStatement(revoker.signingJwk, statement, entry.signatures[0]!.signature)) {
      throw new KeyLogError("SIGNATURE_INVALID", `entry ${index}: the revoker's signature does not verify`);
    }
  }
}

// Every signature by a pinned log key verifies, and there is one (others are ignored: a key
// rotated out of the policy).
function checkReset(index: number, entry: Entry, statement: PrincipalReset, policy: TrustPolicy): void {
  const keys = new Map(policy.logVerifiers.map((verifier) => [hex32(verifier.keyHash), verifier]));
  const message = utf8(statement.canonical());
  let signed = false;
  for (const { keyId, signature } of entry.signatures) {
    const verifier = keys.get(keyId);
    if (verifier === undefined) continue;
    if (!verifier.verify(message, signature)) throw new KeyLogError("SIGNATURE_INVALID", `entry ${index}: the log key's signature does not verify`);
    signed = true;
  }
  if (!signed) throw new KeyLogError("SIGNATURE_INVALID", `entry ${index}: a reset that no pinned log key signed`);
}

// -- step 4: the alerts --------------------------------------------------------------------------

// The entries of the whole log that the rule of docs/key-transparency.md, "Owners are told", makes
// alerts of, as it stands now (the caller leaves out those that raised one before).
function alertsOf(me: Me | null, records: readonly LogRecord[], log: Directory, size: number): Alert[] {
  if (me === null) return [];
  const boundary = exemptThrough(me, log, size);
  const mine = new Set(me.deviceIds);
  const made = new Set(me.statements);
  return records
    .filter(
      (r) =>
        r.principalId === me.principalId &&
        r.index > boundary &&
        !made.has(r.statement) &&
        !(r.kind === "DEVICE_ADDED" && mine.has(r.deviceId)),
    )
    .map(({ index, kind, deviceId }) => ({ index, kind, deviceId }));
}

// The last index of the principal's history before this device joined, which raises no alert:
// before its endorsed publication (its endorser answered for it), or through the principal's last
// reset before its first-device publication (nothing of the principal may come between: it had no
// live device). A device not in the log yet joins at its size, as a first device if `me` holds its
// first-device statement.
function exemptThrough(me: Me, log: Directory, size: number): number {
  const mine = [...log.devices.values()].filter((d) => me.deviceIds.includes(d.deviceId) && d.principalId === me.principalId);
  let at: number;
  let first: boolean;
  if (mine.length > 0) {
    const anchor = mine.reduce((a, b) => (b.index < a.index ? b : a));
    [at, first] = [anchor.index, !anchor.endorser];
  } else {
    [at, first] = [size, me.statements.some((text) => isFirstDevice(text, me.principalId))];
  }
  if (!first) return at - 1;
  return Math.max(-1, ...log.resets.filter((r) => r.principalId === me.principalId && r.index < at).map((r) => r.index));
}

function isFirstDevice(text: string, principalId: string): boolean {
  try {
    const statement = parseStatement(text);
    return statement instanceof DeviceKeys && statement.principalId === principalId && !statement.endorser;
  } catch (error) {
    if (error instanceof StatementError) return false;
    throw error;
  }
}

// -- what the application does with a verified state ---------------------------------------------

/**
 * The agreement keys of the live devices of each principal (in log order; none for a principal the
 * log does not name), what seal() may wrap for; KeyLogError RESET_UNACKNOWLEDGED for a principal
 * with a live device published after a reset the application has not acknowledged.
 */
export function recipientKeys(state: KeyLogState, principalIds: Iterable<string>): Map<string, RecipientKey[]> {
  const answer = new Map<string, RecipientKey[]>();
  for (const principalId of new Set(principalIds)) {
    const live = state.liveDevices(principalId);
    for (const reset of state.unacknowledgedResets) {
      if (reset.principalId === principalId && live.some((device) => device.index > reset.index)) {
        throw new KeyLogError("RESET_UNACKNOWLEDGED", `${principalId} was reset (entry ${reset.index}) and has a new device: acknowledge the reset first`);
      }
    }
    answer.set(
      principalId,
      live.map((device) => ({ keyId: device.agreementKeyId, jwk: device.agreementJwk, principalId, deviceId: device.deviceId })),
    );
  }
  return answer;
}

/** The state once the application acknowledged the reset of `principalId` at entry `index` (RangeError when there is no such unacknowledged reset). */
export function acknowledgeReset(state: KeyLogState, principalId: string, index: number): KeyLogState {
  const isIt = (r: Reset) => r.principalId === principalId && r.index === index;
  if (!state.unacknowledgedResets.some(isIt)) throw new RangeError(`no unacknowledged reset of ${principalId} at entry ${index}`);
  return state.with({
    unacknowledgedResets: state.unacknowledgedResets.filter((r) => !isIt(r)),
    acknowledgedResets: [...state.acknowledgedResets, { principalId, index }],
  });
}

/** The state without the alert of entry `index`, which raises none again (RangeError when none is pending). */
export function acknowledgeAlert(state: KeyLogState, index: number): KeyLogState {
  const remaining = state.alerts.filter((alert) => alert.index !== index);
  if (remaining.length === state.alerts.length) throw new RangeError(`no pending alert of entry ${index}`);
  return state.with({ alerts: remaining, acknowledgedAlerts: [...state.acknowledgedAlerts, index] });
}

// -- the state as its stores keep it -------------------------------------------------------------

/** The JSON document of a state, as the Python package's state_document writes it. */
export interface StateDocument {
  tenantId: string;
  checkpoint: { size: number; rootHex: string; note: string };
  entries: string[];
  alerts: { index: number; kind: AlertKind; deviceId: string }[];
  acknowledgedAlerts: number[];
  unacknowledgedResets: Reset[];
  acknowledgedResets: Reset[];
  me: { principalId: string; deviceIds: string[]; statements: string[] } | null;
}

function toHex(bytes: Uint8Array): string {
  return [...bytes].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** The state as JSON values (restoreState reads them back): what its stores keep. */
export function stateDocument(state: KeyLogState): StateDocument {
  const me = state.me;
  return {
    tenantId: state.tenantId,
    checkpoint: { size: state.size, rootHex: toHex(state.root), note: state.note },
    entries: [...state.entries],
    alerts: state.alerts.map(({ index, kind, deviceId }) => ({ index, kind, deviceId })),
    acknowledgedAlerts: [...state.acknowledgedAlerts],
    unacknowledgedResets: state.unacknowledgedResets.map(({ principalId, index }) => ({ principalId, index })),
    acknowledgedResets: state.acknowledgedResets.map(({ principalId, index }) => ({ principalId, index })),
    me: me === null ? null : { principalId: me.principalId, deviceIds: [...me.deviceIds], statements: [...me.statements] },
  };
}

function resetsOf(documents: unknown): Reset[] {
  if (!Array.isArray(documents)) throw new RangeError("the key log state's resets are a list");
  return documents.map((d: { principalId?: unknown; index?: unknown }) => {
    if (typeof d?.principalId !== "string" || !Number.isSafeInteger(d.index)) throw new RangeError("a reset has principalId and index");
    return { principalId: d.principalId, index: d.index as number };
  });
}

/**
 * A state from stateDocument's output, its directory made again from its entries (not checked
 * again: they were when it was saved); RangeError when the document is not whole (its entries do
 * not make its checkpoint's root).
 */
export function restoreState(document: StateDocument): KeyLogState {
  const { tenantId, checkpoint, entries } = document;
  if (typeof tenantId !== "string" || typeof checkpoint !== "object" || checkpoint === null || !Array.isArray(entries)) {
    throw new RangeError("a key log state has tenantId, checkpoint and entries");
  }
  const data = entries.map(String);
  const hashes = data.map((entry) => leafHash(utf8(entry)));
  const rootHex = String(checkpoint.rootHex);
  if (data.length !== Number(checkpoint.size) || toHex(rootHash(hashes)) !== rootHex) {
    throw new RangeError("the key log state's entries do not make its checkpoint");
  }
  const log = new Directory(new Map(), []);
  let records: LogRecord[];
  try {
    records = data.map((entry, index) => log.replay(index, entry, tenantId, null));
  } catch (error) {
    if (error instanceof KeyLogError) throw new RangeError(`the key log state holds an entry that does not replay: ${error.message}`);
    throw error;
  }
  const me = document.me;
  const { alerts, acknowledgedAlerts } = document;
  if (!Array.isArray(alerts) || !Array.isArray(acknowledgedAlerts) || !acknowledgedAlerts.every(Number.isSafeInteger)) {
    throw new RangeError("the key log state's alerts and acknowledged alerts are lists");
  }
  return new KeyLogState(tenantId, {
    size: data.length,
    root: rootHash(hashes),
    note: String(checkpoint.note),
    entries: data,
    devices: log.devices,
    resets: log.resets,
    alerts: alerts.map((a) => ({ index: Number(a.index), kind: a.kind, deviceId: String(a.deviceId) })),
    acknowledgedAlerts: [...acknowledgedAlerts],
    unacknowledgedResets: resetsOf(document.unacknowledgedResets),
    acknowledgedResets: resetsOf(document.acknowledgedResets),
    me: me === null || me === undefined ? null : new Me(String(me.principalId), me.deviceIds, me.statements),
    leafHashes: hashes,
    records,
  });
}
