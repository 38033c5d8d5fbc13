// The sync adapter (DESIGN.md §16), the page's side: a thin face over static/sync-worker.js, where
// PouchDB (static/vendor/pouchdb/pouchdb.min.js) and its replication run off the main thread. Both
// are loaded only after ready and only when sync is on. The rules (what a document is, what a change
// does to history, what a status means) are Python's: app/sync/engine.py, wired by
// app/browser/sync_setup.py.
//
// window.agentbarSync.open(configJson, onChange, onStatus) -> Replication
//   configJson: {"server": "http://host:5984", "remote": "http://host:5984/db", "user", "password",
//                "since": "<local change seq already applied, or 0>"}
//   onChange(): documents of the local database changed (the replication brought them, or another
//     tab wrote them) and wait in arrival order for take(); called when the first one arrives after
//     take() handed over all there were (never from inside the replication's own work per document)
//   onStatus(event, httpStatus, bodyText): "welcome" (the answer of GET / of the server; status 0 and
//     body null when there was none), "blocked" (the worker's Content-Security-Policy refused the
//     server; bodyText its origin) or "storage" (this window's IndexedDB keeps no Blob, so PouchDB
//     cannot keep the local database: the server is not asked, and puts fail), then the
//     replication's "active", "paused", "denied", "error" (httpStatus of the failing request, 0
//     when the server did not answer), and "progress" each time a batch of documents moved either
//     way (what app/sync/watchdog.py counts as progress)
// Replication: probe() -> Promise<status> (reports "welcome"; rejects when the client did not load);
//   start(); take(max, maxChars) -> Promise<JSON text of up to max waiting changes, oldest first, each
//   [doc | null, seq] (null for this page's own writes: only the seq moves on), none more once their
//   JSON reached maxChars (at least one)>; changed: true when
//   onChange was called since the last take() began (its answer may have come before that change);
//   put(docJson) -> Promise<"ok"|"same">; remove(id, bodyJson) -> Promise<"ok"> (a deletion carrying
//   bodyJson's fields); resolve(docsJson) -> Promise<number refused> (one bulk write, each document over
//   the leaf its _rev names); syncNow(); cancel() (ends the replication, a stalled one: puts and removes
//   still reach the local database); stop() (ends the worker; calls still waiting are rejected, and
//   every call after it is rejected at once).
//   A change of a document with several leaf revisions carries them all under _leaves.
//   configJson's "feed": false opens the local database without its change feed (a tab that
//   follows: it writes, onChange is never called, take() has nothing); wake(): another tab wrote to
//   the local database, so this worker's replication and feed read it (PouchDB tells only its own
//   handle's listeners of a write).
// window.agentbarSync.lead(name, onLead) -> {ready, release()}: asks for the Web Lock `name`
//   (navigator.locks, one holder per origin; a closed tab's lock is released by the browser) and
//   calls onLead() once it is held; ready: a Promise of true when it was free and is held now, false
//   when another tab holds it (this one waits: onLead() comes when that tab lets it go); release()
//   lets it go, or stops waiting for it. Without Web Locks onLead() is called at once (every tab
//   replicates, as before).
(function () {
  "use strict";

  const WORKER = new URL("sync-worker.js", document.currentScript.src).href;

  class Replication {
    constructor(configJson, onChange, onStatus) {
      this.worker = new Worker(WORKER);
      this.calls = new Map(); // id -> {resolve, reject}
      this.next = 0;
      this.changed = false;
      this.stopped = false;
      this.worker.addEventListener("message", (message) => {
        const data = message.data;
        if (data.event === "change") {
          this.changed = true;
          onChange();
        }
        else if (data.event === "status") onStatus(...data.args);
        else {
          const call = this.calls.get(data.id);
          if (!call) return;
          this.calls.delete(data.id);
          if ("error" in data) call.reject(new Error(data.error));
          else call.resolve(data.result);
        }
      });
      this.worker.addEventListener("error", (event) => {
        event.preventDefault();
        this.rejectAll("the sync worker failed");
      });
      this.opened = this.call("open", JSON.parse(configJson));
      this.opened.catch(() => {});
    }

    rejectAll(why) {
      for (const call of this.calls.values()) call.reject(new Error(why));
      this.calls.clear();
    }

    call(op, ...args) {
      // after stop() the worker is ended or about to be: it would never answer, and a caller left
      // waiting (a history step writing the document it merged) would hold every step behind it
      if (this.stopped) return Promise.reject(new Error("sync stopped"));
      const id = this.next++;
      return new Promise((resolve, reject) => {
        this.calls.set(id, { resolve, reject });
        this.worker.postMessage({ id, op, args });
      });
    }

    async probe() {
      await this.opened;
      return this.call("probe");
    }

    start() { this.call("start").catch(() => {}); }

    take(max, maxChars) {
      this.changed = false;
      return this.call("take", max, maxChars);
    }

    put(docJson) { return this.call("put", docJson); }

    remove(id, bodyJson) { return this.call("remove", id, bodyJson); }

    resolve(docsJson) { return this.call("resolve", docsJson); }

    syncNow() { this.call("syncNow").catch(() => {}); }

    cancel() { this.call("cancel").catch(() => {}); }

    wake() { this.call("wake").catch(() => {}); }

    stop() {
      const end = () => {
        this.worker.terminate();
        this.rejectAll("sync stopped");
      };
      this.call("stop").then(end, end);
      this.stopped = true;
    }
  }

  window.agentbarSync = {
    open(configJson, onChange, onStatus) {
      return new Replication(configJson, onChange, onStatus);
    },

    lead(name, onLead) {
      const locks = navigator.locks;
      if (!locks || typeof locks.request !== "function") {
        onLead();
        return { ready: Promise.resolve(true), release() {} };
      }
      const waiting = new AbortController();
      let release = null;
      const hold = () => new Promise((done) => {
        release = done;
        onLead();
      });
      const handle = {
        release() {
          if (release) release();
          else waiting.abort();
        },
      };
      handle.ready = new Promise((answered) => {
        locks.request(name, { ifAvailable: true }, (lock) => {
          answered(Boolean(lock));
          if (lock) return hold();
          // held by another tab: wait for it (stopped waiting by release())
          locks.request(name, { signal: waiting.signal }, hold).catch(() => {});
          return null;
        }).catch(() => answered(false));
      });
      return handle;
    },
  };
})();
