// The key directory's pure core of the npm package (zkplatform-client/key-directory), as a consumer
// imports it, over every case of clients/testdata/key-transparency.json, step by step, as the
// Python package's tests/clients/test_key_transparency_vectors.py runs them. Prints a JSON report,
// {cases: [{name, steps: [what each step concluded]}]}, that tests/e2e/test_ts_key_transparency.py
// compares with the file's expectations; this script judges nothing itself.
//   node key_transparency_checks.js VECTORS_FILE
import { readFileSync } from "node:fs";
import {
  KeyLogError,
  Me,
  TrustPolicy,
  acknowledgeReset,
  recipientKeys,
  verifyUpdate,
  type Alert,
  type KeyLogState,
} from "zkplatform-client/key-directory";

interface PolicyDocument {
  logKeys: string[];
  witnesses: string[];
  quorum: number;
  maxAgeSeconds: number;
  allowNoWitnesses?: boolean;
}
interface UpdateDocument {
  checkpoint: string;
  startIndex: number;
  entries: { index: number; data: string }[];
  consistencyProof: string[];
}
type Step =
  | { now: number; update: UpdateDocument; expect: unknown }
  | { acknowledgeReset: { principalId: string; index: number } }
  | { me: { principalId: string; deviceIds: string[]; statements: string[] } }
  | { recipientKeys: string[]; expect: unknown };
interface Case {
  name: string;
  policy?: PolicyDocument;
  me: { principalId: string; deviceIds: string[]; statements: string[] } | null;
  steps: Step[];
}

const [vectorsFile] = process.argv.slice(2);
const vectors = JSON.parse(readFileSync(vectorsFile!, "utf8")) as { tenantId: string; policy: PolicyDocument; cases: Case[] };

function policyOf(document: PolicyDocument): TrustPolicy {
  const { logKeys, witnesses, quorum, maxAgeSeconds, allowNoWitnesses } = document;
  return new TrustPolicy({ logKeys, witnesses, quorum, maxAgeSeconds, allowNoWitnesses: allowNoWitnesses ?? false });
}

// The standard base64 of the vectors, read strictly: a text that is not exactly the encoding of its bytes fails the step.
function base64(text: string): Uint8Array {
  const bytes = Buffer.from(text, "base64");
  if (bytes.toString("base64") !== text) throw new Error(`not standard base64: ${text}`);
  return new Uint8Array(bytes);
}

function outcome(state: KeyLogState, alerts: Alert[]): object {
  return {
    ok: true,
    size: state.size,
    alerts: alerts.map(({ index, kind, deviceId }) => ({ index, kind, deviceId })),
    live: Object.fromEntries(state.principals().map((p) => [p, state.liveDevices(p).map((d) => d.agreementKeyId)])),
    unacknowledgedResets: state.unacknowledgedResets.map(({ principalId, index }) => ({ principalId, index })),
  };
}

// What a refusal concluded: its reason, or for anything but a KeyLogError its class and message.
function refused(error: unknown): object {
  if (error instanceof KeyLogError) return { ok: false, reason: error.reason };
  return { ok: false, error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
}

function meOf(document: Case["me"]): Me | null {
  return document === null ? null : new Me(document.principalId, document.deviceIds, document.statements);
}

function run(c: Case): object[] {
  const policy = policyOf(c.policy ?? vectors.policy);
  let me = meOf(c.me);
  let state: KeyLogState | null = null;
  const steps: object[] = [];
  for (const step of c.steps) {
    if ("update" in step) {
      const before = state;
      try {
        const { update, now } = step;
        const consistencyProof = update.consistencyProof.map(base64);
        const verified = verifyUpdate(state, { ...update, consistencyProof }, policy, vectors.tenantId, now, me);
        state = verified.state;
        steps.push(outcome(verified.state, verified.alerts));
      } catch (error) {
        // A refusal leaves the state as it was: the step after it starts from the same one.
        steps.push({ ...refused(error), unchanged: state === before });
      }
    } else if ("me" in step) {
      // This device's record replaced, as a device records a statement it is about to send.
      me = meOf(step.me);
      steps.push({ me: true });
    } else if ("acknowledgeReset" in step) {
      try {
        state = acknowledgeReset(state!, step.acknowledgeReset.principalId, step.acknowledgeReset.index);
        steps.push({ acknowledged: true });
      } catch (error) {
        steps.push(refused(error));
      }
    } else {
      try {
        const keys = recipientKeys(state!, step.recipientKeys);
        steps.push({ ok: true, keys: Object.fromEntries([...keys].map(([p, found]) => [p, found.map((key) => key.keyId)])) });
      } catch (error) {
        steps.push(refused(error));
      }
    }
  }
  return steps;
}

console.log(JSON.stringify({ cases: vectors.cases.map((c) => ({ name: c.name, steps: run(c) })) }));
