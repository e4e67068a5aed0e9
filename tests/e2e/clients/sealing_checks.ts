// Sealing, devices and the key directory of the npm package, as a consumer imports them; prints a
// JSON report that tests/e2e/test_ts_sealing.py reads.
//   node sealing_checks.js offline TESTDATA_DIR WORK_DIR    the format (version 2), the limits,
//       share and unshare, every clients/testdata sealed-*.json vector (version 1 and 2, either
//       package's), key files (the committed ones, and WORK_DIR/python-key-file.jwe the driver
//       wrote; WORK_DIR/ts-key-file.jwe written for it), which WebCrypto keys the package makes
//       extractable, devices' keys and statements, the state file (the Python package's
//       WORK_DIR/python-state.json read, and one written for it to read), and no private key in
//       what a key or an error shows; X-Wing keys (WORK_DIR/python-xwing-keys.json, good and
//       degenerate keys the driver made) read as statements read them, beside what
//       @hpke/hybridkem-x-wing's encapsulation makes of each
//   node sealing_checks.js server CREDENTIALS_FILE WORK_DIR    against a --dev server: the
//       cosigned log verified, sealing for verified devices and opening against it (who sealed),
//       an endorsed second device, a revocation, a reset surfaced and refused until
//       acknowledged, and a server that lies
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { inspect } from "node:util";
import { clone, create, fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import { DeviceSchema, ItemSchema, WrappedKeySchema, clients, type Interceptor, type Item, type WrappedKey } from "zkplatform-client";
import { DeviceKeyPair, DeviceStatement, KEY_FILE_ITERATIONS, endorse, readKeyFile } from "zkplatform-client/devices";
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
  type Opened,
  type SealContext,
  type SignerDirectory,
} from "zkplatform-client/sealing";
import { StatementError, canonicalPublicJwk, parseStatement, verifyStatement } from "zkplatform-client/statements";
import { XWing } from "@hpke/hybridkem-x-wing";
import { generateCosignerKey, generateNoteKey } from "zkplatform-client/tlog";

type Report = Record<string, unknown>;
const [mode, ...args] = process.argv.slice(2);
const CONTEXT: SealContext = { tenantId: "acme", vaultId: "acme-shared", itemId: "checks-1", kind: "note" };
const text = (value: string) => new Uint8Array(Buffer.from(value, "utf8"));
const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64url");

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

function item(content: { encryptedPayload?: unknown; wrappedKeys: unknown }, context: SealContext = CONTEXT, version = 1n): Item {
  return create(ItemSchema, { ...context, version, ...(content as object) });
}

// A directory of the given devices, all live: where the offline checks find who sealed.
function directoryOf(...devices: { device: DeviceKeyPair; principalId: string; live?: boolean }[]): SignerDirectory {
  const byId = new Map(devices.map(({ device, principalId, live }) => [device.deviceId, { principalId, signingJwk: device.signingJwk, live: live ?? true }]));
  return { signer: (deviceId) => byId.get(deviceId) };
}

// The WebCrypto keys made while `call` runs (by whom, from the stack: the package's own code, or
// the HPKE or JOSE library it calls), private and secret ones only.
async function keysMade(call: () => Promise<unknown>): Promise<{ by: string; type: string; extractable: boolean }[]> {
  const subtle = globalThis.crypto.subtle as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
  const made: { by: string; type: string; extractable: boolean }[] = [];
  const originals = Object.fromEntries(["importKey", "generateKey", "deriveKey", "unwrapKey"].map((name) => [name, subtle[name]!]));
  const record = (key: unknown, stack: string) => {
    const keys = key !== null && typeof key === "object" && "privateKey" in key ? [(key as { privateKey: unknown }).privateKey] : [key];
    const by = stack.includes("/@hpke/") ? "hpke" : stack.includes("/jose/") ? "jose" : "package";
    for (const k of keys as { type: string; extractable: boolean }[]) if (k.type !== "public") made.push({ by, type: k.type, extractable: k.extractable });
  };
  for (const [name, original] of Object.entries(originals)) {
    subtle[name] = async (...a: unknown[]) => {
      const key = await original.apply(globalThis.crypto.subtle, a);
      record(key, new Error().stack ?? "");
      return key;
    };
  }
  try {
    await call();
  } finally {
    Object.assign(subtle, originals);
  }
  return made;
}

// -- offline ---------------------------------------------------------------------------------

async function roundTrip(curve: "X25519" | "P-256" | "X-Wing"): Promise<Report> {
  const key = await generateRecipientKey(curve);
  const signer = await DeviceKeyPair.generate();
  const directory = directoryOf({ device: signer, principalId: "alice" });
  const plaintext = text(`for ${curve}`);
  const sealed = item(await seal(plaintext, [key], CONTEXT, signer));
  const reloaded = await importRecipientKey(JSON.stringify(await key.exportPrivateJwk()));
  const opened = await openItem(sealed, key, directory);
  return {
    opens: same(opened.plaintext, plaintext),
    formatVersion: opened.formatVersion,
    sealedBy: opened.sealedBy?.deviceId === signer.deviceId && opened.sealedBy.principalId === "alice" && opened.sealedBy.live,
    reloadedOpens: same((await openItem(sealed, reloaded, directory)).plaintext, plaintext),
    sameKeyId: reloaded.keyId === key.keyId,
    privateJwkMembers: Object.keys(await key.exportPrivateJwk()).sort(),
  };
}

// The payload as docs/sealing.md says it is; the driver checks the signature itself, with the
// statement rebuilt from the doc.
async function format(): Promise<Report> {
  const [x25519, p256, xwing, signer] = [await generateRecipientKey("X25519"), await generateRecipientKey("P-256"), await generateRecipientKey("X-Wing"), await DeviceKeyPair.generate()];
  const { encryptedPayload: payload, wrappedKeys } = await seal(text("format"), [p256, xwing, x25519], CONTEXT, signer, 7);
  const wrapped = (key: RecipientKeyPair) => wrappedKeys.find((w) => w.recipientId === key.recipientId)!;
  return {
    alg: payload.alg,
    version: payload.version,
    nonceBytes: Buffer.from(payload.nonce, "base64url").length,
    aad: Buffer.from(payload.aad, "base64url").toString("utf8"),
    ciphertextBytes: Buffer.from(payload.ciphertext, "base64url").length,
    commitmentBytes: Buffer.from(payload.commitment, "base64url").length,
    signatureBytes: Buffer.from(payload.signature, "base64url").length,
    signerIsDevice: payload.signer === signer.deviceId,
    sortedByRecipientId: wrappedKeys.map((w) => w.recipientId).join() === wrappedKeys.map((w) => w.recipientId).sort().join(),
    recipientIdIsHexKeyId: [x25519, p256, xwing].every((key) => wrapped(key).recipientId === Buffer.from(key.keyId, "base64url").toString("hex")),
    wrapAlgs: { X25519: wrapped(x25519).wrapAlg, "P-256": wrapped(p256).wrapAlg, "X-Wing": wrapped(xwing).wrapAlg },
    wrappedKeyBytes: Object.fromEntries([x25519, p256, xwing].map((key) => [key.curve, Buffer.from(wrapped(key).wrappedKey, "base64url").length])),
    xwingJwk: { members: Object.keys(JSON.parse(xwing.jwk) as object), pubBytes: Buffer.from((JSON.parse(xwing.jwk) as { pub: string }).pub, "base64url").length },
    // For the driver to verify: the fields as sent and the signing key.
    payload: { aad: payload.aad, nonce: payload.nonce, ciphertext: payload.ciphertext, commitment: payload.commitment, signer: payload.signer, signature: payload.signature },
    recipients: wrappedKeys.map((w) => w.recipientId),
    signingJwk: signer.signingJwk,
  };
}

async function recipients(): Promise<Report> {
  const [a, b, c] = await Promise.all([generateRecipientKey("X25519"), generateRecipientKey("P-256"), generateRecipientKey("X25519")]);
  const signer = await DeviceKeyPair.generate();
  const directory = directoryOf({ device: signer, principalId: "alice" });
  const plaintext = text("for three");
  // Each key once, whichever way it is given: the pair, its public JWK text, an object with it.
  const content = await seal(plaintext, [a, b, c, a.jwk, b, { jwk: c.jwk }, b.publicKey], CONTEXT, signer);
  const sealed = item(content);
  const opened = await Promise.all([a, b, c].map(async (key) => same((await openItem(sealed, key, directory)).plaintext, plaintext)));
  const many = await Promise.all(Array.from({ length: 257 }, () => generateRecipientKey("X25519")));
  return {
    wrappedKeys: content.wrappedKeys.length,
    opened,
    none: await outcome(() => seal(plaintext, [], CONTEXT, signer)),
    max: (await seal(plaintext, many.slice(0, 256), CONTEXT, signer)).wrappedKeys.length,
    tooMany: await outcome(() => seal(plaintext, many, CONTEXT, signer)),
    largest: await outcome(() => seal(new Uint8Array(MAX_PLAINTEXT_BYTES), [a], CONTEXT, signer)),
    tooLarge: await outcome(() => seal(new Uint8Array(MAX_PLAINTEXT_BYTES + 1), [a], CONTEXT, signer)),
    privateAsRecipient: await outcome(async () => seal(plaintext, [JSON.stringify(await a.exportPrivateJwk())], CONTEXT, signer)),
    unknownCurve: await outcome(() => seal(plaintext, ['{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}'], CONTEXT, signer)),
    notOnCurve: await outcome(() => seal(plaintext, [JSON.stringify({ ...JSON.parse(b.jwk), y: JSON.parse(a.jwk).x })], CONTEXT, signer)),
    badContext: await outcome(() => seal(plaintext, [a], { ...CONTEXT, itemId: 'a"b' }, signer)),
    noSigner: await outcome(() => seal(plaintext, [a], CONTEXT, undefined as unknown as DeviceKeyPair)),
    versionZero: await outcome(() => seal(plaintext, [a], CONTEXT, signer, 0)),
  };
}

// share signs again for the new recipients and the next version, under the same content key
// (replacing a wrapped key of an unknown wrap_alg); unshare seals again, under a new one.
async function sharing(testdata: string): Promise<Report> {
  const [owner, friend, other, later] = await Promise.all([
    generateRecipientKey("X25519"),
    generateRecipientKey("P-256"),
    generateRecipientKey("X25519"),
    generateRecipientKey("P-256"),
  ]);
  const [ownerDevice, friendDevice] = [await DeviceKeyPair.generate(), await DeviceKeyPair.generate()];
  const directory = directoryOf({ device: ownerDevice, principalId: "alice" }, { device: friendDevice, principalId: "bob", live: false });
  const plaintext = text("shared, then not");
  const original = item(await seal(plaintext, [owner, other], CONTEXT, ownerDevice));
  // other's wrapped key replaced by one of a wrap_alg no package knows (the signed recipients
  // unchanged): other cannot open it, and share must not take it for other's usable key.
  const planted = clone(ItemSchema, original);
  const otherEntry = planted.wrappedKeys.find((key) => key.recipientId === other.recipientId)!;
  Object.assign(otherEntry, { wrapAlg: "RSA-OAEP-256", wrappedKey: "a2V5" });
  // The item as UpdateItem answers it: the content sent, the next version.
  const next = (it: Item, content: { encryptedPayload: unknown; wrappedKeys: unknown }) =>
    item(content, { tenantId: it.tenantId, vaultId: it.vaultId, itemId: it.itemId, kind: it.kind }, it.version + 1n);
  const shared = next(planted, await share(planted, owner, [friend, owner, friend.jwk], ownerDevice, directory));
  const replanted = next(shared, await share(shared, friend, [other], friendDevice, directory));
  const resigned = next(replanted, await share(replanted, owner, [], ownerDevice, directory));
  const unshared = next(resigned, await unshare(resigned, owner, [owner, friend, later], ownerDevice, directory));
  const oldFriendKey = shared.wrappedKeys.find((key) => key.recipientId === friend.recipientId)!;
  const mixed = clone(ItemSchema, unshared);
  mixed.wrappedKeys = mixed.wrappedKeys.map((key) => (key.recipientId === friend.recipientId ? oldFriendKey : key));
  const sealedBy = async (it: Item, key: RecipientKeyPair) => (await openItem(it, key, directory)).sealedBy;
  // A version 1 item (sealed-ts.json's first) shared: sealed again as version 2, for the opener and those given.
  const v1 = JSON.parse(readFileSync(join(testdata, "sealed-ts.json"), "utf8")).vectors[0] as { item: JsonValue; recipient: string };
  const v1Key = await importRecipientKey((JSON.parse(readFileSync(join(testdata, "recipients.json"), "utf8")).keys as Record<string, object>)[v1.recipient]!);
  const v1Item = fromJson(ItemSchema, v1.item);
  const v1Shared = next(v1Item, await share(v1Item, v1Key, [later], ownerDevice, directory));
  return {
    plantedRefused: await outcome(() => openItem(planted, other, directory)),
    shareKeepsExisting: original.wrappedKeys.every((key) => key.recipientId === other.recipientId || toJsonText(key) === toJsonText(shared.wrappedKeys.find((k) => k.recipientId === key.recipientId)!)),
    shareKeepsUnknownOfOthers: toJsonText(shared.wrappedKeys.find((key) => key.recipientId === other.recipientId)!) === toJsonText(otherEntry),
    shareAdds: shared.wrappedKeys.length - original.wrappedKeys.length,
    sameContent: shared.encryptedPayload!.ciphertext === original.encryptedPayload!.ciphertext,
    friendOpensShared: same((await openItem(shared, friend, directory)).plaintext, plaintext),
    sharedSignedBy: (await sealedBy(shared, friend))?.principalId,
    sharedServedAsBefore: await outcome(() => openItem(item({ encryptedPayload: shared.encryptedPayload, wrappedKeys: shared.wrappedKeys }, CONTEXT, 1n), friend, directory)),
    plantedReplaced: same((await openItem(replanted, other, directory)).plaintext, plaintext),
    replantedSignedBy: await sealedBy(replanted, other),
    resignedOnly: { sameKeys: toJsonText(replanted.wrappedKeys) === toJsonText(resigned.wrappedKeys), opens: same((await openItem(resigned, owner, directory)).plaintext, plaintext), version: resigned.version.toString() },
    shareByNonRecipient: await outcome(() => share(original, later, [later], ownerDevice, directory)),
    removedAfterUnshare: await outcome(() => openItem(unshared, other, directory)),
    keptAfterUnshare: same((await openItem(unshared, friend, directory)).plaintext, plaintext),
    addedByUnshare: same((await openItem(unshared, later, directory)).plaintext, plaintext),
    unsharedWrappedKeys: unshared.wrappedKeys.length,
    newNonce: unshared.encryptedPayload?.nonce !== resigned.encryptedPayload?.nonce,
    // The content key wrapped before unshare, in place of the new one: not what the payload commits to.
    oldContentKey: await outcome(() => openItem(mixed, friend, directory)),
    v1Shared: {
      formatVersion: v1Shared.encryptedPayload!.version,
      opener: (await openItem(v1Shared, v1Key, directory)).formatVersion,
      added: same((await openItem(v1Shared, later, directory)).plaintext, (await openItem(v1Item, v1Key, directory)).plaintext),
      wrappedKeys: v1Shared.wrappedKeys.length,
      newNonce: v1Shared.encryptedPayload!.nonce !== v1Item.encryptedPayload!.nonce,
    },
  };
}

function toJsonText(key: WrappedKey | WrappedKey[]): string {
  return JSON.stringify(Array.isArray(key) ? key.map((k) => toJson(WrappedKeySchema, k)) : toJson(WrappedKeySchema, key));
}

interface SignerDocument {
  deviceId: string;
  principalId: string;
  live: boolean;
  signingJwk: string;
  inDirectory: boolean;
}
type Expect = { ok: true; plaintext: string; formatVersion: number; signer: string | null; signerLive?: boolean } | { ok: false; reason: string };
interface VectorFile {
  vectors: { name: string; recipient: string; item: JsonValue; expect?: Expect; plaintext?: string; error?: string }[];
}

// What opening answered, in a vector's terms: its plaintext, format version and signer (by the
// name signers.json gives it), or the reason.
function answered(opened: Opened, names: Map<string, string>): Expect {
  const signer = opened.sealedBy === null ? null : (names.get(opened.sealedBy.deviceId) ?? `unnamed ${opened.sealedBy.deviceId}`);
  const answer: Expect = { ok: true, plaintext: b64(opened.plaintext), formatVersion: opened.formatVersion, signer };
  if (opened.sealedBy !== null) answer.signerLive = opened.sealedBy.live;
  return answer;
}

// Every vector of every clients/testdata/sealed-*.json (version 1's files say plaintext or
// error, version 2's expect): each file's vectors in order, each what opening answered, against
// the directory of signers.json's devices inDirectory.
async function vectors(testdata: string): Promise<Report> {
  const keys = JSON.parse(readFileSync(join(testdata, "recipients.json"), "utf8")).keys as Record<string, object>;
  const signers = JSON.parse(readFileSync(join(testdata, "signers.json"), "utf8")).signers as Record<string, SignerDocument>;
  const directory: SignerDirectory = {
    signer: (deviceId) => Object.values(signers).find((s) => s.deviceId === deviceId && s.inDirectory),
  };
  const names = new Map(Object.entries(signers).map(([name, s]) => [s.deviceId, name]));
  const pairs = new Map<string, RecipientKeyPair>();
  for (const [name, jwk] of Object.entries(keys)) pairs.set(name, await importRecipientKey(jwk));
  const report: Record<string, Expect[]> = {};
  for (const file of readdirSync(testdata).filter((name) => /^sealed-.*\.json$/.test(name)).sort()) {
    const data = JSON.parse(readFileSync(join(testdata, file), "utf8")) as VectorFile;
    const answers: Expect[] = [];
    for (const vector of data.vectors) {
      try {
        answers.push(answered(await openItem(fromJson(ItemSchema, vector.item), pairs.get(vector.recipient)!, directory), names));
      } catch (error) {
        if (!(error instanceof SealingError)) throw error;
        answers.push({ ok: false, reason: error.reason });
      }
    }
    report[file] = answers;
  }
  return report;
}

// Key files: written and read back, the header docs/sealing.md says, every refusal with its
// reason; the committed files of both packages (clients/testdata/key-files.json) and the one the
// driver's Python package wrote (WORK_DIR/python-key-file.jwe) opened; one written for it.
async function keyFiles(testdata: string, work: string): Promise<Report> {
  const device = await DeviceKeyPair.generate("P-256");
  const passphrase = "a passphrase for the checks, ünïcode too";
  const file = await device.toKeyFile(passphrase, { tenantId: "acme", principalId: "bob" });
  const [protectedHeader, encryptedKey, iv, ciphertext, tag] = file.split(".") as [string, string, string, string, string];
  const header = JSON.parse(Buffer.from(protectedHeader, "base64url").toString("utf8")) as Record<string, unknown>;
  const withHeader = (changes: Record<string, unknown>) => [b64(text(JSON.stringify({ ...header, ...changes }))), encryptedKey, iv, ciphertext, tag].join(".");
  const read = await readKeyFile(file, passphrase);
  const plain = await device.toKeyFile(null, { tenantId: "acme", principalId: "bob", unencrypted: true });
  const signer = await DeviceKeyPair.generate();
  const sealed = item(await seal(text("for the key file's device"), [device.recipientKey()], CONTEXT, signer));
  const opensSealed = same((await openItem(sealed, read.device, directoryOf({ device: signer, principalId: "alice" }))).plaintext, text("for the key file's device"));
  const flipped = (part: string) => b64(Buffer.from(part, "base64url").map((byte, i) => (i === 0 ? byte ^ 1 : byte)));

  // The committed key files of both packages, with what key-files.json says they hold.
  const about = JSON.parse(readFileSync(join(testdata, "key-files.json"), "utf8")) as { files: Record<string, { passphrase: string; tenantId: string; principalId: string; deviceId: string; signer: string; agreementKey: string }> };
  const recipientsFile = JSON.parse(readFileSync(join(testdata, "recipients.json"), "utf8")).keys as Record<string, object>;
  const signersFile = JSON.parse(readFileSync(join(testdata, "signers.json"), "utf8")).signers as Record<string, SignerDocument>;
  const committed: Report = {};
  for (const [name, expected] of Object.entries(about.files)) {
    const path = join(testdata, name);
    let content: string;
    try {
      content = readFileSync(path, "utf8");
    } catch {
      committed[name] = "missing";
      continue;
    }
    const opened = await readKeyFile(content, expected.passphrase);
    const agreement = await importRecipientKey(recipientsFile[expected.agreementKey]!);
    committed[name] = {
      holds:
        opened.device.deviceId === expected.deviceId &&
        opened.device.deviceId === signersFile[expected.signer]!.deviceId &&
        opened.device.agreementKeyId === agreement.keyId &&
        opened.tenantId === expected.tenantId &&
        opened.principalId === expected.principalId,
      wrongPassphrase: await outcome(() => readKeyFile(content, `${expected.passphrase}!`)),
    };
  }
  let fromPython: Report | string = "missing";
  try {
    const pythonFile = readFileSync(join(work, "python-key-file.jwe"), "utf8");
    const { passphrase: pythonPassphrase, deviceId, agreementKeyId } = JSON.parse(readFileSync(join(work, "python-key-file.json"), "utf8")) as { passphrase: string; deviceId: string; agreementKeyId: string };
    const opened = await readKeyFile(pythonFile, pythonPassphrase);
    fromPython = {
      deviceId: opened.device.deviceId === deviceId,
      agreementKeyId: opened.device.agreementKeyId === agreementKeyId,
      agreementKeyType: opened.device.recipientKey().curve,
      wrongPassphrase: await outcome(() => readKeyFile(pythonFile, "not it")),
    };
  } catch (error) {
    fromPython = error instanceof SealingError ? error.reason : String(error);
  }
  const forPython = await DeviceKeyPair.generate("X-Wing");
  writeFileSync(join(work, "ts-key-file.jwe"), await forPython.toKeyFile(passphrase, { tenantId: "acme", principalId: "carol" }));
  writeFileSync(join(work, "ts-key-file.json"), JSON.stringify({ passphrase, deviceId: forPython.deviceId, agreementKeyId: forPython.agreementKeyId }));

  return {
    header: { members: Object.keys(header).sort(), alg: header.alg, enc: header.enc, p2c: header.p2c, p2sBytes: Buffer.from(String(header.p2s), "base64url").length },
    iterations: KEY_FILE_ITERATIONS,
    parts: file.split(".").length,
    readBack: read.device.deviceId === device.deviceId && read.device.agreementKeyId === device.agreementKeyId && read.tenantId === "acme" && read.principalId === "bob",
    fromKeyFile: (await DeviceKeyPair.fromKeyFile(file, passphrase)).deviceId === device.deviceId,
    opensSealed,
    newSaltEachTime: (await device.toKeyFile(passphrase, { tenantId: "acme", principalId: "bob" })).split(".")[0] !== protectedHeader,
    wrongPassphrase: await outcome(() => readKeyFile(file, "not the passphrase")),
    damagedCiphertext: await outcome(() => readKeyFile([protectedHeader, encryptedKey, iv, flipped(ciphertext), tag].join("."), passphrase)),
    damagedKey: await outcome(() => readKeyFile([protectedHeader, flipped(encryptedKey), iv, ciphertext, tag].join("."), passphrase)),
    notJwe: await outcome(() => readKeyFile("not a key file", passphrase)),
    plainWithoutSaying: await outcome(() => readKeyFile(plain, passphrase)),
    plainSaid: (await readKeyFile(plain, null, { unencrypted: true })).device.deviceId === device.deviceId,
    plainMembers: Object.keys(JSON.parse(plain) as object),
    jweAsPlain: await outcome(() => readKeyFile(file, null, { unencrypted: true })),
    writePlainWithoutSaying: await outcome(() => device.toKeyFile(null, { tenantId: "acme", principalId: "bob" })),
    writeEmptyPassphrase: await outcome(() => device.toKeyFile("", { tenantId: "acme", principalId: "bob" })),
    writeTooFewIterations: await outcome(() => device.toKeyFile(passphrase, { tenantId: "acme", principalId: "bob", iterations: 99_999 })),
    tooFewIterations: await outcome(() => readKeyFile(withHeader({ p2c: 99_999 }), passphrase)),
    tooManyIterations: await outcome(() => readKeyFile(withHeader({ p2c: 300_001 }), passphrase)),
    otherAlg: await outcome(() => readKeyFile(withHeader({ alg: "PBES2-HS256+A128KW" }), passphrase)),
    otherEnc: await outcome(() => readKeyFile(withHeader({ enc: "A128GCM" }), passphrase)),
    committed,
    fromPython,
  };
}

// Which WebCrypto keys sealing, opening and key files make, and whether any private or secret
// key the package itself makes is extractable (none may be).
async function extractable(): Promise<Report> {
  const made = await keysMade(async () => {
    const device = await DeviceKeyPair.generate("X25519");
    const p256 = await generateRecipientKey("P-256");
    const imported = await importRecipientKey(await p256.exportPrivateJwk());
    const directory = directoryOf({ device, principalId: "alice" });
    const sealed = item(await seal(text("x"), [device.recipientKey(), imported], CONTEXT, device));
    await openItem(sealed, device, directory);
    await openItem(sealed, imported, directory);
    await DeviceKeyPair.fromKeyFile(await device.toKeyFile("p", { tenantId: "acme", principalId: "alice" }), "p");
  });
  const own = made.filter((key) => key.by === "package");
  const libraries = Object.fromEntries(
    ["hpke", "jose"].map((by) => [by, { made: made.filter((key) => key.by === by).length, extractable: made.filter((key) => key.by === by && key.extractable).length }]),
  );
  return {
    packageKeys: own.length,
    packageExtractable: own.filter((key) => key.extractable).length,
    privateKeys: own.filter((key) => key.type === "private").length,
    libraries,
  };
}

// A device's keys: exported and read back, its statements signed and parsed as the log's readers
// parse them, an endorsement only of what names the endorser and the new device signed.
async function devices(): Promise<Report> {
  const [phone, laptop, tablet] = [await DeviceKeyPair.generate("P-256"), await DeviceKeyPair.generate("X25519"), await DeviceKeyPair.generate("X-Wing")];
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
    // An X-Wing device, endorsed by the laptop: the driver parses and verifies it with the Python package.
    xwing: (() => {
      const statement = endorse(tablet.deviceStatement("acme", "bob", { endorser: laptop.deviceId, created: 1_800_000_003 }), laptop);
      return { ...statement.request(), parsesToItself: parseStatement(statement.text).canonical() === statement.text, agreementJwkMembers: Object.keys(JSON.parse(tablet.agreementJwk) as object) };
    })(),
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

// No private key material (nor a key file's passphrase) in what a key pair or device shows, nor
// in any error about one: of importing keys, sealing, opening (every vector of every file) and key files.
async function secrets(testdata: string): Promise<Report> {
  const keys = JSON.parse(readFileSync(join(testdata, "recipients.json"), "utf8")).keys as Record<string, Record<string, string>>;
  const shown: string[] = [];
  const privateOf = (jwk: Record<string, string>) => jwk.d ?? jwk.priv; // X-Wing's private member is priv
  const errorText = async (call: () => Promise<unknown>) => {
    try {
      await call();
    } catch (error) {
      shown.push(String(error), inspect(error), error instanceof Error ? (error.stack ?? "") : "");
    }
  };
  const signer = await DeviceKeyPair.generate();
  const directory = directoryOf({ device: signer, principalId: "alice" });
  const [a, b] = [keys["x25519-a"]!, keys["p256-a"]!];
  for (const jwk of Object.values(keys)) {
    const pair = await importRecipientKey(jwk);
    shown.push(inspect(pair, { showHidden: true, depth: 10 }), JSON.stringify(pair), JSON.stringify(Object.entries(pair)), String(pair));
    await errorText(() => seal(text("x"), [JSON.stringify(jwk)], CONTEXT, signer)); // a private JWK as a recipient
    await errorText(() => openItem(item({ encryptedPayload: { alg: "A256GCM", version: 2 }, wrappedKeys: [] }), pair, directory));
  }
  await errorText(() => importRecipientKey({ ...a, x: keys["x25519-b"]!.x })); // d and x of two keys
  await errorText(() => importRecipientKey({ ...b, y: keys["p256-b"]!.y }));
  await errorText(() => importRecipientKey({ ...a, d: a.d!.slice(1) }));
  await errorText(() => importRecipientKey({ ...a, kty: "EC" }));
  const xwingKey = keys["xwing-a"]!;
  const otherXWing = JSON.parse((await generateRecipientKey("X-Wing")).jwk) as { pub: string };
  await errorText(() => importRecipientKey({ ...xwingKey, pub: otherXWing.pub })); // priv and pub of two keys
  await errorText(() => importRecipientKey({ ...xwingKey, priv: xwingKey.priv!.slice(1) }));
  // Every refusal of every vector file.
  const signers = JSON.parse(readFileSync(join(testdata, "signers.json"), "utf8")).signers as Record<string, SignerDocument & { privateJwk: { d: string } }>;
  const vectorDirectory: SignerDirectory = { signer: (deviceId) => Object.values(signers).find((s) => s.deviceId === deviceId && s.inDirectory) };
  for (const file of readdirSync(testdata).filter((name) => /^sealed-.*\.json$/.test(name))) {
    for (const vector of (JSON.parse(readFileSync(join(testdata, file), "utf8")) as VectorFile).vectors) {
      await errorText(async () => openItem(fromJson(ItemSchema, vector.item), await importRecipientKey(keys[vector.recipient]!), vectorDirectory));
    }
  }
  // A device's two private keys and its key file's passphrase: in none of what it shows, nor in an error about it.
  const device = await DeviceKeyPair.generate("P-256");
  const jwks = await device.toJwks();
  const passphrase = "the checks' secret passphrase";
  const file = await device.toKeyFile(passphrase, { tenantId: "acme", principalId: "bob" });
  const deviceSecrets = [jwks.signingKeyJwk.d!, jwks.privateKeyJwk.d!, passphrase];
  shown.push(inspect(device, { showHidden: true, depth: 10 }), JSON.stringify(device), JSON.stringify(Object.entries(device)), String(device));
  await errorText(() => DeviceKeyPair.fromJwks({ ...jwks.signingKeyJwk, x: JSON.parse(device.agreementJwk).x }, jwks.privateKeyJwk));
  await errorText(() => DeviceKeyPair.fromJwks({ ...jwks.signingKeyJwk, d: jwks.signingKeyJwk.d!.slice(1) }, jwks.privateKeyJwk));
  await errorText(() => DeviceKeyPair.fromJwks(jwks.signingKeyJwk, { ...jwks.privateKeyJwk, x: JSON.parse(device.agreementJwk).y }));
  await errorText(async () => endorse(device.deviceStatement("acme", "bob", { endorser: "x".repeat(43) }), device));
  await errorText(() => readKeyFile(file, `${passphrase}.`));
  await errorText(() => readKeyFile(file.slice(0, -3), passphrase));
  const plain = await device.toKeyFile(null, { tenantId: "acme", principalId: "bob", unencrypted: true });
  await errorText(() => readKeyFile(plain, passphrase));
  await errorText(() => readKeyFile(plain.replace('"deviceId":"', '"deviceId":"x'), null, { unencrypted: true }));
  await errorText(() => readKeyFile(plain.replace(jwks.privateKeyJwk.x!, jwks.privateKeyJwk.y!), null, { unencrypted: true }));
  const secretsShown = [...Object.values(keys).map(privateOf), ...Object.values(signers).map((s) => s.privateJwk.d), ...deviceSecrets].filter(
    (d) => d !== undefined && shown.some((line) => line.includes(d)),
  );
  return { checked: shown.length, secretsShown: secretsShown.length, inspected: inspect(await importRecipientKey(a)), device: inspect(device) === `DeviceKeyPair { deviceId: '${device.deviceId}' }` };
}

// X-Wing public keys the driver made (good ones and degenerate ones): what canonicalPublicJwk,
// the key log's reader, makes of each, and whether @hpke/hybridkem-x-wing's encapsulation (mlkem's
// FIPS 203 check, noble's X25519) takes it: the statement check and the library's must agree.
async function xwingKeys(work: string): Promise<Report> {
  const cases = JSON.parse(readFileSync(join(work, "python-xwing-keys.json"), "utf8")) as { name: string; jwk: Record<string, unknown> }[];
  const kem = new XWing();
  const signer = await DeviceKeyPair.generate();
  const report: Report = {};
  for (const { name, jwk } of cases) {
    const statement = await outcome(() => canonicalPublicJwk(jwk, { signing: false }));
    const pub = typeof jwk.pub === "string" ? new Uint8Array(Buffer.from(jwk.pub, "base64url")) : new Uint8Array(0);
    const library = await outcome(async () => kem.encap({ recipientPublicKey: await kem.deserializePublicKey(pub) }));
    const recipient = await outcome(() => seal(text("x"), [JSON.stringify(jwk)], CONTEXT, signer));
    report[name] = { statement, library: library === "ok" ? "ok" : "refused", recipient };
  }
  return report;
}

async function offline(testdata: string, work: string): Promise<Report> {
  return {
    roundTrip: { X25519: await roundTrip("X25519"), "P-256": await roundTrip("P-256"), "X-Wing": await roundTrip("X-Wing") },
    format: await format(),
    recipients: await recipients(),
    sharing: await sharing(testdata),
    vectors: await vectors(testdata),
    keyFiles: await keyFiles(testdata, work),
    extractable: await extractable(),
    devices: await devices(),
    stateFile: await stateFile(testdata, work),
    secrets: await secrets(testdata),
    xwingKeys: await xwingKeys(work),
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
  const created = (await alice.vault.createItem({ vaultId: context.vaultId, itemId, kind: context.kind, ...(await seal(plaintext, [...found.values()].flat(), context, aliceDevice)) })).item!;
  const read = async (id = itemId) => (await bob.vault.getItem({ vaultId: context.vaultId, itemId: id })).item!;
  // bob opens against the log his device verified: the content, and who sealed it.
  const bobOpened = await openItem(await read(), bobDevice, await bobDirectory.verify());
  const bobOpens = same(bobOpened.plaintext, plaintext);
  // A server that serves the item changed: a wrapped key added, a version it was not signed for.
  const changedItem = (change: (item: Item) => void) =>
    lying("GetItem", (answer) => {
      if (answer.item?.itemId === itemId) change(answer.item);
    });
  const served = async (change: (item: Item) => void) =>
    outcome(async () => openItem((await platform("bob", [changedItem(change)]).vault.getItem({ vaultId: context.vaultId, itemId })).item!, bobDevice, await bobDirectory.verify()));
  const unloggedDevice = await DeviceKeyPair.generate();
  const servedChanged = {
    keyAdded: await served((it) => it.wrappedKeys.push(create(WrappedKeySchema, { recipientId: unloggedDevice.recipientKey().recipientId, wrapAlg: "HPKE-Base-X25519-SHA256-A256GCM", wrappedKey: "a2V5" }))),
    replayedAsNewer: await served((it) => (it.version += 1n)),
  };
  // An item written with alice's token but signed by a device the log does not hold.
  const unlogged = "sealed-by-a-stranger";
  await alice.vault.createItem({ vaultId: context.vaultId, itemId: unlogged, kind: "note", ...(await seal(plaintext, [bobDevice], { ...context, itemId: unlogged, kind: "note" }, unloggedDevice)) });
  const strangerSigned = await outcome(async () => openItem(await read(unlogged), bobDevice, await bobDirectory.verify()));

  // bob's second device, a phone, endorsed by his first: alice finds it in the log and shares
  // the item with it, without sending the ciphertext again (the payload signed again).
  const phone = await DeviceKeyPair.generate("P-256");
  const phoneDirectory = directory("bob", "phone", phone);
  const added = await bobDirectory.addDevice(phone.deviceStatement("acme", "bob", { endorser: bobDevice.deviceId }), bobDevice);
  const phoneKeys = (await aliceDirectory.recipientKeys(["bob"])).get("bob")!.filter((key) => key.deviceId === phone.deviceId);
  const mask = (...paths: string[]) => create(FieldMaskSchema, { paths });
  const sharedContent = await share(created, aliceDevice, phoneKeys, aliceDevice, await aliceDirectory.verify());
  const sharedItem = (
    await alice.vault.updateItem({ vaultId: context.vaultId, itemId, baseVersion: created.version, updateMask: mask("encrypted_payload", "wrapped_keys"), ...sharedContent })
  ).item!;
  const phoneState = await phoneDirectory.verify(); // from nothing: it joined by endorsement, and is told of nothing before
  const phoneOpened = await openItem(await read(), phone, phoneState);
  await bobDirectory.verify(); // bob endorsed it himself: nothing to tell

  // The phone seals an item for alice and bob: signed by the phone, which alice sees.
  const byPhone = "sealed-by-bobs-phone";
  const phoneRecipients = [...(await phoneDirectory.recipientKeys(["alice", "bob"])).values()].flat();
  await bob.vault.createItem({ vaultId: context.vaultId, itemId: byPhone, kind: "note", ...(await seal(text("from bob's phone"), phoneRecipients, { ...context, itemId: byPhone, kind: "note" }, phone)) });
  const aliceOpens = async (id: string) => openItem((await alice.vault.getItem({ vaultId: context.vaultId, itemId: id })).item!, aliceDevice, await aliceDirectory.verify());
  const byPhoneBefore = (await aliceOpens(byPhone)).sealedBy;

  // unshare: sealed again for alice alone; neither of bob's devices opens it.
  const resealed = await unshare(sharedItem, aliceDevice, [aliceDevice.recipientKey()], aliceDevice, await aliceDirectory.verify());
  await alice.vault.updateItem({ vaultId: context.vaultId, itemId, baseVersion: sharedItem.version, updateMask: mask("encrypted_payload", "wrapped_keys"), ...resealed });
  const afterUnshare = await read();

  // bob revokes the phone from his first device: no longer sealed for; the phone is told.
  await bobDirectory.revokeDevice(phone.deviceId, bobDevice);
  const afterRevocation = ids(await aliceDirectory.recipientKeys(["bob"]), "bob");
  // What the phone sealed before still opens, its signer answered as revoked.
  const byPhoneAfter = (await aliceOpens(byPhone)).sealedBy;
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
    sealedBy: { ...bobOpened.sealedBy, formatVersion: bobOpened.formatVersion },
    servedChanged,
    strangerSigned,
    added: added?.deviceId === phone.deviceId && added.endorserDeviceId === bobDevice.deviceId,
    phone: {
      found: phoneKeys.length,
      opens: same(phoneOpened.plaintext, plaintext),
      sealedBy: phoneOpened.sealedBy,
      sharedVersion: sharedItem.version.toString(),
      live: phoneState.liveDevices("bob").map((d) => d.deviceId).includes(phone.deviceId),
    },
    byPhone: { before: byPhoneBefore, after: byPhoneAfter },
    afterUnshare: {
      bob: await outcome(async () => openItem(afterUnshare, bobDevice, (await bobDirectory.state())!)),
      phone: await outcome(() => openItem(afterUnshare, phone, phoneState)),
      alice: same((await aliceOpens(itemId)).plaintext, plaintext),
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
