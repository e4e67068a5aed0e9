// A platform.v1 client for browsers (the package's `browser` condition): client.ts's API over
// @connectrpc/connect-web's fetch transports. The server must allow the page's origin (CORS,
// docs/deploy.md); gRPC is not there, as fetch cannot read HTTP/2 trailers: Connect or gRPC-Web.
import type { Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { clientsOn, interceptorsOf, type Clients, type CommonTransportOptions, type Protocol } from "./client-common.js";

export { decodeErrorInfo, reasonIs, type ErrorInfo } from "./error-info.js";
export { bearer, describeError, type Clients, type Protocol } from "./client-common.js";

export interface TransportOptions extends CommonTransportOptions {
  // The fetch to call (globalThis.fetch by default), e.g. one that adds credentials of its own.
  fetch?: typeof globalThis.fetch;
}

export function transport(baseUrl: string, protocol: Protocol, options: TransportOptions = {}): Transport {
  const useHttpGet = options.httpGet ?? false;
  const interceptors = interceptorsOf(protocol, options);
  const fetch = options.fetch === undefined ? {} : { fetch: options.fetch };
  switch (protocol) {
    case "connect-json":
      return createConnectTransport({ baseUrl, useHttpGet, interceptors, ...fetch });
    case "connect-binary":
      return createConnectTransport({ baseUrl, useBinaryFormat: true, useHttpGet, interceptors, ...fetch });
    case "grpc":
      throw new TypeError("gRPC needs HTTP/2 trailers, which a browser's fetch does not give: use connect-json, connect-binary or grpc-web");
    case "grpc-web":
      return createGrpcWebTransport({ baseUrl, interceptors, ...fetch });
  }
}

export function clients(baseUrl: string, protocol: Protocol, options: TransportOptions = {}): Clients {
  return clientsOn(transport(baseUrl, protocol, options));
}
