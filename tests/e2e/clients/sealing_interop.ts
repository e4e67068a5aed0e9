// One side of the sealing interop test (tests/clients/test_sealing_interop.py): the npm package, as
// a consumer imports it, against a --dev server, as a principal of the development data set with
// its demo device's keys from the credentials file, trusting the log key and witnesses the file
// names. Its verified key log is kept beside the credentials file, from one run to the next.
// Prints one JSON line.
//   node sealing_interop.js seal CREDENTIALS_FILE PRINCIPAL VAULT ITEM TEXT     seal for every live
//       device of alice and bob in the verified log (the members of acme-shared), create
//   node sealing_interop.js open CREDENTIALS_FILE PRINCIPAL VAULT ITEM          {"opened": text} or
//       {"refused": reason}
//   node sealing_interop.js share CREDENTIALS_FILE PRINCIPAL VAULT ITEM WITH    add WITH's devices
//       (update_mask wrapped_keys)
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import { clients } from "zkplatform-client";
import { DeviceKeyPair } from "zkplatform-client/devices";
import { FileKeyLogStore, KeyDirectory, Me } from "zkplatform-client/key-directory";
import { SealingError, openItem, seal, share } from "zkplatform-client/sealing";

type Principal = { principalId: string; token: string; signingKeyJwk: string; privateKeyJwk: string };
type Credentials = { baseUrl: string; logKeys: string[]; witnesses: string[]; witnessQuorum: number; tenants: { tenantId: string; principals: Principal[] }[] };
const [mode, credentialsFile, principalId, vaultId, itemId, extra] = process.argv.slice(2) as [string, string, string, string, string, string];
const credentials = JSON.parse(readFileSync(credentialsFile, "utf8")) as Credentials;
const tenant = credentials.tenants.find((t) => t.principals.some((p) => p.principalId === principalId))!;
const principal = tenant.principals.find((p) => p.principalId === principalId)!;
const platform = clients(credentials.baseUrl, "connect-json", { token: principal.token });
const device = await DeviceKeyPair.fromJwks(principal.signingKeyJwk, principal.privateKeyJwk);
const policy = { logKeys: credentials.logKeys, witnesses: credentials.witnesses, quorum: credentials.witnessQuorum };
const store = new FileKeyLogStore(join(dirname(credentialsFile), `ts-${principalId}-key-log.json`));
const directory = new KeyDirectory(platform.directory, tenant.tenantId, policy, store, { me: new Me(principalId), device });
const recipients = async (principalIds: string[]) => [...(await directory.recipientKeys(principalIds)).values()].flat();

let report: object;
if (mode === "seal") {
  const context = { tenantId: tenant.tenantId, vaultId, itemId, kind: "note" };
  const sealed = await seal(new TextEncoder().encode(extra), await recipients(["alice", "bob"]), context);
  const created = (await platform.vault.createItem({ vaultId, itemId, kind: context.kind, ...sealed })).item!;
  report = { created: created.version.toString(), recipients: sealed.wrappedKeys.length };
} else if (mode === "open") {
  const item = (await platform.vault.getItem({ vaultId, itemId })).item!;
  try {
    report = { opened: new TextDecoder().decode(await openItem(item, device.recipientKey())) };
  } catch (error) {
    if (!(error instanceof SealingError)) throw error;
    report = { refused: error.reason };
  }
} else {
  const item = (await platform.vault.getItem({ vaultId, itemId })).item!;
  const wrappedKeys = await share(item, device.recipientKey(), await recipients([extra]));
  const updated = await platform.vault.updateItem({
    vaultId,
    itemId,
    baseVersion: item.version,
    wrappedKeys,
    updateMask: create(FieldMaskSchema, { paths: ["wrapped_keys"] }),
  });
  report = { version: updated.item!.version.toString(), wrappedKeys: wrappedKeys.length };
}
console.log(JSON.stringify(report));
