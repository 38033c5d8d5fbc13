"""Bench part ``firstpaint`` (DESIGN.md §13): ``bash tools/dev.sh bench --only firstpaint [--quick]``.

Interleaved rounds, each in fresh browser contexts (no HTTP cache, no service worker):

- **floor**: ``bench/pages/floor-pyodide.html`` (bare ``loadPyodide()`` + a pydantic model),
  navigation → ``html[data-ready]``, then a reload → ready;
- **app**: 20 courses × 50 turns in ``maic-agent-threads`` and the shown course's paint
  record in Cache Storage (made by ``app.paint.build_record``, as the app writes it),
  navigation → ``html[data-painted]`` (first paint) and → ``html[data-ready]``, then a
  reload → painted and ready.

- **plain**: the app as above but started without its interpreter snapshot (``?snapshot=off``),
  cold and reload → ready: what the snapshot (``tools/snapshot.py``) is worth, side by side.

Ratios: first paint / floor ready (goal ≤ 0.15), app ready / floor ready (≤ 1.05), app
reload / floor reload (≤ 0.8), each the median of per-round ratios.

``--quick``: one round; the archive's reload and the imports' measure go on in the app round's
context (the full run boots a context for each); the floor's loads are the start-up part's of the same
run when it ran (``Run.floor_loads``: the same page, navigation → ready in a fresh context, cold and
reload), not loaded again; the heartbeat watches ``QUICK_IDLE_S`` after ready
instead of ``IDLE_S``, the page without its snapshot is loaded cold only (no reload), and the imports
are timed in one pair instead of three.

**Phases** of the cold app load (medians, ms from navigation): resource timing of
``pyodide.asm.wasm`` (fetch), ``WebAssembly.instantiate*`` wrapped by the init script
(wasm compile + instantiate), PyScript's ``py:progress`` labels (interpreter, packages),
and the app's own marks (``app.browser.main``: our imports, hydrate, first render, ready,
after-ready work).

**Longest task from ready until idle**: a ``MessageChannel`` heartbeat from ready for
``IDLE_S`` seconds; its longest gap is the longest main-thread task. Measured on the
cold load, and on a reload of a context holding 1,000 archived conversations
(``bench.history.SEED_JS``) and 3,000 scene versions (``bench.checkpoints._seed_records``).
"""

from __future__ import annotations

import re
import statistics
import time
from pathlib import Path
from urllib.parse import urlencode

from bench import data

ROOT = Path(__file__).resolve().parent.parent
COURSE = "intro-ml"
GOALS = {"paint_ratio_max": 0.15, "ready_ratio_max": 1.05, "reload_ratio_max": 0.8, "longtask_ms_max": 50}
IDLE_S = 4.0
QUICK_IDLE_S = 1.5
"""``--quick``'s heartbeat window after ready (s): it proves the probe runs; the full run's ``IDLE_S``
gives the figure."""
APP = "index.html?" + urlencode({"course": COURSE, "delay": 0})
FLOOR = "bench/pages/floor-pyodide.html"

# Times of data-painted / data-ready, wasm instantiation, py:progress; the heartbeat starts at ready.
INIT = """
(() => {
  const t = { painted: null, ready: null, error: null, wasm: [], progress: [], gaps: [], long: [], markdown: [] };
  window.__fp = t;
  for (const name of ["instantiate", "instantiateStreaming", "compile", "compileStreaming"]) {
    const original = WebAssembly[name];
    if (!original) continue;
    WebAssembly[name] = function (...args) {
      const start = performance.now();
      const result = original.apply(this, args);
      Promise.resolve(result).then(() => t.wasm.push([name, start, performance.now()]), () => {});
      return result;
    };
  }
  addEventListener("py:progress", (e) => t.progress.push([String(e.detail), performance.now()]));
  const heartbeat = () => {
    const channel = new MessageChannel();
    let last = performance.now();
    const until = last + t.idleMs;
    channel.port1.onmessage = () => {
      const now = performance.now();
      t.gaps.push(now - last);
      if (now - last > 50) t.long.push([last, now]);
      last = now;
      if (now < until) channel.port2.postMessage(0); else t.idle = true;
    };
    channel.port2.postMessage(0);
  };
  const check = () => {
    const r = document.documentElement;
    if (!r) return;
    if (t.painted === null && r.dataset.painted === "true") t.painted = performance.now();
    if (t.ready === null && r.dataset.ready === "true") { t.ready = performance.now(); heartbeat(); }
    if (t.error === null && r.hasAttribute("data-error")) t.error = r.getAttribute("data-error");
    if (r.dataset.markdown && (!t.markdown.length || t.markdown[t.markdown.length - 1][0] !== r.dataset.markdown))
      t.markdown.push([r.dataset.markdown, performance.now()]);
  };
  new MutationObserver(check).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-painted", "data-ready", "data-error", "data-markdown"] });
})();
"""

PHASES_JS = """() => {
  const mark = (n) => { const e = performance.getEntriesByName(n); return e.length ? e[0].startTime : null; };
  const resources = performance.getEntriesByType("resource");
  const wasm = resources.find((e) => e.name.endsWith("pyodide.asm.wasm"));
  const snap = resources.find((e) => e.name.endsWith("snapshot.bin.gz"));
  const wheels = resources.filter((e) => e.name.split("?")[0].endsWith(".whl"));
  const t = window.__fp;
  const progress = Object.fromEntries(t.progress.map(([label, at]) => [label, at]));
  const inst = t.wasm.length ? t.wasm.reduce((a, b) => (b[2] - b[1] > a[2] - a[1] ? b : a)) : null;
  return { wheelStart: wheels.length ? Math.min(...wheels.map((e) => e.startTime)) : null,
           wheelEnd: wheels.length ? Math.max(...wheels.map((e) => e.responseEnd)) : null,
           wasmFetchStart: wasm ? wasm.startTime : null, wasmFetchEnd: wasm ? wasm.responseEnd : null,
           wasmCompileStart: inst ? inst[1] : null, wasmCompileEnd: inst ? inst[2] : null, progress,
           main: mark("agentbar:main"), imported: mark("agentbar:imported"), hydrated: mark("agentbar:hydrated"),
           rendered: mark("agentbar:rendered"), ready: mark("agentbar:ready"), afterReady: mark("agentbar:after-ready"),
           settings: mark("agentbar:settings"), painted: t.painted, long: t.long, markdown: t.markdown,
           snapshot: document.documentElement.dataset.snapshot || null,
           snapshotFetchStart: snap ? snap.startTime : null, snapshotFetchEnd: snap ? snap.responseEnd : null,
           inflated: mark("agentbar:snapshot-inflated"), restored: mark("agentbar:snapshot-restored"),
           packagesLoaded: mark("agentbar:packages-loaded") };
}"""

PUT_RECORD = """async ([url, text]) => {
  const cache = await caches.open("agentbar.paint");
  await cache.put(url, new Response(text, { headers: { "content-type": "application/json" } }));
}"""


def _ms(value) -> str:
    """``value`` ms as the report prints it, or ``—`` when it was not measured (``None``)."""
    return "—" if value is None else f"{value:.0f} ms"


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def paint_record(seed_updated_at: int) -> str:
    """The shown course's record as the app writes it (en-US, every shell label, the bar)."""
    from app.i18n import Translator
    from app.paint import build_record, encode_record
    from app.projection import deserialize_thread
    from tools.cldr_numbers import cldr_numbers

    t = Translator("en-US", cldr_numbers)
    keys = re.findall(r'data-i18n(?:-label|-title|-placeholder)?="([^"]+)"', (ROOT / "index.html").read_text())
    messages = deserialize_thread(data.thread_messages(COURSE, 100))
    return encode_record(build_record(COURSE, seed_updated_at, messages, t, locale="en-US", rtl=False,
                                      title="Introduction to Machine Learning", label_keys=keys,
                                      bar_summary=t("checkpoints.summaryNone")))


def _context(run, idle_s: float = IDLE_S):
    """A fresh context with the timing init script; its heartbeat runs ``idle_s`` seconds from ready."""
    context = run.browser.new_context()
    context.add_init_script(INIT.replace("t.idleMs", str(int(idle_s * 1000))))
    context.set_default_timeout(90_000)
    return context


def _wait(page, what: str) -> dict:
    page.wait_for_function(f"() => window.__fp && (window.__fp.{what} !== null || window.__fp.error !== null)",
                           polling=20, timeout=90_000)
    state = page.evaluate("() => window.__fp")
    if state.get("error"):
        raise RuntimeError(f"page failed to start ({page.url}): {state['error']}")
    return state


def _wait_idle(page) -> float:
    page.wait_for_function("() => window.__fp.idle === true", polling=100, timeout=90_000)
    gaps = page.evaluate("() => window.__fp.gaps")
    return max(gaps) if gaps else 0.0


def attribute(phases: dict) -> list[dict]:
    """Each task over 50 ms after ready (ms, end time) with the after-ready work running then."""
    md = dict(phases.get("markdown") or [])
    windows = [("paint record, history's modules, sync, settings dialog, Markdown start", phases.get("ready"),
                phases.get("settings")),
               ("history start (reconcile, stats, turn meta)", phases.get("settings"), phases.get("afterReady")),
               ("Markdown install (markdown-it-py load and import)", md.get("loading"), md.get("ready") or md.get("failed"))]
    out = []
    for start, end in phases.get("long") or []:
        during = [name for name, a, b in windows if a is not None and b is not None and start < b and end > a]
        out.append({"ms": round(end - start, 1), "at_ms": round(end), "during": during or ["other"]})
    return out


def _seed_app(run, page, seed: str, record: str) -> None:
    run.seed(page, {data.STORAGE_KEY: seed})
    page.evaluate(PUT_RECORD, [run.base + "paint/" + COURSE, record])


def _cold_and_reload(run, path: str, seeded: tuple[str, str] | None = None, reload: bool = True) -> dict:
    """``path`` in a fresh context (``seeded``: the app's ``(seed, record)`` put there first): navigation
    → ready, then a reload → ready (ms; ``reload`` false: the cold load alone, its reload ``None``).
    The floor's round, and the app's without its interpreter snapshot (``APP`` with ``&snapshot=off``)."""
    context = _context(run)
    page = context.new_page()
    if seeded is not None:
        _seed_app(run, page, *seeded)
    page.goto(run.base + path)
    cold = _wait(page, "ready")["ready"]
    again = None
    if reload:
        page.reload()
        again = _wait(page, "ready")["ready"]
    context.close()
    return {"cold": cold, "reload": again}


def _app_round(run, seed: str, record: str, keep: bool = False, idle_s: float = IDLE_S) -> dict:
    """The app's cold load and reload in a fresh context (``seed`` and ``record`` put there first), the
    longest task watched ``idle_s`` seconds from each ready; ``keep``: the context is left open, its page
    in the result's ``page`` (the quick run goes on in it)."""
    context = _context(run, idle_s)
    page = context.new_page()
    _seed_app(run, page, seed, record)
    page.goto(run.base + APP)
    state = _wait(page, "ready")
    longest = _wait_idle(page)
    phases = page.evaluate(PHASES_JS)
    page.reload()
    again = _wait(page, "ready")
    reload_longest = _wait_idle(page)
    reload_phases = page.evaluate(PHASES_JS)
    if not keep:
        context.close()
    return {"painted": state["painted"], "cold": state["ready"], "reload_painted": again["painted"],
            "reload": again["ready"], "longest_task_ms": longest, "reload_longest_task_ms": reload_longest,
            "long_tasks": attribute(phases), "reload_long_tasks": attribute(reload_phases),
            "phases": phases, "reload_phases": reload_phases, **({"page": page} if keep else {})}


def _phase_table(phases: list[dict]) -> list[dict]:
    """Median duration of each phase (ms) across the cold loads."""
    def span(p, a, b):
        return None if p.get(a) is None or p.get(b) is None else p[b] - p[a]

    def prog(p, label):
        return p["progress"].get(label)

    rows = []
    for name, get in [
        ("first paint (navigation → html[data-painted])", lambda p: p["painted"]),
        ("fetch: pyodide.asm.wasm (request → last byte)", lambda p: span(p, "wasmFetchStart", "wasmFetchEnd")),
        ("wasm compile + instantiate", lambda p: span(p, "wasmCompileStart", "wasmCompileEnd")),
        ("fetch: the wheels (first request → last byte; overlaps the two above)",
         lambda p: span(p, "wheelStart", "wheelEnd")),
        ("fetch: snapshot.bin.gz (request → last byte; asked for by static/boot.js)",
         lambda p: span(p, "snapshotFetchStart", "snapshotFetchEnd")),
        ("snapshot inflated (last byte → 31.5 MB inflated; inflating runs as it arrives, beside the wasm fetch)",
         lambda p: span(p, "snapshotFetchEnd", "inflated")),
        ("snapshot restored (inflated and wasm fetched → compiled, instantiated, memory restored)",
         lambda p: None if None in (p.get("inflated"), p.get("wasmFetchEnd"), p.get("restored"))
         else p["restored"] - max(p["inflated"], p["wasmFetchEnd"])),
        ("packages after the restore (pydantic and the app wheel fetched, unpacked, loaded)",
         lambda p: span(p, "restored", "packagesLoaded")),
        ("interpreter and packages (wasm instantiated → Loaded Pyodide: stdlib, unpacking the wheels)",
         lambda p: None if prog(p, "Loaded Pyodide") is None or p.get("wasmCompileEnd") is None
         else prog(p, "Loaded Pyodide") - p["wasmCompileEnd"]),
        ("PyScript set-up (Loaded Pyodide → our main())",
         lambda p: None if prog(p, "Loaded Pyodide") is None or p["main"] is None else p["main"] - prog(p, "Loaded Pyodide")),
        ("our imports", lambda p: span(p, "main", "imported")),
        ("hydrate (localStorage → threads)", lambda p: span(p, "imported", "hydrated")),
        ("first render (course, thread)", lambda p: span(p, "hydrated", "rendered")),
        ("render → ready (IndexedDB open, scene documents)", lambda p: span(p, "rendered", "ready")),
        ("after-ready work (history start, settings, Markdown install begun)", lambda p: span(p, "ready", "afterReady")),
        ("ready (navigation → html[data-ready])", lambda p: p["ready"]),
    ]:
        rows.append({"phase": name, "ms_median": _median([get(p) for p in phases])})
    return rows


def _archive_longest(run, seed: str, record: str, reloads: int, conversations: int = 1000,
                     versions_each: int = 50, page=None) -> dict:
    """Longest task after ready on reloads of a context holding ``conversations`` conversations and
    20 courses × 3 scenes × ``versions_each`` versions (1,000 and 3,000; ``--quick`` 200 and 600).
    ``page``: the app's page, ready and seeded as here, to go on in (the quick run's: no boot of its
    own); it is left open."""
    from bench.checkpoints import SEED_IDB, _seed_records
    from bench.history import SEED_JS

    versions = run.prepared(_seed_records, 20, 3, versions_each)
    context = None
    if page is None:
        context = _context(run)
        page = context.new_page()
        _seed_app(run, page, seed, record)
        page.goto(run.base + APP)
        _wait(page, "ready")
    conversations = page.evaluate(SEED_JS, [conversations, 10, COURSE])
    for table, rows in versions.items():
        for start in range(0, len(rows), 200):
            page.evaluate(SEED_IDB, [table, rows[start:start + 200]])
    out = []
    for _ in range(reloads):
        page.reload()
        _wait(page, "ready")
        out.append(_wait_idle(page))
    if context is not None:
        context.close()
    return {"conversations": conversations, "versions": len(versions["versions"]), "longest_task_ms": out}


# Imports every app module afresh (as at start-up), alternately from the wheel's precompiled
# bytecode and from source (the __pycache__ folders moved aside, no bytecode written): what the
# precompiled .pyc files save, paired in one page.
IMPORT_PY = """
import importlib, json, pathlib, sys, time, app
root = pathlib.Path(app.__file__).parent
names = sorted(m for m in sys.modules if m == "app" or m.startswith("app."))
caches = sorted(root.rglob("__pycache__"))
def reimport():
    for m in names:
        sys.modules.pop(m, None)
    importlib.invalidate_caches()
    t0 = time.perf_counter()
    for m in names:
        importlib.import_module(m)
    return (time.perf_counter() - t0) * 1000
def hide(on):
    for c in caches:
        a, b = (c, c.with_name(c.name + ".off")) if on else (c.with_name(c.name + ".off"), c)
        if a.exists():
            a.rename(b)
sys.dont_write_bytecode = True
out = {"pyc": [], "source": [], "modules": len(names), "pyc_files": sum(len(list(c.glob("*.pyc"))) for c in caches)}
for _ in range(PAIRS):
    hide(False); out["pyc"].append(reimport())
    hide(True); out["source"].append(reimport())
hide(False)
json.dumps(out)
"""


def import_cost(run, page=None, pairs: int = 3) -> dict:
    """Fresh imports of every app module from precompiled bytecode vs from source (ms, ``pairs`` pairs),
    in a page of its own, or in ``page`` (ready and idle: the quick run's, closed here)."""
    import json

    from bench.scripts import RUN_PY

    if page is None:
        context = _context(run)
        page = context.new_page()
        page.goto(run.base + APP)
        _wait(page, "ready")
        _wait_idle(page)
    else:
        context = page.context
    out = json.loads(page.evaluate(RUN_PY, IMPORT_PY.replace("PAIRS", str(int(pairs)))))
    context.close()
    out["ratio"] = _median(out["pyc"]) / _median(out["source"]) if out["source"] else None
    return out


QUICK_ARCHIVE = (1, 200, 10)
"""``--quick``'s archive: ``(reloads, conversations, versions per scene)``; the full run's is ``(3, 1000, 50)``."""


def prepare(run, *, quick: bool) -> None:
    """``--quick``: the archive's scene versions (``bench.checkpoints._seed_records``, tens of seconds of
    CPython on a loaded machine) made in the background while the earlier parts run (``Run.prepare``)."""
    if quick:
        from bench.checkpoints import _seed_records

        run.prepare(_seed_records, 20, 3, QUICK_ARCHIVE[2])


def run(run, *, quick: bool) -> dict:
    rounds = 1 if quick else 5
    threads = {**data.others(19), COURSE: 100}  # 20 courses × 50 turns
    seed = data.envelope(threads)
    record = paint_record(data.BASE_TIME + list(threads).index(COURSE))
    floor, app, plain = [], [], []
    # --quick: the floor as the start-up part measured it in this run (the same page, the same measure)
    shared_floor = list(getattr(run, "floor_loads", None) or [])[:rounds] if quick else []
    for i in range(rounds):
        for name in (("floor", "app", "plain") if i % 2 == 0 else ("plain", "app", "floor")):
            if name == "floor":
                floor.append(shared_floor[i] if i < len(shared_floor) else _cold_and_reload(run, FLOOR))
            elif name == "app":
                app.append(_app_round(run, seed, record, keep=quick, idle_s=QUICK_IDLE_S if quick else IDLE_S))
            else:  # --quick: its cold load alone (what the snapshot saves at start-up; the reload is the full run's)
                plain.append(_cold_and_reload(run, APP + "&snapshot=off", (seed, record), reload=not quick))
        print(f"  firstpaint round {i + 1}/{rounds}: floor {floor[-1]['cold']:.0f} ms, app painted "
              f"{app[-1]['painted']:.0f} ms, ready {app[-1]['cold']:.0f} ms, reload {app[-1]['reload']:.0f} ms "
              f"(floor {floor[-1]['reload']:.0f}); longest task after ready {app[-1]['longest_task_ms']:.0f} ms; "
              f"without the snapshot ready {plain[-1]['cold']:.0f} ms, reload {_ms(plain[-1]['reload'])}", flush=True)
    pair = lambda key_a, key_b: _median([a[key_a] / f[key_b] for a, f in zip(app, floor)])  # noqa: E731
    reloads, stored, versions_each = QUICK_ARCHIVE if quick else (3, 1000, 50)
    # --quick: the archive's reload and the imports go on in the app round's page (no boot of their own)
    shared = app[-1].pop("page", None)
    archive = _archive_longest(run, seed, record, reloads, stored, versions_each, page=shared)
    longest = max([a["longest_task_ms"] for a in app] + [a["reload_longest_task_ms"] for a in app])
    archive_longest = max(archive["longest_task_ms"])
    result = {
        "rounds": rounds, "stored_utf16": data.utf16_len(seed), "record_chars": len(record),
        "floor_from_startup_part": bool(shared_floor),
        "floor": floor, "app": [{k: v for k, v in a.items() if not k.endswith("phases")} for a in app],
        "floor_ready_ms_median": _median([f["cold"] for f in floor]),
        "floor_reload_ms_median": _median([f["reload"] for f in floor]),
        "painted_ms_median": _median([a["painted"] for a in app]),
        "ready_ms_median": _median([a["cold"] for a in app]),
        "reload_ms_median": _median([a["reload"] for a in app]),
        "reload_painted_ms_median": _median([a["reload_painted"] for a in app]),
        "paint_ratio": pair("painted", "cold"), "ready_ratio": pair("cold", "cold"),
        "reload_ratio": pair("reload", "reload"), "reload_paint_ratio": pair("reload_painted", "reload"),
        "plain": plain, "plain_ready_ms_median": _median([p["cold"] for p in plain]),
        "plain_reload_ms_median": _median([p["reload"] for p in plain]),
        "plain_ready_ratio": _median([p["cold"] / f["cold"] for p, f in zip(plain, floor)]),
        "plain_reload_ratio": _median([p["reload"] / f["reload"] for p, f in zip(plain, floor) if p["reload"] is not None]),
        "snapshot_used": sorted({a["phases"].get("snapshot") or "none" for a in app}),
        "phases": _phase_table([a["phases"] for a in app]),
        "reload_phases": _phase_table([a["reload_phases"] for a in app]),
        "longest_task_ms": longest, "archive": archive, "imports": import_cost(run, page=shared, pairs=1 if quick else 3),
        "idle_s": QUICK_IDLE_S if quick else IDLE_S,
    }
    result["goals"] = {
        "first paint / floor ready": {"value": result["paint_ratio"], "limit": GOALS["paint_ratio_max"],
                                      "pass": result["paint_ratio"] <= GOALS["paint_ratio_max"]},
        "ready / floor ready": {"value": result["ready_ratio"], "limit": GOALS["ready_ratio_max"],
                                "pass": result["ready_ratio"] <= GOALS["ready_ratio_max"]},
        "reload / floor reload": {"value": result["reload_ratio"], "limit": GOALS["reload_ratio_max"],
                                  "pass": result["reload_ratio"] <= GOALS["reload_ratio_max"]},
        "longest task ready → idle (ms)": {"value": float(longest), "limit": GOALS["longtask_ms_max"],
                                           "pass": longest <= GOALS["longtask_ms_max"]},
        f"longest task ready → idle, {stored:,} conversations + {60 * versions_each:,} versions (ms)": {
            "value": float(archive_longest), "limit": GOALS["longtask_ms_max"],
            "pass": archive_longest <= GOALS["longtask_ms_max"]},
    }
    return result


def report(f: dict) -> None:
    print(f"\nFirst paint and start-up (20 courses × 50 turns stored, {f['rounds']} interleaved rounds, "
          "fresh contexts; ratios are medians of per-round ratios)")
    print(f"  {'measure':<44}{'AgentBar':>12}{'floor':>12}{'ratio':>8}")
    rows = [("first paint (→ html[data-painted])", f["painted_ms_median"], f["floor_ready_ms_median"], f["paint_ratio"]),
            ("ready (→ html[data-ready])", f["ready_ms_median"], f["floor_ready_ms_median"], f["ready_ratio"]),
            ("reload → ready", f["reload_ms_median"], f["floor_reload_ms_median"], f["reload_ratio"]),
            ("reload → painted", f["reload_painted_ms_median"], f["floor_reload_ms_median"], f["reload_paint_ratio"])]
    if f.get("plain"):
        rows += [("without the snapshot (?snapshot=off): ready", f["plain_ready_ms_median"], f["floor_ready_ms_median"],
                  f["plain_ready_ratio"]),
                 ("without the snapshot: reload → ready", f["plain_reload_ms_median"], f["floor_reload_ms_median"],
                  f["plain_reload_ratio"])]
    for name, a, b, r in rows:
        if a is None or r is None:  # --quick: the page without its snapshot is not reloaded
            print(f"  {name:<44}{'—':>13}{b:>9.0f} ms{'—':>8}")
            continue
        print(f"  {name:<44}{a:>10.0f} ms{b:>9.0f} ms{r:>8.3f}")
    print(f"  interpreter snapshot (html[data-snapshot]) on the app's loads: {', '.join(f.get('snapshot_used') or [])}")
    if f.get("floor_from_startup_part"):
        print("  (--quick: the floor's loads are the start-up part's in this run, not loaded again)")
    print(f"  phases (medians, ms){'':<60}{'cold':>8}{'reload':>8}")
    for row, again in zip(f["phases"], f["reload_phases"]):
        cells = ["—" if r["ms_median"] is None else f"{r['ms_median']:.0f}" for r in (row, again)]
        print(f"    {row['phase']:<78}{cells[0]:>8}{cells[1]:>8}")
    tasks = sorted((t for a in f["app"] for t in a["long_tasks"] + a["reload_long_tasks"]), key=lambda t: -t["ms"])
    if tasks:
        print("  tasks over 50 ms after ready (longest first): " + "; ".join(
            f"{t['ms']:.0f} ms during {' + '.join(t['during'])}" for t in tasks[:6]))
    c = f["imports"]
    print(f"  importing all {c['modules']} app modules afresh, in one page: from the wheel's {c['pyc_files']} .pyc "
          + ", ".join(f"{x:.0f}" for x in c["pyc"]) + " ms; from source " + ", ".join(f"{x:.0f}" for x in c["source"])
          + f" ms (ratio {c['ratio']:.2f})")
    a = f["archive"]
    print(f"  longest main-thread task, ready → idle ({f.get('idle_s', IDLE_S):g} s): {f['longest_task_ms']:.0f} ms; with "
          f"{a['conversations']} conversations and {a['versions']} versions stored: "
          + ", ".join(f"{x:.0f}" for x in a["longest_task_ms"]) + " ms")
