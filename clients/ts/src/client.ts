// A platform.v1 client for Node, over any of the protocols the server speaks.
import { Code, ConnectError, createClient, type Client, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { VaultService } from "./gen/zkplatform_api/platform/v1/vault_pb.js";
import { BrokerService } from "./gen/zkplatform_api/platform/v1/broker_pb.js";

export type Protocol = "connect-json" | "connect-binary" | "grpc" | "grpc-web";

// httpGet: the Connect protocols call the RPCs without side effects (GetItem,
// ListItems) with HTTP GET, the message in the query; gRPC and gRPC-Web ignore it.
export interface TransportOptions {
  httpGet?: boolean;
}

export function transport(baseUrl: string, protocol: Protocol, options: TransportOptions = {}): Transport {
  const useHttpGet = options.httpGet ?? false;
  switch (protocol) {
    case "connect-json":
      return createConnectTransport({ baseUrl, httpVersion: "1.1", useHttpGet });
    case "connect-binary":
      return createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true, useHttpGet });
    case "grpc":
      return createGrpcTransport({ baseUrl }); // HTTP/2 cleartext, prior knowledge
    case "grpc-web":
      return createGrpcWebTransport({ baseUrl, httpVersion: "1.1" });
  }
}

export interface Clients {
  vault: Client<typeof VaultService>;
  broker: Client<typeof BrokerService>;
}

export function clients(baseUrl: string, protocol: Protocol, options: TransportOptions = {}): Clients {
  const t = transport(baseUrl, protocol, options);
  return { vault: createClient(VaultService, t), broker: createClient(BrokerService, t) };
}

export function bearer(token: string): { headers: Record<string, string> } {
  return { headers: { Authorization: `Bearer ${token}` } };
}

export interface ErrorInfo {
  reason: string;
  domain: string;
  metadata: Record<string, string>;
}

// google.rpc.ErrorInfo from an error detail's bytes (fields 1 reason, 2 domain, 3 metadata map).
export function decodeErrorInfo(bytes: Uint8Array): ErrorInfo {
  const reader = new BinaryReader(bytes);
  const info: ErrorInfo = { reason: "", domain: "", metadata: {} };
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field === 1) info.reason = reader.string();
    else if (field === 2) info.domain = reader.string();
    else if (field === 3) {
      const entry = new BinaryReader(reader.bytes());
      let key = "";
      let value = "";
      while (entry.pos < entry.len) {
        const [entryField, entryWire] = entry.tag();
        if (entryField === 1) key = entry.string();
        else if (entryField === 2) value = entry.string();
        else entry.skip(entryWire);
      }
      info.metadata[key] = value;
    } else reader.skip(wireType);
  }
  return info;
}

// A failed call's code name and its google.rpc.ErrorInfo detail, if it carries one.
export function describeError(error: unknown): { code: string; info: ErrorInfo | null } {
  const e = ConnectError.from(error);
  // Details received from a server are raw: {type, value (bytes), debug}.
  const detail = e.details.find((d) => "type" in d && d.type === "google.rpc.ErrorInfo");
  return { code: Code[e.code], info: detail && "type" in detail ? decodeErrorInfo(detail.value) : null };
}
