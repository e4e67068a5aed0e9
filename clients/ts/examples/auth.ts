// Authorize every call: with a fixed token, then with a provider that mints short-lived ones.
//   node auth.js BASE_URL TOKEN
import { clients } from "zkplatform-client";

const [baseUrl, token] = process.argv.slice(2);

// A fixed token: every call carries `Authorization: Bearer <token>`.
const platform = clients(baseUrl, "connect-binary", { token });
const listed = await platform.vault.listItems({ vaultId: "acme-shared" });

// A provider: a function, plain or async, that returns a fresh token. This one mints read-only
// tokens that live 60 s. When a call finds its token expired, the provider is asked for another
// and the call is made once more with it (unary calls; never twice).
async function readOnlyToken(): Promise<string> {
  const minted = await platform.broker.mintUserApiToken({
    tenantId: "acme",
    requestedScopes: ["vault.items.read"],
    requestedTtlSeconds: 60,
  });
  return minted.token!.accessToken;
}

const reader = clients(baseUrl, "connect-binary", { token: readOnlyToken });
const got = await reader.vault.getItem({ vaultId: "acme-shared", itemId: "item-2" });

console.log(JSON.stringify({ listed: listed.items.length, read: got.item?.itemId }));
