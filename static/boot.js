// Start-up shell: visible loading progress and start-up errors before Python runs.
// DESIGN.md §2 and §6: a start-up failure becomes html[data-error] holding the message,
// so tests fail fast with it instead of waiting for a timeout.
import { guardIndexedDb } from "./indexeddb-guard.js";
import { paint } from "./paint.js";

const root = document.documentElement;
// The interpreter's module (pyscript.toml's `interpreter`) imported now, not when PyScript reads its
// configuration: its first lines ask for the memory snapshot, and PyScript's import of the same URL
// gets this module, that one request with it. (A <link rel="preload"> of the snapshot was fetched a
// second time by WebKit: 7 MB twice.) A failure is PyScript's to report when it imports it.
import("./pyodide-boot.mjs").catch(() => {});

const LOCALES = ["zh-CN", "zh-TW", "en-US", "ja-JP", "ru-RU", "ar-SA", "pt-BR", "ko-KR"];

// The same rule as app/i18n.py (_match, resolve_locale): ?lang=, then the browser's
// languages, then en-US; a tag matches exactly or by language, Traditional Chinese
// markers (Hant, TW, HK, MO) choosing zh-TW. tests/e2e checks that both agree.
function matchLocale(tag) {
  const subtags = tag.trim().replace(/_/g, "-").toLowerCase().split("-");
  const exact = LOCALES.find((l) => l.toLowerCase() === subtags.join("-"));
  if (exact) return exact;
  if (subtags[0] === "zh") return subtags.slice(1).some((s) => ["hant", "tw", "hk", "mo"].includes(s)) ? "zh-TW" : "zh-CN";
  return LOCALES.find((l) => l !== "zh-TW" && l.toLowerCase().split("-")[0] === subtags[0]);
}

function pickLocale() {
  const wanted = [new URLSearchParams(location.search).get("lang"), ...(navigator.languages || [])].filter(Boolean);
  for (const tag of wanted) {
    const locale = matchLocale(tag);
    if (locale) return locale;
  }
  return "en-US";
}

const locale = pickLocale();
root.lang = locale;
root.dir = locale === "ar-SA" ? "rtl" : "ltr";
// The course's paint record, drawn before PyScript loads when it matches the stored thread (§13).
paint(locale);

fetch(`app/locales/${locale}.json`)
  .then((r) => (r.ok ? r.json() : {}))
  .then((strings) => {
    const text = document.getElementById("boot-text");
    if (text && !text.textContent) text.textContent = (strings.app && strings.app.loading) || "…";
  })
  .catch(() => {});

let steps = 0;
addEventListener("py:progress", () => {
  const bar = document.getElementById("boot-progress");
  if (bar) bar.value = Math.min(++steps, bar.max);
});

function fail(message) {
  if (root.dataset.ready === "true" || root.hasAttribute("data-error")) return;
  const text = String(message || "Start-up failed");
  root.setAttribute("data-error", text);
  const box = document.getElementById("boot-error");
  if (box) {
    box.parentElement.hidden = false; // a painted page hid the loading screen: the error shows anyway
    box.hidden = false;
    box.textContent = text;
  }
}

addEventListener("error", (event) => fail(event.message || (event.error && event.error.message)));
addEventListener("unhandledrejection", (event) => fail(event.reason && (event.reason.message || event.reason)));
// PyScript reports Python errors raised at start-up as .py-error elements.
new MutationObserver((records) => {
  for (const record of records)
    for (const node of record.addedNodes)
      if (node.nodeType === 1 && node.classList.contains("py-error")) fail(node.textContent.trim());
}).observe(document.documentElement, { childList: true, subtree: true });


// A build (tools/build.py: <meta name="agentbar-build">) runs under the service worker
// (sw.js beside index.html, DESIGN.md §11). A page under the worker asks the server for a newer
// sw.js while the interpreter starts beside it (no start waits for the server; offline the check
// fails at once). A newer version installs (only changed files are fetched), then, when it is
// ready before the app is and this page is the only one open, takes over and the page reloads on
// it: a change shows on the next load, and a page never runs on a mix of two versions (found once
// the app is ready, or with other tabs open, it waits and takes over at a later load).
const isBuild = !!document.querySelector('meta[name="agentbar-build"]');
const INSTALL_WAIT_MS = 20000;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function takeUpdate() {
  const sw = isBuild && navigator.serviceWorker;
  if (!sw || !sw.controller) return;
  const registration = await sw.getRegistration();
  if (!registration) return;
  if (!registration.waiting && navigator.onLine !== false) await registration.update().catch(() => {});
  const next = registration.installing || registration.waiting;
  if (!next) return;
  if (next.state === "installing")
    await Promise.race([sleep(INSTALL_WAIT_MS), new Promise((resolve) => next.addEventListener("statechange", () => {
      if (next.state !== "installing") resolve();
    }))]);
  if (registration.waiting !== next) return; // failed or too slow: run the version in control
  if (root.dataset.ready === "true") return; // the app is in use: the new version takes over at a later load
  // From here the page may reload onto the new version: the app waits for the outcome before it
  // says it is ready (app.browser.page), so a page in use never reloads under a person's hands.
  const taking = new Promise((resolve) => {
    sw.addEventListener("message", (event) => {
      if (event.data && event.data.type === "agentbar:busy") resolve(); // other tabs: stay on this version
    });
    sw.addEventListener("controllerchange", () => {
      globalThis.agentbarPaint?.carryOver(); // the composer's text goes with the page (static/paint.js)
      location.reload();
    });
    sw.startMessages();
    next.postMessage({ type: "agentbar:activate" });
    setTimeout(resolve, 3000); // no answer: go on with the version in control
  });
  globalThis.agentbarUpdateTaking = taking;
  await taking;
  delete globalThis.agentbarUpdateTaking;
}

function registerWorker() {
  if (!isBuild || !navigator.serviceWorker) return;
  const register = () => navigator.serviceWorker.register("sw.js").catch((e) => console.warn("AgentBar: service worker", e));
  if (root.dataset.ready === "true") register();
  else new MutationObserver((_, observer) => {
    if (root.dataset.ready === "true") { observer.disconnect(); register(); }
  }).observe(root, { attributes: true, attributeFilter: ["data-ready"] });
}

// PyScript's core is imported only once IndexedDB is known to work or has been replaced by
// the in-memory substitute (static/indexeddb-guard.js); index.html preloads it meanwhile. The
// service worker's update check runs beside it (agentbar:update-checked marks its end).
const mark = (name) => (value) => (performance.mark(`agentbar:${name}`), value);
takeUpdate().catch(() => {}).then(mark("update-checked"));
guardIndexedDb().then(mark("indexeddb-checked"))
  .then(() => import("./vendor/pyscript/core.js"))
  .then(registerWorker)
  .catch((error) => fail(error && (error.message || error)));
