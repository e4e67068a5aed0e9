// Every vector of clients/testdata/sealed-*.json opened in the page by the package's browser
// entry, as tests/e2e/clients/sealing_checks.ts's `vectors` does in Node: each file's vectors in
// order, each what opening answered (its plaintext in base64url, format version and signer by the
// name signers.json gives it, or the reason), against the directory of signers.json's devices
// inDirectory. The files come from the driver as globalThis.__files; prints one JSON line.
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { ItemSchema, SealingError, importRecipientKey, openItem, type RecipientKeyPair, type SignerDirectory } from "zkplatform-client";

type SignerDocument = { deviceId: string; principalId: string; live: boolean; signingJwk: string; inDirectory: boolean };
type Expect = { ok: true; plaintext: string; formatVersion: number; signer: string | null; signerLive?: boolean } | { ok: false; reason: string };

const files = (globalThis as unknown as { __files: Record<string, string> }).__files;
const read = (name: string) => JSON.parse(files[`/testdata/${name}`]!);
const b64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

const keys = read("recipients.json").keys as Record<string, object>;
const signers = read("signers.json").signers as Record<string, SignerDocument>;
const directory: SignerDirectory = { signer: (deviceId) => Object.values(signers).find((s) => s.deviceId === deviceId && s.inDirectory) };
const names = new Map(Object.entries(signers).map(([name, s]) => [s.deviceId, name]));
const pairs = new Map<string, RecipientKeyPair>();
for (const [name, jwk] of Object.entries(keys)) pairs.set(name, await importRecipientKey(jwk));
const report: Record<string, Expect[]> = {};
for (const path of Object.keys(files).filter((p) => /^\/testdata\/sealed-.*\.json$/.test(p)).sort()) {
  const answers: Expect[] = [];
  for (const vector of (JSON.parse(files[path]!) as { vectors: { recipient: string; item: JsonValue }[] }).vectors) {
    try {
      const opened = await openItem(fromJson(ItemSchema, vector.item), pairs.get(vector.recipient)!, directory);
      const signer = opened.sealedBy === null ? null : (names.get(opened.sealedBy.deviceId) ?? `unnamed ${opened.sealedBy.deviceId}`);
      const answer: Expect = { ok: true, plaintext: b64(opened.plaintext), formatVersion: opened.formatVersion, signer };
      if (opened.sealedBy !== null) answer.signerLive = opened.sealedBy.live;
      answers.push(answer);
    } catch (error) {
      if (!(error instanceof SealingError)) throw error;
      answers.push({ ok: false, reason: error.reason });
    }
  }
  report[path.slice("/testdata/".length)] = answers;
}
console.log(JSON.stringify(report));
