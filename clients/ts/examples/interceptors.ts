// Interceptors of your own beside the auth one, on a transport built directly.
//   node interceptors.js BASE_URL TOKEN
import {
  Code,
  ConnectError,
  VaultService,
  authInterceptor,
  createClient,
  createConnectTransport,
  type Interceptor,
} from "zkplatform-client";

const [baseUrl, token] = process.argv.slice(2);

// A Connect interceptor: it sees every call, unary or streaming, and how it ended.
const calls: { rpc: string; code: string; sawToken: boolean }[] = [];
const callLog: Interceptor = (next) => async (req) => {
  let code = "ok";
  try {
    return await next(req);
  } catch (error) {
    code = Code[ConnectError.from(error).code];
    throw error;
  } finally {
    // Interceptors listed before the auth one never see the token.
    calls.push({ rpc: req.method.name, code, sawToken: req.header.has("Authorization") });
  }
};

// The auth interceptor comes last. `httpGet` says what the transport's `useHttpGet` does, so
// that a DPoP proof (with `dpop: key`) names the method the call goes out with.
const transport = createConnectTransport({
  baseUrl,
  httpVersion: "2",
  useHttpGet: true,
  interceptors: [callLog, authInterceptor(token, { httpGet: true })],
});
const vault = createClient(VaultService, transport);

await vault.getItem({ vaultId: "acme-shared", itemId: "item-3" });
await vault.getItem({ vaultId: "acme-shared", itemId: "no-such-item" }).catch(() => undefined); // logged all the same

console.log(JSON.stringify({ calls }));
