// IndexedDB guard, run by boot.js before PyScript's core is imported (DESIGN.md §5: blocked storage,
// the app still starts and works in memory).
// PyScript opens IndexedDB for itself during boot: its package cache ("Loading Storage",
// an IDBMap awaited even with packages_cache = "passthrough") and, when its module is
// evaluated, the `@pyscript.fs` handle store. With indexedDB.open throwing (SecurityError),
// window.indexedDB missing, or its requests failing, the page never became ready.
// So: probe the real IndexedDB once; when it is unusable, install fake-indexeddb (an
// in-memory IndexedDB, vendored and pinned) as the page's indexedDB so PyScript boots.
//
// The real status is what the app reads, never the substitute's:
//   window.agentbarIndexedDb = {available: true|false, reason: string|null, substitute: null|"fake-indexeddb"}
// History and checkpoints (Dexie) must check `available` and degrade as DESIGN.md §9/§10 say
// instead of storing into the in-memory substitute; app/browser/indexeddb_status.py shows the notice.

const PROBE_DB = "agentbar-probe";
const PROBE_TIMEOUT_MS = 2000;

function describe(error, fallback) {
  if (!error) return fallback;
  return error.name && error.message ? `${error.name}: ${error.message}` : String(error.message || error.name || error);
}

function probe() {
  let factory;
  try {
    factory = globalThis.indexedDB;
  } catch (error) {
    return Promise.resolve(describe(error, "indexedDB access threw"));
  }
  if (!factory || typeof factory.open !== "function") return Promise.resolve("indexedDB is missing");
  return new Promise((resolve) => {
    let request;
    try {
      request = factory.open(PROBE_DB);
    } catch (error) {
      resolve(describe(error, "indexedDB.open threw"));
      return;
    }
    const timer = setTimeout(() => resolve("indexedDB.open did not answer"), PROBE_TIMEOUT_MS);
    request.onsuccess = () => {
      clearTimeout(timer);
      try {
        request.result.close();
      } catch {}
      resolve(null);
    };
    request.onerror = (event) => {
      clearTimeout(timer);
      if (event && event.preventDefault) event.preventDefault();
      let error = null;
      try {
        error = request.error;
      } catch {}
      resolve(describe(error, "indexedDB.open failed"));
    };
  });
}

const GLOBALS = ["IDBCursor", "IDBCursorWithValue", "IDBDatabase", "IDBFactory", "IDBIndex", "IDBKeyRange",
  "IDBObjectStore", "IDBOpenDBRequest", "IDBRequest", "IDBTransaction", "IDBVersionChangeEvent"];

async function installSubstitute() {
  const fake = await import("./vendor/fake-indexeddb/index.js");
  const define = (name, value) =>
    Object.defineProperty(globalThis, name, { value, configurable: true, writable: true, enumerable: false });
  define("indexedDB", fake.indexedDB);
  for (const name of GLOBALS) define(name, fake[name]);
}

/** Probe IndexedDB, install the in-memory substitute when it is unusable; resolves to the status. */
export async function guardIndexedDb() {
  const reason = await probe();
  let substitute = null;
  if (reason !== null) {
    try {
      await installSubstitute();
      substitute = "fake-indexeddb";
    } catch (error) {
      console.error("AgentBar: could not install the in-memory IndexedDB", error);
    }
  }
  const status = Object.freeze({ available: reason === null, reason, substitute });
  Object.defineProperty(globalThis, "agentbarIndexedDb", { value: status, configurable: false, writable: false });
  return status;
}
