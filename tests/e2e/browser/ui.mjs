// Drives a page through its UI in headless Chromium (the distribution's, /usr/bin/chromium) with
// playwright-core, for tests/e2e/test_web_vault.py: one browser for as long as the test module
// runs, told what to do one command at a time. It reads one JSON command a line on stdin and
// answers one JSON line on stdout each ({"answer": ...} or {"error": "..."}); Chromium is kept off
// the network and gets a fresh profile, as drive.mjs does.
//   node ui.mjs CLIENTS_TS_DIR
// Commands: {"goto": URL}, {"fill": SELECTOR, "value": TEXT}, {"select": SELECTOR, "value": V},
// {"click": SELECTOR}, {"text": SELECTOR} (its textContent), {"texts": SELECTOR} (each match's),
// {"attributes": SELECTOR, "name": NAME} (each match's), {"wait": SELECTOR, "state": "visible" |
// "hidden" | "attached" | "detached", "hasText": TEXT?} (Playwright's bounded wait for the first
// match), {"events": true} (the console messages, page errors and request URLs since the last
// such command).
import { createRequire } from "node:module";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

const [clientsTs] = process.argv.slice(2);
const { chromium } = createRequire(join(clientsTs, "package.json"))("playwright-core");
const profile = mkdtempSync(join(tmpdir(), "chromium-profile-"));
const flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const browser = await chromium.launchPersistentContext(profile, { executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", headless: true, args: flags, timeout: 60_000 });
const page = browser.pages()[0] ?? (await browser.newPage());
page.setDefaultTimeout(60_000);
let events = { console: [], pageErrors: [], requests: [] };
page.on("console", (message) => events.console.push(`${message.type()}: ${message.text()}`));
page.on("pageerror", (error) => events.pageErrors.push(String(error)));
page.on("request", (request) => events.requests.push(request.url()));

async function perform(command) {
  if (command.goto !== undefined) return void (await page.goto(command.goto));
  if (command.fill !== undefined) return void (await page.fill(command.fill, command.value));
  if (command.select !== undefined) return await page.selectOption(command.select, command.value);
  if (command.click !== undefined) return void (await page.click(command.click));
  if (command.text !== undefined) return await page.locator(command.text).first().textContent();
  if (command.texts !== undefined) return await page.locator(command.texts).allTextContents();
  if (command.attributes !== undefined) {
    return await page.locator(command.attributes).evaluateAll((nodes, name) => nodes.map((node) => node.getAttribute(name)), command.name);
  }
  if (command.wait !== undefined) {
    let locator = page.locator(command.wait);
    if (command.hasText !== undefined) locator = locator.filter({ hasText: command.hasText });
    return void (await locator.first().waitFor({ state: command.state ?? "visible" }));
  }
  if (command.events !== undefined) {
    const seen = events;
    events = { console: [], pageErrors: [], requests: [] };
    return seen;
  }
  throw new Error(`no such command: ${JSON.stringify(command)}`);
}

try {
  for await (const line of createInterface({ input: process.stdin })) {
    if (line.trim() === "") continue;
    let reply;
    try {
      reply = { answer: (await perform(JSON.parse(line))) ?? null };
    } catch (error) {
      reply = { error: String(error?.message ?? error) };
    }
    process.stdout.write(`${JSON.stringify(reply)}\n`);
  }
} finally {
  await browser.close();
  rmSync(profile, { recursive: true, force: true });
}
