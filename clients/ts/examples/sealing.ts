// Seal an item for the members of a vault and open it as one of them: each key published to the
// tenant's directory, and checked against its key log before anything is wrapped for it. Then
// take a member off (unshare): sealed again for the others, under a new content key.
//   node sealing.js BASE_URL ALICE_TOKEN BOB_TOKEN STATE_DIR
import { join } from "node:path";
import { FileKeyLogStore, KeyDirectory, SealingError, clients, generateRecipientKey, openItem, seal, unshare } from "zkplatform-client";

const [baseUrl, aliceToken, bobToken, stateDir] = process.argv.slice(2);
const alice = clients(baseUrl, "connect-binary", { token: aliceToken });
const bob = clients(baseUrl, "connect-binary", { token: bobToken });

// A device makes its key pair once and keeps `await key.exportPrivateJwk()` as it keeps its
// secrets (importRecipientKey reads it back). Each directory keeps the key log head it verified.
const aliceKey = await generateRecipientKey("X25519");
const bobKey = await generateRecipientKey("P-256");
const aliceDirectory = new KeyDirectory(alice.directory, new FileKeyLogStore(join(stateDir, "alice-key-log.json")));
await aliceDirectory.publish(aliceKey);
await new KeyDirectory(bob.directory, new FileKeyLogStore(join(stateDir, "bob-key-log.json"))).publish(bobKey);

// alice seals for every live key of alice and bob, as the verified key log has them.
const recipients = await aliceDirectory.recipientKeys(["alice", "bob"]);
const context = { tenantId: "acme", vaultId: "acme-shared", itemId: "door-code", kind: "note" };
const sealed = await seal(new TextEncoder().encode("door code: 4711"), recipients, context);
const { item } = await alice.vault.createItem({ vaultId: context.vaultId, itemId: context.itemId, kind: context.kind, ...sealed });

// bob reads it and opens it with his key.
const read = async () => (await bob.vault.getItem({ vaultId: context.vaultId, itemId: context.itemId })).item!;
const opened = new TextDecoder().decode(await openItem(await read(), bobKey));

// alice takes bob off: the content sealed again for her key alone.
const resealed = await unshare(item!, aliceKey, [aliceKey]);
const updateMask = { paths: ["encrypted_payload", "wrapped_keys"] };
await alice.vault.updateItem({ vaultId: context.vaultId, itemId: context.itemId, baseVersion: item!.version, updateMask, ...resealed });
let afterwards = "opened";
try {
  await openItem(await read(), bobKey);
} catch (error) {
  if (!(error instanceof SealingError)) throw error;
  afterwards = error.reason; // NOT_A_RECIPIENT
}

console.log(JSON.stringify({ recipients: recipients.length, opened, afterwards }));
