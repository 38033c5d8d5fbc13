"""Attribution of the main-thread tasks of history search at scale (DESIGN.md §14, bench part
``historysearch``): ``.venv/bin/python -m bench.probe_history_search [N]`` (default 10,000).

Seeds N conversations as ``bench/history_search.py`` does, then in the page: every Python garbage
collection is timed (``gc.callbacks``: start, ms, generation, objects collected, objects tracked
after), long animation frames are observed (``long-animation-frame``, with their scripts) and
long tasks (``longtask``); the index build, the five searches and typing "learning rate" at 30 ms
a key run as in the benchmark, and each long task is printed with the collections inside it.
A development probe, not a benchmark: it prints what it saw, it judges nothing.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

from bench.__main__ import CHROMIUM_FLAGS, Run, chromium_path, ensure_runtime, snapshot_site
from bench.history import seeded_page
from bench.history_search import CLEAR_JS, SEARCH_JS, TYPE_JS
from bench.scripts import RUN_PY
from tools.serve import make_server

ROOT = Path(__file__).resolve().parent.parent

GC_PROBE = """
import gc, js, json
_log = []
_start = [0.0]
def _on_gc(phase, info):
    if phase == "start":
        _start[0] = js.performance.now()
    else:
        _log.append([_start[0], js.performance.now() - _start[0], info["generation"], info["collected"]])
gc.callbacks[:] = [c for c in gc.callbacks if getattr(c, "__name__", "") != "_on_gc"]
gc.callbacks.append(_on_gc)
import builtins
builtins._probe_gc_log = _log
json.dumps({"tracked": len(gc.get_objects()), "counts": gc.get_count(), "threshold": gc.get_threshold(),
            "frozen": gc.get_freeze_count()})
"""

STEPS_PROBE = """
import builtins, gc, js, json
from app.browser import indexeddb as _idb
from app.history.reads import HistoryReads
_tl = []
builtins._probe_tl = _tl
_now = js.performance.now
if not hasattr(_idb, "_probe_orig_call"):
    _idb._probe_orig_call = _idb.IndexedDbBackend._call
    _idb._probe_orig_parse = _idb._parse
async def _call(self, method, *args):
    _tl.append(["call " + method, _now()])
    try:
        return await _idb._probe_orig_call(self, method, *args)
    finally:
        _tl.append(["back " + method, _now()])
def _parse(text):
    t0 = _now()
    out = _idb._probe_orig_parse(text)
    _tl.append(["parsed %d chars in %.1f ms" % (len(str(text)), _now() - t0), _now()])
    return out
_idb.IndexedDbBackend._call = _call
_idb._parse = _parse
reads = [o for o in gc.get_objects() if isinstance(o, HistoryReads)]
for r in reads:
    inner = r._pause
    async def _pause(inner=inner):
        _tl.append(["pause", _now()])
        await inner()
        _tl.append(["resume", _now()])
    r._pause = _pause
len(reads)
"""

STEP_TIMES = """
import gc, js, json, time
from app.history.search_index import SearchIndex
from app.history.terms import parse_posting, parse_query, presence_prefix
from app.history.text import fold
repo = [o for o in gc.get_objects() if isinstance(o, SearchIndex)][0]
now = js.performance.now
out = {}
for name in ("unindexed", "matching_runs", "matching_words"):
    walls = []
    for _ in range(3):
        t0 = now()
        if name == "unindexed":
            await repo.unindexed("intro-ml")
        else:
            q = parse_query("量子纠缠" if name == "matching_runs" else "learning rate", fold)
            await repo.matching("intro-ml", q, since_ms=None, after=None, oldest=False, want=11, lead=q.terms[-1])
        walls.append(round(now() - t0, 1))
    out[name] = walls
prefix = presence_prefix("intro-ml")
keys = await repo._db.keys("search", "terms", prefix, prefix + "\uffff")
t0 = now(); {p[1] for p in map(parse_posting, keys)}; out["parse_postings_%d" % len(keys)] = round(now() - t0, 1)
json.dumps(out)
"""

TL_TAKE = """
import builtins, json
out = list(builtins._probe_tl)
builtins._probe_tl.clear()
json.dumps(out)
"""

GC_TAKE = """
import builtins, gc, json
_l = builtins._probe_gc_log
out = list(_l)
_l.clear()
json.dumps({"log": out, "tracked": len(gc.get_objects()), "counts": gc.get_count()})
"""

OBSERVE_JS = """() => {
  window.__probe = { lt: [], loaf: [] };
  new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__probe.lt.push([e.startTime, e.duration]); })
    .observe({ type: 'longtask' });
  try {
    new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__probe.loaf.push({
      start: e.startTime, dur: e.duration, blocking: e.blockingDuration, render: e.renderStart ? e.startTime + e.duration - e.renderStart : 0,
      scripts: e.scripts.map((s) => [s.invoker, s.invokerType, s.sourceFunctionName, (s.sourceURL || '').split('/').pop(), Math.round(s.duration), Math.round(s.forcedStyleAndLayoutDuration), Math.round(s.startTime)]) }); })
      .observe({ type: 'long-animation-frame' });
  } catch (e) { window.__probe.loafError = String(e); }
}"""

TAKE_JS = "() => { const p = window.__probe; const out = { lt: p.lt, loaf: p.loaf, err: p.loafError }; p.lt = []; p.loaf = []; return out; }"


def report(page, label: str) -> None:
    page.wait_for_timeout(200)
    seen = page.evaluate(TAKE_JS)
    gc_seen = json.loads(page.evaluate(RUN_PY, GC_TAKE))
    log = gc_seen["log"]
    tl = json.loads(page.evaluate(RUN_PY, TL_TAKE))
    total_gc = sum(d for _, d, _, _ in log)
    by_gen = {g: [round(d, 1) for _, d, gg, _ in log if gg == g] for g in (0, 1, 2)}
    print(f"\n== {label}: {len(seen['lt'])} long tasks {[round(d) for _, d in seen['lt']]}; "
          f"{len(log)} collections, {total_gc:.0f} ms in all; tracked now {gc_seen['tracked']}", flush=True)
    print(f"   gen2: {by_gen[2]}  gen1 max {max(by_gen[1], default=0)}  gen0 max {max(by_gen[0], default=0)} "
          f"(gen0 {len(by_gen[0])}, gen1 {len(by_gen[1])})")
    for start, dur in seen["lt"]:
        inside = [(round(d, 1), g, c) for s, d, g, c in log if start <= s <= start + dur]
        gc_ms = sum(d for d, _, _ in inside)
        frames = [f for f in seen["loaf"] if f["start"] <= start + dur and f["start"] + f["dur"] >= start]
        scripts = [s for f in frames for s in f["scripts"] if s[6] + s[4] >= start and s[6] <= start + dur]
        print(f"   task {dur:.0f} ms @{start:.0f}: gc {gc_ms:.0f} ms {[x for x in inside if x[0] > 2]}")
        for s in scripts[:4]:
            print(f"      script {s}")
        before = [e for e in tl if e[1] < start][-2:]
        within = [e for e in tl if start <= e[1] <= start + dur]
        for name, at in before + within:
            print(f"      {at - start:+8.1f} {name}")


def summarize_trace(path: str) -> str:
    """Each main-thread task over 50 ms of the trace: wall ms, thread CPU ms, V8 GC ms inside it."""
    events = json.load(open(path))
    events = events.get("traceEvents", events) if isinstance(events, dict) else events
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    main = {k for k, v in names.items() if v == "CrRendererMain"}
    mine = [e for e in events if (e.get("pid"), e.get("tid")) in main and e.get("ph") == "X"]
    tasks = [e for e in mine if e["name"] in ("RunTask", "ThreadControllerImpl::RunTask") and e.get("dur", 0) > 50_000]
    gcs = [e for e in mine if "GC" in e["name"] and e.get("dur", 0) > 1000]
    lines = [f"trace: {len(tasks)} tasks over 50 ms on CrRendererMain"]
    for t in tasks:
        inside = [g for g in gcs if t["ts"] <= g["ts"] <= t["ts"] + t["dur"]]
        top = {}
        for g in inside:
            top[g["name"]] = top.get(g["name"], 0) + g["dur"] / 1000
        lines.append(f"  task {t['dur'] / 1000:.0f} ms wall, {t.get('tdur', 0) / 1000:.0f} ms CPU; "
                     f"gc {', '.join(f'{k} {v:.0f}' for k, v in top.items()) or 'none'}")
    return "\n".join(lines)


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    from playwright.sync_api import sync_playwright
    ensure_runtime()
    server = make_server("127.0.0.1", 0, root=snapshot_site(), quiet=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        run = Run(browser, f"http://{host}:{port}/")
        context = run.context()
        figures: dict = {}
        t0 = time.time()
        page = seeded_page(run, context, n, 10, figures)
        print(f"seeded {n} in {time.time() - t0:.0f} s", flush=True)
        page.on("console", lambda m: m.text.startswith("probe") and print("   [console]", m.text[:300], flush=True))
        print("gc at start:", page.evaluate(RUN_PY, GC_PROBE), flush=True)
        print("steps probe:", page.evaluate(RUN_PY, STEPS_PROBE), flush=True)
        page.evaluate(OBSERVE_JS)
        page.click("[data-testid=history-open]")
        page.wait_for_selector("[data-testid=history-drawer]:not([hidden])")
        page.evaluate(CLEAR_JS)
        report(page, "open + clear")
        if os.environ.get("PROBE_TRACE"):
            browser.start_tracing(page=page, path=os.environ["PROBE_TRACE"], screenshots=False,
                                  categories=["toplevel", "devtools.timeline", "disabled-by-default-v8.gc"])
        t0 = time.time()
        print("index build:", page.evaluate(SEARCH_JS, ["entanglement", 900_000]), f"{time.time() - t0:.0f} s")
        report(page, "index build")
        print("steps:", page.evaluate(RUN_PY, STEP_TIMES), flush=True)
        report(page, "steps")
        for keyword in ["量子纠缠", "QUANTUM", "#137-3", "backpropagation", "learning rate"]:
            page.evaluate(CLEAR_JS)
            report(page, "clear")
            print(keyword, page.evaluate(SEARCH_JS, [keyword, 60_000]))
            report(page, f"search {keyword!r}")
        page.evaluate(CLEAR_JS)
        report(page, "clear")
        print("typing:", page.evaluate(TYPE_JS, ["learning rate", 30]))
        report(page, "typing")
        if os.environ.get("PROBE_TRACE"):
            browser.stop_tracing()
            print(summarize_trace(os.environ["PROBE_TRACE"]))
        context.close()
        browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
