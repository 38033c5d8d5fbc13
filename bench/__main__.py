"""``python -m bench [--quick] [--out bench-results/bench.json]`` (see ``bench/__init__.py``)."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import data  # noqa: E402
from bench.scripts import BRIDGE_WRAP, goto_hooked  # noqa: E402
from tools.serve import make_server  # noqa: E402
from app.i18n import use_number_rules  # noqa: E402
from tools.cldr_numbers import cldr_numbers  # noqa: E402

use_number_rules(cldr_numbers)  # the demo's texts built here in CPython (bench.data) count as the page does

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]
TIMEOUT_MS = 90_000
# A part during which Chromium's renderer process died ("Target crashed", which some CI machines show
# often and this kind of machine rarely) runs again in a browser launched anew, at most this many times;
# the crash is counted in the result (``renderer_crashes``), never silently.
CRASH_TRIES = 3
KEY = data.STORAGE_KEY
CURRENT = "intro-ml"

QUICK_BUDGET_S = 300
"""``--quick`` (CI: it proves every part still runs) takes at most this long on CI's kind of machine: its
sizes and rounds are cut to that; the report says the time of each part and of the whole, and whether
the quick run kept to this, without failing the run on time."""

GOALS = {
    "startup_ratio_max": 1.10,
    "save_ratio_max": 1.5,
    "python_total_growth_max": 1.25,
    "heavy_stored_fraction_max": 0.01,
}

# Records html[data-ready] / html[data-error] the moment they are set (performance.now()
# counts from navigation start), PyScript's py:progress events, and its py:ready/py:done.
INIT_SCRIPT = """
(() => {
  const t = { progress: [], ready: null, error: null };
  window.__bench = t;
  const check = () => {
    const r = document.documentElement;
    if (!r) return;
    if (t.ready === null && r.dataset.ready === "true") t.ready = performance.now();
    if (t.error === null && r.hasAttribute("data-error")) t.error = r.getAttribute("data-error");
  };
  new MutationObserver(check).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-ready", "data-error"] });
  addEventListener("py:progress", (e) => t.progress.push([performance.now(), String(e.detail)]));
  addEventListener("py:ready", () => { t.pyReady = t.pyReady || performance.now(); }, true);
  addEventListener("py:done", () => { t.pyDone = t.pyDone || performance.now(); }, true);
})();
"""


# The JS baseline: JSON.stringify + setItem of the identical envelope, same page. The
# value the app wrote is put back afterwards (same string), so for the app's bridge no
# other writer changed it and the steady path stays on splice.
JS_BASELINE = """
([key, stage, reps]) => {
  const original = localStorage.getItem(key);
  const obj = JSON.parse(original);
  const times = [];
  for (let i = 0; i < reps; i++) {
    obj.state.threads[stage].updatedAt += 1; // a different value each time, like a real save
    const t0 = performance.now();
    const s = JSON.stringify(obj);
    localStorage.setItem(key, s);
    times.push(performance.now() - t0);
  }
  localStorage.setItem(key, original);
  return times;
}
"""

PROFILE_SCRIPT = """
import js
js.performance.mark("bench:script-start")
from pydantic import BaseModel
js.performance.mark("bench:pydantic")
import app.model, app.projection, app.agent, app.i18n, app.courses
js.performance.mark("bench:app-core")
import app.store, app.runtime
js.performance.mark("bench:store-runtime")
import pyscript.web, app.browser.view, app.browser.local_storage
js.performance.mark("bench:browser-layer")
from bench_boot import time_boot
time_boot()
from app.browser import main
main()
js.performance.mark("bench:main-done")
"""

CPROFILE_SCRIPT = """
import cProfile, io, pstats, js
from app.browser import main
profiler = cProfile.Profile()
profiler.enable()
main()
profiler.disable()
out = io.StringIO()
pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(30)
js.window.__benchCProfile = out.getvalue()
"""

WRAP_EACH_PY = '''
def wrap_each(wrap, targets):
    """Call ``wrap(owner, name, label)`` for each ``(target, label)`` of ``targets``: ``target`` is
    ``"module:Owner.name"`` or ``"module:name"`` (the module imported here), ``label`` defaults to the
    part after the colon. One list of what a probe times, whatever the probe does with the times."""
    import importlib
    for target, *label in targets:
        module, _, path = target.partition(":")
        owner = importlib.import_module(module)
        *parents, name = path.split(".")
        for parent in parents:
            owner = getattr(owner, parent)
        wrap(owner, name, label[0] if label else path)
'''
"""Python source run in a page before the app (no wheel needed): ``wrap_each``, shared by the
start-up profile (``TIME_BOOT_MODULE``) and ``bench.trace_startup``'s probes."""

# Defined in the page (no wheel needed): wraps the boot steps with performance.measure.
TIME_BOOT_MODULE = WRAP_EACH_PY + '''
import js, sys, types
def time_boot():
    def wrap(owner, name, label):
        original = getattr(owner, name)
        def timed(*args, **kwargs):
            t0 = js.performance.now()
            try:
                return original(*args, **kwargs)
            finally:
                js.performance.measure("bench:" + label, {"start": t0, "end": js.performance.now()})
        setattr(owner, name, timed)
    wrap_each(wrap, [
        ("app.store:ThreadStore.hydrate", "hydrate"),
        ("app.runtime:AgentRuntime.set_stage", "set_stage (load+deserialize)"),
        ("app.browser.view:PageView.render", "view.render"),
        ("app.browser.view:PageView.render_course", "view.render_course"),
        ("app.browser.view:PageView.translate_static", "view.translate_static"),
        ("app.browser.view:PageView.show_app", "view.show_app"),
        ("app.browser.local_storage:open_local_storage",),
    ])
module = types.ModuleType("bench_boot")
module.time_boot = time_boot
sys.modules["bench_boot"] = module
'''


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, unit="", nd=1):
    if x is None:
        return "—"
    if isinstance(x, float):
        return f"{x:,.{nd}f}{unit}"
    return f"{x:,}{unit}"


# --- machine and runtime ------------------------------------------------------------


def chromium_path() -> str:
    return os.environ.get("AGENTBAR_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


def machine_info(browser) -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "chromium": browser.version,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def ensure_runtime() -> None:
    """The vendored runtime must be laid out and the app wheel current (bench/hooks.py is fetched by the page)."""
    lock = ROOT / "static" / "vendor" / "pyodide" / "pyodide-lock.json"
    wheel = next(iter(sorted((ROOT / "static" / "vendor" / "pyodide").glob("agentbar-*.whl"))), ROOT / "missing.whl")
    stale = not lock.exists() or not wheel.exists()
    if not stale:
        with zipfile.ZipFile(wheel) as archive:
            for path in (ROOT / "app").rglob("*.py"):
                name = path.relative_to(ROOT).as_posix()
                try:
                    if archive.read(name) != path.read_bytes():
                        stale = True
                        break
                except KeyError:
                    stale = True
                    break
    if stale:
        print("bench: laying out the vendored runtime (python tools/vendor.py) …", flush=True)
        subprocess.run([sys.executable, str(ROOT / "tools" / "vendor.py")], check=True, cwd=ROOT)


def snapshot_site() -> Path:
    """A private copy of what the page serves (other work may rebuild static/vendor mid-run)."""
    import tempfile

    dest = Path(tempfile.mkdtemp(prefix="agentbar-bench-"))
    for name in ("index.html", "pyscript.toml"):
        shutil.copy2(ROOT / name, dest / name)
    for name in ("static", "bench/pages", "app/locales"):
        shutil.copytree(ROOT / name, dest / name)
    shutil.copy2(ROOT / "bench" / "hooks.py", dest / "bench" / "hooks.py")  # fetched by bench.scripts.HOOKED_MAIN
    return dest


# --- page helpers -----------------------------------------------------------------------


class Run:
    def __init__(self, browser, base: str) -> None:
        self.browser = browser
        self.base = base
        self.floor_loads: list[dict] = []
        """The Pyodide floor page's loads of the start-up part in this run (``{"cold", "reload"}`` ms,
        navigation → ``html[data-ready]``, each in a fresh context): ``--quick``'s firstpaint part takes
        its floor from here instead of loading the same page again."""
        self._pool = None
        self._jobs: dict[tuple, tuple] = {}

    @staticmethod
    def _job_key(fn, args: tuple) -> tuple:
        return (getattr(fn, "__module__", None), getattr(fn, "__qualname__", repr(fn)), args)

    def prepare(self, fn, *args, discard=None) -> None:
        """Start ``fn(*args)`` (a module-level function; picklable arguments) in a worker process now, for
        a later part to take with ``prepared``: ``--quick`` generates a later part's data (and builds
        ``dist/``) while the browser works on earlier parts. One worker, jobs in the order prepared;
        ``discard(result)`` is called by ``close_jobs`` on a result no part took (a folder to remove)."""
        if self._pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            # spawn: this process runs Playwright's threads, which a fork would copy half-way
            self._pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=use_number_rules, initargs=(cldr_numbers,))
        self._jobs[self._job_key(fn, args)] = (self._pool.submit(fn, *args), discard)

    def prepared(self, fn, *args):
        """``fn(*args)``: the result of the job ``prepare`` started for these arguments (waited for, and
        taken: asked again, it is computed here), else computed here and now."""
        job = self._jobs.pop(self._job_key(fn, args), None)
        return job[0].result() if job is not None else fn(*args)

    def close_jobs(self) -> None:
        """Wait for the prepared jobs no part took, hand each result to its ``discard``, stop the worker."""
        for future, discard in self._jobs.values():
            if discard is not None and not future.cancelled():
                try:
                    discard(future.result())
                except Exception:  # a job that failed left nothing to discard
                    pass
        self._jobs.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def context(self):
        context = self.browser.new_context()
        context.add_init_script(INIT_SCRIPT)
        context.set_default_timeout(TIMEOUT_MS)
        return context

    def seed(self, page, items: dict[str, str | None]) -> None:
        page.goto(f"{self.base}bench/pages/blank.html")
        page.evaluate(
            "items => { localStorage.clear(); for (const [k, v] of Object.entries(items)) if (v !== null) localStorage.setItem(k, v); }",
            items,
        )

    @staticmethod
    def wait_ready(page) -> dict:
        page.wait_for_function("() => window.__bench && (window.__bench.ready !== null || window.__bench.error !== null)",
                               polling=50, timeout=TIMEOUT_MS)
        state = page.evaluate("() => window.__bench")
        if state.get("error"):
            raise RuntimeError(f"page failed to start ({page.url}): {state['error']}")
        return state


class Bytes:
    """Sum of response body bytes (decoded) and bytes on the wire, through CDP Network."""

    def __init__(self, context, page) -> None:
        self.cdp = context.new_cdp_session(page)
        self.cdp.send("Network.enable")
        self.reset()
        self.cdp.on("Network.dataReceived", self._data)
        self.cdp.on("Network.loadingFinished", self._finished)
        self.cdp.on("Network.responseReceived", self._response)

    def reset(self) -> None:
        self.body = 0
        self.wire = 0
        self.responses = 0
        self.status: dict[int, int] = {}

    def _data(self, event) -> None:
        self.body += int(event.get("dataLength", 0))

    def _finished(self, event) -> None:
        self.wire += int(event.get("encodedDataLength", 0))

    def _response(self, event) -> None:
        self.responses += 1
        code = int(event["response"].get("status", 0))
        self.status[code] = self.status.get(code, 0) + 1


# --- start-up ---------------------------------------------------------------------------


PAGES = {
    "app": "index.html?" + urlencode({"course": CURRENT, "delay": 0}),
    "floor_pyodide": "bench/pages/floor-pyodide.html",
    "floor_pyscript": "bench/pages/floor-pyscript.html",
}


QUICK_PAGES = ("app", "floor_pyodide")
"""``--quick``'s start-up pages: the app and the floor its goal is a ratio to (PyScript's floor, a
second baseline for the py:progress table, is the full run's)."""


def bench_startup(run: Run, loads: int, seed_value: str, pages=tuple(PAGES)) -> dict:
    """Cold load and reload of each of ``pages`` (names of ``PAGES``), ``loads`` interleaved rounds,
    each load in a fresh context: ready times (ms), bytes, py:progress, ratios to the Pyodide floor."""
    samples = {name: {"cold": [], "reload": [], "cold_bytes": [], "cold_wire": [], "reload_bytes": [],
                      "reload_wire": [], "progress": [], "py_ready": [], "py_done": []} for name in pages}
    for i in range(loads):
        order = list(pages) if i % 2 == 0 else list(reversed(pages))
        for name in order:
            context = run.context()
            page = context.new_page()
            run.seed(page, {KEY: seed_value} if name == "app" else {})
            meter = Bytes(context, page)
            meter.reset()
            page.goto(run.base + PAGES[name])
            state = run.wait_ready(page)
            s = samples[name]
            s["cold"].append(state["ready"])
            s["py_ready"].append(state.get("pyReady"))
            s["py_done"].append(state.get("pyDone"))
            s["progress"].append(state["progress"])
            time.sleep(0.2)  # let trailing responses settle before reading the counters
            s["cold_bytes"].append(meter.body)
            s["cold_wire"].append(meter.wire)
            meter.reset()
            page.reload()
            state = run.wait_ready(page)
            s["reload"].append(state["ready"])
            time.sleep(0.2)
            s["reload_bytes"].append(meter.body)
            s["reload_wire"].append(meter.wire)
            context.close()
        print(f"  start-up load {i + 1}/{loads}: " + ", ".join(f"{n} {samples[n]['cold'][-1]:.0f} ms" for n in pages),
              flush=True)
    if "floor_pyodide" in samples:
        run.floor_loads = [{"cold": c, "reload": r} for c, r in
                           zip(samples["floor_pyodide"]["cold"], samples["floor_pyodide"]["reload"])]
    out = {}
    for name, s in samples.items():
        out[name] = {
            "cold_ms_median": median(s["cold"]),
            "cold_ms": s["cold"],
            "reload_ms_median": median(s["reload"]),
            "reload_ms": s["reload"],
            "cold_bytes_body": median(s["cold_bytes"]),
            "cold_bytes_wire": median(s["cold_wire"]),
            "reload_bytes_body": median(s["reload_bytes"]),
            "reload_bytes_wire": median(s["reload_wire"]),
            "py_ready_ms_median": median(s["py_ready"]),
            "py_done_ms_median": median(s["py_done"]),
            "progress_median": _progress_medians(s["progress"]),
        }
    floor = out["floor_pyodide"]["cold_ms_median"]
    for name in out:
        out[name]["cold_ratio_to_floor"] = out[name]["cold_ms_median"] / floor
        out[name]["reload_ratio_to_floor"] = out[name]["reload_ms_median"] / out["floor_pyodide"]["reload_ms_median"]
        # Each round loads every page once, back to back: the median of the per-round
        # ratios cancels most of this machine's slow drifts (±15% between single loads).
        out[name]["cold_paired_ratio_median"] = median(
            [a / b for a, b in zip(samples[name]["cold"], samples["floor_pyodide"]["cold"])])
    return out


def _progress_medians(runs: list[list]) -> list[list]:
    """Median time of each py:progress label (first occurrence), in order."""
    by_label: dict[str, list[float]] = {}
    order: list[str] = []
    for events in runs:
        seen = set()
        for t, label in events:
            if label in seen:
                continue
            seen.add(label)
            if label not in by_label:
                by_label[label] = []
                order.append(label)
            by_label[label].append(t)
    return [[label, median(by_label[label])] for label in order]


# --- profile of the app's start-up ------------------------------------------------------


def _routed_index(script: str) -> str:
    html = (ROOT / "index.html").read_text(encoding="utf-8")
    boot = "\n".join(["", "import sys, types", f"exec({TIME_BOOT_MODULE!r})", script])
    return re.sub(r'(<script type="py" config="pyscript.toml">)(.*?)(</script>)',
                  lambda m: m.group(1) + boot + "\n  " + m.group(3), html, flags=re.S)


def _serve_html(page, html: str) -> None:
    """Serve ``html`` instead of the app's index.html for this page (same URL, same relative paths)."""

    def handler(route, _request=None):
        route.fulfill(status=200, body=html, headers={"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-cache"})

    page.route("**/index.html?*", handler)


def profile_startup(run: Run, seed_value: str, loads: int, with_cprofile: bool = True) -> dict:
    marks_runs: list[dict] = []
    cprofile = None
    for i in range(loads + int(with_cprofile)):
        use_cprofile = i == loads
        body = _routed_index(CPROFILE_SCRIPT if use_cprofile else PROFILE_SCRIPT)
        context = run.context()
        page = context.new_page()
        run.seed(page, {KEY: seed_value})
        _serve_html(page, body)
        page.goto(run.base + PAGES["app"])
        state = run.wait_ready(page)
        if use_cprofile:
            cprofile = page.evaluate("() => window.__benchCProfile || null")
        else:
            entries = page.evaluate("""() => {
                const out = {};
                for (const e of performance.getEntriesByType('mark')) if (e.name.startsWith('bench:')) out[e.name] = [e.startTime, 0];
                for (const e of performance.getEntriesByType('measure')) if (e.name.startsWith('bench:')) {
                    const prev = out[e.name]; out[e.name] = [prev ? prev[0] : e.startTime, (prev ? prev[1] : 0) + e.duration];
                    out[e.name + ' ×calls'] = [prev ? prev[0] : e.startTime, (out[e.name + ' ×calls'] ? out[e.name + ' ×calls'][1] : 0) + 1];
                }
                for (const e of performance.getEntriesByType('resource')) {
                    const n = e.name.split('/').pop().split('?')[0];
                    if (/\\.(wasm|zip|whl|mjs|json|toml)$/.test(n) || n === 'core.js') out['fetch:' + n] = [e.startTime, e.responseEnd - e.startTime];
                }
                return out;
            }""")
            entries["ready"] = [state["ready"], 0]
            entries["py:ready"] = [state.get("pyReady"), 0]
            marks_runs.append(entries)
        context.close()
    names = sorted({n for r in marks_runs for n in r}, key=lambda n: median([r[n][0] for r in marks_runs if n in r]) or 0)
    timeline = [[n, median([r[n][0] for r in marks_runs if n in r]), median([r[n][1] for r in marks_runs if n in r])]
                for n in names]
    return {"timeline": timeline, "cprofile_main": cprofile}


# --- save cost ----------------------------------------------------------------------------


def _open_bench_page(run: Run, context, seed_value: str):
    """The app with ``?bench=1`` (``bench.scripts.goto_hooked`` installs ``window.agentbarBench``), bridge wrapped."""
    page = context.new_page()
    run.seed(page, {KEY: seed_value})
    goto_hooked(page, run.base + "index.html?" + urlencode({"course": CURRENT, "delay": 0, "bench": 1}))
    run.wait_ready(page)
    if not page.evaluate("() => !!window.agentbarBench"):
        raise RuntimeError("window.agentbarBench missing: does the page load bench/hooks.py (bench.scripts.HOOKED_MAIN), and is the app wheel current?")
    page.evaluate(BRIDGE_WRAP)
    return page


# One measured turn on either save path:
# - "steady" (the normal case: this tab wrote the stored value last): the live thread is cut
#   back to its seeded length in memory (agentbarBench.trim), nothing is re-seeded, so the
#   store hands storage only this course's entry (bridge.splice);
# - "cross_tab": the seeded value is written back behind the app's back (as another tab
#   would), the storage-event path re-reads it (only the changed entries, readChanges), and the
#   save splices again, as the store knows the new value's layout.
TURN_JS = """
async ([key, path, arg, text]) => {
  const bench = window.agentbarBench;
  let n;
  if (path === "steady") {
    n = bench.trim(arg);
    if (n !== arg) throw new Error("trim(" + arg + ") left " + n + " messages");
  } else {
    localStorage.setItem(key, arg);
    n = bench.resync();
  }
  window.__bridgeLog.length = 0;
  const rec = JSON.parse(await bench.turn(text));
  rec.restored = n;
  rec.bridge = window.__bridgeLog.slice();
  rec.storedUtf16 = localStorage.getItem(key).length;
  return rec;
}
"""

SAVE_PATHS = ("steady", "cross_tab")
PATH_LABEL = {"steady": "steady", "cross_tab": "cross-tab"}
SAMPLE_KEYS = ("total_ms", "python_ms", "js_bridge_ms", "serialize_in_runtime_ms", "store_save_ms", "stall_ms")


def _save_sample(rec: dict) -> dict:
    """One save: from the completion callback's start to the end of the bridge call that put
    the value in localStorage (the last ``splice`` or ``set`` after it); python = total − time
    inside the bridge."""
    if "error" in rec:
        raise RuntimeError(f"turn failed: {rec}")
    finish = rec["finish"]
    writes = [b for b in rec["bridge"] if b[0] in ("set", "splice") and b[1] >= finish]
    if not writes:
        raise RuntimeError(f"no set/splice into localStorage after the turn completed: {rec}")
    write_end = writes[-1][2]
    calls = [b for b in rec["bridge"] if b[1] >= finish and b[2] <= write_end]
    in_js = sum(b[2] - b[1] for b in calls)
    total = write_end - finish
    return {
        "total_ms": total,
        "js_bridge_ms": in_js,
        "python_ms": total - in_js,
        "serialize_in_runtime_ms": rec["saveIn"] - finish,
        "store_save_ms": rec["saveOut"] - rec["saveIn"],
        "stall_ms": rec["end"] - finish,
        "write": writes[-1][0],
        "bridge_calls": [b[0] + (f"={b[3]}" if len(b) > 3 and b[3] not in (None, "ok") else "") for b in calls],
        "stored_utf16": rec["storedUtf16"],
        "messages_restored": rec["restored"],
    }


def _save_path(page, path: str, n_current: int, seed_value: str, reps: int, baseline_reps: int) -> dict:
    """``reps`` saves on one path after one warm-up turn, each followed by the JS baseline."""
    samples, baselines = [], []
    for i in range(reps + 1):  # the first turn warms up and is not counted
        text = data.mixed_line(i)
        rec = page.evaluate(TURN_JS, [KEY, path, n_current if path == "steady" else seed_value, text])
        if i == 0:
            continue
        samples.append(_save_sample(rec))
        baselines.append(median(page.evaluate(JS_BASELINE, [KEY, CURRENT, baseline_reps])))
    expected = "splice"  # cross-tab too: the re-read keeps the layout (the store re-reads only the changed entries, DESIGN.md §5)
    out = {
        "write": expected if all(s["write"] == expected for s in samples) else "mixed: " + ",".join(s["write"] for s in samples),
        "bridge_calls": samples[-1]["bridge_calls"],
        "stored_utf16": samples[-1]["stored_utf16"],
    }
    for k in SAMPLE_KEYS:
        out[k] = median([s[k] for s in samples])
    out["first_python_ms"] = samples[0]["python_ms"]  # steady: the first splice after the warm-up's full write
    out["js_baseline_ms"] = median(baselines)
    # A baseline under the timer's resolution reads 0 ms (a tiny store): no ratio, not a crash.
    out["ratio_to_js"] = out["total_ms"] / out["js_baseline_ms"] if out["js_baseline_ms"] > 0 else float("nan")
    out["samples"] = samples
    out["baselines_ms"] = baselines
    return out


def bench_save(run: Run, configs: list[tuple[int, int]], reps: int, baseline_reps: int) -> tuple[list[dict], dict]:
    """Per size row: the steady path (this tab wrote last: splice), its step split (and, for the
    first row, a cProfile), then the after-another-tab-wrote path (re-read, then splice), then (first row)
    the stored size of a heavy turn."""
    results = []
    extra: dict = {}
    for n_others, n_current in configs:
        threads = data.others(n_others)
        threads[CURRENT] = n_current  # most recently updated (last), the course shown
        seed_value = data.envelope(threads)
        context = run.context()
        page = _open_bench_page(run, context, seed_value)
        row = {"others": n_others, "current_messages": n_current, "seed_utf16": data.utf16_len(seed_value)}
        row["steady"] = _save_path(page, "steady", n_current, seed_value, reps, baseline_reps)
        row["steps_ms"] = json.loads(page.evaluate("() => window.agentbarBench.saveSteps(3)"))
        if (n_others, n_current) == configs[0]:
            extra["profile_save"] = page.evaluate("() => window.agentbarBench.profileSave(5)")
        row["cross_tab"] = _save_path(page, "cross_tab", n_current, seed_value, reps, baseline_reps)
        row["stored_utf16"] = row["steady"]["stored_utf16"]
        results.append(row)
        st, ct = row["steady"], row["cross_tab"]
        print(f"  save: {n_others:3d} others, {n_current:4d} msgs: steady ({st['write']}) {st['total_ms']:.1f} ms "
              f"(python {st['python_ms']:.1f}) vs JS {st['js_baseline_ms']:.1f} ms; cross-tab ({ct['write']}) "
              f"{ct['total_ms']:.1f} ms (python {ct['python_ms']:.1f}) vs JS {ct['js_baseline_ms']:.1f} ms; "
              f"load {os.getloadavg()[0]:.2f}", flush=True)
        if (n_others, n_current) == configs[0]:
            extra.update(stored_size(page))
        context.close()
    return results, extra


def stored_size(page) -> dict:
    text = "/regenerate scene-2 把标题改成“过拟合 Overfitting”🤖"
    page.evaluate("""async ([key, text]) => { await window.agentbarBench.turn(text); }""", [KEY, text])
    live = json.loads(page.evaluate("() => window.agentbarBench.liveSizes()"))
    stored = page.evaluate("""([key, stage]) => {
        const v = JSON.parse(localStorage.getItem(key));
        const msgs = v.state.threads[stage].messages;
        const last = msgs[msgs.length - 1];
        const tool = last.content.find((p) => p.type === 'tool-call');
        return { messageUtf16: JSON.stringify(last).length, turnUtf16: JSON.stringify(msgs[msgs.length - 2]).length + 1 + JSON.stringify(last).length, resultUtf16: tool && tool.result ? JSON.stringify(tool.result).length : 0,
                 elements: tool && tool.result && tool.result.details.content ? tool.result.details.content.elements.length : null };
    }""", [KEY, CURRENT])
    return {
        "heavy_turn": {
            "command": text,
            "live_message_utf16": live.get("messageUtf16"),
            "live_result_utf16": live.get("resultUtf16"),
            "stored_message_utf16": stored["messageUtf16"],
            "stored_turn_utf16": stored["turnUtf16"],
            "stored_result_utf16": stored["resultUtf16"],
            "elements": stored["elements"],
            "stored_fraction": stored["turnUtf16"] / live["resultUtf16"],
            "stored_message_fraction_of_live_message": stored["messageUtf16"] / live["messageUtf16"],
            "stored_result_fraction_of_live_result": stored["resultUtf16"] / live["resultUtf16"],
        }
    }


# --- quota and capacity ----------------------------------------------------------------------


QUOTA_JS = """
(unit) => {
  localStorage.clear();
  const fits = (n) => { try { localStorage.setItem('q', unit.repeat(n)); return true; } catch (e) { return false; } finally { localStorage.removeItem('q'); } };
  let lo = 0, hi = 1;
  while (fits(hi)) { lo = hi; hi *= 2; }
  while (hi - lo > 1) { const mid = Math.floor((lo + hi) / 2); if (fits(mid)) lo = mid; else hi = mid; }
  return lo;  // repetitions of unit that fit under the 1-unit key 'q'
}
"""

CAPACITY_JS = """
([key, msgs, count]) => {
  localStorage.clear();
  const parts = [];
  for (let i = 0; i < count; i++) parts.push(JSON.stringify('course-' + String(i).padStart(4, '0')) + ':{"messages":' + msgs + ',"updatedAt":' + (1780000000000 + i) + '}');
  const v = '{"state":{"threads":{' + parts.join(',') + '}},"version":1}';
  try { localStorage.setItem(key, v); return [true, v.length]; } catch (e) { return [false, v.length]; } finally { localStorage.clear(); }
}
"""


FITS_JS = """
([unit, n]) => {
  try { localStorage.setItem('q', unit.repeat(n)); return true; } catch (e) { return false; } finally { localStorage.removeItem('q'); }
}
"""
"""Whether ``n`` repetitions of ``unit`` fit under the 1-unit key 'q' (``QUOTA_JS``'s probe, one a call)."""

QUICK_QUOTA_HINT = 5 * 1024 * 1024 - 1
"""``--quick``'s first ASCII probe: Chromium's 10 MiB an origin (5 Mi UTF-16 units), less the key. Only where
the search starts (``largest_fitting`` finds the same answer from anywhere, in two probes from this one
on Chromium); the full run searches from 1 in the page (``QUOTA_JS``)."""


def largest_fitting(fits, hint: int = 1) -> int:
    """The largest ``n >= 0`` for which ``fits(n)`` is true, ``fits`` being true up to some ``n`` and false
    from there (``fits(0)`` true): steps of 1, 2, 4, … away from ``hint`` until the answer is bracketed,
    then halving. A ``hint`` at the answer costs two calls of ``fits`` (each a multi-megabyte write into
    ``localStorage`` here), one from 1 about fifty."""
    if fits(hint):
        lo, step = hint, 1
        while fits(lo + step):
            lo, step = lo + step, step * 2
        hi = lo + step
    else:
        hi, step = hint, 1
        while hi - step > 0 and not fits(hi - step):
            hi, step = hi - step, step * 2
        lo = max(hi - step, 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def bench_quota(run: Run, quick: bool = False) -> dict:
    """localStorage's quota (UTF-16 units; ASCII, CJK and emoji characters under a 1-character key) and
    how many typical threads fit in it; ``quick``: the same figures searched from ``QUICK_QUOTA_HINT``
    (then CJK from the ASCII figure, emoji from half the CJK one) instead of from 1."""
    context = run.context()
    page = context.new_page()
    page.goto(f"{run.base}bench/pages/blank.html")
    if quick:
        page.evaluate("() => localStorage.clear()")
        probe = lambda unit: lambda n: page.evaluate(FITS_JS, [unit, n])  # noqa: E731
        ascii_units = largest_fitting(probe("x"), QUICK_QUOTA_HINT)
        cjk = largest_fitting(probe("过"), ascii_units)
        emoji = largest_fitting(probe("🤖"), max(cjk // 2, 1))
    else:
        ascii_units = page.evaluate(QUOTA_JS, "x")
        cjk = page.evaluate(QUOTA_JS, "过")
        emoji = page.evaluate(QUOTA_JS, "🤖")  # two UTF-16 units each
    quota_units = ascii_units + 1  # + the key
    msgs = data.thread_json("course-0000", 100)
    fragment = len('"course-0000":{"messages":') + data.utf16_len(msgs) + len(',"updatedAt":1780000000000}') + 1
    overhead = len('{"state":{"threads":{}},"version":1}') + len(KEY)
    estimate = (quota_units - overhead + 1) // fragment
    fits = page.evaluate(CAPACITY_JS, [KEY, msgs, estimate])
    over = page.evaluate(CAPACITY_JS, [KEY, msgs, estimate + 1])
    count = estimate
    if not fits[0]:  # walk down until it fits
        while count > 0 and not page.evaluate(CAPACITY_JS, [KEY, msgs, count])[0]:
            count -= 1
    elif over[0]:
        while page.evaluate(CAPACITY_JS, [KEY, msgs, count + 1])[0]:
            count += 1
    context.close()
    return {
        "quota_utf16_units": quota_units,
        "quota_ascii_chars": ascii_units,
        "quota_cjk_chars": cjk,
        "quota_emoji_chars": emoji,
        "typical_thread": "50 turns (100 messages), mixed Chinese/English/emoji, a /regenerate every 10th turn",
        "typical_thread_utf16": fragment,
        "threads_that_fit": count,
        "threads_estimated_from_quota": estimate,
    }


# --- report -------------------------------------------------------------------------------


def evaluate_goals(startup: dict, saves: list[dict], extra: dict) -> dict:
    goals = {}
    if startup:
        ratio = startup["app"]["cold_ratio_to_floor"]
        goals["startup_ratio_to_floor"] = {"value": ratio, "limit": GOALS["startup_ratio_max"], "pass": ratio <= GOALS["startup_ratio_max"]}
        paired = startup["app"].get("cold_paired_ratio_median")
        if paired is not None:
            goals["startup_paired_ratio_to_floor"] = {"value": paired, "limit": GOALS["startup_ratio_max"],
                                                      "pass": paired <= GOALS["startup_ratio_max"]}
    # Save goals apply to the steady path (this tab wrote the value last, the normal case);
    # the after-another-tab-wrote path is reported for information (see save_info).
    by = {(r["others"], r["current_messages"]): r["steady"] for r in saves if "steady" in r}
    main = by.get((50, 100))
    if main:
        goals["save_ratio_to_js_100msgs_50others"] = {"value": main["ratio_to_js"], "limit": GOALS["save_ratio_max"],
                                                      "pass": main["ratio_to_js"] <= GOALS["save_ratio_max"]}
    lo, hi = by.get((0, 100)), by.get((200, 100)) or by.get((50, 100))
    small, big = by.get((50, 10)), by.get((50, 1000))
    if lo and hi and small and big:
        growth_total = hi["python_ms"] / max(lo["python_ms"], 0.1)
        growth_thread = big["python_ms"] / max(small["python_ms"], 0.1)
        ok = growth_total <= GOALS["python_total_growth_max"] and growth_thread > growth_total
        goals["python_time_tracks_thread_not_store"] = {
            "python_ms_by_others_0_vs_max": [lo["python_ms"], hi["python_ms"]],
            "growth_with_total_stored": growth_total,
            "python_ms_by_thread_10_vs_1000": [small["python_ms"], big["python_ms"]],
            "growth_with_thread": growth_thread,
            "limit_growth_with_total": GOALS["python_total_growth_max"],
            "pass": ok,
        }
    heavy = extra.get("heavy_turn")
    if heavy:
        goals["heavy_turn_stored_fraction"] = {"value": heavy["stored_fraction"], "limit": GOALS["heavy_stored_fraction_max"],
                                               "pass": heavy["stored_fraction"] < GOALS["heavy_stored_fraction_max"]}
    return goals


def save_info(saves: list[dict]) -> dict:
    """The after-another-tab-wrote path (re-read, then splice), for information: no goal applies."""
    by = {(r["others"], r["current_messages"]): r.get("cross_tab") for r in saves}
    info = {}
    main = by.get((50, 100))
    if main:
        info["cross_tab_ratio_to_js_100msgs_50others"] = main["ratio_to_js"]
    lo, hi = by.get((0, 100)), by.get((200, 100))
    if lo and hi:
        # the timer's 0.1 ms steps: a re-read that splices can measure 0.0 ms of Python with no other course
        info["cross_tab_python_growth_0_to_200_others"] = hi["python_ms"] / max(lo["python_ms"], 0.1)
    return info


def print_report(result: dict) -> None:
    m = result["machine"]
    print()
    print(f"Machine: {m['cpu']}, {m['cores']} cores; Chromium {m['chromium']}; load average at start "
          f"{m['loadavg_at_start']}, at end {m.get('loadavg_at_end', '—')}; mode {result['mode']}")
    if result.get("renderer_crashes"):
        print(f"Chromium's renderer crashed during: {', '.join(result['renderer_crashes'])} (each part ran again "
              "in a new browser; its figures are from the run that finished)")
    st = result.get("startup")
    if st:
        print(f"\nStart-up to html[data-ready] (median of {result['params']['loads']} cold loads, fresh context each; "
              f"seeded 20 courses × 50 turns = {result['params']['startup_seed_utf16']:,} UTF-16 units)")
        print(f"{'page':<16}{'cold ms':>9}{'ratio':>7}{'paired':>8}{'reload ms':>11}{'ratio':>7}{'py:ready':>10}"
              f"{'cold MB body':>14}{'cold MB wire':>14}{'reload KB wire':>16}")
        for name, s in st.items():
            print(f"{name:<16}{s['cold_ms_median']:>9.0f}{s['cold_ratio_to_floor']:>7.3f}"
                  f"{s.get('cold_paired_ratio_median', float('nan')):>8.3f}{s['reload_ms_median']:>11.0f}"
                  f"{s['reload_ratio_to_floor']:>7.3f}{fmt(s['py_ready_ms_median'], nd=0):>10}"
                  f"{s['cold_bytes_body'] / 1e6:>14.2f}{s['cold_bytes_wire'] / 1e6:>14.2f}"
                  f"{s['reload_bytes_wire'] / 1e3:>16.1f}")
    saves = [r for r in result.get("save") or [] if "steady" in r]
    if saves:
        print(f"\nSave: turn completion → value in localStorage (median of {result['params']['save_reps']} after a "
              "warm-up turn), mixed text; JS baseline = JSON.stringify + setItem of the identical envelope, same page")
        print("  steady    = this tab wrote the value last (normal case): live thread trimmed back to its seeded length in"
              " memory before each turn, no re-seeding → the store splices in only this course's entry")
        print("  cross-tab = another tab wrote since (re-seeded via setItem + storage-event resync) → full envelope write")
        if result["params"]["save_reps"] < 3:
            print("  (few repetitions: the steady figures are dominated by the first splice after the warm-up's full write,"
                  " see 1st py; timing goals are not meaningful here)")
        print(f"{'others':>7}{'thread':>8}{'stored units':>14}  {'path':<10}{'write':<7}{'app ms':>8}{'python':>8}"
              f"{'1st py':>8}{'serialize':>10}{'store.save':>11}{'JS bridge':>10}{'JS base':>9}{'ratio':>7}{'stall ms':>10}")
        for r in saves:
            for i, path in enumerate(SAVE_PATHS):
                x = r[path]
                lead = f"{r['others']:>7}{r['current_messages']:>8}{x['stored_utf16']:>14,}" if i == 0 else " " * 29
                first = fmt(x["first_python_ms"]) if path == "steady" else ""
                print(f"{lead}  {PATH_LABEL[path]:<10}{x['write'][:6]:<7}{x['total_ms']:>8.1f}{x['python_ms']:>8.1f}"
                      f"{first:>8}{x['serialize_in_runtime_ms']:>10.1f}{x['store_save_ms']:>11.1f}{x['js_bridge_ms']:>10.1f}"
                      f"{x['js_baseline_ms']:>9.1f}{x['ratio_to_js']:>7.2f}{x['stall_ms']:>10.1f}")
        print("  (python = app ms − time inside the JS bridge; 1st py = python ms of the first splice after the warm-up's"
              " full write; serialize = runtime's serialize_thread before store.save; stall = the whole completion"
              " callback incl. render; ratio = app ms / JS base)")
        print("\n  Steady save steps (median ms of 3, diagnostic re-run of the same steps, bench/hooks.py save_steps):")
        names = []
        for r in saves:
            names += [n for n in r.get("steps_ms", {}) if n not in names]
        print("  " + f"{'step':<66}" + "".join(f"{str(r['others']) + '/' + str(r['current_messages']):>10}" for r in saves))
        for n in names:
            if n == "error":
                cells = "".join(f"{'err' if 'error' in r.get('steps_ms', {}) else '':>10}" for r in saves)
            else:
                integer = "units" in n or n == "threads stored"
                cells = "".join(f"{fmt(r.get('steps_ms', {}).get(n), nd=0 if integer else 2):>10}" for r in saves)
            print(f"  {n:<66}{cells}")
        for r in saves:
            if "error" in r.get("steps_ms", {}):
                print(f"  steps {r['others']}/{r['current_messages']}: {r['steps_ms']['error']}")
    h = (result.get("stored") or {}).get("heavy_turn")
    if h:
        print(f"\nHeavy turn ({h['command']}, {h['elements']} elements): stored turn (user + assistant) "
              f"{h['stored_turn_utf16']:,} UTF-16 units vs live result JSON {h['live_result_utf16']:,} "
              f"= {h['stored_fraction'] * 100:.2f}%; assistant message {h['stored_message_utf16']:,} vs live "
              f"{h['live_message_utf16']:,} = {h['stored_message_fraction_of_live_message'] * 100:.2f}%; slim result "
              f"{h['stored_result_utf16']:,} vs live {h['live_result_utf16']:,} = "
              f"{h['stored_result_fraction_of_live_result'] * 100:.2f}%")
    q = result.get("quota")
    if q:
        print(f"Quota: {q['quota_utf16_units']:,} UTF-16 units (fits ASCII {q['quota_ascii_chars']:,} chars, CJK "
              f"{q['quota_cjk_chars']:,}, emoji {q['quota_emoji_chars']:,} under a 1-char key); typical 50-turn thread "
              f"{q['typical_thread_utf16']:,} units → {q['threads_that_fit']} threads fit before pruning "
              f"(computed {q['threads_estimated_from_quota']})")
    for name, figures in (result.get("parts") or {}).items():
        print(f"\n[{name}]")
        importlib.import_module(EXTRA_PARTS[name]).report(figures)
    if result.get("goals"):
        print("\nGoals (save goals on the steady path):")
        for name, g in result["goals"].items():
            value = g.get("value")
            shown = f"{value:.3f}" if isinstance(value, float) else json.dumps({k: v for k, v in g.items() if k != "pass"})
            limit = f" (limit {g['limit']})" if "limit" in g else ""
            print(f"  {'PASS' if g['pass'] else 'FAIL'}  {name}: {shown}{limit}")
    for name, value in (result.get("save_info") or {}).items():
        print(f"  info  {name}: {value:.3f}")
    prof = (result.get("profile") or {}).get("timeline")
    if prof:
        print("\nApp start-up timeline (median ms from navigation; [duration] for fetches and measured steps):")
        for name, t, d in prof:
            if name.endswith("×calls"):
                continue
            calls = dict((n, dd) for n, _, dd in prof).get(name + " ×calls")
            print(f"  {fmt(t, nd=0):>8}  {name}" + (f"  [{d:.1f} ms" + (f", {calls:.0f} calls" if calls else "") + "]" if d else ""))
    if st and st["app"]["progress_median"]:
        print("\npy:progress (median ms from navigation): app | PyScript floor")
        floor = dict((st.get("floor_pyscript") or {}).get("progress_median") or [])  # --quick: not loaded
        for label, t in st["app"]["progress_median"]:
            print(f"  {label:<40}{t:8.0f}{fmt(floor.get(label), nd=0):>10}")
    print_times(result)


def print_times(result: dict) -> None:
    """Each part's wall time and the whole run's (``part_s``, ``elapsed_s``), last in the report; a quick
    run says whether it kept to ``QUICK_BUDGET_S`` (it is never failed for it)."""
    part_s = result.get("part_s") or {}
    if not part_s:
        return
    m = result["machine"]
    start, end = m.get("loadavg_at_start") or ["—"], m.get("loadavg_at_end") or ["—"]
    print(f"\nTime per part (wall clock; load average {start[0]} at start, {end[0]} at end):")
    for name, seconds in part_s.items():
        print(f"  {name:<14}{seconds:>8.1f} s")
    total = result.get("elapsed_s", sum(part_s.values()))
    note = ""
    if result.get("mode") == "quick":
        note = (f" (quick mode: within {QUICK_BUDGET_S} s)" if total <= QUICK_BUDGET_S else
                f" (quick mode: OVER its {QUICK_BUDGET_S} s; the run is not failed for it)")
    print(f"  {'total':<14}{total:>8.1f} s{note}")


EXTRA_PARTS: dict[str, str] = {
    "firstsave": "bench.firstsave",
    "longtext": "bench.longtext",
    "longsession": "bench.longsession",
    "build": "bench.build",
    "browsers": "bench.browsers",
    "model": "bench.model",
    "stream": "bench.stream",
    "checkpoints": "bench.checkpoints",
    "history": "bench.history",
    "historysearch": "bench.history_search",
    "backup": "bench.backup",
    "firstpaint": "bench.firstpaint",
    "sync": "bench.sync",
    "turncost": "bench.turncost",
    "branches": "bench.branches",
}
"""Further benchmark parts: ``name -> module``; each module has ``run(run: Run, *, quick: bool) -> dict``
(figures, ratios against a baseline measured in the same page and run, and a ``goals`` dict of
``{name: {"value", "limit", "pass"}}``) and ``report(figures: dict) -> None`` (prints its table), and may
have ``prepare(run: Run, *, quick: bool) -> None``, called in a quick run once the start-up part is
done, to start its CPython work in the background (``Run.prepare``) for ``run`` to take (``Run.prepared``)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (CI: checks it works, no timing goals enforced)")
    parser.add_argument("--out", default=str(ROOT / "bench-results" / "bench.json"))
    parser.add_argument("--report", action="store_true", help="only print the table of an existing --out file")
    parser.add_argument("--only", default=",".join(["startup", "quota", "save", "profile", *EXTRA_PARTS]),
                        help="comma-separated parts to run (default: all): startup, quota, save, profile, "
                             + ", ".join(EXTRA_PARTS))
    args = parser.parse_args(argv)

    if args.report:
        print_report(json.loads(Path(args.out).read_text()))
        return 0

    from playwright.sync_api import sync_playwright

    ensure_runtime()
    # --quick proves each part runs (QUICK_BUDGET_S in all): one start-up round of the app and its
    # floor, one save row (its steady and cross-tab paths, step split, cProfile and heavy turn), the
    # full rows' sizes otherwise
    loads = 1 if args.quick else 9
    save_reps = 1 if args.quick else 9
    baseline_reps = 5 if args.quick else 9
    configs = [(50, 100)] if args.quick else [(50, 100), (50, 10), (50, 1000), (0, 100), (200, 100)]

    snapshot = snapshot_site()
    server = make_server("127.0.0.1", 0, root=snapshot, quiet=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    base = f"http://{host}:{port}/"
    started = time.time()
    startup_seed = data.envelope({**data.others(19), CURRENT: 100})
    run = None
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
            run = Run(browser, base)
            result = {"machine": machine_info(browser), "mode": "quick" if args.quick else "full",
                      "params": {"loads": loads, "save_reps": save_reps, "baseline_reps": baseline_reps,
                                 "startup_seed_utf16": data.utf16_len(startup_seed)}}
            print(f"bench ({result['mode']}): {result['machine']['cpu']}, {result['machine']['cores']} cores, "
                  f"Chromium {result['machine']['chromium']}", flush=True)
            parts = set(args.only.split(","))
            part_s = result["part_s"] = {}

            def part(name: str) -> None:
                part_s[name] = time.time()
                print(f"{name} … (load average {os.getloadavg()[0]:.2f})", flush=True)

            def measured(name: str, work):
                for tries in range(CRASH_TRIES + 1):
                    try:
                        return work()
                    except Exception as error:  # Playwright's Error: a renderer crash is the only one retried
                        if tries == CRASH_TRIES or not any(m in str(error) for m in ("Target crashed", "Page crashed")):
                            raise
                        print(f"  {name}: Chromium's renderer crashed; the part runs again in a new browser", flush=True)
                        result.setdefault("renderer_crashes", []).append(name)
                        try:
                            run.browser.close()
                        except Exception:  # a browser whose process is gone
                            pass
                        run.browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)

            def done(name: str) -> None:
                part_s[name] = round(time.time() - part_s[name], 1)
                print(f"  {name}: {part_s[name]} s", flush=True)

            if "startup" in parts:
                part("start-up")
                result["startup"] = measured("start-up", lambda: bench_startup(
                    run, loads, startup_seed, QUICK_PAGES if args.quick else tuple(PAGES)))
                done("start-up")
            if args.quick:  # later parts' CPython work (data, dist/) in the background from here (Run.prepare)
                for name, module_name in EXTRA_PARTS.items():
                    prepare = getattr(importlib.import_module(module_name), "prepare", None)
                    if name in parts and prepare is not None:
                        prepare(run, quick=True)
            if "quota" in parts:
                part("quota")
                result["quota"] = measured("quota", lambda: bench_quota(run, quick=args.quick))
                done("quota")
            if "save" in parts:
                part("save")
                saves, extra = measured("save", lambda: bench_save(run, configs, save_reps, baseline_reps))
                result["save"] = saves
                result["stored"] = {"heavy_turn": extra.get("heavy_turn")}
                result.setdefault("profile", {})["save_cprofile"] = extra.get("profile_save")
                done("save")
            if "profile" in parts:
                part("profile")
                result.setdefault("profile", {})
                result["profile"].update(measured("profile", lambda: profile_startup(
                    run, startup_seed, 1 if args.quick else 3, with_cprofile=not args.quick)))
                done("profile")
            for name, module_name in EXTRA_PARTS.items():
                if name in parts:
                    part(name)
                    module = importlib.import_module(module_name)
                    result.setdefault("parts", {})[name] = measured(name, lambda: module.run(run, quick=args.quick))
                    done(name)
            run.browser.close()
    finally:
        if run is not None:
            run.close_jobs()
        server.shutdown()
        server.server_close()
        shutil.rmtree(snapshot, ignore_errors=True)
    result["goals"] = evaluate_goals(result.get("startup"), result.get("save", []), result.get("stored", {}))
    for name, figures in (result.get("parts") or {}).items():
        for goal, g in (figures.get("goals") or {}).items():
            result["goals"][f"{name}: {goal}"] = g
    result["save_info"] = save_info(result.get("save", []))
    result["elapsed_s"] = round(time.time() - started, 1)
    result["machine"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False))
    print_report(result)
    print(f"\nWrote {out} in {result['elapsed_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
