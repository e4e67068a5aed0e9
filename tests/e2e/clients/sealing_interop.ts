// One side of the sealing interop test (tests/e2e/test_sealing_interop.py): the npm package, as a
// consumer imports it, against a --dev server, as a principal of the development data set with
// its demo key from the credentials file. Prints one JSON line.
//   node sealing_interop.js seal CREDENTIALS_FILE PRINCIPAL VAULT ITEM TEXT     seal for every member
//       of VAULT whose keys the verified directory answers (alice and bob in acme-shared), create
//   node sealing_interop.js open CREDENTIALS_FILE PRINCIPAL VAULT ITEM          {"opened": text} or
//       {"refused": reason}
//   node sealing_interop.js share CREDENTIALS_FILE PRINCIPAL VAULT ITEM WITH    add WITH's keys
//       (update_mask wrapped_keys)
import { readFileSync } from "node:fs";
import { create } from "@bufbuild/protobuf";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import { clients } from "zkplatform-client";
import { KeyDirectory } from "zkplatform-client/key-directory";
import { SealingError, importRecipientKey, openItem, seal, share } from "zkplatform-client/sealing";

type Principal = { principalId: string; token: string; privateKeyJwk: string };
const [mode, credentialsFile, principalId, vaultId, itemId, extra] = process.argv.slice(2);
const credentials = JSON.parse(readFileSync(credentialsFile, "utf8")) as { baseUrl: string; tenants: { tenantId: string; principals: Principal[] }[] };
const tenant = credentials.tenants.find((t) => t.principals.some((p) => p.principalId === principalId))!;
const principal = tenant.principals.find((p) => p.principalId === principalId)!;
const platform = clients(credentials.baseUrl, "connect-json", { token: principal.token });
const key = await importRecipientKey(principal.privateKeyJwk);
const directory = new KeyDirectory(platform.directory);

let report: object;
if (mode === "seal") {
  const recipients = await directory.recipientKeys(["alice", "bob"]);
  const context = { tenantId: tenant.tenantId, vaultId, itemId, kind: "note" };
  const sealed = await seal(new TextEncoder().encode(extra), recipients, context);
  const created = (await platform.vault.createItem({ vaultId, itemId, kind: context.kind, ...sealed })).item!;
  report = { created: created.version.toString(), recipients: sealed.wrappedKeys.length };
} else if (mode === "open") {
  const item = (await platform.vault.getItem({ vaultId, itemId })).item!;
  try {
    report = { opened: new TextDecoder().decode(await openItem(item, key)) };
  } catch (error) {
    if (!(error instanceof SealingError)) throw error;
    report = { refused: error.reason };
  }
} else {
  const item = (await platform.vault.getItem({ vaultId, itemId })).item!;
  const wrappedKeys = await share(item, key, await directory.recipientKeys([extra]));
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
