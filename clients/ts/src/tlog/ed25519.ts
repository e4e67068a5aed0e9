// The one Ed25519 signature check of the package (statements, sealed items, notes, cosignatures),
// deciding every signature exactly as OpenSSL does, which the Python package's `cryptography`
// calls: if two readers decided apart, a signer could make an entry, an item or a checkpoint that
// one accepts and the other refuses.
//
// @noble/curves' ed25519.verify decides apart from OpenSSL in both directions, even with
// zip215: false (@noble/curves 2.4.0, abstract/edwards.js verify(); the vectors of "Taming the Many
// EdDSAs", clients/testdata/ed25519-speccheck.json): it checks the cofactored equation
// [8]([S]B - R - [k]A) = 0, so it accepts an R or an A with a small-order component that OpenSSL's
// [S]B - [k]A = R refuses (cases 4 and 5), and it refuses keys of small order and keys whose y is
// not reduced, which OpenSSL accepts (cases 0, 1 and 11). So the check here is OpenSSL's
// ossl_ed25519_verify (crypto/ec/curve25519.c), step by step, on noble's group arithmetic:
// - S below L, else refused (RFC 8032 section 5.1.7, step 1);
// - A decoded as ref10's ge_frombytes_vartime decodes it: y read from the low 255 bits and reduced
//   (a y of p or more is not refused), its x of the sign bit's parity (x = 0 with the bit set is
//   not refused), refused only when no point of the curve has that y (noble's zip215 decoding);
// - k = SHA-512(R || A || M) mod L over the bytes as received;
// - [S]B - [k]A encoded and compared with R byte for byte: the cofactorless equation, and an R
//   whose encoding is not canonical never matches (R itself is never decoded).
// Verification handles public data only: nothing here needs constant time.
import { ed25519 } from "@noble/curves/ed25519.js";
import { sha512 } from "@noble/hashes/sha2.js";
import { concatBytes, equalBytes } from "./encoding.js";

const { Point } = ed25519;
const SIZE = 32;

function littleEndian(bytes: Uint8Array): bigint {
  let value = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) value = (value << 8n) | BigInt(bytes[i]!);
  return value;
}

/**
 * Whether `signature` is the Ed25519 signature of `message` by the 32-byte `publicKey`, decided as
 * OpenSSL decides it (RFC 8032's cofactorless check); false, never a throw, for bytes of the wrong
 * sizes or a key that is no point.
 */
export function ed25519Verify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  if (publicKey.length !== SIZE || signature.length !== 2 * SIZE) return false;
  const r = signature.subarray(0, SIZE);
  const s = littleEndian(signature.subarray(SIZE));
  if (!Point.Fn.isValid(s)) return false;
  let A: typeof Point.BASE;
  try {
    A = Point.fromBytes(publicKey, true);
  } catch {
    return false;
  }
  const k = Point.Fn.create(littleEndian(sha512(concatBytes(r, publicKey, message))));
  return equalBytes(Point.BASE.multiplyUnsafe(s).subtract(A.multiplyUnsafe(k)).toBytes(), r);
}
