"""Where the cold load's long tasks after ready go (DESIGN.md §13): ``python -m bench.trace_startup [N] [--imports] [--reload]``.

``--reload``: each round reports the reload that follows the cold load instead.

A diagnostic, not a bench part: ``N`` cold loads (default 2) of the ``firstpaint`` page
(20 courses × 50 turns stored, the paint record in Cache Storage, IndexedDB empty), each with

- the Long Animation Frames API (``long-animation-frame``, with its ``scripts``: invoker,
  source, duration) from navigation on;
- Python's ``gc.callbacks`` timed (a collection is a span ``gc<generation>``);
- every module's import timed (its own time: nested imports taken out), Pyodide's wheel
  unpacking (``unpack_buffer``), the adapter's IndexedDB calls (their synchronous part);
- without ``--imports``: spans of named app functions too (plain functions only; importing them
  for wrapping moves those imports before ready); with ``--imports``: each asyncio step named by
  the coroutines it resumes (outermost > innermost) instead, and nothing imported early.

index.html's Python is replaced (``page.route``) by one that installs the probes and then
starts the app as index.html does; the app ships none of this. For each frame over 50 ms
after ``html[data-ready]`` it prints its scripts and the Python spans inside it.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections import defaultdict

from bench import data
from bench.__main__ import CHROMIUM_FLAGS, ROOT, WRAP_EACH_PY, chromium_path, ensure_runtime, snapshot_site
from bench.firstpaint import APP, COURSE, INIT, IDLE_S, PUT_RECORD, paint_record

LOAF = """
(() => {
  window.__loaf = [];
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) window.__loaf.push({
        start: e.startTime, duration: e.duration, blocking: e.blockingDuration,
        render: e.renderStart, style: e.styleAndLayoutStart,
        scripts: e.scripts.map((s) => ({ invoker: s.invoker, type: s.invokerType, src: s.sourceURL,
          fn: s.sourceFunctionName, start: s.startTime, duration: s.duration,
          layout: s.forcedStyleAndLayoutDuration })) });
    }).observe({ type: "long-animation-frame", buffered: true });
  } catch (e) { window.__loaf = null; }
  window.__idb = [];
  let adapter;
  Object.defineProperty(globalThis, "agentbarIndexedDbAdapter", { configurable: true, get: () => adapter, set: (v) => {
    adapter = v;
    for (const name of ["write", "get", "bulkGet", "query"]) {
      const f = v[name];
      if (!f) continue;
      v[name] = function (...args) {
        const t0 = performance.now();
        const p = f.apply(this, args);
        const t1 = performance.now();
        const size = typeof args[0] === "string" ? args[0].length : (args[0] && args[0].length) || 0;
        p.then(() => window.__idb.push([name, t0, t1, performance.now(), size]));
        return p;
      };
    }
  } });
})();
"""

PROBE_PY = WRAP_EACH_PY + r'''
import gc, sys, time, types, functools, js
trace = types.ModuleType("probe_trace")
trace.spans = []
sys.modules["probe_trace"] = trace
now = js.performance.now
_gc = {}
def on_gc(phase, info):
    if phase == "start":
        _gc["t"] = now()
    elif "t" in _gc:
        trace.spans.append(["gc%d" % info["generation"], _gc.pop("t"), now()])
gc.callbacks.append(on_gc)
_depth = [0]
def wrap(owner, name, label):
    fn = getattr(owner, name)
    @functools.wraps(fn)
    def timed(*a, **k):
        t0 = now()
        _depth[0] += 1
        try:
            return fn(*a, **k)
        finally:
            _depth[0] -= 1
            trace.spans.append([label, t0, now()])
    setattr(owner, name, timed)
class _Timed:
    """Times each module's execution (its own import, nested imports included)."""
    def find_spec(self, name, path=None, target=None):
        import importlib.machinery as m
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module") or getattr(loader, "_probe", False):
            return spec
        original = loader.exec_module
        def exec_module(module, _o=original, _n=name):
            t0 = now()
            try:
                _o(module)
            finally:
                trace.spans.append(["import " + _n, t0, now()])
        try:
            loader.exec_module = exec_module
        except Exception:
            pass
        return spec
def steps():
    """Each asyncio step as a span named by the coroutines it resumes (outermost > innermost)."""
    import asyncio, asyncio.events as ev
    original = ev.Handle._run
    def run(self):
        t0 = now()
        label = "step"
        task = getattr(self._callback, "__self__", None)
        if isinstance(task, asyncio.Task):
            coro, chain = task.get_coro(), []
            while coro is not None and len(chain) < 6:
                chain.append(getattr(coro, "__qualname__", type(coro).__name__))
                coro = getattr(coro, "cr_await", None)
            label = "step " + " > ".join(chain)
        try:
            return original(self)
        finally:
            trace.spans.append([label, t0, now()])
    ev.Handle._run = run
def install():
    sys.meta_path.insert(0, _Timed())
    import pyodide._package_loader as pl
    _unpack = pl.unpack_buffer
    def unpack_buffer(*a, **k):
        t0 = now()
        try:
            return _unpack(*a, **k)
        finally:
            trace.spans.append(["unpack " + str(k.get("filename")), t0, now()])
    pl.unpack_buffer = unpack_buffer
    import app.history.text, app.history.terms, app.wheels  # imported here as before
    wrap_each(wrap, [
        ("app.history.repository:Writes.keep",), ("app.history.repository:Writes._keep",),
        ("app.history.repository:search_record",), ("app.history.repository:plain_text",),
        ("app.history.repository:fold_map",), ("app.history.repository:posting_keys",),
        ("app.history.repository:text_terms",), ("app.history.writes:title_of",),
        ("app.history.writes:continues",), ("app.history.turn_writes:title_of",),
        ("app.history.turn_writes:continues",), ("app.history.turn_writes:TurnWrites._new_meta",),
        ("app.history.repository:HistoryRepository.meta_of",), ("app.history.repository:HistoryRepository._turns_of",),
        ("app.history.access:needs_segmenter",), ("app.history.active:ActiveConversations.forget",),
        ("app.browser.indexeddb:dumps_in_steps", "dumps_in_steps (first step)"),
        ("app.history.records:new_task_id",), ("app.browser.indexeddb:_bytes", "idb._bytes"),
        ("app.browser.indexeddb:_parse", "idb._parse"), ("app.browser.indexeddb:to_js", "idb.to_js"),
        ("app.json_steps:json.dumps",), ("zipfile:ZipFile.read", "zipfile.read"),
        ("app.browser.model_setup:ModelSetup.install_dialog",), ("app.browser.paint:take_over", "paint.take_over"),
        ("app.browser.paint:PaintKeeper.start",), ("app.browser.turn_meta_view:TurnMetaView.decorate",),
        ("app.browser.view:PageView.render",), ("app.browser.view:PageView.redraw_messages",),
        ("app.store:ThreadStore.load",), ("app.store:ThreadStore.updated_at",),
    ])
'''

MAIN = PROBE_PY + """
install()
steps()
from app.browser import main
main()
"""
IMPORTS_MAIN = PROBE_PY + """
sys.meta_path.insert(0, _Timed())
steps()
from app.browser import main
main()
"""


def self_times(spans: list) -> dict[str, float]:
    """Each import span's own time (ms): its length less the imports nested in it."""
    spans = sorted((s for s in spans if s[0].startswith("import ")), key=lambda s: (s[1], -s[2]))
    own: dict[str, float] = defaultdict(float)
    stack: list = []
    for label, t0, t1 in spans:
        while stack and stack[-1][2] <= t0:
            stack.pop()
        if stack:
            own[stack[-1][0]] -= t1 - t0
        own[label] += t1 - t0
        stack.append((label, t0, t1))
    return own


def _html(main: str) -> str:
    index_html = (ROOT / "index.html").read_text(encoding="utf-8")
    return re.sub(r'(<script type="py" config="pyscript.toml">)(.*?)(</script>)',
                  lambda m: m.group(1) + main + "  " + m.group(3), index_html, flags=re.S)


def _round(run_browser, base: str, seed: str, record: str, main: str, reload: bool = False) -> dict:
    from bench.scripts import RUN_PY

    context = run_browser.new_context()
    context.add_init_script(INIT.replace("t.idleMs", str(int(IDLE_S * 1000))))
    context.add_init_script(LOAF)
    context.set_default_timeout(90_000)
    page = context.new_page()
    page.on("console", lambda m: m.type in ("warning", "error") and print(f"  console {m.type}: {m.text[:200]}"))
    page.on("response", lambda r: r.status >= 400 and print(f"  HTTP {r.status}: {r.url}"))
    page.goto(f"{base}bench/pages/blank.html")
    page.evaluate("items => { localStorage.clear(); for (const [k, v] of Object.entries(items)) localStorage.setItem(k, v); }",
                  {data.STORAGE_KEY: seed})
    page.evaluate(PUT_RECORD, [base + "paint/" + COURSE, record])
    html = _html(main)
    page.route("**/index.html?*", lambda route, _r=None: route.fulfill(
        status=200, body=html, headers={"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-cache"}))
    page.goto(base + APP)
    state = _collect(page)
    if reload:
        page.reload()
        state = _collect(page)
    context.close()
    return state


def _collect(page) -> dict:
    from bench.scripts import RUN_PY

    page.wait_for_function("() => window.__fp && window.__fp.ready !== null", polling=50, timeout=90_000)
    page.wait_for_function("() => window.__fp.idle === true", polling=100, timeout=90_000)
    state = page.evaluate("() => ({ready: window.__fp.ready, long: window.__fp.long, loaf: window.__loaf,"
                          " markdown: window.__fp.markdown, marks: performance.getEntriesByType('mark').map(m => [m.name, m.startTime])})")
    state["spans"] = json.loads(page.evaluate(RUN_PY, "import probe_trace, json\njson.dumps(probe_trace.spans)"))
    state["spans"] += [[f"js {name} call ({size} bytes)", t0, t1] for name, t0, t1, _, size in page.evaluate("() => window.__idb")]
    return state


def _report(state: dict) -> None:
    ready = state["ready"]
    marks = [(n, t) for n, t in state["marks"] if n.startswith("agentbar") and t >= ready - 1]
    print(f"ready at {ready:.0f} ms; marks after: " + ", ".join(f"{n.split(':', 1)[1]} +{t - ready:.0f}" for n, t in marks))
    print("  data-markdown: " + ", ".join(f"{n} +{t - ready:.0f}" for n, t in state["markdown"]))
    print("  heartbeat gaps > 50 ms: " + ", ".join(f"{b - a:.0f} ms at +{a - ready:.0f}" for a, b in state["long"]))
    top = [(label, t1 - t0) for label, t0, t1 in state["spans"] if label.startswith("import ") and t1 < ready
           and "." not in label[7:]]
    print("  top-level imports before ready (ms): " + ", ".join(
        f"{label[7:]} {ms:.0f}" for label, ms in sorted(top, key=lambda x: -x[1])[:12]))
    own = self_times([s for s in state["spans"] if s[2] < ready])
    print(f"  imports before ready: {sum(own.values()):.0f} ms in all; app.* {sum(v for k, v in own.items() if k.startswith('import app')):.0f} ms; own time, biggest: " + ", ".join(
        f"{label[7:]} {ms:.0f}" for label, ms in sorted(own.items(), key=lambda x: -x[1])[:30]))
    groups: dict[str, float] = defaultdict(float)
    for label, ms in own.items():
        parts = label[7:].split(".")
        groups[".".join(parts[:2]) if parts[0] == "app" else parts[0]] += ms
    print("  by package (own time, ms): " + ", ".join(f"{k} {v:.0f}" for k, v in sorted(groups.items(), key=lambda x: -x[1])[:25]))
    for frame in state["loaf"] or []:
        if frame["start"] + frame["duration"] < ready or frame["duration"] <= 50:
            continue
        a, b = frame["start"], frame["start"] + frame["duration"]
        render = b - frame["render"] if frame["render"] else 0.0
        style = b - frame["style"] if frame["style"] else 0.0
        print(f"  frame +{a - ready:.0f} ms: {frame['duration']:.0f} ms (blocking {frame['blocking']:.0f}, "
              f"rendering {render:.0f}, style and layout {style:.0f})")
        for s in frame["scripts"]:
            print(f"    script {s['duration']:.0f} ms {s['type']} {s['invoker']} {s['fn'] or ''} "
                  f"{(s['src'] or '').rsplit('/', 1)[-1]}")
        own = defaultdict(lambda: [0.0, 0])
        for label, t0, t1 in state["spans"]:
            if t0 < b and t1 > a:
                own[label][0] += min(t1, b) - max(t0, a)
                own[label][1] += 1
        for label, (ms, n) in sorted(own.items(), key=lambda kv: -kv[1][0]):
            if ms >= 1:
                print(f"      py {label}: {ms:.0f} ms ({n}x)")


def main() -> int:
    from playwright.sync_api import sync_playwright

    from tools.serve import make_server

    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    main_py = IMPORTS_MAIN if "--imports" in sys.argv else MAIN
    ensure_runtime()
    server = make_server("127.0.0.1", 0, root=snapshot_site(), quiet=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    threads = {**data.others(19), COURSE: 100}
    seed = data.envelope(threads)
    record = paint_record(data.BASE_TIME + list(threads).index(COURSE))
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        for i in range(rounds):
            print(f"cold load {i + 1}/{rounds}")
            _report(_round(browser, f"http://{host}:{port}/", seed, record, main_py, "--reload" in sys.argv))
        browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
