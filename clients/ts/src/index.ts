// The package's entry point in Node: the transports and helpers, auth and DPoP, the sync client,
// sealing, devices and the key directory, and the generated messages and services. Browsers get
// browser.ts (the `browser` condition): the same, but for the transports and the stores.
export * from "./client.js";
export * from "./auth.js";
export * from "./dpop.js";
export { ERROR_DOMAIN, errorDetails, errorInfoOf, isTokenExpired, type ErrorDetails, type FieldViolation } from "./error-info.js";
export * from "./sync-node.js";
export * from "./sealing.js";
export * from "./devices.js";
export * from "./key-directory-node.js";
export * from "./gen/zkplatform_api/platform/v1/vault_pb.js";
export * from "./gen/zkplatform_api/platform/v1/broker_pb.js";
export * from "./gen/zkplatform_api/platform/v1/errors_pb.js";
export * from "./gen/zkplatform_api/platform/v1/directory_pb.js";
// What a Connect for ECMAScript user needs to build a client on a transport of their own, from
// the versions this package depends on.
export { Code, ConnectError, createClient, type CallOptions, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
export { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
