// TLS with a private CA: trust the CA that signed the server's certificate, over gRPC and Connect.
//   node tls.js BASE_URL TOKEN CA_FILE
import { readFileSync } from "node:fs";
import { clients } from "zkplatform-client";

const [baseUrl, token, caFile] = process.argv.slice(2);
const ca = readFileSync(caFile); // PEM; trusted instead of Node's CAs

const listed: Record<string, number> = {};
for (const protocol of ["grpc", "connect-binary"] as const) {
  // gRPC is HTTP/2; Connect is HTTP/1.1 unless `httpVersion: "2"`.
  const { vault } = clients(baseUrl, protocol, { token, ca, httpVersion: "2" });
  listed[protocol] = (await vault.listItems({ vaultId: "acme-shared" })).items.length;
}

console.log(JSON.stringify({ listed }));
