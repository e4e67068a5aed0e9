// Tokens on every call: a token provider and a Connect interceptor.
//
//   const transport = createConnectTransport({ baseUrl, httpVersion: "2", interceptors: [authInterceptor(getToken)] });
//
// `getToken` is a token (a string) or a function, plain or async, that returns a fresh one. The
// interceptor puts `Authorization: Bearer <token>` on every call, or, with `dpop: key`,
// `Authorization: DPoP <token>` and a DPoP proof made for that call. When a unary call is refused
// because the token expired, it asks the provider once for a new token and makes the call once
// more with it; any other refusal, a second expiry and a stream's expiry are the caller's (a
// stream is not repeated: its messages may have been handled already; the next call carries the
// new token).
import type { Interceptor, StreamRequest, UnaryRequest } from "@connectrpc/connect";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import type { DPoPKey } from "./dpop.js";
import { isTokenExpired } from "./error-info.js";

export type TokenCallback = () => string | Promise<string>;

// The token calls carry: a fixed one, or what a callback returns. The callback is asked for the
// first token when the first call needs it, and for a new one each time a call finds that token
// expired: once for all the calls that found it so at the same time.
export class TokenProvider {
  private readonly fetch: TokenCallback | null;
  private current: Promise<string> | null;

  constructor(source: string | TokenCallback) {
    if (typeof source === "string") {
      if (source === "") throw new TypeError("a token provider needs a token, or a function that returns one");
      this.fetch = null;
      this.current = Promise.resolve(source);
    } else {
      this.fetch = source;
      this.current = null;
    }
  }

  // Whether the provider can give another token than the one it has (a callback can).
  get renewable(): boolean {
    return this.fetch !== null;
  }

  // The current token, asking the callback for a first one.
  token(): Promise<string> {
    return (this.current ??= this.ask());
  }

  // A token in place of `expired`: the callback's new one, unless another call renewed it
  // already (or the token is fixed: then the same).
  async renew(expired: string): Promise<string> {
    const pending = this.current;
    if (this.fetch === null || pending === null) return this.token();
    const value = await pending.catch(() => null);
    // Only the first of the calls that saw `expired` asks: the others find the new promise.
    if (this.current === pending && (value === null || value === expired)) this.current = this.ask();
    return this.token();
  }

  private ask(): Promise<string> {
    const fetch = this.fetch;
    const asked = (async () => {
      const token: unknown = await fetch!();
      // Never the value itself: it may be a token after all.
      if (typeof token !== "string" || token === "") throw new TypeError(`the token callback returned ${typeof token}, not a non-empty string`);
      return token;
    })();
    // A failed ask is not kept: the next call asks again.
    asked.catch(() => {
      if (this.current === asked) this.current = null;
    });
    return asked;
  }
}

export interface AuthOptions {
  // The key the tokens are bound to: each call then carries a DPoP proof.
  dpop?: DPoPKey;
  // Whether the transport sends the RPCs without side effects as Connect GETs (its
  // `useHttpGet`; Connect only, gRPC and gRPC-Web ignore it): a proof names the method
  // the request goes out with, which the interceptor cannot see. `transport()` sets it.
  httpGet?: boolean;
}

function tokenProvider(source: TokenProvider | string | TokenCallback): TokenProvider {
  return source instanceof TokenProvider ? source : new TokenProvider(source);
}

// A Connect interceptor (unary and streaming) that authorizes every call.
export function authInterceptor(token: TokenProvider | string | TokenCallback, options: AuthOptions = {}): Interceptor {
  const provider = tokenProvider(token);
  const { dpop, httpGet = false } = options;

  async function authorize(req: UnaryRequest | StreamRequest, value: string): Promise<void> {
    if (dpop === undefined) {
      req.header.set("Authorization", `Bearer ${value}`);
      return;
    }
    const get = httpGet && !req.stream && req.method.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS;
    req.header.set("Authorization", `DPoP ${value}`);
    // req.url is the procedure's URL; a GET's query is added after the interceptors.
    req.header.set("DPoP", await dpop.proof(get ? "GET" : "POST", req.url, value));
  }

  async function* renewing<T>(messages: AsyncIterable<T>, value: string): AsyncIterable<T> {
    try {
      yield* messages;
    } catch (error) {
      if (isTokenExpired(error)) await provider.renew(value);
      throw error;
    }
  }

  // Once the request is sent: interceptors before this one share the request's headers, and
  // must not find the token there when the call ends (to log them, say).
  function forget(req: UnaryRequest | StreamRequest): void {
    req.header.delete("Authorization");
    req.header.delete("DPoP");
  }

  return (next) => async (req) => {
    const value = await provider.token();
    try {
      await authorize(req, value);
      if (req.stream) {
        try {
          const res = await next(req);
          return res.stream ? { ...res, message: renewing(res.message, value) } : res;
        } catch (error) {
          if (isTokenExpired(error)) await provider.renew(value);
          throw error;
        }
      }
      try {
        return await next(req);
      } catch (error) {
        // Refused at authentication, before anything ran: repeating it is safe, whatever the RPC.
        if (!isTokenExpired(error)) throw error;
        const fresh = await provider.renew(value);
        if (fresh === value) throw error;
        await authorize(req, fresh); // a new proof too: a proof's jti is used once
        return await next(req);
      }
    } finally {
      forget(req);
    }
  };
}
