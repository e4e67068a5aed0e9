// node:crypto for the check programs in a page: createHash("sha256" or "sha512"), on @noble/hashes (a
// dependency of the package). The package itself uses WebCrypto and @noble, not this.
import { sha256, sha512 } from "@noble/hashes/sha2.js";

const HASHES = { sha256, sha512 };
export function createHash(algorithm) {
  const hash_ = HASHES[algorithm];
  if (hash_ === undefined) throw new Error(`no ${algorithm} in the page's shim`);
  const parts = [];
  const hash = {
    update(data) {
      parts.push(typeof data === "string" ? new TextEncoder().encode(data) : data);
      return hash;
    },
    digest() {
      const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
      let at = 0;
      for (const p of parts) all.set(p, (at += p.length) - p.length);
      return hash_(all);
    },
  };
  return hash;
}
