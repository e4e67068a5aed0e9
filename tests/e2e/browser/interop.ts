// The browser's side of the sealing interop (tests/e2e/test_ts_browser.py): the npm package's
// browser entry, in a page on another origin than the server, as a principal of the development
// data set with its demo device's keys from the credentials file, its verified key log in
// IndexedDB. The same reports as tests/e2e/clients/sealing_interop.ts gives Node:
//   seal(credentials, principal, vault, item, text, for?)  -> {"created": "1", "recipients": N}
//   open(credentials, principal, vault, item)              -> {"opened", "sealedBy"} | {"refused"}
import { DeviceKeyPair, IndexedDbKeyLogStore, KeyDirectory, Me, SealingError, clients, openItem, seal as sealItem } from "zkplatform-client";

type Principal = { principalId: string; token: string; signingKeyJwk: string; privateKeyJwk: string };
type Credentials = { baseUrl: string; logKeys: string[]; witnesses: string[]; witnessQuorum: number; tenants: { tenantId: string; principals: Principal[] }[] };

async function as(credentials: Credentials, principalId: string) {
  const tenant = credentials.tenants.find((t) => t.principals.some((p) => p.principalId === principalId))!;
  const principal = tenant.principals.find((p) => p.principalId === principalId)!;
  const platform = clients(credentials.baseUrl, "connect-json", { token: principal.token });
  const device = await DeviceKeyPair.fromJwks(principal.signingKeyJwk, principal.privateKeyJwk);
  const policy = { logKeys: credentials.logKeys, witnesses: credentials.witnesses, quorum: credentials.witnessQuorum };
  const store = new IndexedDbKeyLogStore(`${tenant.tenantId}/${device.deviceId}`);
  const directory = new KeyDirectory(platform.directory, tenant.tenantId, policy, store, { me: new Me(principalId), device });
  return { tenant, platform, device, directory };
}

async function seal(credentials: Credentials, principalId: string, vaultId: string, itemId: string, text: string, sealFor = "alice,bob") {
  const { tenant, platform, device, directory } = await as(credentials, principalId);
  const recipients = [...(await directory.recipientKeys(sealFor.split(","))).values()].flat();
  const context = { tenantId: tenant.tenantId, vaultId, itemId, kind: "note" };
  const sealed = await sealItem(new TextEncoder().encode(text), recipients, context, device);
  const created = (await platform.vault.createItem({ vaultId, itemId, kind: context.kind, ...sealed })).item!;
  return { created: created.version.toString(), recipients: sealed.wrappedKeys.length };
}

async function open(credentials: Credentials, principalId: string, vaultId: string, itemId: string) {
  const { platform, device, directory } = await as(credentials, principalId);
  const item = (await platform.vault.getItem({ vaultId, itemId })).item!;
  try {
    const { plaintext, sealedBy } = await openItem(item, device, await directory.verify());
    return { opened: new TextDecoder().decode(plaintext), sealedBy };
  } catch (error) {
    if (!(error instanceof SealingError)) throw error;
    return { refused: error.reason };
  }
}

(globalThis as { interop?: object }).interop = { seal, open };
