// Write clients/testdata/sealed-v2-ts.json: items this package sealed (version 2) for the test
// recipients (clients/testdata/recipients.json), signed by the test devices of
// clients/testdata/signers.json, each with what opening it must answer (the plaintext and who
// sealed it, or the reason it must not open), for every implementation of docs/sealing.md to
// check; and clients/testdata/key-file-ts.jwe, a device key file under the passphrase
// clients/testdata/key-files.json names. Not part of the package: it imports the compiled package's
// own modules (../dist/), internals included, and compiles into dist-tools/ (tools/tsconfig.json).
// HPKE's ephemeral keys, nonces and salts are fresh on each run, so the files change each time: run
// it by hand and commit what it writes (with key-files.json's entry for the key file), never from a test:
//   make ts-build && node clients/ts/dist-tools/make-sealed-vectors.js
// (clients/testdata/sealed-ts.json, version 1, was written by this script's 1.1 form: see its
// history; nothing writes version 1 any more.) Every key type is sealed for: X25519, P-256 and
// X-Wing (xwing-a, the hybrid ML-KEM-768 + X25519 KEM), with X-Wing's own bad cases.
import { readFileSync, writeFileSync } from "node:fs";
import { clone, create, fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { sha512 } from "@noble/hashes/sha2.js";
import { base64url, fromBase64url, sha256 } from "../dist/bytes.js";
import { DeviceKeyPair } from "../dist/devices.js";
import { ItemSchema, WrappedKeySchema, type Item, type WrappedKey } from "../dist/gen/zkplatform_api/platform/v1/vault_pb.js";
import { wrapKey } from "../dist/key-wrapping.js";
import { SealedItemStatement } from "../dist/sealing-statement.js";
import { RecipientKeyPair, importRecipientKey, seal, share, unshare, type SealContext, type SignerDirectory } from "../dist/sealing.js";

const TESTDATA = new URL("../../testdata/", import.meta.url);
const UPDATED_AT = timestampFromDate(new Date("2027-01-15T09:00:00Z"));
const KEY_FILE = "key-file-ts.jwe";
// Not a secret: the key file's keys are the committed test keys; it shows the passphrase's bytes
// (UTF-8, not normalized) are what both packages derive the key from.
const KEY_FILE_PASSPHRASE = "correct horse battery staple — sealed by TypeScript ✓";

type Expect = { ok: true; plaintext: string; formatVersion: 2; signer: string; signerLive: boolean } | { ok: false; reason: string };
interface Vector {
  name: string;
  recipient: Name;
  item: JsonValue;
  expect: Expect;
}

const names = ["x25519-a", "x25519-b", "p256-a", "p256-b", "xwing-a"] as const;
type Name = (typeof names)[number];
type SignerName = "alice-laptop" | "bob-phone" | "carol-old" | "mallory";
interface SignerDocument {
  deviceId: string;
  principalId: string;
  live: boolean;
  signingJwk: string;
  privateJwk: object;
  inDirectory: boolean;
}

const read = (name: string) => JSON.parse(readFileSync(new URL(name, TESTDATA), "utf8"));
const recipients = read("recipients.json").keys as Record<Name, object>;
const signerDocuments = read("signers.json").signers as Record<SignerName, SignerDocument>;
const keys = Object.fromEntries(await Promise.all(names.map(async (name) => [name, await importRecipientKey(recipients[name])]))) as Record<Name, RecipientKeyPair>;
// A signer's agreement key plays no part in sealing: any test key will do.
const signers = Object.fromEntries(
  await Promise.all(Object.entries(signerDocuments).map(async ([name, s]) => [name, await DeviceKeyPair.fromJwks(s.privateJwk, recipients["x25519-a"])])),
) as Record<SignerName, DeviceKeyPair>;
const nameOf = new Map(Object.entries(signerDocuments).map(([name, s]) => [s.deviceId, name]));
// The directory of the vectors: the signers inDirectory, live as signers.json says.
const directory: SignerDirectory = {
  signer: (deviceId) => {
    const s = Object.values(signerDocuments).find((d) => d.deviceId === deviceId && d.inDirectory);
    return s && { principalId: s.principalId, signingJwk: s.signingJwk, live: s.live };
  },
};

async function sealed(plaintext: Uint8Array, to: Name[], options: { context?: Partial<SealContext>; by?: SignerName; version?: bigint } = {}): Promise<Item> {
  const context: SealContext = { tenantId: "acme", vaultId: "acme-shared", itemId: "note-1", kind: "note", ...options.context };
  const version = options.version ?? 1n;
  const content = await seal(
    plaintext,
    to.map((name) => keys[name]),
    context,
    signers[options.by ?? "alice-laptop"],
    version,
  );
  return create(ItemSchema, { ...context, version, updatedAt: UPDATED_AT, ...content });
}

const text = (value: string) => new TextEncoder().encode(value);

// The item with `change` made to a copy of it, as a server (or someone who can write the store)
// might change it.
function changed(item: Item, change: (copy: Item) => void): Item {
  const copy = clone(ItemSchema, item);
  change(copy);
  return copy;
}

function flipBit(text: string, at: "first" | "last"): string {
  const bytes = fromBase64url(text)!;
  bytes[at === "first" ? 0 : bytes.length - 1]! ^= 1;
  return base64url(bytes);
}

// The same bytes in a text that is not canonical: the last character's unused low bits set, which
// a lenient decoder ignores. Only for texts whose length leaves such bits (not a multiple of 4).
function nonCanonical(text: string): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  if (text.length % 4 === 0) throw new RangeError("no unused bits in this text");
  return text.slice(0, -1) + alphabet[alphabet.indexOf(text.at(-1)!) | 1];
}

const entryOf = (item: Item, name: Name): WrappedKey => item.wrappedKeys.find((key) => key.recipientId === keys[name].recipientId)!;

// The payload signed again by `by` for the item's recipients and version: a sealer that signs
// what it should not (it holds its own signing key).
function resigned(item: Item, by: SignerName = "alice-laptop"): Item {
  return changed(item, (copy) => {
    const payload = copy.encryptedPayload!;
    const ciphertextSha256 = base64url(sha256(fromBase64url(payload.ciphertext)!));
    const fields = { aad: payload.aad, commitment: payload.commitment, nonce: payload.nonce, ciphertextSha256, signer: signers[by].deviceId };
    payload.signer = signers[by].deviceId;
    payload.signature = base64url(signers[by].sign(new SealedItemStatement(fields, copy.wrappedKeys.map((key) => key.recipientId), copy.version)));
  });
}

// `signature`, the seed's own of `message`, with R moved by the point of order 2, (0, -1): R' =
// (-x, -y), and S' = r + k'a made for R' with the same nonce r. [S']B - [k']A is R, not R': only a
// cofactored check accepts it, as scripts/ed25519_cofactored.py makes them for the Python vectors.
const ORDER = 2n ** 252n + 27742317777372353535851937790883648493n; // L
const SIGN_BIT = 1n << 255n;
const littleEndian = (bytes: Uint8Array): bigint => bytes.reduceRight((value, byte) => (value << 8n) | BigInt(byte), 0n);
const toLittleEndian = (value: bigint): Uint8Array => Uint8Array.from({ length: 32 }, (_, i) => Number((value >> BigInt(8 * i)) & 0xffn));
function cofactoredOnly(seed: Uint8Array, publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): Uint8Array {
  const clamped = sha512(seed).subarray(0, 32);
  clamped[0]! &= 248;
  clamped[31]! &= 127;
  clamped[31]! |= 64;
  const a = littleEndian(clamped);
  const challenge = (r: Uint8Array) => littleEndian(sha512(new Uint8Array([...r, ...publicKey, ...message]))) % ORDER;
  const nonce = (((littleEndian(signature.subarray(32)) - challenge(signature.subarray(0, 32)) * a) % ORDER) + ORDER) % ORDER;
  const encoded = littleEndian(signature.subarray(0, 32));
  // -y, and the other sign for -x, as x != 0 (R = rB is of order L)
  const moved = toLittleEndian((2n ** 255n - 19n - (encoded & (SIGN_BIT - 1n))) | ((encoded & SIGN_BIT) ^ SIGN_BIT));
  return new Uint8Array([...moved, ...toLittleEndian((nonce + challenge(moved) * a) % ORDER)]);
}

// The item's own signature (by `by`) made again as cofactoredOnly makes it.
function cofactoredOnlySigned(item: Item, by: SignerName): Item {
  return changed(item, (copy) => {
    const payload = copy.encryptedPayload!;
    const ciphertextSha256 = base64url(sha256(fromBase64url(payload.ciphertext)!));
    const fields = { aad: payload.aad, commitment: payload.commitment, nonce: payload.nonce, ciphertextSha256, signer: payload.signer };
    const message = new TextEncoder().encode(new SealedItemStatement(fields, copy.wrappedKeys.map((key) => key.recipientId), copy.version).canonical());
    const seed = fromBase64url((signerDocuments[by].privateJwk as { d: string }).d)!;
    const publicKey = fromBase64url((JSON.parse(signerDocuments[by].signingJwk) as { x: string }).x)!;
    payload.signature = base64url(cofactoredOnly(seed, publicKey, message, fromBase64url(payload.signature)!));
  });
}

const vectors: Vector[] = [];
const opens = (name: string, recipient: Name, item: Item, plaintext: Uint8Array, signer: SignerName) =>
  vectors.push({
    name,
    recipient,
    item: toJson(ItemSchema, item),
    expect: { ok: true, plaintext: base64url(plaintext), formatVersion: 2, signer, signerLive: signerDocuments[signer].live },
  });
const refuses = (name: string, recipient: Name, item: Item, reason: string) => vectors.push({ name, recipient, item: toJson(ItemSchema, item), expect: { ok: false, reason } });

const note = text("Wi-Fi: correct horse battery staple ✓");

// -- what opens --------------------------------------------------------------------------------

const forAll = await sealed(note, [...names], { context: { itemId: "for-all" } });
for (const name of names) opens(`sealed for every test key by alice-laptop, opened by ${name}`, name, forAll, note, "alice-laptop");
opens("an empty plaintext", "x25519-b", await sealed(new Uint8Array(), ["x25519-b"], { context: { itemId: "empty", kind: "login" } }), new Uint8Array(), "alice-laptop");
const large = new Uint8Array(20_480).map((_, i) => (i * 7919) % 251);
opens("a 20 KiB plaintext", "p256-b", await sealed(large, ["p256-b", "x25519-a"], { context: { itemId: "large", vaultId: "acme-private" } }), large, "alice-laptop");
opens(
  "sealed by a device revoked since (carol-old): it opens, answered as not live",
  "p256-a",
  await sealed(note, ["p256-a", "x25519-b"], { context: { itemId: "by-carol" }, by: "carol-old" }),
  note,
  "carol-old",
);
const update = await sealed(note, ["x25519-a"], { context: { itemId: "updated" }, version: 5n });
opens("sealed by an update for the version it creates (5)", "x25519-a", update, note, "alice-laptop");

const base = await sealed(note, ["x25519-a", "p256-a"], { context: { itemId: "base" } });
opens("sealed for x25519-a and p256-a, opened by x25519-a", "x25519-a", base, note, "alice-laptop");
opens("sealed for x25519-a and p256-a, opened by p256-a", "p256-a", base, note, "alice-laptop");

// share: p256-a's holder shares with x25519-b, signed by bob's phone for version 2.
const shared = changed(base, (item) => (item.version = 2n));
Object.assign(shared, await share(base, keys["p256-a"], [keys["x25519-b"], keys["x25519-a"]], signers["bob-phone"], directory));
opens("shared by bob-phone with x25519-b, opened by it", "x25519-b", shared, note, "bob-phone");
opens("shared by bob-phone with x25519-b, opened by x25519-a (its wrapped key kept)", "x25519-a", shared, note, "bob-phone");
refuses("shared, served with the version before the share (1)", "x25519-b", changed(shared, (item) => (item.version = 1n)), "SIGNATURE_INVALID");

// An entry of a wrap_alg no package knows, put in place of x25519-b's: x25519-b cannot open it,
// others still can, and share puts a usable one back.
const planted = changed(shared, (item) => {
  const entry = entryOf(item, "x25519-b");
  entry.wrapAlg = "RSA-OAEP-256";
  entry.wrappedKey = "a2V5";
});
refuses("x25519-b's wrapped key replaced by one of an unknown wrap_alg: not its recipient", "x25519-b", planted, "NOT_A_RECIPIENT");
opens("x25519-b's wrapped key replaced by one of an unknown wrap_alg: x25519-a still opens", "x25519-a", planted, note, "bob-phone");
const reshared = changed(planted, (item) => (item.version = 3n));
Object.assign(reshared, await share(planted, keys["x25519-a"], [keys["x25519-b"]], signers["alice-laptop"], directory));
opens("shared again with x25519-b by alice-laptop: the unknown entry replaced, it opens", "x25519-b", reshared, note, "alice-laptop");

// X-Wing: an item for xwing-a and p256-b; shared with xwing-a; unshared to xwing-a alone.
const xwing = await sealed(note, ["xwing-a", "p256-b"], { context: { itemId: "xwing" }, by: "bob-phone" });
opens("sealed for xwing-a and p256-b by bob-phone, opened by xwing-a", "xwing-a", xwing, note, "bob-phone");
opens("sealed for xwing-a and p256-b by bob-phone, opened by p256-b", "p256-b", xwing, note, "bob-phone");
const sharedWithXWing = changed(base, (item) => (item.version = 2n));
Object.assign(sharedWithXWing, await share(base, keys["x25519-a"], [keys["xwing-a"]], signers["alice-laptop"], directory));
opens("shared by alice-laptop with xwing-a, opened by it", "xwing-a", sharedWithXWing, note, "alice-laptop");
const xwingAlone = changed(xwing, (item) => (item.version = 2n));
Object.assign(xwingAlone, await unshare(xwing, keys["p256-b"], [keys["xwing-a"]], signers["bob-phone"], directory));
opens("unshared to xwing-a alone by p256-b's holder, opened by xwing-a", "xwing-a", xwingAlone, note, "bob-phone");
refuses("unshared to xwing-a alone: p256-b left out", "p256-b", xwingAlone, "NOT_A_RECIPIENT");

// unshare: sealed again, under a new content key, for x25519-a alone.
const unshared = changed(base, (item) => (item.version = 2n));
Object.assign(unshared, await unshare(base, keys["x25519-a"], [keys["x25519-a"]], signers["alice-laptop"], directory));
opens("unshared: sealed again for x25519-a alone, opened by it", "x25519-a", unshared, note, "alice-laptop");
refuses("unshared: p256-a left out", "p256-a", unshared, "NOT_A_RECIPIENT");
refuses(
  "unshared: the old wrapped key put back for p256-a (a recipient the sealer did not sign for)",
  "p256-a",
  changed(unshared, (item) => item.wrappedKeys.push(clone(WrappedKeySchema, entryOf(base, "p256-a")))),
  "RECIPIENTS_MISMATCH",
);

// -- DELETED: a tombstone, which has no content (before any other check) -----------------------

const tombstone = (item: Item) => Object.assign(item, { version: 2n, deleted: true, encryptedPayload: undefined, wrappedKeys: [] });
refuses("a deleted item (its tombstone: no payload, no wrapped keys)", "x25519-a", changed(base, tombstone), "DELETED");

// -- MALFORMED: strict decoding --------------------------------------------------------------

const payloadChange = (name: string, recipient: Name, change: (payload: NonNullable<Item["encryptedPayload"]>) => void, reason = "MALFORMED") =>
  refuses(name, recipient, changed(base, (item) => change(item.encryptedPayload!)), reason);
const bytesOf = (n: number) => base64url(new Uint8Array(n).map((_, i) => i + 1));
payloadChange("a nonce of 8 bytes", "x25519-a", (p) => (p.nonce = bytesOf(8)));
payloadChange("a nonce of 16 bytes", "p256-a", (p) => (p.nonce = bytesOf(16)));
payloadChange("a nonce with base64 padding", "x25519-a", (p) => (p.nonce = `${p.nonce}=`));
payloadChange("a nonce in standard base64 (+ and /)", "x25519-a", (p) => (p.nonce = `${p.nonce.slice(0, -2)}+/`));
payloadChange("an empty nonce", "x25519-a", (p) => (p.nonce = ""));
const longBase = await (async () => {
  // An aad and a ciphertext whose lengths leave unused bits, for the non-canonical cases.
  for (const itemId of ["base", "base-x", "base-xy", "base-xyz"]) {
    for (const size of [1, 2, 3]) {
      const item = await sealed(note.subarray(0, note.length - size + 1), ["x25519-a", "p256-a"], { context: { itemId } });
      const p = item.encryptedPayload!;
      if (p.aad.length % 4 !== 0 && p.ciphertext.length % 4 !== 0) return { item };
    }
  }
  throw new Error("no item with an aad and a ciphertext of unused bits");
})();
const malformed = (name: string, recipient: Name, change: (payload: NonNullable<Item["encryptedPayload"]>) => void) =>
  refuses(name, recipient, changed(longBase.item, (item) => change(item.encryptedPayload!)), "MALFORMED");
malformed("an aad not canonical (unused bits set)", "x25519-a", (p) => (p.aad = nonCanonical(p.aad)));
malformed("a ciphertext not canonical (unused bits set)", "p256-a", (p) => (p.ciphertext = nonCanonical(p.ciphertext)));
malformed("a commitment not canonical (unused bits set)", "x25519-a", (p) => (p.commitment = nonCanonical(p.commitment)));
malformed("a signature not canonical (unused bits set)", "p256-a", (p) => (p.signature = nonCanonical(p.signature)));
malformed("a commitment of 31 bytes", "x25519-a", (p) => (p.commitment = base64url(fromBase64url(p.commitment)!.subarray(1))));
malformed("a signature of 63 bytes", "x25519-a", (p) => (p.signature = base64url(fromBase64url(p.signature)!.subarray(1))));
malformed("no commitment", "x25519-a", (p) => (p.commitment = ""));
malformed("no signature", "p256-a", (p) => (p.signature = ""));
refuses(
  "the reader's wrapped key not canonical (unused bits set)",
  "x25519-a",
  changed(base, (item) => (entryOf(item, "x25519-a").wrappedKey = nonCanonical(entryOf(item, "x25519-a").wrappedKey))),
  "MALFORMED",
);
refuses(
  "the reader's wrapped key not canonical (P-256)",
  "p256-a",
  changed(base, (item) => (entryOf(item, "p256-a").wrappedKey = nonCanonical(entryOf(item, "p256-a").wrappedKey))),
  "MALFORMED",
);
opens(
  "another recipient's wrapped key not canonical: not this reader's to decode",
  "x25519-a",
  changed(planted, (item) => (entryOf(item, "x25519-b").wrappedKey = "a2V5b")),
  note,
  "bob-phone",
);
refuses("two wrapped keys for one recipient id", "x25519-a", changed(base, (item) => item.wrappedKeys.push(clone(WrappedKeySchema, entryOf(item, "p256-a")))), "MALFORMED");
refuses(
  "two wrapped keys for one recipient id, the second of another wrap_alg",
  "p256-a",
  changed(base, (item) => item.wrappedKeys.push(create(WrappedKeySchema, { recipientId: keys["p256-a"].recipientId, wrapAlg: "RSA-OAEP-256", wrappedKey: "a2V5" }))),
  "MALFORMED",
);
refuses("no payload", "x25519-a", changed(base, (item) => (item.encryptedPayload = undefined)), "MALFORMED");

// -- UNSUPPORTED, BINDING_MISMATCH -----------------------------------------------------------

payloadChange("payload version 3", "x25519-a", (p) => (p.version = 3), "UNSUPPORTED");
payloadChange("payload version 0 (unset)", "p256-a", (p) => (p.version = 0), "UNSUPPORTED");
payloadChange("another alg (A128GCM)", "x25519-a", (p) => (p.alg = "A128GCM"), "UNSUPPORTED");
refuses("moved to another item id", "x25519-a", changed(base, (item) => (item.itemId = "base-2")), "BINDING_MISMATCH");
refuses("moved to another vault", "p256-a", changed(base, (item) => (item.vaultId = "acme-private")), "BINDING_MISMATCH");
refuses("moved to another tenant", "x25519-a", changed(base, (item) => (item.tenantId = "globex")), "BINDING_MISMATCH");
refuses("its kind changed", "x25519-a", changed(base, (item) => (item.kind = "login")), "BINDING_MISMATCH");
payloadChange("relabelled payload version 1, to go unsigned", "x25519-a", (p) => (p.version = 1), "BINDING_MISMATCH");

// -- the signature --------------------------------------------------------------------------

refuses("sealed by a device not in the directory (mallory)", "x25519-a", await sealed(note, ["x25519-a"], { context: { itemId: "base" }, by: "mallory" }), "SIGNER_UNKNOWN");
payloadChange("a signer id no device has", "p256-a", (p) => (p.signer = "A".repeat(43)), "SIGNER_UNKNOWN");
payloadChange("no signer", "x25519-a", (p) => (p.signer = ""), "SIGNER_UNKNOWN");
payloadChange("the signature tampered with", "x25519-a", (p) => (p.signature = flipBit(p.signature, "first")), "SIGNATURE_INVALID");
payloadChange("signed by bob-phone, naming alice-laptop", "p256-a", (p) => (p.signature = resigned(base, "bob-phone").encryptedPayload!.signature), "SIGNATURE_INVALID");
payloadChange("the ciphertext tampered with", "x25519-a", (p) => (p.ciphertext = flipBit(p.ciphertext, "first")), "SIGNATURE_INVALID");
payloadChange("the tag tampered with", "p256-a", (p) => (p.ciphertext = flipBit(p.ciphertext, "last")), "SIGNATURE_INVALID");
payloadChange("the nonce changed", "x25519-a", (p) => (p.nonce = flipBit(p.nonce, "first")), "SIGNATURE_INVALID");
payloadChange("the commitment changed", "x25519-a", (p) => (p.commitment = flipBit(p.commitment, "first")), "SIGNATURE_INVALID");
refuses("signed again so that only a cofactored check accepts it (R moved by the point of order 2)", "x25519-a", cofactoredOnlySigned(base, "alice-laptop"), "SIGNATURE_INVALID");
const forThree = await sealed(note, ["x25519-a", "x25519-b", "p256-a"], { context: { itemId: "base" } });
refuses(
  "another recipient's wrapped key removed (which no reader can tell from a bad signature)",
  "x25519-a",
  changed(forThree, (item) => (item.wrappedKeys = item.wrappedKeys.filter((key) => key.recipientId !== keys["x25519-b"].recipientId))),
  "SIGNATURE_INVALID",
);
refuses(
  "the reader's wrapped key removed",
  "x25519-b",
  changed(forThree, (item) => (item.wrappedKeys = item.wrappedKeys.filter((key) => key.recipientId !== keys["x25519-b"].recipientId))),
  "RECIPIENTS_MISMATCH",
);
const forP256b = await sealed(note, ["p256-b"], { context: { itemId: "base" } });
refuses(
  "a wrapped key added for a third recipient after signing",
  "x25519-a",
  changed(base, (item) => item.wrappedKeys.push(clone(WrappedKeySchema, forP256b.wrappedKeys[0]!))),
  "RECIPIENTS_MISMATCH",
);
refuses(
  "a wrapped key added after signing, opened by the one it was added for",
  "p256-b",
  changed(base, (item) => item.wrappedKeys.push(clone(WrappedKeySchema, forP256b.wrappedKeys[0]!))),
  "RECIPIENTS_MISMATCH",
);
refuses("signed for version 1, served as version 9", "x25519-a", changed(base, (item) => (item.version = 9n)), "VERSION_MISMATCH");
refuses("signed for version 5, served as version 6", "x25519-a", changed(update, (item) => (item.version = 6n)), "VERSION_MISMATCH");
refuses("signed for version 5, served as version 2", "x25519-a", changed(update, (item) => (item.version = 2n)), "SIGNATURE_INVALID");
refuses("signed for version 1, served as version 66 (past the versions tried)", "p256-a", changed(base, (item) => (item.version = 66n)), "SIGNATURE_INVALID");
refuses("signed for version 1, served as version 65 (the last version tried)", "p256-a", changed(base, (item) => (item.version = 65n)), "VERSION_MISMATCH");

// -- the wrapped key and the content --------------------------------------------------------

refuses("a key not among the recipients", "x25519-b", base, "NOT_A_RECIPIENT");
refuses("a key not among the recipients (P-256)", "p256-b", base, "NOT_A_RECIPIENT");
refuses(
  "its wrapped key labelled with the P-256 suite (the X25519 key's is another)",
  "x25519-a",
  changed(base, (item) => (entryOf(item, "x25519-a").wrapAlg = "HPKE-Base-P256-SHA256-A256GCM")),
  "NOT_A_RECIPIENT",
);
refuses("its wrapped key labelled ECDH-ES+A256KW (version 1's)", "p256-a", changed(base, (item) => (entryOf(item, "p256-a").wrapAlg = "ECDH-ES+A256KW")), "NOT_A_RECIPIENT");
refuses("an X-Wing key's wrapped key labelled with the P-256 suite", "xwing-a", changed(xwing, (item) => (entryOf(item, "xwing-a").wrapAlg = "HPKE-Base-P256-SHA256-A256GCM")), "NOT_A_RECIPIENT");
refuses("a P-256 key's wrapped key labelled with the X-Wing suite", "p256-b", changed(xwing, (item) => (entryOf(item, "p256-b").wrapAlg = "HPKE-Base-XWing-SHA256-A256GCM")), "NOT_A_RECIPIENT");
refuses("a key not among the recipients (X-Wing)", "xwing-a", base, "NOT_A_RECIPIENT");
// A version 1 item (unsigned: anyone who may write it can add an entry) with an entry of version
// 1's wrap_alg for xwing-a: version 1 never wrapped for an X-Wing key.
const v1Item = fromJson(ItemSchema, read("sealed-ts.json").vectors[0].item as JsonValue);
v1Item.wrappedKeys.push(create(WrappedKeySchema, { recipientId: keys["xwing-a"].recipientId, wrapAlg: "ECDH-ES+A256KW", wrappedKey: v1Item.wrappedKeys[0]!.wrappedKey }));
refuses("a version 1 item with an ECDH-ES+A256KW entry planted for an X-Wing key", "xwing-a", v1Item, "NOT_A_RECIPIENT");
refuses(
  "the wrapped key of another recipient in its place",
  "x25519-a",
  changed(forThree, (item) => (entryOf(item, "x25519-a").wrappedKey = entryOf(item, "x25519-b").wrappedKey)),
  "DECRYPTION_FAILED",
);
refuses("its wrapped key tampered with", "p256-a", changed(base, (item) => (entryOf(item, "p256-a").wrappedKey = flipBit(entryOf(item, "p256-a").wrappedKey, "last"))), "DECRYPTION_FAILED");
refuses(
  "its wrapped key cut to the encapsulated key",
  "x25519-a",
  changed(base, (item) => (entryOf(item, "x25519-a").wrappedKey = base64url(fromBase64url(entryOf(item, "x25519-a").wrappedKey)!.subarray(0, 32)))),
  "DECRYPTION_FAILED",
);
// X-Wing's encapsulation is 1120 bytes (ML-KEM-768's ciphertext, 1088, then X25519's, 32).
const xwingWrapped = (name: string, change: (bytes: Uint8Array) => Uint8Array) =>
  refuses(name, "xwing-a", changed(xwing, (item) => (entryOf(item, "xwing-a").wrappedKey = base64url(change(fromBase64url(entryOf(item, "xwing-a").wrappedKey)!)))), "DECRYPTION_FAILED");
const flippedAt = (bytes: Uint8Array, at: number) => bytes.map((byte, i) => (i === at ? byte ^ 1 : byte));
xwingWrapped("an X-Wing encapsulation cut short (1119 of its 1120 bytes, nothing after)", (bytes) => bytes.subarray(0, 1119));
xwingWrapped("an X-Wing wrapped key cut to its encapsulation", (bytes) => bytes.subarray(0, 1120));
xwingWrapped("an X-Wing wrapped key a byte short", (bytes) => bytes.subarray(0, bytes.length - 1));
xwingWrapped("an X-Wing encapsulation's ML-KEM ciphertext changed", (bytes) => flippedAt(bytes, 0));
xwingWrapped("an X-Wing encapsulation's X25519 part changed", (bytes) => flippedAt(bytes, 1119));
xwingWrapped("an X-Wing wrapped key's sealed content key changed", (bytes) => flippedAt(bytes, bytes.length - 1));
const otherXWing = await wrapKey(globalThis.crypto.getRandomValues(new Uint8Array(32)), keys["xwing-a"].publicKey, xwing.encryptedPayload!.aad);
refuses("an X-Wing wrapped key of another content key", "xwing-a", changed(xwing, (item) => (entryOf(item, "xwing-a").wrappedKey = otherXWing)), "COMMITMENT_MISMATCH");
const xwingSixteen = await wrapKey(new Uint8Array(16).fill(7), keys["xwing-a"].publicKey, xwing.encryptedPayload!.aad);
refuses("an X-Wing wrapped content key of 16 bytes", "xwing-a", changed(xwing, (item) => (entryOf(item, "xwing-a").wrappedKey = xwingSixteen)), "DECRYPTION_FAILED");
refuses(
  "an X-Wing wrapped key bound to another item (HPKE info)",
  "xwing-a",
  changed(xwing, (item) => (entryOf(item, "xwing-a").wrappedKey = entryOf(forAll, "xwing-a").wrappedKey)),
  "DECRYPTION_FAILED",
);

const baseAad = base.encryptedPayload!.aad;
const sixteen = await wrapKey(new Uint8Array(16).fill(9), keys["x25519-a"].publicKey, baseAad);
refuses("a wrapped content key of 16 bytes", "x25519-a", changed(base, (item) => (entryOf(item, "x25519-a").wrappedKey = sixteen)), "DECRYPTION_FAILED");
const movedKey = (await sealed(note, ["p256-a"], { context: { itemId: "base-2" } })).wrappedKeys[0]!.wrappedKey;
refuses("its wrapped key bound to another item (HPKE info)", "p256-a", changed(base, (item) => (entryOf(item, "p256-a").wrappedKey = movedKey)), "DECRYPTION_FAILED");
const otherKey = await wrapKey(globalThis.crypto.getRandomValues(new Uint8Array(32)), keys["x25519-a"].publicKey, baseAad);
refuses(
  "its wrapped key replaced by one of another content key (wrapped keys are not signed)",
  "x25519-a",
  changed(base, (item) => (entryOf(item, "x25519-a").wrappedKey = otherKey)),
  "COMMITMENT_MISMATCH",
);
const otherP256 = await wrapKey(globalThis.crypto.getRandomValues(new Uint8Array(32)), keys["p256-a"].publicKey, baseAad);
refuses("the same for P-256", "p256-a", changed(base, (item) => (entryOf(item, "p256-a").wrappedKey = otherP256)), "COMMITMENT_MISMATCH");
refuses(
  "its sealer signed a ciphertext that does not match its tag",
  "x25519-a",
  resigned(changed(base, (item) => (item.encryptedPayload!.ciphertext = flipBit(item.encryptedPayload!.ciphertext, "first")))),
  "DECRYPTION_FAILED",
);

// -- the key file ---------------------------------------------------------------------------

// alice-laptop's signing key with p256-a as its agreement key; key-files.json (which the Python
// package's script writes too, each its own entry) says what it holds and its passphrase.
const keyFileDevice = await DeviceKeyPair.fromJwks(signerDocuments["alice-laptop"].privateJwk, recipients["p256-a"]);
writeFileSync(new URL(KEY_FILE, TESTDATA), (await keyFileDevice.toKeyFile(KEY_FILE_PASSPHRASE, { tenantId: "acme", principalId: "alice" })) + "\n");
const keyFiles = new URL("key-files.json", TESTDATA);
let keyFilesDocument: { about?: string; files: Record<string, object> } = { files: {} };
try {
  keyFilesDocument = JSON.parse(readFileSync(keyFiles, "utf8"));
} catch (error) {
  if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
}
keyFilesDocument.about ??=
  "Device key files (docs/sealing.md, 'Device keys at rest') each package wrote, for the other to open: " +
  "the file's passphrase (public by being committed: test keys only), and what it holds, by the names of " +
  "signers.json (the signing key) and recipients.json (the agreement key).";
keyFilesDocument.files[KEY_FILE] = {
  passphrase: KEY_FILE_PASSPHRASE,
  tenantId: "acme",
  principalId: "alice",
  deviceId: keyFileDevice.deviceId,
  signer: "alice-laptop",
  agreementKey: "p256-a",
};
writeFileSync(keyFiles, JSON.stringify(keyFilesDocument, null, 2) + "\n");

const reasons = new Set(vectors.map((v) => (v.expect.ok ? "ok" : v.expect.reason)));
const about =
  "Items sealed in version 2 by the TypeScript package (clients/ts/tools/make-sealed-vectors.ts, run by hand) for the keys of recipients.json, signed by the devices of signers.json, " +
  "and ways a server or a member could change them; each opened with its recipient's key against the directory of signers.json's devices whose inDirectory is true (live as their live says) must answer expect: " +
  "the plaintext (base64url), the format version and who signed it (a name of signers.json) with whether it is live, or the reason it is refused (docs/sealing.md, Opening).";
for (const v of vectors) if (v.expect.ok && nameOf.get(signers[v.expect.signer as SignerName].deviceId) !== v.expect.signer) throw new Error(v.name);
writeFileSync(new URL("sealed-v2-ts.json", TESTDATA), JSON.stringify({ about, sealedBy: "typescript", vectors }, null, 1) + "\n");
console.log(`${vectors.length} vectors (${[...reasons].sort().join(", ")}) written to ${new URL("sealed-v2-ts.json", TESTDATA).pathname}; ${KEY_FILE} and its entry in key-files.json`);
