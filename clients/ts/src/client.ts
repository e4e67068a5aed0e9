// A platform.v1 client for Node, over any of the protocols the server speaks, with the token on
// every call (renewed when it expires, DPoP-bound or not), interceptors of your own and TLS options.
import { Code, ConnectError, createClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { VaultService } from "./gen/zkplatform_api/platform/v1/vault_pb.js";
import { BrokerService } from "./gen/zkplatform_api/platform/v1/broker_pb.js";
import { DirectoryService } from "./gen/zkplatform_api/platform/v1/directory_pb.js";
import { authInterceptor, type TokenCallback, type TokenProvider } from "./auth.js";
import type { DPoPKey } from "./dpop.js";
import { errorInfoOf, type ErrorInfo } from "./error-info.js";

export { decodeErrorInfo, reasonIs, type ErrorInfo } from "./error-info.js";

export type Protocol = "connect-json" | "connect-binary" | "grpc" | "grpc-web";

export interface TransportOptions {
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
  // The certificates (PEM) to trust instead of Node's, for a server whose certificate a private
  // CA signed: Node's `ca` option.
  ca?: string | Buffer | Array<string | Buffer>;
  // "1.1" (the default) or "2" for Connect and gRPC-Web; gRPC is always HTTP/2. On http://,
  // HTTP/2 is spoken with prior knowledge; on https://, agreed by ALPN.
  httpVersion?: "1.1" | "2";
}

export function transport(baseUrl: string, protocol: Protocol, options: TransportOptions = {}): Transport {
  const useHttpGet = options.httpGet ?? false;
  const interceptors = [...(options.interceptors ?? [])];
  if (options.token !== undefined) {
    const httpGet = useHttpGet && protocol.startsWith("connect-");
    interceptors.push(authInterceptor(options.token, { dpop: options.dpop, httpGet }));
  } else if (options.dpop !== undefined) {
    throw new TypeError("dpop signs the calls of a token: give token too");
  }
  const ca = options.ca === undefined ? {} : { nodeOptions: { ca: options.ca } };
  const version = options.httpVersion ?? "1.1";
  switch (protocol) {
    case "connect-json":
      return createConnectTransport({ baseUrl, httpVersion: version, useHttpGet, interceptors, ...ca });
    case "connect-binary":
      return createConnectTransport({ baseUrl, httpVersion: version, useBinaryFormat: true, useHttpGet, interceptors, ...ca });
    case "grpc":
      if (options.httpVersion === "1.1") throw new TypeError("gRPC needs HTTP/2");
      return createGrpcTransport({ baseUrl, interceptors, ...ca }); // on http://: HTTP/2 cleartext, prior knowledge
    case "grpc-web":
      return createGrpcWebTransport({ baseUrl, httpVersion: version, interceptors, ...ca });
  }
}

export interface Clients {
  vault: Client<typeof VaultService>;
  broker: Client<typeof BrokerService>;
  directory: Client<typeof DirectoryService>;
}

export function clients(baseUrl: string, protocol: Protocol, options: TransportOptions = {}): Clients {
  const t = transport(baseUrl, protocol, options);
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
