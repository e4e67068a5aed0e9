// What a failed call says, as data: google.rpc.ErrorInfo (the detail every refusal of the platform
// carries), BadRequest (on invalid_argument) and RetryInfo (on resource_exhausted and unavailable),
// read by one call, errorDetails(error); and the one reason the auth interceptor acts on.
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

// One entry of a BadRequest: the field (a path in lowerCamelCase, "" for the request as a whole)
// and what is wrong with it.
export interface FieldViolation {
  field: string;
  description: string;
}

// A failed call's code and message, and the details the platform's errors carry.
export interface ErrorDetails {
  code: Code;
  message: string;
  // The ErrorInfo's reason (the name of an ErrorReason value); null when the error has no
  // ErrorInfo of the platform (a network failure, a proxy's answer).
  reason: string | null;
  // The ErrorInfo's metadata (currentVersion, requiredScope, limit...).
  metadata: Record<string, string>;
  // The BadRequest's field violations (invalid_argument).
  violations: FieldViolation[];
  // The RetryInfo's delay in ms; null without one (resource_exhausted and unavailable have one).
  retryAfterMs: number | null;
  // Whether the reason is that ErrorReason value: `details.reasonIs(ErrorReason.ITEM_EXISTS)`.
  reasonIs(reason: ErrorReason): boolean;
}

// The raw details a ConnectError received: {type, value (bytes)}.
function rawDetails(error: ConnectError): { type: string; value: Uint8Array }[] {
  return error.details.flatMap((d) => ("type" in d && "value" in d ? [{ type: d.type, value: d.value }] : []));
}

function decodeBadRequest(bytes: Uint8Array): FieldViolation[] {
  // google.rpc.BadRequest: 1 field_violations {1 field, 2 description, ...}.
  const violations: FieldViolation[] = [];
  const reader = new BinaryReader(bytes);
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field !== 1) {
      reader.skip(wireType);
      continue;
    }
    const entry = new BinaryReader(reader.bytes());
    const violation: FieldViolation = { field: "", description: "" };
    while (entry.pos < entry.len) {
      const [entryField, entryWire] = entry.tag();
      if (entryField === 1) violation.field = entry.string();
      else if (entryField === 2) violation.description = entry.string();
      else entry.skip(entryWire);
    }
    violations.push(violation);
  }
  return violations;
}

function decodeRetryDelayMs(bytes: Uint8Array): number {
  // google.rpc.RetryInfo: 1 retry_delay (google.protobuf.Duration: 1 seconds, 2 nanos).
  let ms = 0;
  const reader = new BinaryReader(bytes);
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field !== 1) {
      reader.skip(wireType);
      continue;
    }
    const duration = new BinaryReader(reader.bytes());
    while (duration.pos < duration.len) {
      const [durationField, durationWire] = duration.tag();
      if (durationField === 1) ms += Number(duration.int64()) * 1000;
      else if (durationField === 2) ms += duration.int32() / 1e6;
      else duration.skip(durationWire);
    }
  }
  return Math.max(ms, 0);
}

// The reason, metadata, field violations and retry delay of a failed call (any thrown value:
// what is not a ConnectError is read as Connect reads it, code Unknown and no details).
export function errorDetails(error: unknown): ErrorDetails {
  const e = ConnectError.from(error);
  let reason: string | null = null;
  let metadata: Record<string, string> = {};
  const violations: FieldViolation[] = [];
  let retryAfterMs: number | null = null;
  for (const detail of rawDetails(e)) {
    if (detail.type === "google.rpc.ErrorInfo" && reason === null) {
      const info = decodeErrorInfo(detail.value);
      if (info.domain === ERROR_DOMAIN) ({ reason, metadata } = info);
    } else if (detail.type === "google.rpc.BadRequest") violations.push(...decodeBadRequest(detail.value));
    else if (detail.type === "google.rpc.RetryInfo" && retryAfterMs === null) retryAfterMs = decodeRetryDelayMs(detail.value);
  }
  const found: string | null = reason;
  return {
    code: e.code,
    message: e.rawMessage,
    reason: found,
    metadata,
    violations,
    retryAfterMs,
    reasonIs: (wanted: ErrorReason) => found !== null && found === ErrorReason[wanted],
  };
}

// Whether the server refused the call because its token expired (reason TOKEN_EXPIRED). Servers
// before the ErrorReason constants sent no ErrorInfo on `unauthenticated`, and said it in the message.
export function isTokenExpired(error: unknown): boolean {
  const details = errorDetails(error);
  if (details.code !== Code.Unauthenticated) return false;
  if (details.reason !== null) return details.reasonIs(ErrorReason.TOKEN_EXPIRED);
  return details.message === "token expired";
}
