// Sealing and the key directory of the npm package, as a consumer imports them; prints a JSON
// report that tests/e2e/test_ts_sealing.py reads.
//   node sealing_checks.js offline TESTDATA_DIR WORK_DIR    the format, the limits, every
//       clients/testdata/sealed-*.json vector, every key-log.json case and answer, the file store
//   node sealing_checks.js server BASE_URL CREDENTIALS_FILE WORK_DIR    against a --dev server
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { inspect } from "node:util";
import { clone, create, fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import {
  GetRecipientKeysResponseSchema,
  ItemSchema,
  KeyLogEntrySchema,
  KeyLogHeadSchema,
  WrappedKeySchema,
  clients,
  type Item,
  type WrappedKey,
} from "zkplatform-client";
import {
  FileKeyLogStore,
  KeyDirectory,
  KeyLogError,
  KeyLogState,
  MemoryKeyLogStore,
  checkRecipientKeys,
  extendKeyLog,
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

type Report = Record<string, unknown>;
const [mode, ...args] = process.argv.slice(2);
const CONTEXT: SealContext = { tenantId: "acme", vaultId: "acme-shared", itemId: "checks-1", kind: "note" };
const text = (value: string) => new Uint8Array(Buffer.from(value, "utf8"));
const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));

// What a call ended with: "ok", a SealingError's or KeyLogError's reason, or the error's class.
async function outcome(call: () => Promise<unknown>): Promise<string> {
  try {
    await call();
    return "ok";
  } catch (error) {
    if (error instanceof SealingError || error instanceof KeyLogError) return error.reason;
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

async function keyLog(testdata: string): Promise<Report> {
  type Head = { size: string; hash: string };
  const data = JSON.parse(readFileSync(join(testdata, "key-log.json"), "utf8")) as {
    tenantId: string;
    log: { entries: JsonValue[]; head: Head };
    cases: { name: string; known: Head; entries: JsonValue[]; head: Head }[];
    answers: { name: string; principalIds: string[]; answer: JsonValue }[];
  };
  const entries = (list: JsonValue[]) => list.map((entry) => fromJson(KeyLogEntrySchema, entry));
  const head = (value: Head) => fromJson(KeyLogHeadSchema, value);
  const cases: Record<string, string> = {};
  for (const c of data.cases) {
    const known = new KeyLogState(data.tenantId, BigInt(c.known.size), c.known.hash);
    cases[c.name] = await outcome(() => extendKeyLog(known, entries(c.entries), head(c.head)));
  }
  const verified = await extendKeyLog(new KeyLogState(), entries(data.log.entries), head(data.log.head));
  const answers: Record<string, string | string[]> = {};
  for (const a of data.answers) {
    let keyIds: string[] = [];
    const result = await outcome(async () => {
      keyIds = (await checkRecipientKeys(verified, a.principalIds, fromJson(GetRecipientKeysResponseSchema, a.answer))).map((key) => key.keyId);
    });
    answers[a.name] = result === "ok" ? keyIds : result;
  }
  return { cases, answers, verified: JSON.parse(verified.toJson()) };
}

// The file store writes the state's JSON and reads it back; a state it cannot read is refused.
async function fileStore(testdata: string, work: string): Promise<Report> {
  const data = JSON.parse(readFileSync(join(testdata, "key-log.json"), "utf8"));
  const state = await extendKeyLog(new KeyLogState(), data.log.entries.map((e: JsonValue) => fromJson(KeyLogEntrySchema, e)), fromJson(KeyLogHeadSchema, data.log.head));
  const store = new FileKeyLogStore(join(work, "key-log-state.json"));
  const before = await store.load();
  await store.save(state);
  const loaded = await store.load();
  return {
    emptyBefore: before === null,
    sameJson: loaded?.toJson() === state.toJson(),
    loadedSize: loaded?.size.toString(),
    file: JSON.parse(readFileSync(join(work, "key-log-state.json"), "utf8")),
    leftovers: readdirSync(work).filter((name) => name.endsWith(".tmp")),
    otherVersion: await outcome(async () => KeyLogState.fromJson(JSON.stringify({ ...JSON.parse(state.toJson()), version: 2 }))),
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
  const secretsShown = Object.values(keys).filter((jwk) => shown.some((line) => line.includes(jwk.d)));
  return { checked: shown.length, secretsShown: secretsShown.length, inspected: inspect(await importRecipientKey(a)) };
}

async function offline(testdata: string, work: string): Promise<Report> {
  return {
    roundTrip: { X25519: await roundTrip("X25519"), "P-256": await roundTrip("P-256") },
    format: await format(),
    recipients: await recipients(),
    sharing: await sharing(),
    vectors: await vectors(testdata),
    keyLog: await keyLog(testdata),
    fileStore: await fileStore(testdata, work),
    secrets: await secrets(testdata),
  };
}

// -- against a server --------------------------------------------------------------------------

async function server(baseUrl: string, credentialsFile: string, work: string): Promise<Report> {
  const credentials = JSON.parse(readFileSync(credentialsFile, "utf8")) as { tenants: { principals: { principalId: string; token: string; keyId: string }[] }[] };
  const principal = (id: string) => credentials.tenants.flatMap((t) => t.principals).find((p) => p.principalId === id)!;
  const token = (id: string) => principal(id).token;
  const devKeyId = (id: string) => principal(id).keyId; // the development data set's key, published at start-up
  const [alice, bob, carol] = ["alice", "bob", "carol"].map((id) => clients(baseUrl, "connect-json", { token: token(id) }));
  const aliceStore = new FileKeyLogStore(join(work, "alice-keys.json"));
  const aliceDirectory = new KeyDirectory(alice.directory, aliceStore);
  const bobDirectory = new KeyDirectory(bob.directory, new MemoryKeyLogStore());
  const carolDirectory = new KeyDirectory(carol.directory, new MemoryKeyLogStore());

  const aliceKey = await generateRecipientKey("X25519");
  const bobKey = await generateRecipientKey("P-256");
  const bobPhone = await generateRecipientKey("X25519");
  const published = {
    alice: (await aliceDirectory.publish(aliceKey)).keyId === aliceKey.keyId,
    bob: (await bobDirectory.publish(bobKey)).keyId === bobKey.keyId,
  };

  // alice seals for every live key of alice and bob, as the verified directory answers them.
  const found = await aliceDirectory.recipientKeys(["alice", "bob"]);
  const plaintext = text("the shared vault's wifi: hunter2");
  const itemId = "sealed-by-alice";
  const context = { tenantId: "acme", vaultId: "acme-shared", itemId, kind: "login" };
  const created = (await alice.vault.createItem({ vaultId: context.vaultId, itemId, kind: context.kind, ...(await seal(plaintext, found, context)) })).item!;
  const read = async () => (await bob.vault.getItem({ vaultId: context.vaultId, itemId })).item!;
  const bobOpens = same(await openItem(await read(), bobKey), plaintext);

  // bob's second device: share adds its wrapped key, without sending the ciphertext again.
  await bobDirectory.publish(bobPhone);
  const phoneKeys = (await aliceDirectory.recipientKeys(["bob"])).filter((key) => key.keyId === bobPhone.keyId);
  const mask = (...paths: string[]) => create(FieldMaskSchema, { paths });
  const sharedItem = (
    await alice.vault.updateItem({ vaultId: context.vaultId, itemId, baseVersion: created.version, updateMask: mask("wrapped_keys"), wrappedKeys: await share(created, aliceKey, phoneKeys) })
  ).item!;
  const phoneOpens = same(await openItem(await read(), bobPhone), plaintext);

  // unshare: sealed again for alice alone; bob's keys no longer open it.
  const resealed = await unshare(sharedItem, aliceKey, [aliceKey]);
  await alice.vault.updateItem({ vaultId: context.vaultId, itemId, baseVersion: sharedItem.version, updateMask: mask("encrypted_payload", "wrapped_keys"), ...resealed });
  const afterUnshare = await read();

  // bob revokes his phone's key: the directory stops offering it, and the verified log has it revoked.
  await bob.directory.revokeKey({ keyId: bobPhone.keyId });
  const bobKeysAfter = (await aliceDirectory.recipientKeys(["bob"])).map((key) => key.keyId);
  const aliceState = await aliceDirectory.state();

  // The saved state survives a new KeyDirectory; a state the server's log does not extend is refused, and kept.
  const reloaded = await new KeyDirectory(alice.directory, new FileKeyLogStore(join(work, "alice-keys.json"))).recipientKeys(["alice"]);
  const forged = new MemoryKeyLogStore(new KeyLogState(aliceState.tenantId, aliceState.size, Buffer.alloc(32, 7).toString("base64url"), aliceState.keys));
  const forgedState = forged.state;
  const forkedOutcome = await outcome(() => new KeyDirectory(alice.directory, forged).verify());
  const ahead = new MemoryKeyLogStore(new KeyLogState(aliceState.tenantId, aliceState.size + 5n, aliceState.hash, aliceState.keys));

  return {
    published,
    // Theirs and the development data set's (by principal; keys of one second in key id order).
    found: found.map((key) => key.keyId).sort().join(",") === [devKeyId("alice"), aliceKey.keyId, devKeyId("bob"), bobKey.keyId].sort().join(","),
    bobOpens,
    phoneOpens,
    afterUnshare: {
      bob: await outcome(() => openItem(afterUnshare, bobKey)),
      phone: await outcome(() => openItem(afterUnshare, bobPhone)),
      alice: same(await openItem(afterUnshare, aliceKey), plaintext),
      version: afterUnshare.version.toString(),
    },
    revoked: {
      offered: bobKeysAfter.includes(bobPhone.keyId),
      stillOffered: bobKeysAfter.includes(bobKey.keyId),
      logged: aliceState.keys.get(bobPhone.keyId)?.revoked ?? null,
    },
    aliceLog: { tenantId: aliceState.tenantId, size: Number(aliceState.size), savedSize: JSON.parse(readFileSync(join(work, "alice-keys.json"), "utf8")).size },
    reloaded: reloaded.map((key) => key.keyId).includes(aliceKey.keyId),
    forked: forkedOutcome,
    forkedKept: forged.state === forgedState,
    truncated: await outcome(() => new KeyDirectory(alice.directory, ahead).recipientKeys(["alice"])),
    carol: {
      acmeKeys: (await carolDirectory.recipientKeys(["alice", "bob"])).length,
      logSize: Number((await carolDirectory.verify()).size),
    },
  };
}

const report = mode === "offline" ? await offline(args[0], args[1]) : await server(args[0], args[1], args[2]);
console.log(JSON.stringify(report));
