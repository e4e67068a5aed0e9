// Write clients/testdata/sealed-ts.json: items this package sealed for the test recipients
// (clients/testdata/recipients.json), each with the plaintext it opens to, or the reason it must
// not open, for every implementation of docs/sealing.md to check. Not part of the package.
// Run once and commit the result (each run makes new keys and nonces):
//   make ts-build && node clients/ts/dist/make-sealed-vectors.js
import { readFileSync, writeFileSync } from "node:fs";
import { clone, create, toJson, type JsonValue } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { CompactEncrypt } from "jose";
import { ItemSchema, WrappedKeySchema, type Item } from "./gen/zkplatform_api/platform/v1/vault_pb.js";
import { RecipientPublicKey, importRecipientKey, seal, share, unshare, type SealContext } from "./sealing.js";

const TESTDATA = new URL("../../testdata/", import.meta.url);
const UPDATED_AT = timestampFromDate(new Date("2027-01-15T09:00:00Z"));

interface Vector {
  name: string;
  recipient: string;
  item: JsonValue;
  plaintext?: string;
  error?: string;
}

const names = ["x25519-a", "x25519-b", "p256-a", "p256-b"] as const;
type Name = (typeof names)[number];
const recipients = JSON.parse(readFileSync(new URL("recipients.json", TESTDATA), "utf8")).keys as Record<Name, object>;
const keys = Object.fromEntries(await Promise.all(names.map(async (name) => [name, await importRecipientKey(recipients[name])]))) as Record<Name, Awaited<ReturnType<typeof importRecipientKey>>>;

async function sealed(plaintext: Uint8Array, to: Name[], context: Partial<SealContext> = {}): Promise<Item> {
  const full: SealContext = { tenantId: "acme", vaultId: "acme-shared", itemId: "note-1", kind: "note", ...context };
  const content = await seal(
    plaintext,
    to.map((name) => keys[name]),
    full,
  );
  return create(ItemSchema, { ...full, version: 1n, updatedAt: UPDATED_AT, ...content });
}

function text(value: string): Uint8Array {
  return new Uint8Array(Buffer.from(value, "utf8"));
}

// The item with `change` made to a copy of it, as a server (or someone who can write the
// store) might change it.
function changed(item: Item, change: (copy: Item) => void): Item {
  const copy = clone(ItemSchema, item);
  change(copy);
  return copy;
}

function flipBit(base64: string, at: "first" | "last"): string {
  const bytes = Buffer.from(base64, "base64url");
  bytes[at === "first" ? 0 : bytes.length - 1] ^= 1;
  return bytes.toString("base64url");
}

const vectors: Vector[] = [];
const opens = (name: string, recipient: Name, item: Item, plaintext: Uint8Array) =>
  vectors.push({ name, recipient, item: toJson(ItemSchema, item), plaintext: Buffer.from(plaintext).toString("base64url") });
const refuses = (name: string, recipient: Name, item: Item, error: string) => vectors.push({ name, recipient, item: toJson(ItemSchema, item), error });

const note = text("Wi-Fi: correct horse battery staple ✓");
const forAll = await sealed(note, [...names], { itemId: "for-all" });
for (const name of names) opens(`sealed for the four keys, opened by ${name}`, name, forAll, note);
opens("an empty plaintext", "x25519-b", await sealed(new Uint8Array(), ["x25519-b"], { itemId: "empty", kind: "login" }), new Uint8Array());
const large = new Uint8Array(20_480).map((_, i) => (i * 7919) % 251);
opens("a 20 KiB plaintext", "p256-b", await sealed(large, ["p256-b", "x25519-a"], { itemId: "large", vaultId: "acme-private" }), large);

const base = await sealed(note, ["x25519-a", "p256-a"], { itemId: "base" });
opens("sealed for two keys, opened by x25519-a", "x25519-a", base, note);
const shared = changed(base, (item) => (item.version = 2n));
shared.wrappedKeys = await share(base, keys["p256-a"], [keys["x25519-b"], keys["x25519-a"]]);
opens("shared by p256-a with x25519-b", "x25519-b", shared, note);
const unshared = changed(base, (item) => (item.version = 2n));
Object.assign(unshared, await unshare(base, keys["x25519-a"], [keys["x25519-a"]]));
opens("unshared: sealed again for x25519-a alone, opened by it", "x25519-a", unshared, note);
refuses("unshared: p256-a left out", "p256-a", unshared, "NOT_A_RECIPIENT");
const old = base.wrappedKeys.find((key) => key.recipientId === keys["p256-a"].recipientId)!;
refuses(
  "unshared: the old wrapped key put back for p256-a (another content key)",
  "p256-a",
  changed(unshared, (item) => item.wrappedKeys.push(old)),
  "DECRYPTION_FAILED",
);

refuses("moved to another item id", "x25519-a", changed(base, (item) => (item.itemId = "base-2")), "BINDING_MISMATCH");
refuses("moved to another vault", "x25519-a", changed(base, (item) => (item.vaultId = "acme-private")), "BINDING_MISMATCH");
refuses("moved to another tenant", "p256-a", changed(base, (item) => (item.tenantId = "globex")), "BINDING_MISMATCH");
refuses("its kind changed", "x25519-a", changed(base, (item) => (item.kind = "login")), "BINDING_MISMATCH");
const movedAad = (await sealed(note, ["x25519-a"], { itemId: "base-2" })).encryptedPayload!.aad;
refuses(
  "moved to another item id, the aad rewritten to match",
  "x25519-a",
  changed(base, (item) => {
    item.itemId = "base-2";
    item.encryptedPayload!.aad = movedAad;
  }),
  "DECRYPTION_FAILED",
);
refuses("the ciphertext tampered with", "x25519-a", changed(base, (item) => (item.encryptedPayload!.ciphertext = flipBit(item.encryptedPayload!.ciphertext, "first"))), "DECRYPTION_FAILED");
refuses("the tag tampered with", "p256-a", changed(base, (item) => (item.encryptedPayload!.ciphertext = flipBit(item.encryptedPayload!.ciphertext, "last"))), "DECRYPTION_FAILED");
refuses("the nonce changed", "x25519-a", changed(base, (item) => (item.encryptedPayload!.nonce = flipBit(item.encryptedPayload!.nonce, "first"))), "DECRYPTION_FAILED");
refuses("a key not among the recipients", "x25519-b", base, "NOT_A_RECIPIENT");
refuses("a key not among the recipients (P-256)", "p256-b", base, "NOT_A_RECIPIENT");
refuses(
  "its wrapped key under another wrap_alg",
  "x25519-a",
  changed(base, (item) => (item.wrappedKeys.find((key) => key.recipientId === keys["x25519-a"].recipientId)!.wrapAlg = "ECDH-ES")),
  "NOT_A_RECIPIENT",
);
// x25519-a's recipient id on the content key wrapped for x25519-b: the JWE is not for its key.
const forB = (await sealed(note, ["x25519-b"], { itemId: "base" })).wrappedKeys[0];
refuses(
  "the wrapped key of another key",
  "x25519-a",
  changed(base, (item) => (item.wrappedKeys.find((key) => key.recipientId === keys["x25519-a"].recipientId)!.wrappedKey = forB.wrappedKey)),
  "DECRYPTION_FAILED",
);
const shortKey = await new CompactEncrypt(new Uint8Array(16))
  .setProtectedHeader({ alg: "ECDH-ES+A256KW", enc: "A256GCM", kid: keys["x25519-a"].keyId })
  .encrypt((await RecipientPublicKey.fromJwk(keys["x25519-a"].jwk)).cryptoKey);
refuses(
  "a wrapped content key of 16 bytes",
  "x25519-a",
  changed(base, (item) => {
    item.wrappedKeys = [create(WrappedKeySchema, { recipientId: keys["x25519-a"].recipientId, wrapAlg: "ECDH-ES+A256KW", wrappedKey: Buffer.from(shortKey).toString("base64url") })];
  }),
  "DECRYPTION_FAILED",
);
refuses("payload version 2", "x25519-a", changed(base, (item) => (item.encryptedPayload!.version = 2)), "UNSUPPORTED");
refuses("payload version 0 (unset)", "x25519-a", changed(base, (item) => (item.encryptedPayload!.version = 0)), "UNSUPPORTED");
refuses("another alg (A128GCM)", "x25519-a", changed(base, (item) => (item.encryptedPayload!.alg = "A128GCM")), "UNSUPPORTED");

writeFileSync(new URL("sealed-ts.json", TESTDATA), JSON.stringify({ sealedBy: "ts", vectors }, null, 1) + "\n");
console.log(`${vectors.length} vectors written to ${new URL("sealed-ts.json", TESTDATA).pathname}`);
