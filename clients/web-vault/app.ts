// The web vault: a page that signs in to the platform with a token, lists the caller's vaults,
// follows one live (WatchChanges) and opens, seals and shares its items with this device's keys,
// in the page only: the server sees ciphertext. It is the example of a web integration
// (docs/clients.md, "In the browser"), so it imports the npm package as a web app does,
// "zkplatform-client", and esbuild picks its `browser` entry by the exports conditions
// (`make web-vault`). The token and the keys stay in the page's memory: never in a URL, in
// storage or on the console; IndexedDB holds only the key log this device verified.
import {
  Code,
  ConnectError,
  DeviceKeyPair,
  IndexedDbKeyLogStore,
  KeyDirectory,
  KeyLogError,
  Me,
  SealingError,
  SyncStoppedError,
  VaultSync,
  clients,
  errorDetails,
  openItem,
  seal,
  share,
  type Clients,
  type Item,
  type SyncEvent,
  type Vault,
} from "zkplatform-client";

// The credentials file `zkplatform serve --dev` writes (var/dev-credentials.json), as far as read here.
type Principal = { principalId: string; token: string; signingKeyJwk: string; privateKeyJwk: string };
type Credentials = {
  baseUrl: string;
  logKeys: string[];
  witnesses: string[];
  witnessQuorum: number;
  tenants: { tenantId: string; principals: Principal[] }[];
};
// What a credentials file adds to a token: the principal's device keys and the directory it verifies.
type Keys = { principalId: string; device: DeviceKeyPair; directory: KeyDirectory };
type Session = { baseUrl: string; platform: Clients; keys: Keys | null };
type Following = { vault: Vault; sync: VaultSync; stop: AbortController };

// The verified key logs, one record per server, tenant and device: what this browser trusts.
const KEY_LOG_DATABASE = "zkplatform-web-vault";
const SHARE_MASK = { paths: ["encrypted_payload", "wrapped_keys"] };

const $ = <T extends HTMLElement = HTMLElement>(id: string): T => document.getElementById(id) as T;
const field = (id: string): HTMLInputElement => $<HTMLInputElement>(id);
let credentials: Credentials | null = null;
let session: Session | null = null;
let following: Following | null = null;
let opened: Item | null = null;

// --- Errors: what the package's errors say, in a sentence -------------------------------------

const codeName = (code: Code): string => Code[code].replace(/[A-Z]/g, (c, at: number) => (at ? "_" : "") + c.toLowerCase());

function explain(error: unknown): string {
  if (error instanceof SealingError) return `The item does not open or seal: ${error.message}`;
  if (error instanceof KeyLogError) {
    $("forget-key-log").hidden = false;
    return `The key log does not verify, so none of its keys is trusted: ${error.message}`;
  }
  if (error instanceof SyncStoppedError) return error.message;
  if (error instanceof ConnectError) {
    const details = errorDetails(error);
    const answer = `${codeName(details.code)}${details.reason === null ? "" : ` (${details.reason})`}: ${details.message}`;
    if (details.code === Code.Unauthenticated) return `The server refused the token: ${answer}`;
    if (details.reason === null && [Code.Unknown, Code.Unavailable].includes(details.code)) {
      const where = session?.baseUrl ?? field("base-url").value;
      return `No answer from ${where} (is the server running, and does it allow this page's origin ${location.origin}, --cors-origins?): ${answer}`;
    }
    return `The server answered ${answer}`;
  }
  return error instanceof Error ? error.message : String(error);
}

function showError(error: unknown): void {
  $("error-text").textContent = explain(error);
  $("error").hidden = false;
}

// Runs what a button asks for; what fails is shown, never thrown at the console.
async function act(task: () => unknown): Promise<void> {
  $("error").hidden = true;
  $("forget-key-log").hidden = true;
  try {
    await task();
  } catch (error) {
    showError(error);
  }
}

const say = (text: string): void => void ($("status").textContent = text);

// --- Signing in ---------------------------------------------------------------------------------

function readCredentials(text: string): void {
  credentials = null;
  $("principal").replaceChildren();
  if (text.trim() === "") return;
  let parsed: Credentials;
  try {
    parsed = JSON.parse(text) as Credentials;
  } catch {
    throw new Error("The credentials are not JSON: paste var/dev-credentials.json as it is");
  }
  if (!Array.isArray(parsed?.tenants)) throw new Error("Not a credentials file of zkplatform serve --dev: it names no tenants");
  credentials = parsed;
  for (const tenant of parsed.tenants) {
    for (const p of tenant.principals) $("principal").append(new Option(`${p.principalId} (${tenant.tenantId})`, p.principalId));
  }
  field("base-url").value = parsed.baseUrl;
  choosePrincipal();
}

function principalOf(principalId: string): { tenantId: string; principal: Principal } | null {
  for (const tenant of credentials?.tenants ?? []) {
    const principal = tenant.principals.find((p) => p.principalId === principalId);
    if (principal !== undefined) return { tenantId: tenant.tenantId, principal };
  }
  return null;
}

function choosePrincipal(): void {
  field("token").value = principalOf($<HTMLSelectElement>("principal").value)?.principal.token ?? "";
}

async function listVaults(platform: Clients): Promise<Vault[]> {
  const vaults: Vault[] = [];
  let pageToken = "";
  do {
    const page = await platform.vault.listVaults({ pageToken });
    vaults.push(...page.vaults);
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
  return vaults;
}

async function signIn(): Promise<void> {
  const baseUrl = field("base-url").value.replace(/\/+$/, "");
  const token = field("token").value.trim();
  const platform = clients(baseUrl, "connect-json", { token });
  const vaults = await listVaults(platform); // the first call: a token refused stops here
  // The keys of the chosen principal, when the token is its own (a token pasted alone lists only).
  const chosen = principalOf($<HTMLSelectElement>("principal").value);
  let keys: Keys | null = null;
  if (credentials !== null && chosen !== null && chosen.principal.token === token) {
    const { tenantId, principal } = chosen;
    const device = await DeviceKeyPair.fromJwks(principal.signingKeyJwk, principal.privateKeyJwk);
    const policy = { logKeys: credentials.logKeys, witnesses: credentials.witnesses, quorum: credentials.witnessQuorum };
    const store = new IndexedDbKeyLogStore(`${baseUrl} ${tenantId}/${device.deviceId}`, KEY_LOG_DATABASE);
    const directory = new KeyDirectory(platform.directory, tenantId, policy, store, { me: new Me(principal.principalId), device });
    await directory.verify();
    keys = { principalId: principal.principalId, device, directory };
  }
  session = { baseUrl, platform, keys };
  $("whoami").textContent = keys
    ? `Signed in to ${baseUrl} as ${keys.principalId}, device ${keys.device.deviceId} (key log verified)`
    : `Signed in to ${baseUrl} with a token alone: items are listed, not opened (sign in with the credentials file for the keys)`;
  $("vaults").replaceChildren(
    ...vaults.map((vault) => {
      const button = Object.assign(document.createElement("button"), { type: "button", textContent: vault.vaultId });
      button.dataset.vault = vault.vaultId;
      button.addEventListener("click", () => void act(() => follow(vault)));
      const item = document.createElement("li");
      item.append(button, ` members: ${vault.members.join(", ")}`);
      return item;
    }),
  );
  $("sign-in").hidden = true;
  $("vault-view").hidden = false;
  say(vaults.length === 0 ? "Signed in: a member of no vault" : `Signed in: ${vaults.length} vault(s)`);
}

function signOut(): void {
  following?.stop.abort();
  following = session = opened = null;
  for (const id of ["vaults", "items", "plaintext", "sealed-by", "whoami"]) $(id).replaceChildren();
  $("vault").hidden = $("item").hidden = $("vault-view").hidden = true;
  $("sign-in").hidden = false;
  say("Signed out");
}

// A KeyLogError stays until this browser forgets the log it trusted: a development server started
// again has a new log, which a verified one refuses as a fork (rightly, for any other server).
function forgetKeyLog(): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.deleteDatabase(KEY_LOG_DATABASE);
    request.onsuccess = () => resolve(say("The verified key logs are forgotten: the next sign-in trusts the log it is shown"));
    request.onerror = () => reject(new Error("IndexedDB did not delete the verified key logs"));
    request.onblocked = () => reject(new Error("another tab of this page holds the verified key logs open: close it"));
  });
}

// --- A vault, followed live ---------------------------------------------------------------------

function follow(vault: Vault): void {
  if (session === null) return;
  following?.stop.abort();
  const stop = new AbortController();
  const current = (): boolean => following?.sync === sync;
  const sync = new VaultSync(session.platform.vault, {
    vaultId: vault.vaultId,
    signal: stop.signal,
    onEvent: (event) => current() && showSync(event),
  });
  following = { vault, sync, stop };
  opened = null;
  $("item").hidden = true;
  $("vault-id").textContent = vault.vaultId;
  $("sync-status").textContent = "listing";
  const me = session.keys?.principalId;
  $("share-with").replaceChildren(...vault.members.filter((m) => m !== me).map((m) => new Option(m, m)));
  $("new-item-members").replaceChildren(
    ...vault.members.map((member) => {
      const box = Object.assign(document.createElement("input"), { type: "checkbox", value: member, checked: true });
      const label = document.createElement("label");
      label.append(box, member);
      return label;
    }),
  );
  for (const id of ["share-button", "create-button"]) $<HTMLButtonElement>(id).disabled = session.keys === null;
  $("vault").hidden = false;
  renderItems();
  sync.run().catch((error: unknown) => {
    if (!current()) return;
    $("sync-status").textContent = "stopped";
    showError(error);
  });
}

function showSync(event: SyncEvent): void {
  const status = $("sync-status");
  if (event.type === "caughtUp") status.textContent = "live";
  else if (event.type === "reconnecting") status.textContent = `reconnecting (${event.code}) in ${Math.round(event.delayMs)} ms`;
  else if (event.type === "restarting") status.textContent = `listing again (${event.reason})`;
  if (event.type === "synced" || event.type === "changes" || event.type === "resumed") renderItems();
}

function renderItems(): void {
  const items = [...(following?.sync.liveItems().values() ?? [])].sort((a, b) => a.itemId.localeCompare(b.itemId));
  $("items").replaceChildren(
    ...items.map((item) => {
      const row = document.createElement("tr");
      row.dataset.item = item.itemId;
      const updated = item.updatedAt ? new Date(Number(item.updatedAt.seconds) * 1000).toISOString() : "";
      for (const text of [item.itemId, item.kind, item.version.toString(), updated]) row.insertCell().textContent = text;
      const button = Object.assign(document.createElement("button"), { type: "button", textContent: "Open", disabled: session?.keys === null });
      button.addEventListener("click", () => void act(() => open(item.itemId)));
      row.insertCell().append(button);
      return row;
    }),
  );
}

// --- Opening, sealing, sharing (with the keys of the credentials file) -------------------------

function withKeys(): { platform: Clients; keys: Keys; vault: Vault } {
  if (session?.keys == null || following === null) throw new Error("Opening and sealing need the device keys: sign in with the credentials file");
  return { platform: session.platform, keys: session.keys, vault: following.vault };
}

async function open(itemId: string): Promise<void> {
  const { platform, keys, vault } = withKeys();
  opened = null;
  $("item").hidden = true;
  const { item } = await platform.vault.getItem({ vaultId: vault.vaultId, itemId });
  const { plaintext, sealedBy } = await openItem(item!, keys.device, await keys.directory.verify());
  opened = item!;
  $("item-id").textContent = itemId;
  $("item-version").textContent = item!.version.toString();
  $("plaintext").textContent = new TextDecoder().decode(plaintext);
  $("sealed-by").textContent = sealedBy
    ? `${sealedBy.principalId}, device ${sealedBy.deviceId}, ${sealedBy.live ? "live" : "revoked since"}`
    : "nobody: a version 1 item is not signed";
  $("item").hidden = false;
  say(`Opened ${itemId}`);
}

async function recipientsOf(keys: Keys, principalIds: string[]) {
  const recipients = [...(await keys.directory.recipientKeys(principalIds)).values()].flat();
  if (recipients.length === 0) throw new Error(`No live device of ${principalIds.join(", ")} in the key log: nothing to seal for`);
  return recipients;
}

async function create(): Promise<void> {
  const { platform, keys, vault } = withKeys();
  const boxes = $("new-item-members").querySelectorAll<HTMLInputElement>("input:checked");
  const members = [...boxes].map((box) => box.value);
  const [itemId, kind] = [field("new-item-id").value.trim(), $<HTMLSelectElement>("new-item-kind").value];
  const context = { tenantId: vault.tenantId, vaultId: vault.vaultId, itemId, kind };
  const plaintext = new TextEncoder().encode(field("new-item-text").value);
  const sealed = await seal(plaintext, await recipientsOf(keys, members), context, keys.device);
  await platform.vault.createItem({ vaultId: vault.vaultId, itemId, kind, ...sealed });
  $<HTMLFormElement>("create").reset();
  say(`Created ${itemId}, sealed for ${members.join(", ")} (${sealed.wrappedKeys.length} devices)`);
}

async function shareOpened(): Promise<void> {
  const { platform, keys, vault } = withKeys();
  if (opened === null) throw new Error("Open an item first");
  const member = $<HTMLSelectElement>("share-with").value;
  const recipients = await recipientsOf(keys, [member]);
  const resealed = await share(opened, keys.device, recipients, keys.device, await keys.directory.verify());
  const { itemId, version } = opened;
  const { item } = await platform.vault.updateItem({ vaultId: vault.vaultId, itemId, baseVersion: version, updateMask: SHARE_MASK, ...resealed });
  opened = item!;
  $("item-version").textContent = item!.version.toString();
  say(`Shared ${itemId} with ${member}: version ${item!.version}`);
}

// --- Wiring -------------------------------------------------------------------------------------

const submit = (id: string, task: () => Promise<void>): void =>
  $(id).addEventListener("submit", (event) => {
    event.preventDefault();
    void act(task);
  });
submit("sign-in", signIn);
submit("create", create);
submit("share", shareOpened);
$("credentials").addEventListener("input", () => void act(() => readCredentials(field("credentials").value)));
field("credentials-file").addEventListener("change", () =>
  act(async () => {
    const file = field("credentials-file").files?.[0];
    if (file === undefined) return;
    field("credentials").value = await file.text();
    readCredentials(field("credentials").value);
  }),
);
$("principal").addEventListener("change", choosePrincipal);
$("sign-out").addEventListener("click", signOut);
$("forget-key-log").addEventListener("click", () => void act(forgetKeyLog));
