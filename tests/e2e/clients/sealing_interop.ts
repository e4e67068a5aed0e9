// One side of the sealing interop test (tests/clients/test_sealing_interop.py drives it, and its
// docstring has this command line too): the npm package, as a consumer imports it, against a --dev
// server, as a principal of the development data set, acting with its demo device's keys from the
// credentials file (or, to open, a device's key file), trusting the log key and witnesses the file
// names. Its verified key log is kept beside the credentials file, one a device, from one run to
// the next. Prints one JSON line.
//   node sealing_interop.js seal CREDENTIALS PRINCIPAL VAULT ITEM TEXT [FOR]    seal TEXT for
//       every live device of FOR (principal ids, comma-separated; alice and bob unless given) in
//       the verified log, signed by the demo device; CreateItem. {"created": "1", "recipients": N}
//   node sealing_interop.js open CREDENTIALS PRINCIPAL VAULT ITEM [KEY_FILE]    open ITEM with the
//       demo device's key, or the key file's (its passphrase in the environment's
//       KEY_FILE_PASSPHRASE, never on a command line), against the verified log:
//       {"opened": TEXT, "sealedBy": {"principalId", "deviceId", "live"} (null for version 1)} or
//       {"refused": REASON}
//   node sealing_interop.js share CREDENTIALS PRINCIPAL VAULT ITEM WITH    share ITEM with the live
//       devices of WITH (principal ids, comma-separated), signed again by the demo device;
//       UpdateItem with encrypted_payload,wrapped_keys. {"version": V, "wrappedKeys": N}
//   node sealing_interop.js unshare CREDENTIALS PRINCIPAL VAULT ITEM KEEP    seal ITEM again for
//       the live devices of KEEP (comma-separated) only, likewise. {"version": V, "wrappedKeys": N}
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import { clients, type Item } from "zkplatform-client";
import { DeviceKeyPair } from "zkplatform-client/devices";
import { FileKeyLogStore, KeyDirectory, Me } from "zkplatform-client/key-directory";
import { SealingError, openItem, seal, share, unshare, type SealedContent } from "zkplatform-client/sealing";

type Principal = { principalId: string; token: string; signingKeyJwk: string; privateKeyJwk: string };
type Credentials = { baseUrl: string; logKeys: string[]; witnesses: string[]; witnessQuorum: number; tenants: { tenantId: string; principals: Principal[] }[] };
const [mode, credentialsFile, principalId, ...rest] = process.argv.slice(2) as [string, string, string, ...string[]];
const credentials = JSON.parse(readFileSync(credentialsFile, "utf8")) as Credentials;
const tenant = credentials.tenants.find((t) => t.principals.some((p) => p.principalId === principalId))!;
const principal = tenant.principals.find((p) => p.principalId === principalId)!;
const platform = clients(credentials.baseUrl, "connect-json", { token: principal.token });
const demoDevice = await DeviceKeyPair.fromJwks(principal.signingKeyJwk, principal.privateKeyJwk);
const policy = { logKeys: credentials.logKeys, witnesses: credentials.witnesses, quorum: credentials.witnessQuorum };
const directoryOf = (device: DeviceKeyPair) =>
  new KeyDirectory(platform.directory, tenant.tenantId, policy, new FileKeyLogStore(join(dirname(credentialsFile), `ts-key-log-${device.deviceId}.json`)), {
    me: new Me(principalId),
    device,
  });
const directory = directoryOf(demoDevice);
const recipients = async (principalIds: string) => [...(await directory.recipientKeys(principalIds.split(","))).values()].flat();
const getItem = async (vaultId: string, itemId: string): Promise<Item> => (await platform.vault.getItem({ vaultId, itemId })).item!;

async function update(vaultId: string, itemId: string, item: Item, content: SealedContent): Promise<object> {
  const updated = await platform.vault.updateItem({ vaultId, itemId, baseVersion: item.version, updateMask: create(FieldMaskSchema, { paths: ["encrypted_payload", "wrapped_keys"] }), ...content });
  return { version: updated.item!.version.toString(), wrappedKeys: content.wrappedKeys.length };
}

let report: object;
if (mode === "seal") {
  const [vaultId, itemId, text, sealFor = "alice,bob"] = rest as [string, string, string, string?];
  const context = { tenantId: tenant.tenantId, vaultId, itemId, kind: "note" };
  const sealed = await seal(new TextEncoder().encode(text), await recipients(sealFor), context, demoDevice);
  const created = (await platform.vault.createItem({ vaultId, itemId, kind: context.kind, ...sealed })).item!;
  report = { created: created.version.toString(), recipients: sealed.wrappedKeys.length };
} else if (mode === "open") {
  const [vaultId, itemId, keyFile] = rest as [string, string, string?];
  const passphrase = process.env.KEY_FILE_PASSPHRASE ?? "";
  const device = keyFile === undefined ? demoDevice : await DeviceKeyPair.fromKeyFile(readFileSync(keyFile, "utf8"), passphrase);
  const item = await getItem(vaultId, itemId);
  try {
    const { plaintext, sealedBy } = await openItem(item, device, await directoryOf(device).verify());
    report = { opened: new TextDecoder().decode(plaintext), sealedBy };
  } catch (error) {
    if (!(error instanceof SealingError)) throw error;
    report = { refused: error.reason };
  }
} else if (mode === "share" || mode === "unshare") {
  const [vaultId, itemId, principals] = rest as [string, string, string];
  const item = await getItem(vaultId, itemId);
  const state = await directory.verify();
  const content = await (mode === "share" ? share : unshare)(item, demoDevice, await recipients(principals), demoDevice, state);
  report = await update(vaultId, itemId, item, content);
} else {
  throw new Error(`unknown mode ${mode}`);
}
console.log(JSON.stringify(report));
