// The sync worker (DESIGN.md §16): PouchDB (static/vendor/pouchdb/pouchdb.min.js) and its
// replication run here, off the page's main thread, so that parsing the server's batches and
// PouchDB's IndexedDB work never hold the page (at 10,000 conversations PouchDB alone, on the main
// thread of a plain page, held it 140 ms at a time). static/sync.js, the page's side, starts this
// worker and forwards calls; the rules stay Python's (app/sync/engine.py, app/browser/sync_setup.py).
//
// Messages from the page: {id, op, args}: op "open" [config], "probe", "start", "take" [max, maxChars],
//   "put" [docJson], "remove" [id, bodyJson], "resolve" [docsJson], "syncNow", "cancel" (ends the
//   replication; the local database and its change feed stay), "wake" (another tab wrote to the
//   local database), "stop"; each answered {id, result} or {id, error}. config.feed false: no
//   change feed (a tab that follows the one replicating only writes).
// Messages to the page: {event: "change"} (changes wait for take) and
//   {event: "status", args: [event, httpStatus, bodyText]} (see static/sync.js): besides the
//   replication's own events, "progress" when a batch of documents moved either way (the page's
//   watchdog, app/sync/watchdog.py, restarts a replication that says it is active and moves
//   nothing), and "blocked" (bodyText: the server's origin) when this worker's Content-Security-Policy
//   (connect-src) refused the request to the server.
// Before anything touches the local database, the worker checks once that this window's IndexedDB
//   keeps a Blob, which PouchDB's IndexedDB adapter stores to learn what it may: where it cannot
//   (WebKit's private windows abort the transaction) PouchDB never answers at all. Then "probe"
//   reports {event: "status", args: ["storage", 0, null]} instead of asking the server, and puts,
//   removes and resolves fail at once rather than wait for ever.
// The password goes only into PouchDB's auth option and the probe's Authorization header: it is
// never logged, stored or posted back.
"use strict";

let loadError = null;
try {
  importScripts("vendor/pouchdb/pouchdb.min.js");
} catch (error) {
  loadError = "the sync client did not load";
}

(function () {
  const LOCAL_DB = "agentbar-sync";

  // The URLs this worker's Content-Security-Policy refused (connect-src), the last 20: a worker
  // follows the policy sent with its own script, and a refused fetch rejects like one with no server.
  const refused = [];
  self.addEventListener("securitypolicyviolation", (event) => {
    if (String(event.effectiveDirective || event.violatedDirective || "").startsWith("connect-src")) {
      refused.push(String(event.blockedURI || ""));
      refused.splice(0, refused.length - 20);
    }
  });

  // Whether this window's IndexedDB keeps a Blob (checked once; false when it refuses, or when the
  // write has not ended after STORAGE_WAIT_MS: a write that hangs is noticed before the watchdog's
  // stall, app/sync/watchdog.py).
  const STORAGE_WAIT_MS = 10000;
  let storageChecked = null;
  function storageKeepsBlobs() {
    if (storageChecked) return storageChecked;
    storageChecked = new Promise((resolve) => {
      const name = "agentbar-sync-blob-check";
      let timer = null;
      const end = (kept, db) => {
        if (timer === null) return;
        clearTimeout(timer);
        timer = null;
        try {
          if (db) db.close();
          indexedDB.deleteDatabase(name);
        } catch (_error) { /* nothing kept to remove */ }
        resolve(kept);
      };
      timer = setTimeout(() => end(false, null), STORAGE_WAIT_MS);
      try {
        const open = indexedDB.open(name, 1);
        open.onupgradeneeded = () => open.result.createObjectStore("s");
        open.onerror = () => end(false, null);
        open.onsuccess = () => {
          const db = open.result;
          try {
            const tx = db.transaction("s", "readwrite");
            tx.oncomplete = () => end(true, db);
            tx.onabort = () => end(false, db);
            tx.objectStore("s").put(new Blob(["x"], { type: "text/plain" }), "k");
          } catch (_error) {
            end(false, db);
          }
        };
      } catch (_error) {
        end(false, null); // no IndexedDB here at all
      }
    });
    return storageChecked;
  }

  async function writable() {
    if (!(await storageKeepsBlobs())) throw new Error("sync: this window's storage keeps no Blob");
  }

  function originOf(url) {
    try {
      return new URL(url).origin;
    } catch (_error) {
      return "";
    }
  }

  // true when the policy refused a request to origin (the violation is reported as a task after the
  // fetch rejected: wait for it a moment)
  async function wasRefused(origin) {
    const seen = () => Boolean(origin) && refused.some((uri) => uri === origin || uri.startsWith(origin + "/"));
    for (let attempt = 0; attempt < 5 && !seen(); attempt += 1) await new Promise((ok) => setTimeout(ok, 20));
    return seen();
  }

  function canonical(value) {
    if (Array.isArray(value)) return "[" + value.map(canonical).join(",") + "]";
    if (value && typeof value === "object") {
      return "{" + Object.keys(value).sort().map((k) => JSON.stringify(k) + ":" + canonical(value[k])).join(",") + "}";
    }
    return JSON.stringify(value === undefined ? null : value);
  }

  function content(doc) {
    const copy = {};
    for (const key of Object.keys(doc)) if (key !== "_rev" && key !== "_revisions" && key !== "_conflicts") copy[key] = doc[key];
    return copy;
  }

  function authHeader(user, password) {
    if (!user && !password) return null;
    const bytes = new TextEncoder().encode(`${user}:${password}`);
    let text = "";
    for (const b of bytes) text += String.fromCharCode(b);
    return "Basic " + btoa(text);
  }

  function statusOf(error) {
    const status = error && (error.status || (error.result && error.result.status));
    return typeof status === "number" ? status : 0;
  }

  class Replication {
    constructor(config, onChange, onStatus) {
      this.config = config;
      this.onChange = onChange;
      this.onStatus = onStatus;
      this.db = new PouchDB(LOCAL_DB, { auto_compaction: true });
      this.written = new Set(); // revisions this page wrote: not handed back as changes
      this.waiting = []; // [doc | null, seq] not yet taken, oldest first
      this.sync = null;
      // a local (IndexedDB) sequence is a number: as a string it would sort after every number
      const since = /^\d+$/.test(String(config.since || "0")) ? Number(config.since || 0) : config.since;
      this.seen = since; // the last local sequence the feed handed over
      this.fed = []; // [update_seq, callback]: called once the feed has handed over that sequence
      // style all_docs: a change names every leaf revision; a document with more than one (a conflict,
      // or a deletion beside a live revision) is handed over with all of them (take)
      this.feed = config.feed === false ? null : this.db.changes({ since, live: true, include_docs: true, style: "all_docs" })
        .on("change", (change) => {
          const doc = change.doc;
          const leaves = change.changes.length > 1;
          const own = doc && !leaves && this.written.has(doc._rev);
          this.waiting.push([own || !doc ? null : doc, String(change.seq), leaves]);
          this.seen = change.seq;
          if (this.waiting.length === 1) this.onChange();
          this.feedReached();
        });
    }

    // callback() once the change feed has handed over every change the local database holds now
    // (the replication writes a batch, then the feed reads it: a pause can come first), so the page
    // has been told of them before it hears the pause (DESIGN.md §16: 'synced' once history holds them).
    whenFed(callback) {
      this.db.info().then((info) => {
        this.fed.push([info.update_seq, callback]);
        this.feedReached();
      }, () => callback());
    }

    feedReached() {
      const seen = Number(this.seen);
      const reached = ([seq]) => !(seen < Number(seq)); // a sequence that is not a number: at once
      const due = this.fed.filter(reached);
      this.fed = this.fed.filter((entry) => !reached(entry));
      for (const [, callback] of due) callback();
    }

    // The oldest waiting changes as JSON: up to max of them, and none more once their JSON reached
    // maxChars (always one): a slice is bounded by the work of taking it in, not only by its count.
    // A document with several leaf revisions carries them all under _leaves (CouchDB's open_revs).
    async take(max, maxChars) {
      const pieces = [];
      let chars = 0;
      while (pieces.length < Math.min(max, this.waiting.length) && (!pieces.length || !(chars >= maxChars))) {
        const [doc, seq, leaves] = this.waiting[pieces.length];
        let shown = doc;
        if (doc && leaves) {
          const revs = await this.db.get(doc._id, { open_revs: "all" });
          shown = Object.assign({}, doc, { _leaves: revs.filter((r) => r.ok).map((r) => r.ok) });
        }
        const piece = JSON.stringify([shown, seq]);
        pieces.push(piece);
        chars += piece.length;
      }
      this.waiting.splice(0, pieces.length);
      return "[" + pieces.join(",") + "]";
    }

    async probe() {
      if (!(await storageKeepsBlobs())) { // the server is not asked: nothing could be kept of its answer
        this.onStatus("storage", 0, null);
        return 0;
      }
      const headers = { Accept: "application/json" };
      const auth = authHeader(this.config.user, this.config.password);
      if (auth) headers.Authorization = auth;
      let status = 0;
      let body = null;
      try {
        const answer = await fetch(this.config.server + "/", { headers, credentials: "omit", cache: "no-store" });
        status = answer.status;
        body = await answer.text();
      } catch (_error) {
        status = 0; // no answer: offline, refused, CORS or CSP
        const origin = originOf(this.config.server);
        if (await wasRefused(origin)) {
          this.onStatus("blocked", 0, origin);
          return status;
        }
      }
      this.onStatus("welcome", status, body);
      return status;
    }

    start() {
      this.stopReplication();
      const options = { skip_setup: false };
      if (this.config.user || this.config.password) {
        options.auth = { username: this.config.user, password: this.config.password };
      }
      const remote = new PouchDB(this.config.remote, options);
      // retry after 1 s, doubling up to 30 s, while the server is away (changes wait in the local database)
      const backOff = (delay) => (delay ? Math.min(delay * 2, 30000) : 1000);
      // 25 documents a request (PouchDB's default is 100): parsing a batch of long conversations is
      // one task of the page, kept short (DESIGN.md §16)
      this.sync = this.db.sync(remote, { live: true, retry: true, back_off_function: backOff, batch_size: 25 });
      // The two-way sync's own "paused" carries no error: each direction's "requestError" (emitted
      // before it backs off) says why it stopped, and holds until that direction moves documents or
      // catches up again (a retry's "active" alone says nothing: the server may still be away).
      // Caught up: each direction paused (with no error) since it last went active. The sync's own
      // pushPaused/pullPaused start true, so the push finding nothing to send paused the whole sync
      // before the pull had asked the server anything (a first sync read 'synced' for a moment).
      const failed = { push: null, pull: null };
      const paused = { push: false, pull: false };
      const sync = this.sync;
      const caughtUp = () => this.sync === sync && !failed.push && !failed.pull && paused.push && paused.pull;
      const report = () => {
        const error = failed.push || failed.pull;
        if (error) this.onStatus("error", statusOf(error), null);
        else if (caughtUp()) {
          this.restartDelay = 0;
          this.whenFed(() => { if (caughtUp()) this.onStatus("paused", 0, null); });
        }
      };
      // A 404 once replicating: the database is gone (deleted, or a server restarted without it).
      // PouchDB's own retries never make it again; a new start does (its set-up creates the database
      // where the user may), after 1 s, doubling up to 30 s while it stays missing.
      const missing = (error) => {
        if (statusOf(error) !== 404 || this.restartTimer || this.sync !== sync) return;
        this.restartDelay = backOff(this.restartDelay || 0);
        this.restartTimer = setTimeout(() => {
          this.restartTimer = null;
          if (this.sync === sync) this.start();
        }, this.restartDelay);
      };
      // A replication ended here (cancel, stop, a new start) says nothing more: what its cancelled
      // requests report (an aborted request fails like a server that went away) is not the status.
      const current = (listener) => (...args) => { if (this.sync === sync) listener(...args); };
      sync.on("paused", current(report)); // first: the sync follows each direction's pause only once asked to
      for (const direction of ["push", "pull"]) {
        const replication = sync[direction];
        replication.on("requestError", current((error) => { failed[direction] = error; report(); missing(error); }));
        replication.on("change", current(() => {
          failed[direction] = null;
          this.onStatus("progress", 0, null);
        }));
        replication.on("active", current(() => { paused[direction] = false; }));
        replication.on("paused", current((error) => {
          paused[direction] = !error;
          if (!error) failed[direction] = null;
          report();
        }));
      }
      sync
        .on("active", current(() => { if (!failed.push && !failed.pull) this.onStatus("active", 0, null); }))
        .on("denied", current((error) => this.onStatus("denied", statusOf(error) || 403, null)))
        .on("error", current((error) => this.onStatus("error", statusOf(error), null)));
    }

    async put(docJson) {
      await writable();
      const doc = JSON.parse(docJson);
      for (let attempt = 0; attempt < 5; attempt += 1) {
        let current = null;
        try {
          current = await this.db.get(doc._id);
        } catch (error) {
          if (statusOf(error) !== 404) throw error;
        }
        if (current && canonical(content(current)) === canonical(doc)) return "same";
        const next = Object.assign({}, doc);
        if (current) next._rev = current._rev;
        else delete next._rev;
        try {
          const result = await this.db.put(next);
          this.written.add(result.rev);
          return "ok";
        } catch (error) {
          if (statusOf(error) !== 409) throw error; // a conflict with another tab's write: read again
        }
      }
      throw new Error("sync: put kept conflicting");
    }

    // a deletion carrying bodyJson's fields (a conversation's says which turns this device had)
    async remove(id, bodyJson) {
      await writable();
      const body = bodyJson ? JSON.parse(bodyJson) : {};
      for (let attempt = 0; attempt < 5; attempt += 1) {
        let rev;
        try {
          const current = await this.db.get(id);
          rev = current._rev;
        } catch (error) {
          if (statusOf(error) !== 404) throw error;
        }
        try {
          const deletion = Object.assign({}, body, { _id: id, _deleted: true });
          if (rev) deletion._rev = rev;
          const result = await this.db.put(deletion);
          this.written.add(result.rev);
          return "ok";
        } catch (error) {
          if (statusOf(error) !== 409) throw error;
        }
      }
      throw new Error("sync: remove kept conflicting");
    }

    // One bulk write of docs, each over the leaf revision its _rev names (a merged winner and its
    // losers deleted, or every live leaf of a deleted conversation); returns how many were refused
    // (a leaf written over meanwhile: its next change brings it again).
    async resolve(docsJson) {
      await writable();
      const results = await this.db.bulkDocs(JSON.parse(docsJson));
      let refused = 0;
      for (const result of results) {
        if (result.ok) this.written.add(result.rev);
        else refused += 1;
      }
      return refused;
    }

    syncNow() {
      if (this.sync) this.start();
    }

    // Another tab wrote to the local database. PouchDB tells the live listeners of a database (the
    // replication's push, this worker's change feed) of the writes made through this worker's own
    // handle only (across windows it signals through localStorage, which a worker has not): a live
    // feed opened here tells them all to read what is new, and is closed again at once.
    async wake() {
      await writable();
      const info = await this.db.info();
      this.db.changes({ since: info.update_seq, live: true }).cancel();
    }

    stopReplication() {
      clearTimeout(this.restartTimer);
      this.restartTimer = null;
      const sync = this.sync;
      this.sync = null; // first: what the cancel makes its replication say is already not heard
      if (sync) sync.cancel();
    }

    stop() {
      this.stopReplication();
      if (this.feed) this.feed.cancel();
    }
  }


  let replication = null;

  const ops = {
    open(config) {
      if (loadError) throw new Error(loadError);
      replication = new Replication(config, () => self.postMessage({ event: "change" }),
        (event, httpStatus, body) => self.postMessage({ event: "status", args: [event, httpStatus, body] }));
      return "ok";
    },
    probe: () => replication.probe(),
    start: () => replication.start(),
    take: (max, maxChars) => replication.take(max, maxChars),
    put: (docJson) => replication.put(docJson),
    remove: (id, bodyJson) => replication.remove(id, bodyJson),
    resolve: (docsJson) => replication.resolve(docsJson),
    syncNow: () => replication.syncNow(),
    cancel: () => replication.stopReplication(),
    wake: () => replication.wake(),
    stop: () => replication && replication.stop(),
  };

  self.addEventListener("message", async (message) => {
    const { id, op, args } = message.data;
    try {
      const result = await ops[op](...(args || []));
      self.postMessage({ id, result: result === undefined ? null : result });
    } catch (error) {
      self.postMessage({ id, error: String((error && error.message) || error) });
    }
  });
})();
