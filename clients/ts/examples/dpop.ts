// A key-bound token (DPoP): mint one bound to a new key, then call with it, by POST and by GET.
//   node dpop.js BASE_URL TOKEN ITEM_ID
import { DPoPKey, clients } from "zkplatform-client";

const [baseUrl, token, itemId] = process.argv.slice(2);

// An EC P-256 key (ES256), WebCrypto's. To use it again, generate it with `{ extractable: true }`,
// save `await key.privateJwk()` and load it with `DPoPKey.fromJwk(saved)`.
const key = await DPoPKey.generate();

// The mint proves the key too: with `dpop: key` every call carries a proof of it.
const minter = clients(baseUrl, "connect-binary", { token, dpop: key });
const { token: bound } = await minter.broker.mintUserApiToken({
  tenantId: "acme",
  requestedScopes: ["vault.items.read", "vault.items.write"],
  popKeyId: key.thumbprint,
});

// The bound token goes as `Authorization: DPoP <token>` with a fresh proof on every call: htm
// POST, or GET for the Connect GET form (`httpGet: true`); htu the URL without its query.
const { vault } = clients(baseUrl, "connect-binary", { token: bound!.accessToken, dpop: key, httpGet: true });
const created = await vault.createItem({
  vaultId: "acme-shared",
  itemId,
  kind: "note",
  encryptedPayload: { alg: "A256GCM", nonce: "bm9uY2U", ciphertext: "c2VjcmV0" },
  wrappedKeys: [{ recipientId: "alice", wrapAlg: "A256KW", wrappedKey: "a2V5" }],
});
const got = await vault.getItem({ vaultId: "acme-shared", itemId }); // a GET

console.log(
  JSON.stringify({
    bound: bound!.popKeyId === key.thumbprint,
    created: created.item?.version.toString(),
    got: got.item?.version.toString(),
  }),
);
