// errorDetails of the npm package on the refusals the errors example does not provoke; prints the
// report error_checks.py prints.
//   node error_checks.js BASE_URL TOKEN
import { Code, ErrorReason, clients, errorDetails } from "zkplatform-client";

const [baseUrl, token] = process.argv.slice(2);
const DEADLINE_MS = 15_000;

// Code names as the Python package spells them (not_found).
const snake = (code: Code) => Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();

function described(error: unknown) {
  const details = errorDetails(error);
  return {
    code: snake(details.code),
    reason: details.reason,
    metadata: details.metadata,
    violations: details.violations.map((v) => [v.field, v.description]),
    retryAfter: details.retryAfterMs !== null && details.retryAfterMs > 0 && details.retryAfterMs <= 60_000,
  };
}

const report: Record<string, unknown> = {};
const { broker } = clients(baseUrl, "connect-binary", { token });
const mint = { tenantId: "acme", requestedScopes: ["vault.items.read"], requestedTtlSeconds: 1 };
const short = (await broker.mintUserApiToken(mint)).token!.accessToken;
const reader = clients(baseUrl, "connect-binary", { token: short });
let deadline = Date.now() + DEADLINE_MS;
while (Date.now() < deadline) {
  // until the server says it expired
  try {
    await reader.vault.getItem({ vaultId: "acme-shared", itemId: "item-2" });
  } catch (error) {
    report.expired = described(error);
    report.expiredIs = errorDetails(error).reasonIs(ErrorReason.TOKEN_EXPIRED);
    break;
  }
  await new Promise((resolve) => setTimeout(resolve, 200));
}
deadline = Date.now() + DEADLINE_MS;
while (Date.now() < deadline) {
  // until the mint rate is reached
  try {
    await broker.mintUserApiToken(mint);
  } catch (error) {
    report.rateLimited = described(error);
    break;
  }
}
const nowhere = clients("http://127.0.0.1:1", "connect-binary", { token }); // no server: no ErrorInfo
await nowhere.vault.getItem({ vaultId: "acme-shared", itemId: "item-2" }).catch((error) => (report.network = described(error)));
console.log(JSON.stringify(report));
