// node tools/snapshot.mjs <pyodide dir>/ <out file> <module,module,...>: boots the vendored Pyodide
// with `_makeSnapshot`, imports the named standard-library modules, and writes the interpreter's
// memory snapshot (raw bytes; tools/snapshot.py compresses it). Prints one JSON line of figures.
// No package is loaded: a snapshot after `loadPackage` is refused by Pyodide (its hiwire check).
import { writeFileSync } from "node:fs";

const [indexURL, out, modules] = process.argv.slice(2);
const { loadPyodide } = await import(new URL("pyodide.mjs", "file://" + indexURL).href);
const started = performance.now();
const pyodide = await loadPyodide({ indexURL, _makeSnapshot: true });
const booted = performance.now();
const names = (modules || "").split(",").filter(Boolean);
pyodide.runPython(`import importlib\nfor name in ${JSON.stringify(names)}:\n    importlib.import_module(name)\n`);
const snapshot = pyodide.makeMemorySnapshot();
writeFileSync(out, snapshot);
console.log(JSON.stringify({ bootMs: Math.round(booted - started), totalMs: Math.round(performance.now() - started),
                             bytes: snapshot.length, modules: names.length }));
