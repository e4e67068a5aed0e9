// Drives headless Chromium (the distribution's, /usr/bin/chromium) with playwright-core for
// tests/e2e/test_ts_browser.py: opens PAGE_URL, runs each step of the plan (a JSON file) in the
// page and prints one JSON line: each step's answer, and the page's errors. Chromium is kept off
// the network (its own connections: updates, sync, QUIC) and gets a fresh profile.
//   node drive.mjs CLIENTS_TS_DIR PAGE_URL PLAN_FILE
// A step is {"import": "kt.js", "argv": [...], "files": {path: text}} (a check program: its
// console.log lines) or {"call": "interop.seal", "args": [...]} (a function of the page's).
import { createRequire } from "node:module";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [clientsTs, pageUrl, planFile] = process.argv.slice(2);
const { chromium } = createRequire(join(clientsTs, "package.json"))("playwright-core");
const plan = JSON.parse(readFileSync(planFile, "utf8"));
const profile = mkdtempSync(join(tmpdir(), "chromium-profile-"));
// The profile (--user-data-dir) is playwright's argument of a persistent context.
const flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const browser = await chromium.launchPersistentContext(profile, { executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", headless: true, args: flags, timeout: 60_000 });
const errors = [];
const answers = [];
try {
  const page = browser.pages()[0] ?? (await browser.newPage());
  page.on("pageerror", (error) => errors.push(String(error)));
  page.setDefaultTimeout(120_000);
  await page.goto(pageUrl);
  for (const step of plan) {
    if (step.import !== undefined) {
      answers.push(
        await page.evaluate(async ({ module, argv, files }) => {
          globalThis.__argv = argv;
          globalThis.__files = files;
          const lines = [];
          const log = console.log;
          console.log = (...parts) => lines.push(parts.join(" "));
          try {
            await import(new URL(module, location.href).href);
          } catch (error) {
            return { error: `${error}\n${error?.stack ?? ""}` };
          } finally {
            console.log = log;
          }
          return { lines };
        }, { module: step.import, argv: step.argv ?? [], files: step.files ?? {} }),
      );
    } else {
      answers.push(
        await page.evaluate(async ({ name, args }) => {
          const [object, method] = name.split(".");
          try {
            return { answer: await globalThis[object][method](...args) };
          } catch (error) {
            return { error: `${error}\n${error?.stack ?? ""}` };
          }
        }, { name: step.call, args: step.args ?? [] }),
      );
    }
  }
} finally {
  await browser.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log(JSON.stringify({ answers, errors }));
