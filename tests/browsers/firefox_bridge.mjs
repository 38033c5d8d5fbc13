// Firefox for the cross-browser suite (tests/browsers/engines.py): puppeteer-core drives Debian's
// firefox-esr over WebDriver BiDi, one page, by commands read as JSON lines on standard input, each
// answered by one JSON line on standard output: {"ok": value} or {"error": message}.
//   {"op": "goto", "url"}  {"op": "reload"}  {"op": "eval", "js"} (an expression; a promise is awaited)
//   {"op": "click", "selector"}  {"op": "type", "selector", "text"}  {"op": "press", "key"}
//   {"op": "viewport", "width", "height"}  {"op": "screenshot", "path"}  {"op": "close"}
// argv[2]: the firefox binary; argv[3]: the profile folder (kept by the caller); argv[4]: the folder
// holding node_modules/puppeteer-core (the pinned install, tools/engines.py). No preference
// answers a permission prompt: navigator.storage.persist() behaves as a visitor's Firefox.
import { createInterface } from "node:readline";
import { createRequire } from "node:module";
import { join } from "node:path";

const [executablePath, userDataDir, installDir] = process.argv.slice(2);
const puppeteer = createRequire(join(installDir, "package.json"))("puppeteer-core");
const browser = await puppeteer.launch({
  browser: "firefox",
  executablePath,
  userDataDir,
  headless: true,
  protocol: "webDriverBiDi",
  defaultViewport: { width: 1280, height: 800 },
});
const page = (await browser.pages())[0] || (await browser.newPage());
page.setDefaultTimeout(60_000);

const ops = {
  goto: ({ url }) => page.goto(url, { waitUntil: "load" }).then(() => null),
  reload: () => page.reload({ waitUntil: "load" }).then(() => null),
  eval: ({ js }) => page.evaluate(`(async () => (${js}))()`),
  click: ({ selector }) => page.click(selector),
  type: ({ selector, text }) => page.type(selector, text),
  press: ({ key }) => page.keyboard.press(key),
  viewport: ({ width, height }) => page.setViewport({ width, height }),
  screenshot: ({ path }) => page.screenshot({ path }).then(() => null),
  close: () => browser.close(),
};

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  const command = JSON.parse(line);
  let answer;
  try {
    const value = await ops[command.op](command);
    answer = { ok: value === undefined ? null : value };
  } catch (error) {
    answer = { error: String(error && error.message ? error.message : error) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
  if (command.op === "close") break;
}
process.exit(0);
