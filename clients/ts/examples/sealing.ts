// Seal an item for the members of a vault and open it as one of them, for the devices the tenant's
// key log holds as alice's device verified it itself: signed by the log key and cosigned by the
// witnesses the operator named, kept in a file between runs. The item is signed by alice's device;
// bob's opening checks that signature against the log he verified, and learns who sealed it. Then
// take a member off (unshare): sealed again for the others, under a new content key.
//   node sealing.js CREDENTIALS_FILE STATE_DIR    (the credentials file of `zkplatform serve --dev`)
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DeviceKeyPair, FileKeyLogStore, KeyDirectory, Me, SealingError, clients, openItem, seal, unshare } from "zkplatform-client";

type Principal = { principalId: string; token: string; signingKeyJwk: string; privateKeyJwk: string };
type Credentials = { baseUrl: string; logKeys: string[]; witnesses: string[]; witnessQuorum: number; tenants: { tenantId: string; principals: Principal[] }[] };
const [credentialsFile, stateDir] = process.argv.slice(2) as [string, string];
const credentials = JSON.parse(readFileSync(credentialsFile, "utf8")) as Credentials;
const principal = (id: string) => credentials.tenants.flatMap((tenant) => tenant.principals).find((p) => p.principalId === id)!;

// What the operator gives every client out of band: the log key, the witnesses, how many must cosign.
const policy = { logKeys: credentials.logKeys, witnesses: credentials.witnesses, quorum: credentials.witnessQuorum };
// Each device keeps its two private keys in a key file under a passphrase (DeviceKeyPair.toKeyFile,
// read back with DeviceKeyPair.fromKeyFile): here, the demo devices' keys the credentials file holds.
const aliceDevice = await DeviceKeyPair.fromJwks(principal("alice").signingKeyJwk, principal("alice").privateKeyJwk);
const bobDevice = await DeviceKeyPair.fromJwks(principal("bob").signingKeyJwk, principal("bob").privateKeyJwk);
const alice = clients(credentials.baseUrl, "connect-binary", { token: principal("alice").token });
const bob = clients(credentials.baseUrl, "connect-binary", { token: principal("bob").token });

// alice's directory: the key log as her device verified it, in a file (what it trusts from then on).
const store = new FileKeyLogStore(join(stateDir, "alice-key-log.json"));
const directory = new KeyDirectory(alice.directory, "acme", policy, store, { me: new Me("alice"), device: aliceDevice });

// alice seals for every live device of alice and bob in the log she verified.
const recipients = [...(await directory.recipientKeys(["alice", "bob"])).values()].flat();
const context = { tenantId: "acme", vaultId: "acme-shared", itemId: "door-code", kind: "note" };
const sealed = await seal(new TextEncoder().encode("door code: 4711"), recipients, context, aliceDevice);
const { item } = await alice.vault.createItem({ vaultId: context.vaultId, itemId: context.itemId, kind: context.kind, ...sealed });

// bob reads it and opens it with his device's keys, against the key log his device verified: the
// content, and who sealed it (the device that signed, its principal, whether it is still live).
const bobDirectory = new KeyDirectory(bob.directory, "acme", policy, new FileKeyLogStore(join(stateDir, "bob-key-log.json")), { me: new Me("bob"), device: bobDevice });
const read = async () => (await bob.vault.getItem({ vaultId: context.vaultId, itemId: context.itemId })).item!;
const { plaintext, sealedBy } = await openItem(await read(), bobDevice, await bobDirectory.verify());
const opened = new TextDecoder().decode(plaintext);

// alice takes bob off: the content sealed again for her device alone, signed for the next version.
const resealed = await unshare(item!, aliceDevice, [aliceDevice.recipientKey()], aliceDevice, await directory.verify());
const updateMask = { paths: ["encrypted_payload", "wrapped_keys"] };
await alice.vault.updateItem({ vaultId: context.vaultId, itemId: context.itemId, baseVersion: item!.version, updateMask, ...resealed });
let afterwards = "opened";
try {
  await openItem(await read(), bobDevice, await bobDirectory.verify());
} catch (error) {
  if (!(error instanceof SealingError)) throw error;
  afterwards = error.reason; // NOT_A_RECIPIENT
}

console.log(JSON.stringify({ recipients: recipients.length, opened, sealedBy: sealedBy?.principalId, afterwards }));
