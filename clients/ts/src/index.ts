// The package's entry point: the transports and helpers, the sync client and the generated messages and services.
export * from "./client.js";
export * from "./sync.js";
export * from "./gen/zkplatform_api/platform/v1/vault_pb.js";
export * from "./gen/zkplatform_api/platform/v1/broker_pb.js";
