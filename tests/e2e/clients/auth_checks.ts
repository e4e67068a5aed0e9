// The auth interceptor of the npm package against a real server; prints one JSON report, the
// same as auth_checks.py's. Compiled in a project where the tarball is installed
// (tests/e2e/test_client_packages.py):
//   node auth_checks.js BASE_URL TOKEN
// An inner interceptor (after the auth one) sees each request that goes out: `attempts`.
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import {
  BrokerService,
  Code,
  ConnectError,
  DPoPKey,
  TokenProvider,
  VaultService,
  authInterceptor,
  clients,
  createClient,
  createConnectTransport,
  isTokenExpired,
  type Client,
  type Interceptor,
  type Protocol,
} from "zkplatform-client";

const VAULT = "acme-shared";
const DEADLINE_MS = 15_000; // bounds every wait for a token to expire
const [baseUrl, token] = process.argv.slice(2);

// The Connect code's wire name, as connectrpc for Python names it: "permission_denied".
function codeOf(error: unknown): string {
  if (error === undefined) return "ok";
  return Code[ConnectError.from(error).code].replace(/[A-Z]/g, (c, i: number) => (i ? "_" : "") + c.toLowerCase());
}

async function outcome(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return "ok";
  } catch (error) {
    return codeOf(error);
  }
}

function attemptsLog(): { codes: string[]; interceptor: Interceptor } {
  const codes: string[] = [];
  const interceptor: Interceptor = (next) => async (req) => {
    try {
      const res = await next(req);
      codes.push("ok");
      return res;
    } catch (error) {
      codes.push(codeOf(error));
      throw error;
    }
  };
  return { codes, interceptor };
}

const broker = createClient(
  BrokerService,
  createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors: [authInterceptor(token)] }),
);

async function mint(ttl: number, popKeyId = ""): Promise<string> {
  const minted = await broker.mintUserApiToken({
    tenantId: "acme",
    requestedScopes: ["vault.items.read"],
    requestedTtlSeconds: ttl,
    popKeyId,
  });
  return minted.token!.accessToken;
}

// A token callback: counts how often it is asked.
function minter(ttl: number, tokens: string[] = []): { asked: number; fetch: () => Promise<string> } {
  const state = {
    asked: 0,
    fetch: async () => {
      state.asked += 1;
      return tokens.shift() ?? (await mint(ttl));
    },
  };
  return state;
}

// Tokens of 1 s, once the server says the last one expired (a bounded wait of about 1 s).
async function expiredTokens(count: number): Promise<string[]> {
  const tokens: string[] = [];
  for (let i = 0; i < count; i++) tokens.push(await mint(1));
  const { vault } = clients(baseUrl, "connect-binary");
  const deadline = Date.now() + DEADLINE_MS;
  while (Date.now() < deadline) {
    try {
      await vault.listItems({ vaultId: VAULT, pageSize: 1 }, { headers: { Authorization: `Bearer ${tokens.at(-1)}` } });
    } catch (error) {
      if (isTokenExpired(error)) return tokens;
      throw error;
    }
  }
  throw new Error("the minted tokens did not expire in time");
}

function vaultOf(source: string | (() => Promise<string>), attempts: Interceptor): Client<typeof VaultService> {
  const transport = createConnectTransport({
    baseUrl,
    httpVersion: "1.1",
    interceptors: [authInterceptor(source), attempts],
  });
  return createClient(VaultService, transport);
}

// The first message of a watch, which is then cancelled (leaving the loop alone would not end the
// call: connect-es cancels a stream through its signal).
async function firstMessage(vault: Client<typeof VaultService>): Promise<void> {
  const stop = new AbortController();
  try {
    for await (const _ of vault.watchChanges({ vaultId: VAULT, sinceSequence: 0n }, { signal: stop.signal })) break;
  } finally {
    stop.abort();
  }
}

// Tokens of 2 s (at least 1 s once minted): calls go on until one finds its token expired.
async function renewal(): Promise<object> {
  const provider = minter(2);
  const attempts = attemptsLog();
  const vault = vaultOf(provider.fetch, attempts.interceptor);
  let calls = 0;
  let failed = 0;
  const deadline = Date.now() + DEADLINE_MS;
  while (provider.asked < 2 && Date.now() < deadline) {
    if ((await outcome(vault.getItem({ vaultId: VAULT, itemId: "item-1" }))) !== "ok") failed++;
    calls++;
  }
  return {
    asked: provider.asked,
    failed,
    extraAttempts: attempts.codes.length - calls,
    unauthenticated: attempts.codes.filter((c) => c === "unauthenticated").length,
  };
}

async function neverTwice(): Promise<object> {
  const provider = minter(60, await expiredTokens(2));
  const attempts = attemptsLog();
  const code = await outcome(vaultOf(provider.fetch, attempts.interceptor).getItem({ vaultId: VAULT, itemId: "item-1" }));
  return { code, asked: provider.asked, attempts: attempts.codes.length };
}

async function fixedExpired(): Promise<object> {
  const [expired] = await expiredTokens(1);
  const attempts = attemptsLog();
  const code = await outcome(vaultOf(expired, attempts.interceptor).getItem({ vaultId: VAULT, itemId: "item-1" }));
  return { code, attempts: attempts.codes.length };
}

async function otherErrors(): Promise<object> {
  const provider = minter(60);
  const attempts = attemptsLog();
  const vault = vaultOf(provider.fetch, attempts.interceptor);
  const code = await outcome(vault.getItem({ vaultId: "globex-main", itemId: "item-1" }));
  return { code, asked: provider.asked, attempts: attempts.codes.length };
}

async function concurrent(): Promise<object> {
  const provider = minter(60, await expiredTokens(1));
  const attempts = attemptsLog();
  const vault = vaultOf(provider.fetch, attempts.interceptor);
  const codes = await Promise.all([1, 2, 3, 4, 5].map((i) => outcome(vault.getItem({ vaultId: VAULT, itemId: `item-${i}` }))));
  return { ok: codes.filter((c) => c === "ok").length, asked: provider.asked, attempts: attempts.codes.length };
}

// A stream refused for an expired token is not repeated; the next call carries a new token.
async function stream(): Promise<object> {
  const provider = minter(60, await expiredTokens(1));
  const attempts = attemptsLog();
  const vault = vaultOf(provider.fetch, attempts.interceptor);
  const watch = () => firstMessage(vault);
  const code = await outcome(watch());
  const askedByStream = provider.asked;
  const attemptsAfterStream = attempts.codes.length;
  const next = await outcome(vault.getItem({ vaultId: VAULT, itemId: "item-1" }));
  return { code, askedByStream, attempts: attemptsAfterStream, next, askedAfter: provider.asked };
}

// A bound token over every protocol, by POST and in the GET form, unary and streaming.
async function dpop(): Promise<object> {
  const key = await DPoPKey.generate({ extractable: true });
  const bound = await clients(baseUrl, "connect-binary", { token, dpop: key })
    .broker.mintUserApiToken({ tenantId: "acme", requestedScopes: ["vault.items.read"], popKeyId: key.thumbprint })
    .then((minted) => minted.token!.accessToken);
  const results: Record<string, unknown> = {};
  const protocols: Protocol[] = ["connect-json", "connect-binary", "grpc", "grpc-web"];
  for (const protocol of protocols) {
    const post = clients(baseUrl, protocol, { token: bound, dpop: key }).vault;
    const get = clients(baseUrl, protocol, { token: bound, dpop: key, httpGet: true }).vault;
    const watch = () => firstMessage(post);
    results[protocol] = {
      post: await outcome(post.getItem({ vaultId: VAULT, itemId: "item-1" })),
      get: await outcome(get.getItem({ vaultId: VAULT, itemId: "item-1" })),
      list: await outcome(get.listItems({ vaultId: VAULT })),
      watch: await outcome(watch()),
    };
  }
  results.asBearer = await outcome(clients(baseUrl, "connect-binary", { token: bound }).vault.getItem({ vaultId: VAULT, itemId: "item-1" }));
  results.reloaded = (await DPoPKey.fromJwk(await key.privateJwk())).thumbprint === key.thumbprint;
  return results;
}

function providerRefusals(): object {
  let emptyToken = "accepted";
  try {
    new TokenProvider("");
  } catch {
    emptyToken = "refused";
  }
  return { emptyToken };
}

// A refusal as a server sends it: the ErrorInfo's bytes, raw (type, value).
function refusal(code: Code, message: string, domain?: string, reason = ""): ConnectError {
  const error = new ConnectError(message, code);
  if (domain !== undefined) {
    const value = new BinaryWriter().uint32(10).string(reason).uint32(18).string(domain).finish();
    error.details.push({ type: "google.rpc.ErrorInfo", value, debug: undefined });
  }
  return error;
}

// Which refusals count as an expired token: the ErrorReason of the contract, or the message of
// a server that sends no ErrorInfo on unauthenticated; nothing else.
function reasons(): Record<string, boolean> {
  const cases: Record<string, ConnectError> = {
    reason: refusal(Code.Unauthenticated, "the token has expired", "zkplatform.dev", "TOKEN_EXPIRED"),
    message: refusal(Code.Unauthenticated, "token expired"),
    otherReason: refusal(Code.Unauthenticated, "token expired", "zkplatform.dev", "TOKEN_REVOKED"),
    otherDomain: refusal(Code.Unauthenticated, "token revoked", "example.com", "TOKEN_EXPIRED"),
    otherMessage: refusal(Code.Unauthenticated, "token revoked"),
    otherCode: refusal(Code.PermissionDenied, "token expired"),
  };
  return Object.fromEntries(Object.entries(cases).map(([name, error]) => [name, isTokenExpired(error)]));
}

const report = {
  renewal: await renewal(),
  neverTwice: await neverTwice(),
  fixedExpired: await fixedExpired(),
  otherErrors: await otherErrors(),
  concurrent: await concurrent(),
  stream: await stream(),
  dpop: await dpop(),
  provider: providerRefusals(),
  reasons: reasons(),
};
console.log(JSON.stringify(report));
