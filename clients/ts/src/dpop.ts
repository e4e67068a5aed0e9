// DPoP (RFC 9449): a key pair that tokens can be bound to, and a proof of it for each call.
//
// A token minted with `popKeyId: key.thumbprint` is bound to `key`: every call with it carries
// `Authorization: DPoP <token>` and a `DPoP` header, a JWS signed by the key that names the
// call's method (`htm`: GET for the Connect GET form, else POST) and URL without its query
// (`htu`), the time (`iat`), a unique id (`jti`) and the token's hash (`ath`).
// `authInterceptor(token, { dpop: key })` makes one for every call; `proof()` is there for
// anything else. The signing and hashing are WebCrypto's (globalThis.crypto, in Node as in
// browsers, where a key generated not extractable can be kept in IndexedDB as it is). No node:*
// import.
import { base64url, buffer, utf8 } from "./bytes.js";
import type { WebCryptoKey as CryptoKey } from "./recipient-keys.js";

const subtle = () => globalThis.crypto.subtle;

// A private EC JWK as WebCrypto exports it (or as it was saved).
export interface DPoPPrivateJwk {
  kty?: string;
  crv?: string;
  x?: string;
  y?: string;
  d?: string;
  [member: string]: unknown;
}

const ES256 = { name: "ECDSA", namedCurve: "P-256" } as const;

// The public key as a JWK: the members RFC 7638 hashes, nothing else.
export interface PublicJwk {
  kty: "EC";
  crv: "P-256";
  x: string;
  y: string;
}

async function sha256(text: string): Promise<string> {
  return base64url(await subtle().digest("SHA-256", buffer(utf8(text))));
}

// The URL as a proof names it: without query or fragment (RFC 9449 section 4.2).
export function htu(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
}

// The `ath` claim: base64url (unpadded) SHA-256 of the access token.
export function accessTokenHash(accessToken: string): Promise<string> {
  return sha256(accessToken);
}

// An EC P-256 key pair signing DPoP proofs with ES256. Make one with `DPoPKey.generate()`;
// to use the same key (and the tokens bound to it) after a restart, generate it extractable,
// keep `await key.privateJwk()` somewhere safe and load it with `DPoPKey.fromJwk()`.
export class DPoPKey {
  private constructor(
    private readonly privateKey: CryptoKey,
    private readonly jwk: PublicJwk,
    // The RFC 7638 SHA-256 JWK thumbprint (`jkt`): MintUserApiToken's `popKeyId`.
    readonly thumbprint: string,
  ) {}

  private static async of(privateKey: CryptoKey, publicKey: CryptoKey): Promise<DPoPKey> {
    const exported = await subtle().exportKey("jwk", publicKey);
    const jwk: PublicJwk = { kty: "EC", crv: "P-256", x: exported.x ?? "", y: exported.y ?? "" };
    // RFC 7638: the required members, in lexicographic order, without whitespace.
    const thumbprint = await sha256(JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }));
    return new DPoPKey(privateKey, jwk, thumbprint);
  }

  // A new key pair; `extractable: true` lets `privateJwk()` export it to be saved.
  static async generate(options: { extractable?: boolean } = {}): Promise<DPoPKey> {
    const pair = await subtle().generateKey(ES256, options.extractable ?? false, ["sign", "verify"]);
    return DPoPKey.of(pair.privateKey, pair.publicKey);
  }

  // A key saved with `privateJwk()` (an EC P-256 private JWK).
  static async fromJwk(privateJwk: DPoPPrivateJwk): Promise<DPoPKey> {
    if (privateJwk.kty !== "EC" || privateJwk.crv !== "P-256" || !privateJwk.d) {
      throw new TypeError("a DPoP key is a private EC P-256 JWK");
    }
    const { kty, crv, x, y, d } = privateJwk;
    const privateKey = await subtle().importKey("jwk", { kty, crv, x, y, d }, ES256, true, ["sign"]);
    const publicKey = await subtle().importKey("jwk", { kty, crv, x, y }, ES256, true, ["verify"]);
    return DPoPKey.of(privateKey, publicKey);
  }

  // The private key as a JWK (a secret: store it like one); only for an extractable key.
  async privateJwk(): Promise<DPoPPrivateJwk> {
    const { kty, crv, x, y, d } = await subtle().exportKey("jwk", this.privateKey);
    return { kty, crv, x, y, d };
  }

  publicJwk(): PublicJwk {
    return { ...this.jwk };
  }

  // A fresh proof for one call: `method` the HTTP method, `url` the procedure's URL (any query
  // or fragment is left out of `htu`), `accessToken` the token in `Authorization`.
  async proof(method: string, url: string, accessToken: string): Promise<string> {
    const header = { typ: "dpop+jwt", alg: "ES256", jwk: this.jwk };
    const claims = {
      htm: method.toUpperCase(),
      htu: htu(url),
      iat: Math.floor(Date.now() / 1000),
      jti: globalThis.crypto.randomUUID(),
      ath: await accessTokenHash(accessToken),
    };
    const signingInput = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(claims))}`;
    // WebCrypto's ECDSA signature is r || s, the form JWS uses (RFC 7518 section 3.4).
    const signature = await subtle().sign({ name: "ECDSA", hash: "SHA-256" }, this.privateKey, buffer(utf8(signingInput)));
    return `${signingInput}.${base64url(signature)}`;
  }

  toJSON(): { thumbprint: string } {
    return { thumbprint: this.thumbprint }; // never the private part
  }
}
