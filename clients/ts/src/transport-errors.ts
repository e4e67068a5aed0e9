// A server the client cannot trust is one it cannot reach: `Unavailable`, as the Python package
// (connectrpc answers UNAVAILABLE for whatever fails below the protocol) and gRPC say it, where
// Connect for Node leaves a TLS failure at `Internal` (it maps only refused, unresolved and timed
// out connections). `Internal` would tell the application the server broke; the fix is the
// client's trust (a CA) or the server's certificate, and the message still says which.
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";

// The codes Node gives a certificate that does not verify: OpenSSL's X509 verification errors.
const CERTIFICATE_ERRORS: ReadonlySet<string> = new Set([
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_CRL",
  "UNABLE_TO_DECRYPT_CERT_SIGNATURE",
  "UNABLE_TO_DECRYPT_CRL_SIGNATURE",
  "UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY",
  "CERT_SIGNATURE_FAILURE",
  "CRL_SIGNATURE_FAILURE",
  "CERT_NOT_YET_VALID",
  "CERT_HAS_EXPIRED",
  "CRL_NOT_YET_VALID",
  "CRL_HAS_EXPIRED",
  "ERROR_IN_CERT_NOT_BEFORE_FIELD",
  "ERROR_IN_CERT_NOT_AFTER_FIELD",
  "ERROR_IN_CRL_LAST_UPDATE_FIELD",
  "ERROR_IN_CRL_NEXT_UPDATE_FIELD",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "CERT_CHAIN_TOO_LONG",
  "CERT_REVOKED",
  "INVALID_CA",
  "PATH_LENGTH_EXCEEDED",
  "INVALID_PURPOSE",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "HOSTNAME_MISMATCH",
]);

// Whether a failure, or anything in its chain of causes, is TLS's: a certificate that does not
// verify, a name it does not cover (ERR_TLS_CERT_ALTNAME_INVALID), a handshake that fails (ERR_SSL_*).
export function isTlsFailure(error: unknown): boolean {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 16; cause = cause.cause, depth++) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code !== "string") continue;
    if (CERTIFICATE_ERRORS.has(code) || code.startsWith("ERR_TLS_") || code.startsWith("ERR_SSL_")) return true;
  }
  return false;
}

// Outermost in a transport's interceptors: a call that failed `Internal` for TLS fails `Unavailable`
// instead, with the same message, metadata and cause (no server answered: there are no details).
export const tlsFailureIsUnavailable: Interceptor = (next) => async (request) => {
  try {
    return await next(request);
  } catch (error) {
    if (error instanceof ConnectError && error.code === Code.Internal && isTlsFailure(error.cause)) {
      throw new ConnectError(error.rawMessage, Code.Unavailable, error.metadata, undefined, error.cause);
    }
    throw error;
  }
};
