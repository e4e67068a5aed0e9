// node:fs for the Node check programs run in a page (tests/e2e/test_ts_browser.py): the files
// they read, handed to the page beforehand as globalThis.__files (path -> text).
const files = () => globalThis.__files;
export function readFileSync(path) {
  const text = files()[path];
  if (text === undefined) throw new Error(`no file ${path} handed to the page`);
  return text;
}
export function readdirSync(directory) {
  const prefix = directory.endsWith("/") ? directory : `${directory}/`;
  return Object.keys(files()).filter((path) => path.startsWith(prefix) && !path.slice(prefix.length).includes("/")).map((path) => path.slice(prefix.length));
}
export function writeFileSync(path, text) {
  files()[path] = String(text);
}
