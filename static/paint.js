// Paint before Python (DESIGN.md §13): draws the course's paint record, decided in Python
// (app/paint.py), before Pyodide loads, and holds the composer's message sent before ready.
//
// - The record is read from Cache Storage ("agentbar.paint", request paint/<id>), outside
//   localStorage, so it never competes with maic-agent-threads for its quota. It is drawn only
//   when it matches the stored thread (same course, locale and updatedAt: recordMatches, below)
//   and every node passes the allow-lists below (app.paint.validate_record: the same lists,
//   checked by tests/unit/test_paint.py); otherwise nothing is drawn. Text goes in as
//   textContent only: no HTML from storage, ever.
// - A message sent before ready goes to sessionStorage["agentbar-pending-send"] as "queued";
//   Python sends it once when ready (app.paint.pending_to_send). A page reloaded before that
//   finds it again as a "draft" in the composer; so does a page reloaded while a turn is in
//   flight (Python hands over the message it answers until the turn ends, keepInFlight; it is
//   written there as the page goes away). A reload onto a new version before ready (not the
//   person's) keeps a queued message queued and what was typed as a draft (carryOver).
// - agentbarPaint.save / remove are the store's adapter for Python; takeOver() hands the page
//   to Python at ready (controls enabled again, this script's composer handlers off).
const CACHE_NAME = "agentbar.paint"; // not "agentbar-…": the service worker deletes those on update
const PENDING_KEY = "agentbar-pending-send";
const CARRIED_KEY = "agentbar-pending-carried";
const STORAGE_KEY = "maic-agent-threads";
const VERSION = 1;
const TAGS = ["div", "p", "span", "button"];
const ATTRS = [
  "class", "dir", "role", "type", "tabindex", "disabled", "aria-label", "aria-expanded",
  "data-testid", "data-role", "data-status", "data-long", "data-chars", "data-code",
  "data-element-count", "data-tool-name", "data-tool-call-id", "data-message-id", "data-painted",
  "data-index", "data-count", "data-label",
];
const MAX_NODES = 4000;
const MAX_DEPTH = 6;
const MAX_TEXT = 200000;
const HELD = ["course-select", "settings-open", "history-open", "agent-new-conversation", "agent-collapse"];

const root = document.documentElement;
const byId = (id) => document.getElementById(id);
const isText = (v) => typeof v === "string";
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

function currentCourse() {
  return new URLSearchParams(location.search).get("course") || root.dataset.defaultCourse || "";
}

function recordUrl(stageId) {
  return new URL("paint/" + encodeURIComponent(stageId), document.baseURI).href;
}

function storedUpdatedAt(stageId) {
  try {
    const thread = JSON.parse(localStorage.getItem(STORAGE_KEY)).state.threads[stageId];
    return Number.isInteger(thread.updatedAt) ? thread.updatedAt : null;
  } catch {
    return null;
  }
}

function validNodes(nodes, depth, seen) {
  if (!Array.isArray(nodes) || depth > MAX_DEPTH) return false;
  for (const node of nodes) {
    if (!isObject(node) || !TAGS.includes(node.t)) return false;
    if (node.x !== undefined && node.x !== null && !isText(node.x)) return false;
    const attrs = node.a === undefined ? {} : node.a;
    if (!isObject(attrs)) return false;
    for (const [name, value] of Object.entries(attrs)) {
      if (!ATTRS.includes(name) || !isText(value)) return false;
      seen.chars += value.length;
    }
    seen.chars += isText(node.x) ? node.x.length : 0;
    if (++seen.nodes > MAX_NODES || seen.chars > MAX_TEXT) return false;
    if (node.c !== undefined && !validNodes(node.c, depth + 1, seen)) return false;
  }
  return true;
}

function validRecord(r) {
  return isObject(r) && r.v === VERSION && isText(r.stageId) && Number.isInteger(r.updatedAt) && isText(r.locale)
    && (r.dir === "ltr" || r.dir === "rtl") && isText(r.title)
    && (r.labels === undefined || (isObject(r.labels) && Object.values(r.labels).every(isText)))
    && validNodes(r.bar === undefined ? r.rows : [...(Array.isArray(r.rows) ? r.rows : [null]), ...(Array.isArray(r.bar) ? r.bar : [null])],
      1, { nodes: 0, chars: 0 });
}

// Whether a record may be drawn for the page of course stageId in locale while the stored thread of
// that course has storedUpdatedAt (null: no stored thread): same course, same locale, same updatedAt
// (DESIGN.md §13). The rule's one place: it decides before Python loads (tests/unit/test_paint.py
// runs it).
export function recordMatches(record, stageId, locale, storedUpdatedAt) {
  return isObject(record) && record.stageId === stageId && record.locale === locale
    && storedUpdatedAt !== null && record.updatedAt === storedUpdatedAt;
}

function build(node) {
  const element = document.createElement(node.t);
  for (const [name, value] of Object.entries(node.a || {})) element.setAttribute(name, value);
  if (isText(node.x)) element.textContent = node.x;
  for (const child of node.c || []) element.append(build(child));
  return element;
}

function applyLabels(labels) {
  const label = (key) => (Object.hasOwn(labels, key) ? labels[key] : null);
  for (const node of document.querySelectorAll("[data-i18n]")) {
    const text = label(node.dataset.i18n);
    if (text !== null) node.textContent = text;
  }
  for (const [data, attr] of [["i18nLabel", "aria-label"], ["i18nTitle", "title"], ["i18nPlaceholder", "placeholder"]])
    for (const node of document.querySelectorAll(`[data-${data.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase())}]`)) {
      const text = label(node.dataset[data]);
      if (text !== null) node.setAttribute(attr, text);
    }
  if (label("app.title") !== null) document.title = labels["app.title"];
}

function draw(record) {
  const rows = record.rows.map(build); // everything built before anything is shown
  const bar = (record.bar || []).map(build); // the scene-version bar: Python's own replaces it
  applyLabels(record.labels || {});
  root.dir = record.dir;
  const heading = document.createElement("h2");
  heading.setAttribute("dir", "auto");
  heading.textContent = record.title;
  byId("stage").replaceChildren(heading);
  const select = byId("course-select");
  const option = document.createElement("option");
  option.value = record.stageId;
  option.textContent = record.title;
  select.replaceChildren(option);
  byId("agent-new-conversation").hidden = false;
  for (const id of HELD) {
    const control = byId(id);
    if (control && !control.disabled) {
      control.disabled = true;
      control.dataset.paintHeld = "true";
    }
  }
  byId("agent-notices").after(...bar);
  const messages = byId("agent-messages");
  messages.replaceChildren(...rows);
  byId("boot").hidden = true;
  byId("app").hidden = false;
  messages.scrollTop = messages.scrollHeight;
  root.dataset.painted = "true";
  performance.mark("agentbar:painted");
}

async function readRecord(stageId) {
  if (!globalThis.caches) return null;
  const hit = await (await caches.open(CACHE_NAME)).match(recordUrl(stageId));
  return hit ? hit.text() : null;
}

// ---- the composer before ready ----

function readPending() {
  try {
    const p = JSON.parse(sessionStorage.getItem(PENDING_KEY));
    return isObject(p) && isText(p.stageId) && isText(p.text) && (p.state === "queued" || p.state === "draft") ? p : null;
  } catch {
    return null;
  }
}

function writePending(pending) {
  try {
    sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
    return true;
  } catch {
    return false; // storage blocked: the text stays in the composer, nothing is queued
  }
}

function showQueued(queued) {
  const input = byId("agent-input");
  input.readOnly = queued;
  const form = byId("agent-composer");
  if (queued) form.dataset.queued = "true";
  else delete form.dataset.queued;
  const status = byId("composer-status");
  if (status) status.hidden = !queued;
}

function queue(event) {
  if (root.dataset.ready === "true") return;
  event.preventDefault();
  const input = byId("agent-input");
  if (input.readOnly || !input.value.trim()) return;
  if (writePending({ stageId: currentCourse(), text: input.value, state: "queued" })) showQueued(true);
}

function onKey(event) {
  if (event.key === "Enter" && !(event.shiftKey || event.isComposing)) queue(event);
}

function restoreDraft() {
  let carried = false; // the page reloaded onto a new version (carryOver), not by the person
  try {
    carried = sessionStorage.getItem(CARRIED_KEY) === "1";
    sessionStorage.removeItem(CARRIED_KEY);
  } catch {}
  const pending = readPending();
  if (!pending || pending.stageId !== currentCourse()) return;
  byId("agent-input").value = pending.text;
  if (pending.state === "queued" && carried) showQueued(true); // still sent once ready
  // Sent before ready, then the page went away before Python sent it: back as a draft.
  else if (pending.state === "queued") writePending({ ...pending, state: "draft" });
}

// The page reloads onto a new version before ready (static/boot.js): what the composer holds goes
// with it, a message sent before ready still to be sent once ready, a text typed as a draft (§13).
function carryOver() {
  if (!handing) return; // Python has the page: the app was ready, it does not reload
  const pending = readPending();
  const stageId = currentCourse();
  if (pending && pending.state === "queued" && pending.stageId === stageId) {
    try {
      sessionStorage.setItem(CARRIED_KEY, "1");
    } catch {}
    return;
  }
  const text = byId("agent-input").value;
  if (text.trim()) writePending({ stageId, text, state: "draft" });
}

let handing = true;

function takeOver() {
  if (!handing) return null;
  handing = false;
  byId("agent-composer").removeEventListener("submit", queue);
  byId("agent-input").removeEventListener("keydown", onKey);
  for (const id of HELD) {
    const control = byId(id);
    if (control && control.dataset.paintHeld) {
      control.disabled = false;
      delete control.dataset.paintHeld;
    }
  }
  let pending = null;
  try {
    pending = sessionStorage.getItem(PENDING_KEY);
    sessionStorage.removeItem(PENDING_KEY); // taken: Python sends it at most once
  } catch {}
  showQueued(false);
  return pending;
}

// Both resolve to whether it worked; a record not kept costs only the next visit's early paint.
async function save(stageId, text) {
  try {
    const body = new Response(text, { headers: { "content-type": "application/json" } });
    await (await caches.open(CACHE_NAME)).put(recordUrl(stageId), body);
    return true;
  } catch (error) {
    console.warn("AgentBar: paint record not kept", error);
    return false;
  }
}

async function remove(stageId) {
  try {
    return await (await caches.open(CACHE_NAME)).delete(recordUrl(stageId));
  } catch {
    return false;
  }
}

// A turn in flight: the message it answers is held here until the turn ends and written as a draft
// only when the page goes away (pagehide: a reload, a navigation), so a reload mid-reply (which
// loses the turn, DESIGN.md §4) gives it back in the composer while the turn itself never pays for
// the write (a 2,000,000-character message: 70–630 ms of sessionStorage.setItem, §13).
let inFlight = null;
let draftWritten = false;

// text: a function that returns the message (Python's), called only when the draft is written
function keepInFlight(stageId, text) {
  inFlight = { stageId, text };
}

function endInFlight() {
  inFlight = null;
  if (!draftWritten) return; // nothing was written: nothing to remove
  draftWritten = false;
  try {
    sessionStorage.removeItem(PENDING_KEY);
  } catch {}
}

// (optional: where this file is not a window's, as when the unit tests import it in Node, nothing to listen to)
globalThis.addEventListener?.("pagehide", () => {
  if (!inFlight) return;
  let text;
  try {
    text = String(inFlight.text());
  } catch {
    return; // Python is gone: nothing to keep
  }
  // a page kept in the back/forward cache may come back: endInFlight then removes the draft
  draftWritten = writePending({ stageId: inFlight.stageId, text, state: "draft" });
});

globalThis.agentbarPaint = { save, remove, takeOver, keepInFlight, endInFlight, carryOver, painted: null };

export async function paint(locale) {
  byId("agent-composer").addEventListener("submit", queue);
  byId("agent-input").addEventListener("keydown", onKey);
  try {
    restoreDraft();
  } catch {}
  try {
    const stageId = currentCourse();
    const updatedAt = storedUpdatedAt(stageId);
    if (updatedAt === null) return;
    const text = await readRecord(stageId);
    if (text === null || root.dataset.ready === "true" || byId("agent-messages").childElementCount) return;
    const record = JSON.parse(text);
    if (!validRecord(record) || !recordMatches(record, stageId, locale, updatedAt)) return;
    draw(record);
    globalThis.agentbarPaint.painted = { stageId, updatedAt };
  } catch (error) {
    console.warn("AgentBar: paint record not drawn", error);
  } finally {
    performance.mark("agentbar:paint-checked"); // drawn or not: the decision is made
  }
}
