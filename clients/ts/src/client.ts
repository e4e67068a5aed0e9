// A platform.v1 client for Node, over any of the protocols the server speaks, with the token on
// every call (renewed when it expires, DPoP-bound or not), interceptors of your own and TLS options.
// Browsers get client-web.ts instead (the package's `browser` condition), with the same API.
import type { Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { clientsOn, interceptorsOf, type Clients, type CommonTransportOptions, type Protocol } from "./client-common.js";
import { tlsFailureIsUnavailable } from "./transport-errors.js";

export { decodeErrorInfo, reasonIs, type ErrorInfo } from "./error-info.js";
export { bearer, describeError, type Clients, type Protocol } from "./client-common.js";

export interface TransportOptions extends CommonTransportOptions {
  // The certificates (PEM) to trust instead of Node's, for a server whose certificate a private
  // CA signed: Node's `ca` option.
  ca?: string | Buffer | Array<string | Buffer>;
  // "1.1" (the default) or "2" for Connect and gRPC-Web; gRPC is always HTTP/2. On http://,
  // HTTP/2 is spoken with prior knowledge; on https://, agreed by ALPN.
  httpVersion?: "1.1" | "2";
}

export function transport(baseUrl: string, protocol: Protocol, options: TransportOptions = {}): Transport {
  const useHttpGet = options.httpGet ?? false;
  // Outermost: a server whose certificate is not trusted is unavailable, as in the Python package.
  const interceptors = [tlsFailureIsUnavailable, ...interceptorsOf(protocol, options)];
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

export function clients(baseUrl: string, protocol: Protocol, options: TransportOptions = {}): Clients {
  return clientsOn(transport(baseUrl, protocol, options));
}
