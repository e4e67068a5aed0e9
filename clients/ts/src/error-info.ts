// google.rpc.ErrorInfo, the detail a refusal of the platform carries, and the one reason the
// auth interceptor acts on.
import { Code, ConnectError } from "@connectrpc/connect";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { ErrorReason } from "./gen/zkplatform_api/platform/v1/errors_pb.js";

// ErrorInfo.domain of the platform's errors. Each error carries exactly one ErrorInfo of it; its
// reason is the name of an ErrorReason value (errors.proto): match on that, e.g.
// `reasonIs(info, ErrorReason.CURSOR_EXPIRED)`, never on the message.
export const ERROR_DOMAIN = "zkplatform.dev";

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

// Whether the ErrorInfo is the platform's, with that reason.
export function reasonIs(info: ErrorInfo | null, reason: ErrorReason): boolean {
  return info !== null && info.domain === ERROR_DOMAIN && info.reason === ErrorReason[reason];
}

// The google.rpc.ErrorInfo detail of a failed call, if it carries one.
export function errorInfoOf(error: ConnectError): ErrorInfo | null {
  // Details received from a server are raw: {type, value (bytes), debug}.
  const detail = error.details.find((d) => "type" in d && d.type === "google.rpc.ErrorInfo");
  return detail && "type" in detail ? decodeErrorInfo(detail.value) : null;
}

// Whether the server refused the call because its token expired. Servers that send an ErrorInfo
// in the platform's domain say so with its reason; servers before the ErrorReason constants sent
// none on `unauthenticated`, and said it in the message.
export function isTokenExpired(error: unknown): boolean {
  const e = ConnectError.from(error);
  if (e.code !== Code.Unauthenticated) return false;
  const info = errorInfoOf(e);
  if (info !== null && info.domain === ERROR_DOMAIN) return reasonIs(info, ErrorReason.TOKEN_EXPIRED);
  return e.rawMessage === "token expired";
}
