// The JavaScript half of app/browser/indexeddb.py: a thin face over Dexie (vendored,
// pinned in vendor.lock.json). The database name and its schema are declared in Python
// (app/records.py, the one place); this file only opens what it is given and moves
// records. Records cross as JSON text (Python hands UTF-8 bytes, decoded here), so
// Python gets plain records, never JavaScript proxies. Every call resolves to
// [status, value]: "ok" with the result, or an error kind with the browser's message;
// nothing here rejects (an unhandled rejection at start-up would read as a crash).
const decoder = new TextDecoder();
let dexieModule = null; // loaded on first open: nothing of Dexie is fetched at start-up
let db = null; // ONE connection per page, shared by every Python backend that opens it
let listeners = new Set(); // Python callbacks(kind, detail) of the open connection
// A blocked open still waiting for the other tab: resolves to its Dexie once open (it then
// becomes the page's connection), or null if it failed. The browser queues later open
// requests behind it without a "blocked" event of their own, so they wait on this instead.
let pending = null;
// Listeners of the opens told "blocked": told "opened" when the blocked open goes through at last
// (the other tab let go), so that the page takes the database back up without a reload.
let waiting = new Set();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function kindOf(error) {
  const names = [error && error.name, error && error.inner && error.inner.name];
  if (names.includes("QuotaExceededError")) return "quota";
  if (names.includes("StaleError")) return "stale";
  if (names.includes("MissingAPIError")) return "unavailable";
  if (names.includes("DatabaseClosedError")) return "closed";
  if (names.includes("VersionError")) return "version";
  if (names.includes("AbortError") || names.includes("ConstraintError") || names.includes("DataCloneError")) return "aborted";
  if (names.includes("InvalidStateError") || names.includes("UnknownError") || names.includes("OpenFailedError")) return "unavailable";
  return "failed";
}

function failure(error) {
  const message = (error && (error.message || (error.inner && error.inner.message))) || String(error);
  return [kindOf(error), `${(error && error.name) || "Error"}: ${message}`];
}

function parse(payload) {
  return JSON.parse(typeof payload === "string" ? payload : decoder.decode(payload));
}

async function guard(work) {
  if (!db) return ["closed", "the database is not open"];
  try {
    return ["ok", await work(db)];
  } catch (error) {
    return failure(error);
  }
}

// A key range arrives as JSON {lower, upper, lowerOpen?, upperOpen?, reverse?, limit?} (absent
// flags: closed ends, forward, no limit): the records of `index` in it, as a Dexie collection.
function range(table, index, spec) {
  const { lower, upper, lowerOpen = false, upperOpen = false, reverse = false, limit = 0 } = parse(spec);
  let collection = db.table(table).where(index).between(lower, upper, !lowerOpen, !upperOpen);
  if (reverse) collection = collection.reverse();
  if (limit > 0) collection = collection.limit(limit);
  return collection;
}

let leaving = false; // the page is being left (pagehide): a connection the browser closes then is no failure
addEventListener("pagehide", () => { leaving = true; });
addEventListener("pageshow", () => { leaving = false; }); // back from the back-forward cache

globalThis.agentbarIndexedDbAdapter = {
  // open(name, versionsJson, onEvent, blockedAfterMs): versionsJson is [[version, {table: "keys"}], …].
  // Resolves ["ok", native version] or [kind, message]; kind "blocked" when another tab keeps an
  // older version open past blockedAfterMs (onEvent then hears "opened" once it lets go: `waiting`).
  async open(name, versions, onEvent, blockedAfterMs) {
    if (!db && pending) {
      const settled = await Promise.race([pending, sleep(blockedAfterMs).then(() => undefined)]);
      if (settled === undefined) {
        waiting.add(onEvent);
        return ["blocked", "another tab keeps an older version of the database open"];
      }
    }
    if (db && db.name === name && db.isOpen()) {
      listeners.add(onEvent);
      return ["ok", db.verno];
    }
    const mine = new Set([onEvent]);
    const tell = (kind, detail) => {
      for (const listener of mine) listener(kind, detail);
      mine.clear(); // a closed connection tells each listener once
    };
    try {
      if (typeof indexedDB === "undefined" || !indexedDB) return ["unavailable", "window.indexedDB is missing"];
      dexieModule = dexieModule || (await import("./vendor/dexie/dexie.mjs"));
      const Dexie = dexieModule.Dexie;
      const next = new Dexie(name, { autoOpen: false });
      for (const [version, stores] of parse(versions)) next.version(version).stores(stores);
      let closing = false; // this tab closes on purpose: no "closed" event for that
      next.on("versionchange", (event) => {
        closing = true;
        if (db === next) db = null;
        next.close(); // let the other tab upgrade or delete; this tab says so
        tell(event.newVersion === null ? "deleted" : "versionchange", String(event.newVersion));
        return false;
      });
      next.on("close", () => {
        if (closing) return;
        if (db === next) db = null;
        // Firefox closes the page's connections as it leaves the page: nothing to tell then
        if (!leaving) tell("closed", "the browser closed the database");
      });
      // A blocked open waits for the other tab: give up after blockedAfterMs and say so. An open the
      // browser queued behind another page's blocked one (a reload of a page whose open was blocked)
      // gets no "blocked" event at all: one that has not opened in 4 × blockedAfterMs is blocked too.
      let onBlocked;
      const blockedSignal = new Promise((resolve) => { onBlocked = resolve; });
      next.on("blocked", () => setTimeout(() => onBlocked("blocked"), blockedAfterMs));
      const opening = next.open();
      const stalled = sleep(4 * blockedAfterMs).then(() => "stalled");
      const first = await Promise.race([opening.then(() => "open"), blockedSignal, stalled]);
      if (first !== "open") {
        waiting.add(onEvent);
        pending = opening.then(() => {
          db = next; listeners = mine; pending = null;
          const told = [...waiting];
          waiting = new Set();
          for (const listener of told) { mine.add(listener); listener("opened", String(next.verno)); }
          return next;
        }, () => { pending = null; return null; });
        return ["blocked", "another tab keeps an older version of the database open"];
      }
      db = next;
      listeners = mine;
      return ["ok", next.verno];
    } catch (error) {
      return failure(error);
    }
  },
  close() {
    if (db) { const closingDb = db; db = null; closingDb.close(); }
    db = null;
    return ["ok", null];
  },
  // The records of `keys` (null where missing); `fields` (optional JSON [name, …]): only those
  // fields of each record cross into Python (a search record without its posting keys).
  bulkGet(table, keys, fields) {
    return guard(async (d) => {
      const records = await d.table(table).bulkGet(parse(keys));
      const wanted = fields ? parse(fields) : null;
      const pick = (r) => Object.fromEntries(wanted.filter((f) => f in r).map((f) => [f, r[f]]));
      return JSON.stringify(records.map((r) => (r == null ? null : wanted && typeof r === "object" ? pick(r) : r)));
    });
  },
  // reads: JSON [[table, key], …]: each record (null where missing), read in ONE read transaction.
  getAll(reads) {
    return guard(async (d) => {
      const list = parse(reads);
      const tables = [...new Set(list.map(([table]) => table))];
      const records = await d.transaction("r", tables, () => Promise.all(list.map(([table, key]) => d.table(table).get(key))));
      return JSON.stringify(records.map((r) => r ?? null));
    });
  },
  get(table, key) {
    return guard(async (d) => JSON.stringify((await d.table(table).get(parse(key))) ?? null));
  },
  // Records of `index` in the key range `span` (see range), newest first when it says reverse.
  query(table, index, span) {
    return guard(async () => JSON.stringify(await range(table, index, span).toArray()));
  },
  // query and count in one crossing (a list page and its total, read side by side):
  // resolves JSON [records of span, count of the records in countSpan].
  queryCount(table, index, span, countSpan) {
    return guard(async () => {
      const [rows, total] = await Promise.all([range(table, index, span).toArray(),
        range(table, index, countSpan).count()]);
      return JSON.stringify([rows, total]);
    });
  },
  count(table, index, span) {
    return guard(async () => range(table, index, span).count());
  },
  // The keys of `index` in the key range `span` (one per entry of a multiEntry index), not the
  // records: JSON [key, …] in index order (reversed when span says so). The search index's pages.
  keys(table, index, span) {
    return guard(async () => JSON.stringify(await range(table, index, span).keys()));
  },
  // The primary keys of the records of `index` in `span`, JSON [key, …] in index order.
  primaryKeys(table, index, span) {
    return guard(async () => JSON.stringify(await range(table, index, span).primaryKeys()));
  },
  // ops: JSON [[kind, table, valueOrKey], …], kind "put" | "add" | "delete" | "patch" | "expect", in ONE
  // read-write transaction: all are written or none (an "add" of an existing key aborts the whole).
  // "patch" {key, if: {field: value}, set: {field: value}}: the record of `key`, when it exists and
  // holds every `if` value (compared as JSON), gets the `set` fields and is put back; else nothing.
  // "expect" {key, if: {field: value}}: the record of `key` must exist and hold every `if` value,
  // else the whole transaction aborts, kind "stale" (another tab wrote it since it was read).
  write(ops, slots, objects, textPaths, texts) {
    // A record read in the transaction holds every field of `expected` (compared as JSON): a patch's
    // and an expect's condition.
    const holds = (held, expected) => Boolean(held) && Object.entries(expected || {})
      .every(([k, v]) => JSON.stringify(held[k] ?? null) === JSON.stringify(v ?? null));
    return guard(async (d) => {
      const list = parse(ops);
      // Large values (app.records.BulkValue) come as objects made in Python, each put in its slot
      // [op index, field] instead of travelling as JSON text.
      if (objects) JSON.parse(slots).forEach(([index, field], k) => { list[index][2][field] = objects[k]; });
      // Long strings (app.json_steps.lift_long_texts) come as arrays of pieces (UTF-8 bytes, or a
      // string where the text holds lone surrogates), each decoded, joined and put at its path
      // [op index, key, …] in the ops, when its op is made (below).
      const long = new Map();  // op index -> [[path, pieces], …]
      if (texts) JSON.parse(textPaths).forEach((path, k) => {
        if (!long.has(path[0])) long.set(path[0], []);
        long.get(path[0]).push([path, texts[k]]);
      });
      const joined = (index) => {
        for (const [path, pieces] of long.get(index) || []) {
          let at = list;
          for (const key of path.slice(0, -1)) at = at[key];
          at[path[path.length - 1]] = pieces.map((p) => (typeof p === "string" ? p : decoder.decode(p))).join("");
        }
      };
      const unknown = list.find((op) => !["put", "add", "delete", "patch", "expect"].includes(op[0]));
      if (unknown) throw new Error(`unknown write kind ${unknown[0]}`);
      const tables = [...new Set(list.map((op) => op[1]))];
      await d.transaction("rw", tables, async () => {
        // The requests go out without waiting for one another's answers: IndexedDB carries out a
        // transaction's requests in the order they were made, so the order is the ops' and a write of
        // many records (a sync slice's) waits for one round of answers, not one per record. A patch
        // (or an expect) reads what the ops before it wrote: it waits for them, and the ops after it for it.
        // An op holding long strings waits for the ops before it too, and its strings are decoded
        // and joined only then: each such record is decoded and copied into IndexedDB in a task of
        // its own (a 10 MB reply's message, text and search records in one task took 68 ms of CPU).
        let sent = [];
        for (const [index, [kind, table, value]] of list.entries()) {
          if (long.has(index)) {
            await Promise.all(sent);
            sent = [];
            joined(index);
          }
          if (kind === "put") sent.push(d.table(table).put(value));
          else if (kind === "add") sent.push(d.table(table).add(value));
          else if (kind === "delete") sent.push(d.table(table).delete(value));
          else if (kind === "patch") {
            await Promise.all(sent);
            sent = [];
            const held = await d.table(table).get(value.key);
            if (holds(held, value.if)) await d.table(table).put(Object.assign(held, value.set || {}));
          }
          else if (kind === "expect") {
            await Promise.all(sent);
            sent = [];
            if (!holds(await d.table(table).get(value.key), value.if)) throw Object.assign(new Error(`${table} ${value.key} changed since it was read`), { name: "StaleError" });
          }
        }
        await Promise.all(sent);
      });
      return list.length;
    });
  },
  // For each record of `index` in the key range `span`: the first position of `needle` in its
  // string field `field` (find: JSON {field, needle, before, after, showTable, showField}). Returns
  // JSON [[primaryKey, position, excerpt], …] for the records that hold it;
  // excerpt = showTable[key][showField].slice(start - before, start + needle.length + after)
  // (read for the hits only), start = position carried over by the record's optional `anchors`
  // ([[folded index, text index], …], sorted: app/history/text.py fold_map). Python folds beforehand
  // and makes snippets; this only scans.
  scan(table, index, span, find) {
    return guard(async (d) => {
      const { field, needle, before, after, showTable, showField } = parse(find);
      const found = [];
      await range(table, index, span).each((record, cursor) => {
        const text = record[field];
        if (typeof text !== "string") return;
        const at = text.indexOf(needle);
        if (at >= 0) found.push([cursor.primaryKey, at, text, record.anchors]);
      });
      const shown = found.length ? await d.table(showTable).bulkGet(found.map((hit) => hit[0])) : [];
      return JSON.stringify(found.map(([key, at, text, anchors], i) => {
        const own = shown[i] && typeof shown[i][showField] === "string";
        const source = own ? shown[i][showField] : text;
        let start = at;
        if (own && Array.isArray(anchors)) {
          for (const [foldedAt, textAt] of anchors) {
            if (foldedAt > at) break;
            start = textAt + (at - foldedAt);
          }
        }
        return [key, at, source.slice(Math.max(0, start - before), start + needle.length + after)];
      }));
    });
  },
  // Asks the browser not to evict this origin's storage (DESIGN.md §9: at the first archive).
  async persist() {
    try {
      return ["ok", Boolean(navigator.storage && navigator.storage.persist && (await navigator.storage.persist()))];
    } catch (error) {
      return failure(error);
    }
  },
};
