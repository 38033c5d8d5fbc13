// PyScript's `interpreter` module (pyscript.toml): the vendored Pyodide, started from the memory
// snapshot tools/snapshot.py makes (DESIGN.md §13: the interpreter's own start-up is most of the
// floor). PyScript calls the `loadPyodide` exported here with its usual options; this restores the
// snapshot, then loads PyScript's packages (pydantic, the app wheel). When the snapshot is missing,
// damaged or refused (another Pyodide build), Pyodide boots as usual instead: nothing else changes.
// Damaged includes altered: its bytes are checked against the digest snapshot.json names
// (tools/snapshot.py) before Pyodide is given them, on every server, since memory altered in a way
// that still inflates would leave the interpreter spinning or dead, never ready.
// Hooks: html[data-snapshot] = "restored" | "absent" | "failed" (data-snapshot-error: why) | "off"
// (?snapshot=off), marks
// agentbar:snapshot-inflated, agentbar:snapshot-restored, agentbar:packages-loaded.
import { loadPyodide as loadStock, version } from "./vendor/pyodide/pyodide.mjs";

export { version };

const root = document.documentElement;
const indexURL = new URL("./vendor/pyodide/", import.meta.url).href;
const mark = (name) => performance.mark(`agentbar:${name}`);

// Asked for once, when this module is first imported: by static/boot.js as the page starts, before
// PyScript reads its configuration and imports it again. A page may ask for a boot without it
// (?snapshot=off: comparisons, tests).
const wanted = new URLSearchParams(location.search).get("snapshot") !== "off";
// A snapshot not inflated within WAIT_MS of the interpreter being asked for (a slow or stalled host)
// is given up and Pyodide boots as usual: the snapshot may save about two seconds, never cost more
// than this.
const WAIT_MS = 10000;
const giveUp = new AbortController();
const opened = wanted ? openSnapshot().catch((error) => ({ error })) : Promise.resolve({});

async function openSnapshot() {
  const manifest = fetch(indexURL + "snapshot.json", { signal: giveUp.signal })
    .then((answer) => (answer.ok ? answer.json() : null)).catch(() => null);
  const response = await fetch(indexURL + "snapshot.bin.gz", { signal: giveUp.signal });
  if (response.status === 404) return {}; // not made here (no node at set-up): boot as usual
  if (!response.ok) throw new Error(`snapshot: HTTP ${response.status}`);
  const named = await manifest;
  if (!named || typeof named !== "object") throw new Error("snapshot: no snapshot.json to check it against");
  return { response, manifest: named };
}

const hex = (digest) => Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");

// The bytes as they came (compressed: snapshot.json's `sha256`) or, when the host had the browser
// inflate them, the memory itself (`inflatedSha256`); throws when they are not the ones named.
async function check(bytes, expected, what) {
  if (typeof expected !== "string") throw new Error(`snapshot: snapshot.json names no digest of the ${what} bytes`);
  if (!globalThis.crypto || !crypto.subtle) throw new Error("snapshot: no SubtleCrypto to check its digest (not a secure context)");
  if (hex(await crypto.subtle.digest("SHA-256", bytes)) !== expected.toLowerCase())
    throw new Error(`snapshot: its digest is not the one snapshot.json names (${what} bytes): altered or damaged`);
}

// Inflated as it arrives, while Pyodide fetches its wasm (loadPyodide awaits `_loadSnapshot` only
// before it instantiates the module). A host that sent it with Content-Encoding: gzip has had the
// browser inflate it already: the first bytes tell (gzip's magic number 1f 8b). The bytes are
// checked (`check`) before the promise Pyodide awaits resolves: a mismatch rejects it, and Pyodide
// boots as usual.
async function inflate(response, manifest) {
  const reader = response.body.getReader();
  const first = await reader.read();
  const head = first.value || new Uint8Array(0);
  const gzip = head[0] === 0x1f && head[1] === 0x8b;
  const sent = gzip ? [] : null; // the compressed chunks, kept for their digest
  const body = new ReadableStream({
    start(controller) {
      if (head.length) {
        controller.enqueue(head);
        if (sent) sent.push(head);
      }
      if (first.done) controller.close();
    },
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) controller.close();
      else {
        if (sent) sent.push(value);
        controller.enqueue(value);
      }
    },
    cancel(reason) { return reader.cancel(reason); },
  });
  const bytes = new Uint8Array(await new Response(gzip ? body.pipeThrough(new DecompressionStream("gzip")) : body).arrayBuffer());
  if (sent) await check(await new Blob(sent).arrayBuffer(), manifest.sha256, "compressed");
  else await check(bytes, manifest.inflatedSha256, "inflated");
  mark("snapshot-inflated");
  return bytes;
}

function report(state, error) {
  root.dataset.snapshot = state;
  globalThis.agentbarBoot = { snapshot: state };
  if (error) {
    root.dataset.snapshotError = String(error && error.message || error).slice(0, 200);
    console.warn("AgentBar: starting without the interpreter snapshot:", error);
  }
}

export async function loadPyodide(options = {}) {
  const { packages, ...rest } = options;
  let failure = null;
  const timer = setTimeout(() => giveUp.abort(new Error(`snapshot: not here within ${WAIT_MS / 1000} s`)), WAIT_MS);
  try {
    const { response, manifest, error } = await opened;
    if (error) throw error;
    if (response) {
      const inflated = inflate(response, manifest);
      // inflated and checked in time: the wait ends; a failure is Pyodide's to see when it awaits it,
      // not the page's (boot.js)
      inflated.then(() => clearTimeout(timer), () => {});
      const pyodide = await loadStock({ ...rest, indexURL, _loadSnapshot: inflated });
      mark("snapshot-restored");
      // Copied into the wasm memory now; Pyodide keeps its options (this promise) for the page's life:
      // let the 31.5 MB go.
      const bytes = await inflated;
      if (bytes.buffer.transfer) bytes.buffer.transfer(0);
      // The import system's view of the files is Node's (tools/snapshot.py): the standard library's zip
      // as the maker read it. A build serves that zip repacked (other offsets): read it again.
      pyodide.runPython("import importlib\nimportlib.invalidate_caches()");
      if (packages && packages.length) await pyodide.loadPackage(packages, { messageCallback: () => {} });
      mark("packages-loaded");
      report("restored");
      return pyodide;
    }
  } catch (error) {
    failure = error;
  }
  clearTimeout(timer);
  report(failure ? "failed" : wanted ? "absent" : "off", failure);
  return loadStock({ ...options, indexURL });
}
