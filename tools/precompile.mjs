// node tools/precompile.mjs <pyodide dir>/ <jobs.json>: the vendored Pyodide compiles each
// job's source to unchecked-hash bytecode (PEP 552) under the file name the page will see
// (tools/precompile.py). jobs.json: [{source, name, out}] (paths on this machine, except name).
import { readFileSync, writeFileSync } from "node:fs";

const [indexURL, jobsPath] = process.argv.slice(2);
const { loadPyodide } = await import(new URL("pyodide.mjs", "file://" + indexURL).href);
const pyodide = await loadPyodide({ indexURL });
const compileOne = pyodide.runPython(`
import base64, importlib.util, importlib._bootstrap_external as external
def compile_one(text, name):
    source = text.encode()
    code = compile(source, name, "exec", dont_inherit=True)
    return base64.b64encode(external._code_to_hash_pyc(code, importlib.util.source_hash(source), checked=False)).decode()
compile_one
`);
for (const job of JSON.parse(readFileSync(jobsPath, "utf8")))
  writeFileSync(job.out, Buffer.from(compileOne(readFileSync(job.source, "utf8"), job.name), "base64"));
