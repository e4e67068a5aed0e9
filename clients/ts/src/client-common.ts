// What the Node and browser clients share (client.ts, client-web.ts): the protocols, the options
// every transport takes, the three service clients on one transport and a failed call's code.
import { Code, ConnectError, createClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { VaultService } from "./gen/zkplatform_api/platform/v1/vault_pb.js";
import { BrokerService } from "./gen/zkplatform_api/platform/v1/broker_pb.js";
import { DirectoryService } from "./gen/zkplatform_api/platform/v1/directory_pb.js";
import { authInterceptor, type TokenCallback, type TokenProvider } from "./auth.js";
import type { DPoPKey } from "./dpop.js";
import { errorInfoOf, type ErrorInfo } from "./error-info.js";

export type Protocol = "connect-json" | "connect-binary" | "grpc" | "grpc-web";

export interface CommonTransportOptions {
  // The Connect protocols call the RPCs without side effects (GetItem, ListItems, ListChanges)
  // with HTTP GET, the message in the query; gRPC and gRPC-Web ignore it.
  httpGet?: boolean;
  // What authorizes each call: a token, a function returning a fresh one, or a TokenProvider.
  token?: TokenProvider | string | TokenCallback;
  // The key the tokens are bound to: each call then carries a DPoP proof (needs `token`).
  dpop?: DPoPKey;
  // Interceptors of your own. They run outside the one that adds the token, so that they never
  // see it and each of their attempts gets a proof of its own.
  interceptors?: Interceptor[];
}

// The interceptors of a transport: the caller's, then the one that adds the token (and proof).
export function interceptorsOf(protocol: Protocol, options: CommonTransportOptions): Interceptor[] {
  const interceptors = [...(options.interceptors ?? [])];
  if (options.token !== undefined) {
    const httpGet = (options.httpGet ?? false) && protocol.startsWith("connect-");
    interceptors.push(authInterceptor(options.token, { dpop: options.dpop, httpGet }));
  } else if (options.dpop !== undefined) {
    throw new TypeError("dpop signs the calls of a token: give token too");
  }
  return interceptors;
}

export interface Clients {
  vault: Client<typeof VaultService>;
  broker: Client<typeof BrokerService>;
  directory: Client<typeof DirectoryService>;
}

export function clientsOn(t: Transport): Clients {
  return { vault: createClient(VaultService, t), broker: createClient(BrokerService, t), directory: createClient(DirectoryService, t) };
}

export function bearer(token: string): { headers: Record<string, string> } {
  return { headers: { Authorization: `Bearer ${token}` } };
}

// A failed call's code name and its google.rpc.ErrorInfo detail, if it carries one.
export function describeError(error: unknown): { code: string; info: ErrorInfo | null } {
  const e = ConnectError.from(error);
  return { code: Code[e.code], info: errorInfoOf(e) };
}
