// The package's entry point in browsers (the `browser` condition): index.ts's API with
// @connectrpc/connect-web's fetch transports (client-web.ts) and the state of the key directory
// and of a sync in IndexedDB (or a store of the application's) instead of files. WebCrypto is
// globalThis.crypto's; nothing reachable from here imports node:* (a test bundles it to check).
export * from "./client-web.js";
export * from "./auth.js";
export * from "./dpop.js";
export { ERROR_DOMAIN, errorDetails, errorInfoOf, isTokenExpired, type ErrorDetails, type FieldViolation } from "./error-info.js";
export * from "./sync.js";
export * from "./sealing.js";
export * from "./devices.js";
export * from "./key-directory.js";
export { IndexedDbKeyLogStore, IndexedDbSyncStore } from "./indexeddb-store.js";
export * from "./gen/zkplatform_api/platform/v1/vault_pb.js";
export * from "./gen/zkplatform_api/platform/v1/broker_pb.js";
export * from "./gen/zkplatform_api/platform/v1/errors_pb.js";
export * from "./gen/zkplatform_api/platform/v1/directory_pb.js";
export { Code, ConnectError, createClient, type CallOptions, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
export { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
