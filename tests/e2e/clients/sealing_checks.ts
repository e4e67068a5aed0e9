// Sealing, devices and the key directory of the npm package, as a consumer imports them; prints a
// JSON report that tests/e2e/test_ts_sealing.py reads.
//   node sealing_checks.js offline TESTDATA_DIR WORK_DIR    the format, the limits, every
//       clients/testdata/sealed-*.json vector, devices' keys and statements, the state file (the
//       Python package's WORK_DIR/python-state.json read, and one written for it to read)
//   node sealing_checks.js server CREDENTIALS_FILE WORK_DIR    against a --dev server: the
//       cosigned log verified, sealing for verified devices, an endorsed second device, a
//       revocation, a reset surfaced and refused until acknowledged, and a server that lies
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { inspect } from "node:util";
import { clone, create, fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import { DeviceSchema, ItemSchema, WrappedKeySchema, clients, type Interceptor, type Item, type WrappedKey } from "zkplatform-client";
import { DeviceKeyPair, DeviceStatement, endorse } from "zkplatform-client/devices";
import {
  FileKeyLogStore,
  KeyDirectory,
  KeyLogError,
  KeyLogState,
  Me,
  MemoryKeyLogStore,
  formatState,
  parseState,
  stateDocument,
  verifyUpdate,
  type Alert,
  type RecipientKey,
  type TrustPolicyInit,
} from "zkplatform-client/key-directory";
import {
  MAX_PLAINTEXT_BYTES,
  RecipientKeyPair,
  SealingError,
  generateRecipientKey,
  importRecipientKey,
  openItem,
  seal,
  share,
  unshare,
  type SealContext,
} from "zkplatform-client/sealing";
import { StatementError, parseStatement, verifyStatement } from "zkplatform-client/statements";
import { generateCosignerKey, generateNoteKey } from "zkplatform-client/tlog";

type Report = Record<string, unknown>;
const [mode, ...args] = process.argv.slice(2);
const CONTEXT: SealContext = { tenantId: "acme", vaultId: "acme-shared", itemId: "checks-1", kind: "note" };
const text = (value: string) => new Uint8Array(Buffer.from(value, "utf8"));
const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));

// What a call ended with: "ok", a SealingError's, KeyLogError's or StatementError's reason, or the error's class.
async function outcome(call: () => unknown): Promise<string> {
  try {
    await call();
    return "ok";
  } catch (error) {
    if (error instanceof SealingError || error instanceof KeyLogError || error instanceof StatementError) return error.reason;
    return error instanceof Error ? error.name : String(error);
  }
}

function item(content: { encryptedPayload: unknown; wrappedKeys: unknown }, context: SealContext = CONTEXT, version = 1n): Item {
  return create(ItemSchema, { ...context, version, ...(content as object) });
}

// -- offline ---------------------------------------------------------------------------------

async function roundTrip(curve: "X25519" | "P-256"): Promise<Report> {
  const key = await generateRecipientKey(curve);
  const plaintext = text(`for ${curve}`);
  const sealed = item(await seal(plaintext, [key], CONTEXT));
  const reloaded = await importRecipientKey(JSON.stringify(await key.exportPrivateJwk()));
  return {
    opens: same(await openItem(sealed, key), plaintext),
    reloadedOpens: same(await openItem(sealed, reloaded), plaintext),
    sameKeyId: reloaded.keyId === key.keyId,
    privateJwkMembers: Object.keys(await key.exportPrivateJwk()).sort(),
  };
}

// The payload and the JWE header as docs/sealing.md says they are.
async function format(): Promise<Report> {
  const key = await generateRecipientKey("P-256");
  const { encryptedPayload: payload, wrappedKeys } = await seal(text("format"), [key], CONTEXT);
  const jwe = Buffer.from(wrappedKeys[0].wrappedKey, "base64url").toString("ascii");
  const header = JSON.parse(Buffer.from(jwe.split(".")[0], "base64url").toString("utf8")) as Record<string, unknown>;
  return {
    alg: payload.alg,
    version: payload.version,
    nonceBytes: Buffer.from(payload.nonce, "base64url").length,
    aad: Buffer.from(payload.aad, "base64url").toString("utf8"),
    ciphertextBytes: Buffer.from(payload.ciphertext, "base64url").length,
    recipientIdIsHexKeyId: wrappedKeys[0].recipientId === Buffer.from(key.keyId, "base64url").toString("hex"),
    wrapAlg: wrappedKeys[0].wrapAlg,
    header: { alg: header.alg, enc: header.enc, kidIsKeyId: header.kid === key.keyId, epk: Object.keys(header.epk as object).sort(), members: Object.keys(header).sort() },
  };
}

async function recipients(): Promise<Report> {
  const [a, b, c] = await Promise.all([generateRecipientKey("X25519"), generateRecipientKey("P-256"), generateRecipientKey("X25519")]);
  const plaintext = text("for three");
  // Each key once, whichever way it is given: the pair, its public JWK text, an object with it.
  const content = await seal(plaintext, [a, b, c, a.jwk, b, { jwk: c.jwk }, b.publicKey], CONTEXT);
  const sealed = item(content);
  const opened = await Promise.all([a, b, c].map(async (key) => same(await openItem(sealed, key), plaintext)));
  const many = await Promise.all(Array.from({ length: 257 }, () => generateRecipientKey("X25519")));
  return {
    wrappedKeys: content.wrappedKeys.length,
    opened,
    none: await outcome(() => seal(plaintext, [], CONTEXT)),
    max: (await seal(plaintext, many.slice(0, 256), CONTEXT)).wrappedKeys.length,
    tooMany: await outcome(() => seal(plaintext, many, CONTEXT)),
    largest: await outcome(() => seal(new Uint8Array(MAX_PLAINTEXT_BYTES), [a], CONTEXT)),
    tooLarge: await outcome(() => seal(new Uint8Array(MAX_PLAINTEXT_BYTES + 1), [a], CONTEXT)),
    privateAsRecipient: await outcome(async () => seal(plaintext, [JSON.stringify(await a.exportPrivateJwk())], CONTEXT)),
    unknownCurve: await outcome(() => seal(plaintext, ['{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}'], CONTEXT)),
    notOnCurve: await outcome(() => seal(plaintext, [JSON.stringify({ ...JSON.parse(b.jwk), y: JSON.parse(a.jwk).x })], CONTEXT)),
    badContext: await outcome(() => seal(plaintext, [a], { ...CONTEXT, itemId: 'a"b' })),
  };
}

// share adds wrapped keys under the same content key; unshare seals again, under a new one.
async function sharing(): Promise<Report> {
  const [owner, friend, other, later] = await Promise.all([
    generateRecipientKey("X25519"),
    generateRecipientKey("P-256"),
    generateRecipientKey("X25519"),
    generateRecipientKey("P-256"),
  ]);
  const plaintext = text("shared, then not");
  const original = item(await seal(plaintext, [owner, other], CONTEXT));
  // A key of a wrap_alg this client does not know, which share must keep as it is.
  original.wrappedKeys.push(create(WrappedKeySchema, { recipientId: "device-7", wrapAlg: "RSA-OAEP-256", wrappedKey: "a2V5" }));
  const wrappedKeys = await share(original, owner, [friend, owner, other, friend.jwk]);
  const shared = clone(ItemSchema, original);
  shared.wrappedKeys = wrappedKeys;
  const unshared = item(await unshare(shared, owner, [owner, friend, later]));
  const oldFriendKey = shared.wrappedKeys.find((key) => key.recipientId === friend.recipientId)!;
  const mixed = clone(ItemSchema, unshared);
  mixed.wrappedKeys = [...unshared.wrappedKeys.filter((key) => key.recipientId !== friend.recipientId), oldFriendKey];
  return {
    shareKeepsExisting: original.wrappedKeys.every((key, i) => toJsonText(key) === toJsonText(wrappedKeys[i])),
    shareAdds: wrappedKeys.length - original.wrappedKeys.length,
    friendOpensShared: same(await openItem(shared, friend), plaintext),
    shareByNonRecipient: await outcome(() => share(original, later, [later])),
    removedAfterUnshare: await outcome(() => openItem(unshared, other)),
    keptAfterUnshare: same(await openItem(unshared, friend), plaintext),
    addedByUnshare: same(await openItem(unshared, later), plaintext),
    unsharedWrappedKeys: unshared.wrappedKeys.length,
    newNonce: unshared.encryptedPayload?.nonce !== shared.encryptedPayload?.nonce,
    // The content key wrapped before unshare does not open what unshare sealed.
    oldContentKey: await outcome(() => openItem(mixed, friend)),
  };
}

function toJsonText(key: WrappedKey): string {
  return JSON.stringify(toJson(WrappedKeySchema, key));
}

// Every vector of every clients/testdata/sealed-*.json: "ok" when it opens to its plaintext.
async function vectors(testdata: string): Promise<Report> {
  const keys = JSON.parse(readFileSync(join(testdata, "recipients.json"), "utf8")).keys as Record<string, object>;
  const pairs = new Map<string, RecipientKeyPair>();
  for (const [name, jwk] of Object.entries(keys)) pairs.set(name, await importRecipientKey(jwk));
  const report: Report = {};
  for (const file of readdirSync(testdata).filter((name) => /^sealed-.*\.json$/.test(name)).sort()) {
    const data = JSON.parse(readFileSync(join(testdata, file), "utf8")) as { vectors: { name: string; recipient: string; item: JsonValue; plaintext?: string }[] };
    const outcomes: Record<string, string> = {};
    for (const vector of data.vectors) {
      const sealed = fromJson(ItemSchema, vector.item);
      outcomes[vector.name] = await outcome(async () => {
        const opened = await openItem(sealed, pairs.get(vector.recipient)!);
        if (!same(opened, Buffer.from(vector.plaintext ?? "", "base64url"))) throw new Error("another plaintext");
      });
    }
    report[file] = outcomes;
  }
  return report;
}

// A device's keys: exported and read back, its statements signed and parsed as the log's readers
// parse them, an endorsement only of what names the endorser and the new device signed.
async function devices(): Promise<Report> {
  const [phone, laptop] = [await DeviceKeyPair.generate("P-256"), await DeviceKeyPair.generate("X25519")];
  const jwks = await phone.toJwks();
  const again = await DeviceKeyPair.fromJwks(JSON.stringify(jwks.signingKeyJwk), jwks.privateKeyJwk);
  const first = laptop.firstDeviceStatement("acme", "bob", 1_800_000_000);
  const asked = phone.deviceStatement("acme", "bob", { endorser: laptop.deviceId, created: 1_800_000_001 });
  const endorsed = endorse(asked, laptop);
  const revocation = laptop.revocation("acme", "bob", phone.deviceId, 1_800_000_002);
  const other = (await laptop.toJwks()).signingKeyJwk;
  const members = (text: string) => Object.keys(JSON.parse(text) as object);
  return {
    readBack: again.deviceId === phone.deviceId && again.agreementKeyId === phone.agreementKeyId && again.signingJwk === phone.signingJwk,
    signingKeyJwk: Object.keys(jwks.signingKeyJwk),
    privateKeyJwk: Object.keys(jwks.privateKeyJwk),
    first: {
      members: members(first.text),
      endorser: first.statement.endorser,
      verifies: verifyStatement(laptop.signingJwk, first.statement, first.signature),
      parsesToItself: parseStatement(first.text).canonical() === first.text,
      request: first.request().endorsement === "" && first.request().signature.length === 86,
    },
    endorsed: {
      endorser: endorsed.statement.endorser === laptop.deviceId,
      byDevice: verifyStatement(phone.signingJwk, endorsed.statement, endorsed.signature),
      byEndorser: verifyStatement(laptop.signingJwk, endorsed.statement, endorsed.endorsement),
      endorsementLength: endorsed.request().endorsement.length,
    },
    endorsedByAnother: await outcome(() => endorse(asked, phone)),
    endorsedNotSigned: await outcome(() => endorse(new DeviceStatement(asked.statement, first.signature), laptop)),
    revocation: {
      members: members(revocation.text),
      revoker: revocation.statement.revoker === laptop.deviceId,
      verifies: verifyStatement(laptop.signingJwk, revocation.statement, revocation.signature),
    },
    mismatchedSigningKey: await outcome(() => DeviceKeyPair.fromJwks({ ...jwks.signingKeyJwk, x: other.x }, jwks.privateKeyJwk)),
    notCanonical: await outcome(() => parseStatement(JSON.stringify(JSON.parse(first.text), null, 1))),
    unknownType: await outcome(() => parseStatement(first.text.replace('"zkplatform.device-keys"', '"zkplatform.device-kays"'))),
  };
}

type Vectors = { tenantId: string; policy: TrustPolicyInit; cases: { name: string; steps: { now: number; update: { checkpoint: string; startIndex: number; entries: { index: number; data: string }[]; consistencyProof: string[] } }[] }[] };

// The state of the vectors' first case in one update, as alice's device verified it.
function vectorState(testdata: string): KeyLogState {
  const vectors = JSON.parse(readFileSync(join(testdata, "key-transparency.json"), "utf8")) as Vectors;
  const { steps } = vectors.cases.find((c) => c.name.startsWith("happy: the same log in one update"))!;
  const { now, update } = steps[0]!;
  const consistencyProof = update.consistencyProof.map((hash) => new Uint8Array(Buffer.from(hash, "base64")));
  return verifyUpdate(null, { ...update, consistencyProof }, vectors.policy, vectors.tenantId, now, new Me("alice", [], ["a statement alice made"])).state;
}

// The state file: written and read back whole, the Python package's read (WORK_DIR/python-state.json,
// which the driver wrote), one written for the driver to read with the Python package, and files
// that are not a state refused.
async function stateFile(testdata: string, work: string): Promise<Report> {
  const state = vectorState(testdata);
  const path = join(work, "ts-state.json");
  const store = new FileKeyLogStore(path);
  const before = await store.load();
  await store.save(state);
  const loaded = await store.load();
  const python = parseState(readFileSync(join(work, "python-state.json"), "utf8"));
  const file = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
  const refused = (text: string) => outcome(() => parseState(text));
  return {
    emptyBefore: before === null,
    sameState: loaded !== null && formatState(loaded) === formatState(state),
    loadedSize: loaded?.size,
    loadedLive: loaded?.liveDevices("bob").map((d) => d.deviceId).length,
    file: { format: file.format, version: file.version, members: Object.keys(file).sort() },
    leftovers: readdirSync(work).filter((name) => name.endsWith(".tmp")),
    python: stateDocument(python),
    versionOne: await refused(JSON.stringify({ ...file, version: 1 })),
    otherFormat: await refused(JSON.stringify({ ...file, format: "something.else" })),
    rewritten: await refused(JSON.stringify({ ...file, entries: [...(file.entries as string[]).slice(0, -1), "{}"] })),
    notJson: await refused("{"),
  };
}

// No private key material in what a key pair shows, nor in any error about one.
async function secrets(testdata: string): Promise<Report> {
  const keys = JSON.parse(readFileSync(join(testdata, "recipients.json"), "utf8")).keys as Record<string, Record<string, string>>;
  const shown: string[] = [];
  const errorText = async (call: () => Promise<unknown>) => {
    try {
      await call();
    } catch (error) {
      shown.push(String(error), inspect(error), error instanceof Error ? (error.stack ?? "") : "");
    }
  };
  const [a, b] = [keys["x25519-a"], keys["p256-a"]];
  for (const jwk of Object.values(keys)) {
    const pair = await importRecipientKey(jwk);
    shown.push(inspect(pair, { showHidden: true, depth: 10 }), JSON.stringify(pair), JSON.stringify(Object.entries(pair)), String(pair));
    await errorText(() => seal(text("x"), [JSON.stringify(jwk)], CONTEXT)); // a private JWK as a recipient
    await errorText(() => openItem(item({ encryptedPayload: { alg: "A256GCM", version: 1 }, wrappedKeys: [] }), pair));
  }
  await errorText(() => importRecipientKey({ ...a, x: keys["x25519-b"].x })); // d and x of two keys
  await errorText(() => importRecipientKey({ ...b, y: keys["p256-b"].y }));
  await errorText(() => importRecipientKey({ ...a, d: a.d.slice(1) }));
  await errorText(() => importRecipientKey({ ...a, kty: "EC" }));
  // A device's two private keys: neither in what it shows, nor in an error about it.
  const device = await DeviceKeyPair.generate("P-256");
  const jwks = await device.toJwks();
  const deviceSecrets = [jwks.signingKeyJwk.d!, jwks.privateKeyJwk.d!];
  shown.push(inspect(device, { showHidden: true, depth: 10 }), JSON.stringify(device), JSON.stringify(Object.entries(device)), String(device));
  await errorText(() => DeviceKeyPair.fromJwks({ ...jwks.signingKeyJwk, x: JSON.parse(device.agreementJwk).x }, jwks.privateKeyJwk));
  await errorText(() => DeviceKeyPair.fromJwks({ ...jwks.signingKeyJwk, d: jwks.signingKeyJwk.d!.slice(1) }, jwks.privateKeyJwk));
  await errorText(() => DeviceKeyPair.fromJwks(jwks.signingKeyJwk, { ...jwks.privateKeyJwk, x: JSON.parse(device.agreementJwk).y }));
  await errorText(async () => endorse(device.deviceStatement("acme", "bob", { endorser: "x".repeat(43) }), device));
  const secretsShown = [...Object.values(keys).map((jwk) => jwk.d), ...deviceSecrets].filter((d) => shown.some((line) => line.includes(d)));
  return { checked: shown.length, secretsShown: secretsShown.length, inspected: inspect(await importRecipientKey(a)), device: inspect(device) === `DeviceKeyPair { deviceId: '${device.deviceId}' }` };
}

async function offline(testdata: string, work: string): Promise<Report> {
  return {
    roundTrip: { X25519: await roundTrip("X25519"), "P-256": await roundTrip("P-256") },
    format: await format(),
    recipients: await recipients(),
    sharing: await sharing(),
    vectors: await vectors(testdata),
    devices: await devices(),
    stateFile: await stateFile(testdata, work),
    secrets: await secrets(testdata),
  };
}

// -- against a server --------------------------------------------------------------------------

interface Principal {
  principalId: string;
  token: string;
  deviceId: string;
  keyId: string;
  signingKeyJwk: string;
  privateKeyJwk: string;
}
interface Credentials {
  baseUrl: string;
  logKeys: string[];
  witnesses: string[];
  witnessQuorum: number;
  tenants: { tenantId: string; principals: Principal[] }[];
}

const ids = (keys: Map<string, RecipientKey[]>, principalId: string) => (keys.get(principalId) ?? []).map((key) => key.deviceId);

// An interceptor that hands the client a changed answer of one method: a server that lies.
function lying(method: string, change: (message: any) => void): Interceptor {
  return (next) => async (request) => {
    const response = await next(request);
    if (!response.stream && response.method.name === method) change(response.message);
    return response;
  };
}

async function server(credentialsFile: string, work: string): Promise<Report> {
  const credentials = JSON.parse(readFileSync(credentialsFile, "utf8")) as Credentials;
  // What the operator gives every client out of band: the log key, the witnesses, the quorum.
  const policy: TrustPolicyInit = { logKeys: credentials.logKeys, witnesses: credentials.witnesses, quorum: credentials.witnessQuorum };
  const principal = (id: string) => credentials.tenants.flatMap((t) => t.principals).find((p) => p.principalId === id)!;
  const platform = (id: string, interceptors: Interceptor[] = []) => clients(credentials.baseUrl, "connect-json", { token: principal(id).token, interceptors });
  const demoDevice = (id: string) => DeviceKeyPair.fromJwks(principal(id).signingKeyJwk, principal(id).privateKeyJwk);
  const [alice, bob, carol] = ["alice", "bob", "carol"].map((id) => platform(id));
  const [aliceDevice, bobDevice] = [await demoDevice("alice"), await demoDevice("bob")];
  const alerts: Record<string, Alert[]> = { bob: [], phone: [], laptop: [] };
  const directory = (id: string, name: string, device: DeviceKeyPair, client = platform(id)) =>
    new KeyDirectory(client.directory, "acme", policy, new FileKeyLogStore(join(work, `${name}-key-log.json`)), {
      me: new Me(id),
      device,
      onAlert: (alert) => alerts[name]?.push(alert),
    });
  const aliceDirectory = directory("alice", "alice", aliceDevice, alice);
  const bobDirectory = directory("bob", "bob", bobDevice, bob);

  // The cosigned log as the development data set made it: each principal's demo device.
  const initial = await aliceDirectory.verify();
  const demo = { size: initial.size, alice: ids(await aliceDirectory.recipientKeys(["alice"]), "alice"), devices: initial.principals() };

  // alice seals for every live device of alice and bob in the log she verified; bob opens.
  const found = await aliceDirectory.recipientKeys(["alice", "bob"]);
  const plaintext = text("the shared vault's wifi: hunter2");
  const itemId = "sealed-by-alice";
  const context = { tenantId: "acme", vaultId: "acme-shared", itemId, kind: "login" };
  const created = (await alice.vault.createItem({ vaultId: context.vaultId, itemId, kind: context.kind, ...(await seal(plaintext, [...found.values()].flat(), context)) })).item!;
  const read = async () => (await bob.vault.getItem({ vaultId: context.vaultId, itemId })).item!;
  const bobOpens = same(await openItem(await read(), bobDevice.recipientKey()), plaintext);

  // bob's second device, a phone, endorsed by his first: alice finds it in the log and shares
  // the item with it, without sending the ciphertext again.
  const phone = await DeviceKeyPair.generate("P-256");
  const phoneDirectory = directory("bob", "phone", phone);
  const added = await bobDirectory.addDevice(phone.deviceStatement("acme", "bob", { endorser: bobDevice.deviceId }), bobDevice);
  const phoneKeys = (await aliceDirectory.recipientKeys(["bob"])).get("bob")!.filter((key) => key.deviceId === phone.deviceId);
  const mask = (...paths: string[]) => create(FieldMaskSchema, { paths });
  const sharedItem = (
    await alice.vault.updateItem({ vaultId: context.vaultId, itemId, baseVersion: created.version, updateMask: mask("wrapped_keys"), wrappedKeys: await share(created, aliceDevice.recipientKey(), phoneKeys) })
  ).item!;
  const phoneOpens = same(await openItem(await read(), phone.recipientKey()), plaintext);
  const phoneState = await phoneDirectory.verify(); // from nothing: it joined by endorsement, and is told of nothing before
  await bobDirectory.verify(); // bob endorsed it himself: nothing to tell

  // unshare: sealed again for alice alone; neither of bob's devices opens it.
  const resealed = await unshare(sharedItem, aliceDevice.recipientKey(), [aliceDevice.recipientKey()]);
  await alice.vault.updateItem({ vaultId: context.vaultId, itemId, baseVersion: sharedItem.version, updateMask: mask("encrypted_payload", "wrapped_keys"), ...resealed });
  const afterUnshare = await read();

  // bob revokes the phone from his first device: no longer sealed for; the phone is told.
  await bobDirectory.revokeDevice(phone.deviceId, bobDevice);
  const afterRevocation = ids(await aliceDirectory.recipientKeys(["bob"]), "bob");
  await phoneDirectory.verify();
  await bobDirectory.verify();

  // alice, an owner, resets bob: bob's device is told; alice's client holds the reset, and refuses
  // bob's next device until the application acknowledges the reset.
  const reset = await alice.directory.resetPrincipal({ principalId: "bob" });
  const resetIndex = Number(reset.entry!.index);
  await bobDirectory.verify();
  const afterReset = ids(await aliceDirectory.recipientKeys(["bob"]), "bob");
  const laptop = await DeviceKeyPair.generate("X25519");
  const laptopDirectory = directory("bob", "laptop", laptop);
  const republished = await laptopDirectory.publishFirstDevice(laptop);
  await laptopDirectory.verify(); // bob's first device again: not told of the history it starts over from
  const refusedBeforeAcknowledged = await outcome(() => aliceDirectory.recipientKeys(["bob"]));
  const aliceAloneMeanwhile = ids(await aliceDirectory.recipientKeys(["alice"]), "alice");
  const pendingResets = (await aliceDirectory.state())!.unacknowledgedResets;
  await aliceDirectory.acknowledgeReset("bob", resetIndex);
  const afterAcknowledged = ids(await aliceDirectory.recipientKeys(["bob"]), "bob");
  await bobDirectory.verify(); // bob's old device is told of the new one

  // What was saved survives a new KeyDirectory; the state file is what both packages read.
  const aliceState = (await aliceDirectory.state())!;
  const reloaded = await new KeyDirectory(alice.directory, "acme", policy, new FileKeyLogStore(join(work, "alice-key-log.json"))).verify();
  const savedFile = JSON.parse(readFileSync(join(work, "alice-key-log.json"), "utf8")) as { format: string; version: number; checkpoint: { size: number }; me: unknown };

  // A log that does not extend the state held, or an answer the verified log does not hold, is
  // refused, and the state kept as it was.
  const memory = (state: KeyLogState | null = null) => new MemoryKeyLogStore(state);
  const refusal = async (store: MemoryKeyLogStore, client = alice, trust: TrustPolicyInit = policy, options: { clock?: () => number; tenantId?: string } = {}) => {
    const before = store.state;
    const reason = await outcome(() => new KeyDirectory(client.directory, options.tenantId ?? "acme", trust, store, options).recipientKeys(["alice"]));
    return { reason, kept: store.state === before };
  };
  const forged = aliceState.with({ root: new Uint8Array(32).fill(7) });
  const ahead = aliceState.with({ size: aliceState.size + 5 });
  const otherWitness = generateCosignerKey("witness.zkplatform.dev");
  const otherLogKey = generateNoteKey(credentials.logKeys[0]!.split("+")[0]!).vkey; // the log's name, another key
  const dropLast = lying("ListKeyLog", (page) => page.entries.pop());
  const rewrite = lying("ListKeyLog", (page) => {
    if (page.entries.length > 0) page.entries[0].data = page.entries[0].data.replace('"created":', '"created":1');
  });
  // Pages that never end: one without entries, one with entries past its checkpoint's size.
  const emptyPage = lying("ListKeyLog", (page) => {
    page.entries = [];
    page.nextPageToken = "more";
  });
  const pastCheckpoint = lying("ListKeyLog", (page) => {
    page.entries.push(...page.entries);
    page.nextPageToken = "more";
  });
  const twice = lying("GetRecipientKeys", (page) => page.devices.push(...page.devices));
  const stranger = await DeviceKeyPair.generate();
  const addStranger = lying("GetRecipientKeys", (page) =>
    page.devices.push(create(DeviceSchema, { deviceId: stranger.deviceId, tenantId: "acme", principalId: "alice", signingJwk: stranger.signingJwk, agreementJwk: stranger.agreementJwk, agreementKeyId: stranger.agreementKeyId })),
  );
  const lies = {
    forked: await refusal(memory(forged)),
    truncated: await refusal(memory(ahead)),
    entryDropped: await refusal(memory(), platform("alice", [dropLast])),
    entryRewritten: await refusal(memory(), platform("alice", [rewrite])),
    deviceAdded: await refusal(memory(), platform("alice", [addStranger])),
    deviceTwice: await refusal(memory(), platform("alice", [twice])),
    emptyPage: await refusal(memory(), platform("alice", [emptyPage])),
    pastCheckpoint: await refusal(memory(), platform("alice", [pastCheckpoint])),
    stale: await refusal(memory(), alice, policy, { clock: () => Date.now() / 1000 + 7200 }),
    unknownWitness: await refusal(memory(), alice, { ...policy, witnesses: [otherWitness.vkey] }),
    unknownLogKey: await refusal(memory(), alice, { ...policy, logKeys: [otherLogKey] }),
    otherTenant: await refusal(memory(), alice, policy, { tenantId: "globex" }),
  };

  const carolDirectory = new KeyDirectory(carol.directory, "globex", policy, memory());
  return {
    demo,
    found: { alice: ids(found, "alice"), bob: ids(found, "bob") },
    bobOpens,
    added: added?.deviceId === phone.deviceId && added.endorserDeviceId === bobDevice.deviceId,
    phone: { found: phoneKeys.length, opens: phoneOpens, live: phoneState.liveDevices("bob").map((d) => d.deviceId).includes(phone.deviceId) },
    afterUnshare: {
      bob: await outcome(() => openItem(afterUnshare, bobDevice.recipientKey())),
      phone: await outcome(() => openItem(afterUnshare, phone.recipientKey())),
      alice: same(await openItem(afterUnshare, aliceDevice.recipientKey()), plaintext),
      version: afterUnshare.version.toString(),
    },
    afterRevocation,
    reset: {
      index: resetIndex,
      afterReset,
      republished: republished?.deviceId === laptop.deviceId,
      refusedBeforeAcknowledged,
      aliceAloneMeanwhile,
      pendingResets,
      afterAcknowledged,
    },
    alerts,
    ids: { alice: aliceDevice.deviceId, bob: bobDevice.deviceId, phone: phone.deviceId, laptop: laptop.deviceId },
    aliceAlerts: aliceState.alerts,
    reloaded: { size: reloaded.size, sameAsSaved: reloaded.size === aliceState.size },
    savedFile: { format: savedFile.format, version: savedFile.version, size: savedFile.checkpoint.size, me: savedFile.me },
    lies,
    carol: { keys: Object.fromEntries([...(await carolDirectory.recipientKeys(["alice", "bob", "carol"]))].map(([p, keys]) => [p, keys.map((key) => key.keyId)])), size: (await carolDirectory.state())!.size },
  };
}

const report = mode === "offline" ? await offline(args[0]!, args[1]!) : await server(args[0]!, args[1]!);
console.log(JSON.stringify(report));
