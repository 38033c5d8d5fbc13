"""``firstsave``: the longest main-thread task of a turn when the store has not written yet (DESIGN.md §5, §13).

With 50 courses × 50 turns of mixed Chinese text stored, each sample is a fresh
page (so the save really is the first one) and measures, through a
``PerformanceObserver`` for ``longtask`` entries (tasks over 50 ms; none means
every task was shorter):

- ``first``: the first turn after start-up (the store only read the value);
- ``steady``: the next turn (this tab wrote last), for comparison;
- ``storage_event``: another tab (a second page of the same origin) saves one
  other course; this page's ``storage`` event handler re-reads the value;
- ``after_other_tab``: the first turn after that write.

For every turn it also reports how the value reached ``localStorage`` (the
bridge's ``splice`` or ``set``), the completion callback's own duration
(``stall_ms``: completion → callback returns, the whole synchronous save and
render) and the time spent inside the JavaScript bridge. The JS baseline is
``JSON.stringify`` + ``setItem`` of the same stored value in the same page,
timed with ``performance.now()`` (with the longest task it caused).

Goal: no task over 50 ms in any of the turns (and the storage event).
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

from bench import data
from bench.scripts import BRIDGE_WRAP, LONGTASKS, goto_hooked

KEY = data.STORAGE_KEY
CURRENT = "intro-ml"
LIMIT_MS = 50.0


TURN = """
async (text) => {
  await new Promise((r) => setTimeout(r, 200));  // let earlier tasks end before the window opens
  const t0 = performance.now();
  window.__bridgeLog.length = 0;
  const rec = JSON.parse(await window.agentbarBench.turn(text));
  await new Promise((r) => setTimeout(r, 100));
  rec.bridge = window.__bridgeLog.slice();
  rec.tasks = window.__longtasks.filter(([s, d]) => s + d >= t0);
  rec.gc = JSON.parse(window.agentbarBench.gcLog()).filter(([s]) => s >= t0);
  return rec;
}
"""

# Another tab saves course-000 (one more turn, a later updatedAt), as a second page would.
OTHER_TAB_WRITE = """
(key) => {
  const v = JSON.parse(localStorage.getItem(key));
  const t = v.state.threads["course-000"];
  t.messages.push({ role: "user", content: [{ type: "text", text: "另一个标签页 — another tab 🙂" }] });
  t.updatedAt += 1000;
  localStorage.setItem(key, JSON.stringify(v));
}
"""

WINDOW_START = "() => { window.__window0 = performance.now(); window.__bridgeLog.length = 0; }"
WINDOW_END = """
async () => {
  await new Promise((r) => setTimeout(r, 600));  // the storage event and its handler
  const t0 = window.__window0;
  return { tasks: window.__longtasks.filter(([s, d]) => s + d >= t0), bridge: window.__bridgeLog.slice(),
           events: JSON.parse(window.agentbarBench.storageEvents()).filter((e) => e.start >= t0),
           gc: JSON.parse(window.agentbarBench.gcLog()).filter(([s]) => s >= t0) };
}
"""

JS_BASELINE = """
async (key) => {
  await new Promise((r) => setTimeout(r, 200));
  const original = localStorage.getItem(key);
  const obj = JSON.parse(original);
  const t = performance.now();
  const s = JSON.stringify(obj);
  localStorage.setItem(key, s);
  const ms = performance.now() - t;
  await new Promise((r) => setTimeout(r, 100));
  localStorage.setItem(key, original);  // the same string: for the app no other writer changed it
  return { ms, tasks: window.__longtasks.filter(([s0, d]) => s0 + d >= t) };
}
"""


def _gc_ms(collections: list, start: float, end: float) -> float:
    """Time spent in Python garbage collections between ``start`` and ``end``."""
    return sum(max(0.0, min(e, end) - max(s, start)) for s, e, _ in collections if e)


def _longest(tasks: list) -> float:
    return max((d for _, d in tasks), default=0.0)


def _turn_figures(rec: dict) -> dict:
    if "error" in rec:
        raise RuntimeError(f"turn failed: {rec}")
    finish = rec["finish"]
    writes = [b for b in rec["bridge"] if b[0] in ("set", "splice") and b[1] >= finish]
    in_js = sum(b[2] - b[1] for b in rec["bridge"] if b[1] >= finish and b[2] <= rec["end"])
    return {
        "longest_task_ms": _longest(rec["tasks"]),
        "tasks_over_50ms": len(rec["tasks"]),
        "stall_ms": rec["end"] - finish,
        "serialize_ms": rec["saveIn"] - finish,
        "store_save_ms": rec["saveOut"] - rec["saveIn"],
        "after_save_ms": rec["end"] - rec["saveOut"],
        "js_bridge_ms": in_js,
        "gc_ms": _gc_ms(rec["gc"], finish, rec["end"]),
        "write": ",".join(f"{b[0]}={b[3]}" if b[3] not in (None, "ok") else b[0] for b in writes) or "none",
    }


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def _sample(run, seed_value: str, i: int) -> dict:
    context = run.context()
    context.add_init_script(LONGTASKS)
    page = context.new_page()
    run.seed(page, {KEY: seed_value})
    goto_hooked(page, run.base + "index.html?" + urlencode({"course": CURRENT, "delay": 0, "bench": 1}))
    run.wait_ready(page)
    if page.evaluate("() => window.__longtasks === null"):
        raise RuntimeError("PerformanceObserver has no longtask entries in this browser")
    page.evaluate(BRIDGE_WRAP)
    out = {"first": _turn_figures(page.evaluate(TURN, data.mixed_line(i)))}
    out["steady"] = _turn_figures(page.evaluate(TURN, data.mixed_line(i + 1)))
    baseline = page.evaluate(JS_BASELINE, KEY)
    out["js_baseline_ms"] = baseline["ms"]
    out["js_baseline_longest_task_ms"] = _longest(baseline["tasks"])
    other = context.new_page()
    other.goto(run.base + "bench/pages/blank.html")
    page.evaluate(WINDOW_START)
    other.evaluate(OTHER_TAB_WRITE, KEY)
    event = page.evaluate(WINDOW_END)
    [handled] = event["events"] or [None]
    if handled is None:
        raise RuntimeError("the app page handled no storage event")
    out["storage_event"] = {
        "longest_task_ms": _longest(event["tasks"]), "tasks_over_50ms": len(event["tasks"]),
        "handler_ms": handled["end"] - handled["start"],
        "get_item_ms": handled.get("getOut", 0) - handled.get("getIn", 0),
        "reread_ms": handled["readOut"] - handled["start"],
        "after_reread_ms": handled["end"] - handled["readOut"],
        "gc_ms": _gc_ms(event["gc"], handled["start"], handled["end"]),
        "changed": handled.get("changed"),
    }
    out["after_other_tab"] = _turn_figures(page.evaluate(TURN, data.mixed_line(i + 2)))
    out["stored_utf16"] = page.evaluate("(key) => localStorage.getItem(key).length", KEY)
    context.close()
    return out


PATHS = ("first", "steady", "storage_event", "after_other_tab")


def run(run, *, quick: bool) -> dict:
    """Figures per path (median over fresh pages, and the worst), the JS baseline, and the goal."""
    n = 1 if quick else 5
    threads = data.others(49, 100)
    threads[CURRENT] = 100  # 50 courses × 50 turns; the course shown is the most recently updated
    seed_value = data.envelope(threads)
    samples = []
    for i in range(n):
        samples.append(_sample(run, seed_value, i))
        s = samples[-1]
        print("  firstsave sample {}/{}: longest task first {:.0f} ms ({}), steady {:.0f}, storage event {:.0f}, "
              "after other tab {:.0f} ms ({}); JS baseline {:.1f} ms".format(
                  i + 1, n, s["first"]["longest_task_ms"], s["first"]["write"], s["steady"]["longest_task_ms"],
                  s["storage_event"]["longest_task_ms"], s["after_other_tab"]["longest_task_ms"],
                  s["after_other_tab"]["write"], s["js_baseline_ms"]), flush=True)
    figures: dict = {"courses": len(threads), "messages_per_course": 100, "seed_utf16": data.utf16_len(seed_value),
                     "seed_chars": len(seed_value), "samples": samples, "paths": {}}
    for path in PATHS:
        rows = [s[path] for s in samples]
        fig = {"longest_task_ms_median": _median([r["longest_task_ms"] for r in rows]),
               "longest_task_ms_max": max(r["longest_task_ms"] for r in rows)}
        for key in ("stall_ms", "serialize_ms", "store_save_ms", "after_save_ms", "js_bridge_ms", "gc_ms",
                    "handler_ms", "get_item_ms", "reread_ms", "after_reread_ms"):
            if key in rows[0]:
                fig[f"{key}_median"] = _median([r[key] for r in rows])
        if "write" in rows[0]:
            fig["write"] = sorted({r["write"] for r in rows})
        figures["paths"][path] = fig
    figures["js_baseline_ms_median"] = _median([s["js_baseline_ms"] for s in samples])
    figures["js_baseline_longest_task_ms_max"] = max(s["js_baseline_longest_task_ms"] for s in samples)
    worst = max(figures["paths"][p]["longest_task_ms_max"] for p in PATHS if p != "steady")
    figures["goals"] = {
        "longest task in the first turn, the storage event and the turn after another tab (ms)": {
            "value": worst, "limit": LIMIT_MS, "pass": worst <= LIMIT_MS},
    }
    return figures


def report(figures: dict) -> None:
    """Print the table: per path, the longest task next to the JS baseline."""
    print(f"{figures['courses']} courses × {figures['messages_per_course']} messages stored "
          f"({figures['seed_chars']:,} chars, {figures['seed_utf16']:,} UTF-16 units); "
          f"{len(figures['samples'])} fresh page(s); longtask = task over 50 ms (0 = none)")
    base = figures["js_baseline_ms_median"]
    print(f"JS baseline (JSON.stringify + setItem of the same value, same page): {base:.1f} ms, "
          f"longest task {figures['js_baseline_longest_task_ms_max']:.0f} ms")
    print("| path | longest task ms (median / max) | ratio to JS baseline | callback ms | serialize | store.save "
          "(in JS bridge) | after save (render) | Python gc | write |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for path in PATHS:
        f = figures["paths"][path]
        ratio = f["longest_task_ms_max"] / base if base else float("nan")
        head = f"| {path} | {f['longest_task_ms_median']:.0f} / {f['longest_task_ms_max']:.0f} | {ratio:.2f} |"
        if "write" in f:
            print(f"{head} {f['stall_ms_median']:.1f} | {f['serialize_ms_median']:.1f} | {f['store_save_ms_median']:.1f} "
                  f"({f['js_bridge_ms_median']:.1f}) | {f['after_save_ms_median']:.1f} | {f['gc_ms_median']:.1f} | "
                  f"{', '.join(f['write'])} |")
        else:
            print(f"{head} handler {f['handler_ms_median']:.1f} | read into Python {f['get_item_ms_median']:.1f} | "
                  f"re-read {f['reread_ms_median']:.1f} | after {f['after_reread_ms_median']:.1f} | "
                  f"{f['gc_ms_median']:.1f} | — |")
    for name, g in figures["goals"].items():
        print(f"  {'PASS' if g['pass'] else 'FAIL'}  {name}: {g['value']:.0f} (limit {g['limit']})")
    print(json.dumps({"stored_utf16_after": figures["samples"][-1]["stored_utf16"]}))
