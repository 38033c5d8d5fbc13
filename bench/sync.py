"""Bench part ``sync`` (DESIGN.md §16): ``bash tools/dev.sh bench --only sync [--quick]``.

A ``pouchdb-server --in-memory`` (``tools/couchdb_server.py``) holds one database of N conversation
documents in the app's shape (``app.sync.documents.conversation_doc``; 10,000 × 10 turns, 200 with
``--quick``, which proves the part runs; ``BENCH_SYNC_N=2000``: that many; the texts of
``bench.history.SEED_JS``), written with ``_bulk_docs`` in batches. Then:

- **app**: a fresh browser context with the app, sync turned on to that database through the
  settings dialog (``sync-enabled``, ``sync-url``, ``sync-database``, ``settings-save``): the time
  from the save until IndexedDB's ``conversations`` holds all N, and the longest main-thread task
  meanwhile (the trace's, below, and the longtask observer's count: ``OBSERVER_JS``; with
  ``BENCH_SYNC_HEARTBEAT=1`` the heartbeat of ``bench.checkpoints.LONGTASKS`` too); history's count is
  watched in the page (``WATCH_JS``, every 50 ms), and the panel's ``sync-status`` changes are recorded
  there as they happen (``STATES_JS``), so "synced" is timed against "all in history" by the page's
  clock, whatever the benchmark did meanwhile (it stops and reads the trace before it looks);
- **baseline**: a plain page of the same origin (``bench/pages/blank.html`` with the vendored
  ``static/vendor/pouchdb/pouchdb.min.js``) replicating the same database with PouchDB alone into a
  local PouchDB: its time and longest task, in the same run;
- **timeline** (``BENCH_SYNC_TIMELINE=<file>``): each slice's take, held read and write, by the page's
  clock, written to that file (``TIMELINE_JS``);
- **storage**: ``navigator.storage.estimate().usage`` of the app's context after the sync, against a
  fresh context whose history holds the same conversations written without sync (``SEED_JS``, then the
  course's search index built by one search, as the app builds it on first search).

The app's and the baseline's runs are also traced (``bench.trace``): each main-thread task's thread
CPU time beside its wall time, since on a loaded machine the wall clock counts the time a task waits
for a core. The goal is judged on the wall clock, as a user meets it.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from datetime import datetime, timezone

from bench.checkpoints import LONGTASKS, STOP_PROBES
from bench.history import COURSE, SEED_JS, seeded_page
from bench.history_search import CLEAR_JS, SEARCH_JS
from bench.scripts import RUN_PY
from bench.trace import cpu, traced

GOALS = {"longtask_ms_max": 50}
DATABASE = "agentbar-bench"
BATCH = 500
BASE_MS = 1780000000000
ZH = ["我们今天讨论机器学习的基本概念", "梯度下降如何收敛", "请解释“注意力机制”", "这个场景需要重新生成", "数据集的划分方法"]
EN = ["How does backpropagation work?", "Explain the “bias–variance” trade-off 😀", "Regenerate scene two, please",
      "What is overfitting?", "Summarise the lecture", "Which learning rate should I pick?"]

# How many conversations the app's IndexedDB holds (a connection of its own, closed at once).
COUNT_JS = """async () => {
  const db = await new Promise((resolve, reject) => { const r = indexedDB.open('agentbar'); r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error); });
  try {
    if (!db.objectStoreNames.contains('conversations')) return 0;
    return await new Promise((resolve, reject) => { const q = db.transaction('conversations').objectStore('conversations').count(); q.onsuccess = () => resolve(q.result); q.onerror = () => reject(q.error); });
  } finally { db.close(); }
}"""

# PouchDB alone: replicate `remote` into a local PouchDB → [ms, docs written, local doc count].
BASELINE_JS = """async (remote) => {
  const local = new PouchDB('bench-baseline');
  const t0 = performance.now();
  const info = await PouchDB.replicate(remote, local, { batch_size: 100 });
  const ms = performance.now() - t0;
  const count = (await local.info()).doc_count;
  return [ms, info.docs_written, count];
}"""

# Every change of the panel's sync status, as it happens: [[performance.now(), data-state], …] in
# window.__syncStates (the first entry: the state when it was installed). Read once the wait is over,
# so the time the status turned `synced` is the page's, not the time the benchmark looked.
STATES_JS = """() => {
  const node = document.querySelector('[data-testid=sync-status]');
  const states = (window.__syncStates = [[performance.now(), node ? node.dataset.state : null]]);
  if (node) new MutationObserver(() => {
    if (states[states.length - 1][1] !== node.dataset.state) states.push([performance.now(), node.dataset.state]);
  }).observe(node, { attributes: true, attributeFilter: ['data-state'] });
}"""

# In the page: a count of the app's `conversations` every 50 ms (a connection of its own) until it
# reaches n; window.__allInHistory = [performance.now() when that count came back, count]. A count
# waits for the write transactions begun before it, so this is the end of the last one, give or take
# the interval.
WATCH_JS = """(n) => {
  window.__allInHistory = null;
  const r = indexedDB.open('agentbar');
  r.onsuccess = () => {
    const db = r.result;
    let busy = false;
    const timer = setInterval(() => {
      if (busy) return;
      busy = true;
      const q = db.transaction('conversations').objectStore('conversations').count();
      q.onsuccess = () => {
        busy = false;
        if (q.result >= n && !window.__allInHistory) {
          window.__allInHistory = [performance.now(), q.result];
          clearInterval(timer);
          db.close();
        }
      };
      q.onerror = () => { busy = false; };
    }, 50);
  };
}"""

# Each call of history's IndexedDB adapter (static/indexeddb.js) counted by name in
# window.__adapterCalls from now on: what the intake asks of IndexedDB (its writes, its reads of what
# is held, and the closed list's reads when it is drawn ahead).
CALLS_JS = """() => {
  const calls = (window.__adapterCalls = {});
  const adapter = window.agentbarIndexedDbAdapter;
  for (const name of Object.keys(adapter)) {
    const call = adapter[name];
    adapter[name] = function (...args) { calls[name] = (calls[name] || 0) + 1; return call.apply(this, args); };
  }
}"""

# Python in the app's page (``bench.scripts.RUN_PY``): time each asyncio step (``Handle._run``, the
# page's clock) and keep those over STEP_MS with the coroutine stack where the step ended (innermost
# last: the await it paused at), and each garbage collection's time; ``STEPS_READ`` reads them back.
STEP_MS = 20
STEPS_PY = """
import asyncio, gc, js, json
_now = js.performance.now
_steps, _gcs, _gc_at = [], [], [0.0]
_run = asyncio.events.Handle._run

def _where(handle):
    task = getattr(getattr(handle, "_callback", None), "__self__", None)
    coro = task.get_coro() if isinstance(task, asyncio.Task) else None
    names = []
    while coro is not None and len(names) < 12:
        frame = getattr(coro, "cr_frame", None)
        if frame is not None:
            names.append(f"{frame.f_code.co_qualname}:{frame.f_lineno}")
        coro = getattr(coro, "cr_await", None)
    return names or [repr(getattr(handle, "_callback", handle))[:80]]

def _timed(handle):
    t0 = _now()
    gcs = len(_gcs)
    try:
        return _run(handle)
    finally:
        ms = _now() - t0
        if ms > %(step_ms)s:
            _steps.append([round(ms, 1), round(t0), sum(g[1] for g in _gcs[gcs:]), _where(handle)])

def _gc(phase, info):
    if phase == "start":
        _gc_at[0] = _now()
    else:
        _gcs.append([info.get("generation"), round(_now() - _gc_at[0], 1)])

asyncio.events.Handle._run = _timed
gc.callbacks.append(_gc)
json.dumps(True)
""" % {"step_ms": STEP_MS}
STEPS_READ = "json.dumps({'steps': _steps, 'gcs': _gcs})"

# The longtask observer alone (bench.checkpoints.LONGTASKS without its heartbeat, whose MessageChannel
# ping-pong keeps the main thread busy all along: on two cores it takes one from the sync's worker and
# IndexedDB, and it was 1.9 million of the 10,000 run's traced tasks); STOP_PROBES reads it as before.
OBSERVER_JS = """() => {
  window.__longtasks = [];
  window.__beat = { max: 0, on: false };
  try {
    window.__longObserver = new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__longtasks.push(e.duration); });
    window.__longObserver.observe({ type: "longtask" });
  } catch (e) { window.__longObserver = { disconnect() {} }; }
}"""
HEARTBEAT = os.environ.get("BENCH_SYNC_HEARTBEAT") == "1"
"""``BENCH_SYNC_HEARTBEAT=1``: probe with the heartbeat too (the longest task is its longest gap), as
before 2026-12-05; else the longest task is the trace's longest main-thread task by wall clock."""


# With BENCH_SYNC_TIMELINE=<file>: a timeline of the pull in the app's page, window.__timeline, written
# to that file as {"t0": Save's page time, "t1": all in history, "timeline": [[name, began, ended, n?], …]}
# (page ms): each call of history's IndexedDB adapter (a slice's held read "bulkGet", its "write" until
# committed, the closed list's reads) and each take of the replication's waiting changes ("take", n: how
# many it handed over; "onChange": changes began to wait). What a slice spends where, and whether the
# worker or the intake waits for the other (a take that hands over fewer than a slice's worth).
TIMELINE_JS = """() => {
  const tl = (window.__timeline = []);
  const now = () => performance.now();
  const adapter = window.agentbarIndexedDbAdapter;
  for (const name of Object.keys(adapter)) {
    const call = adapter[name];
    adapter[name] = function (...args) {
      const t = now();
      const out = call.apply(this, args);
      if (out && out.then) out.then(() => tl.push([name, t, now()]), () => tl.push([name + "!", t, now()]));
      else tl.push([name, t, now()]);
      return out;
    };
  }
  let held;
  Object.defineProperty(window, "agentbarSync", { configurable: true, get: () => held, set: (v) => {
    const open = v.open;
    v.open = function (config, onChange, onStatus) {
      const r = open.call(this, config, () => { tl.push(["onChange", now(), now()]); onChange(); }, onStatus);
      const take = r.take.bind(r);
      r.take = (max, chars) => { const t = now(); return take(max, chars).then((text) => { tl.push(["take", t, now(), JSON.parse(text).length]); return text; }); };
      return r;
    };
    held = v;
  }});
}"""


def _longest(probes: dict, cpu_figures: dict) -> float:
    """The longest main-thread task (ms, wall clock): the heartbeat's longest gap, or the trace's."""
    if HEARTBEAT:
        return round(float(probes["gap"]), 1)
    return float(cpu_figures.get("longest_wall_ms") or max(probes["longtasks"], default=0.0))


# usage in bytes, and Chromium's split of it (indexedDB, caches: the service worker's copy of the app, …).
ESTIMATE_JS = "async () => { const e = await navigator.storage.estimate(); return [e.usage, e.usageDetails || {}]; }"


def documents(n: int, turns: int) -> list[dict]:
    """``n`` conversation documents of ``turns`` turns (``SEED_JS``'s texts), through the app's ``conversation_doc``."""
    from app.history.records import TaskMeta, TurnMeta
    from app.sync.documents import conversation_doc

    docs = []
    for i in range(n):
        task_id = "task_20260528_" + _base36(i).rjust(6, "0")
        messages, turn_list = [], []
        for t in range(turns):
            rare = " 关于量子纠缠 (Quantum entanglement) 的问题" if i % 50 == 7 and t == 1 else ""
            q = f"{ZH[(i + t) % 5]} {EN[(i * 3 + t) % len(EN)]} #{i}-{t}{rare}"
            a = f"{EN[(i + t + 1) % len(EN)]} —— {ZH[(i * 7 + t) % 5]}。回答 {t} of conversation {i}."
            messages.append({"role": "user", "id": f"u{i}-{t}", "content": [{"type": "text", "text": q}]})
            messages.append({"role": "assistant", "id": f"a{i}-{t}", "content": [{"type": "text", "text": a}]})
            stamp = datetime.fromtimestamp((BASE_MS + i * 60000 + t) / 1000, timezone.utc)
            turn_list.append(TurnMeta(turnId=t + 1, timestamp=stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                                      usage={"inputTokens": 10, "outputTokens": 20, "totalTokens": 30}, model="demo",
                                      duration=400, messageId=f"a{i}-{t}"))
        updated = BASE_MS + i * 60000
        meta = TaskMeta(taskId=task_id, taskName=messages[0]["content"][0]["text"][:50], stageId=COURSE, createdAt=updated,
                        updatedAt=updated, stats={"credits": 0, "totalTokens": 30 * turns, "inputTokens": 10 * turns,
                                                  "outputTokens": 20 * turns},
                        turnCount=turns, durationMs=400 * turns)
        docs.append(conversation_doc(meta, messages, turn_list))
    return docs


def _base36(i: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        i, r = divmod(i, 36)
        out = digits[r] + out
        if i == 0:
            return out


def _http(method: str, url: str, body=None) -> dict:
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as answer:
        return json.loads(answer.read().decode("utf-8"))


def fill(origin: str, docs: list[dict]) -> dict:
    """Create ``DATABASE`` and write ``docs`` with ``_bulk_docs`` in batches of ``BATCH``."""
    url = f"{origin}/{DATABASE}"
    _http("PUT", url)
    for start in range(0, len(docs), BATCH):
        answers = _http("POST", f"{url}/_bulk_docs", {"docs": docs[start:start + BATCH]})
        failed = [a for a in answers if not a.get("ok")]
        if failed:
            raise RuntimeError(f"_bulk_docs refused {len(failed)} documents, first: {failed[0]}")
    info = _http("GET", url)
    if info.get("doc_count") != len(docs):
        raise RuntimeError(f"{DATABASE} holds {info.get('doc_count')} documents, not {len(docs)}")
    return info


def _wait_count(page, n: int, timeout_s: float) -> tuple[float, int]:
    """Wait until ``WATCH_JS`` (installed before) saw ``n`` conversations → (page time, count)."""
    deadline = time.monotonic() + timeout_s
    while True:
        seen = page.evaluate("() => window.__allInHistory")
        if seen:
            return float(seen[0]), int(seen[1])
        if time.monotonic() > deadline:
            count = page.evaluate(COUNT_JS)
            state = page.evaluate("() => { const s = document.querySelector('[data-testid=sync-status]');"
                                  " return s && [s.dataset.state, s.dataset.reason || ''] }")
            raise RuntimeError(f"sync: {count} of {n} conversations in history after {timeout_s:.0f} s (sync-status {state})")
        time.sleep(0.5)


def fill_sync_settings(run, page, course: str, origin: str, database: str, history_timeout_ms: int) -> None:
    """Open ``course`` in ``page``, wait for ready and history, and fill the settings dialog with sync
    on against ``origin``/``database``, short of pressing Save (the caller times or counts from that)."""
    page.goto(f"{run.base}index.html?delay=0&course={course}")
    run.wait_ready(page)
    page.wait_for_function("() => document.documentElement.dataset.history === 'ready'", timeout=history_timeout_ms)
    page.click("[data-testid=settings-open]")
    page.check("[data-testid=sync-enabled]")
    page.fill("[data-testid=sync-url]", origin)
    page.fill("[data-testid=sync-database]", database)


def bench_app(run, origin: str, n: int, timeout_s: float) -> dict:
    context = run.context()
    page = context.new_page()
    fill_sync_settings(run, page, COURSE, origin, DATABASE, 60_000)
    page.evaluate(LONGTASKS if HEARTBEAT else OBSERVER_JS)
    page.evaluate(STATES_JS)
    page.evaluate(WATCH_JS, n)
    steps = os.environ.get("BENCH_SYNC_STEPS") == "1"
    if steps:
        page.evaluate(RUN_PY, STEPS_PY)
    traced(run, page, detail=n <= 1000)  # the detail of 10,000 would be gigabytes
    t0 = page.evaluate("() => performance.now()")
    page.evaluate(CALLS_JS)
    if os.environ.get("BENCH_SYNC_TIMELINE"):
        page.evaluate(TIMELINE_JS)
    page.click("[data-testid=settings-save]")
    t1, count = _wait_count(page, n, timeout_s)
    calls = page.evaluate("() => window.__adapterCalls")
    if os.environ.get("BENCH_SYNC_TIMELINE"):
        with open(os.environ["BENCH_SYNC_TIMELINE"], "w") as out:
            json.dump({"t0": t0, "t1": t1, "timeline": page.evaluate("() => window.__timeline")}, out)
    probes = page.evaluate(STOP_PROBES)
    cpu_figures = cpu(run)
    page.wait_for_function("() => { const s = document.querySelector('[data-testid=sync-status]'); return s && s.dataset.state === 'synced'; }",
                           timeout=int(timeout_s * 1000))
    states = page.evaluate("() => window.__syncStates")
    python_steps = json.loads(page.evaluate(RUN_PY, STEPS_READ)) if steps else None
    time.sleep(1.0)  # writes in flight settle before the estimate
    usage, details = page.evaluate(ESTIMATE_JS)
    context.close()
    return {"storage_usage_details": details, "ms_to_all_in_history": round(t1 - t0, 1),
            **synced_times(states, t0, t1),
            "conversations_in_history": count, "longest_task_ms": _longest(probes, cpu_figures), "heartbeat": HEARTBEAT,
            "longtask_entries": [round(d) for d in probes["longtasks"]],
            "longtask_count": len(probes["longtasks"]), "storage_usage_bytes": usage, "cpu": cpu_figures,
            "indexeddb_calls": calls,
            "python_steps": python_steps}


def synced_times(states: list, t0: float, t1: float) -> dict:
    """From ``STATES_JS``'s ``[[time, state], …]`` (page ms), Save at ``t0`` and history seen whole at
    ``t1`` (``WATCH_JS``: counted every 50 ms, so up to that late): when the status first said ``synced``, when it
    last turned ``synced`` (it stays so), and that last time minus ``t1`` (negative: the panel said
    ``synced`` before history held every conversation), all in ms from ``t0`` but the last one.

    >>> synced_times([[0, "off"], [5, "syncing"], [9, "synced"], [10, "syncing"], [30, "synced"]], 0, 20)
    {'ms_to_first_synced_status': 9, 'ms_to_synced_status': 30, 'ms_synced_after_all_in_history': 10, 'status_changes': 4}
    """
    after = [(at, state) for at, state in states[1:] if at >= t0]
    synced = [at for at, state in after if state == "synced"]
    last = next((at for at, state in reversed(after) if state != "synced"), None)
    settled = next((at for at in synced if last is None or at > last), None)
    return {"ms_to_first_synced_status": round(synced[0] - t0, 1) if synced else None,
            "ms_to_synced_status": round(settled - t0, 1) if settled is not None else None,
            "ms_synced_after_all_in_history": round(settled - t1, 1) if settled is not None else None,
            "status_changes": len(after)}


def bench_baseline(run, origin: str, n: int) -> dict:
    context = run.context()
    page = context.new_page()
    page.goto(f"{run.base}bench/pages/blank.html")
    page.add_script_tag(url=f"{run.base}static/vendor/pouchdb/pouchdb.min.js")
    page.evaluate(LONGTASKS if HEARTBEAT else OBSERVER_JS)
    traced(run, page)
    ms, written, count = page.evaluate(BASELINE_JS, f"{origin}/{DATABASE}")
    probes = page.evaluate(STOP_PROBES)
    cpu_figures = cpu(run)
    time.sleep(1.0)
    usage, details = page.evaluate(ESTIMATE_JS)
    context.close()
    if count != n:
        raise RuntimeError(f"sync baseline: PouchDB replicated {count} of {n} documents")
    return {"ms": round(ms, 1), "docs_written": written, "longest_task_ms": _longest(probes, cpu_figures),
            "longtask_count": len(probes["longtasks"]), "storage_usage_bytes": usage,
            "storage_usage_details": details, "cpu": cpu_figures}


def bench_history_only(run, n: int, turns: int) -> dict:
    """The same conversations in history without sync: ``SEED_JS`` and the course's index built by one
    search (``first_search``: its time to the drawn page and the trace's figures; the records a first
    sync writes wait for the index the same way, so it is also the first search after a pull)."""
    figures: dict = {}
    context = run.context()
    page = seeded_page(run, context, n, turns, figures)
    page.click("[data-testid=history-open]")
    page.wait_for_selector("[data-testid=history-drawer]:not([hidden])")
    page.evaluate(CLEAR_JS)
    traced(run, page)
    ms, hits, _, _ = page.evaluate(SEARCH_JS, ["entanglement", 900_000])
    if ms is None:
        raise RuntimeError("sync: the search that builds history's index did not draw")
    figures["first_search"] = {"ms": round(ms, 1), "hits": hits, "cpu": cpu(run)}
    time.sleep(1.0)
    figures["storage_usage_bytes"], figures["storage_usage_details"] = page.evaluate(ESTIMATE_JS)
    figures["conversations"] = page.evaluate(COUNT_JS)
    context.close()
    return figures


def run(run, *, quick: bool) -> dict:
    from tools import couchdb_server

    n, turns = (200, 10) if quick else (10_000, 10)
    n = int(os.environ.get("BENCH_SYNC_N") or n)
    timeout_s = 600.0 if quick else 3600.0
    figures: dict = {"conversations": n, "turns_each": turns}
    t0 = time.time()
    docs = documents(n, turns)
    figures["document_bytes_json"] = sum(len(json.dumps(d, ensure_ascii=False).encode("utf-8")) for d in docs)
    server = couchdb_server.start()
    try:
        fill(server.origin, docs)
        del docs
        figures["fill_s"] = round(time.time() - t0, 1)
        figures["baseline"] = bench_baseline(run, server.origin, n)
        print(f"  sync: PouchDB alone {figures['baseline']['ms']:.0f} ms", flush=True)
        figures["app"] = bench_app(run, server.origin, n, timeout_s)
        print(f"  sync: app {figures['app']['ms_to_all_in_history']:.0f} ms", flush=True)
    finally:
        server.stop()
    figures["history_only"] = bench_history_only(run, n, turns)
    app, base = figures["app"], figures["baseline"]
    figures["ratios"] = {
        "time_to_pouchdb_alone": app["ms_to_all_in_history"] / base["ms"] if base["ms"] else None,
        "storage_to_history_only": (app["storage_usage_bytes"] / figures["history_only"]["storage_usage_bytes"]
                                    if figures["history_only"]["storage_usage_bytes"] else None),
    }
    limit = GOALS["longtask_ms_max"]
    figures["goals"] = {
        f"no task > 50 ms during the initial sync of {n} conversations": {
            "value": app["longest_task_ms"], "limit": limit, "pass": app["longest_task_ms"] <= limit},
    }
    return figures


def report(figures: dict) -> None:
    """Print the sync table."""
    app, base, hist, r = figures["app"], figures["baseline"], figures["history_only"], figures["ratios"]
    print(f"\nInitial sync into an empty profile ({figures['conversations']:,} conversations × {figures['turns_each']} turns, "
          f"{figures['document_bytes_json'] / 1e6:.1f} MB of JSON on the server; filled in {figures['fill_s']} s):")
    print(f"  app: settings saved → all in history {app['ms_to_all_in_history']:,.0f} ms; longest main-thread task "
          f"{app['longest_task_ms']:.0f} ms, {app['longtask_count']} long tasks")
    print(f"  app: status synced (for good) at {app['ms_to_synced_status']:,.0f} ms, "
          f"{app['ms_synced_after_all_in_history']:+,.0f} ms from all in history (first synced at "
          f"{app['ms_to_first_synced_status']:,.0f} ms; {app['status_changes']} status changes)")
    if app.get("indexeddb_calls"):
        print("  app, calls of history's IndexedDB adapter meanwhile: "
              + ", ".join(f"{name} {count}" for name, count in sorted(app["indexeddb_calls"].items())))
    print(f"  PouchDB alone (plain page, replicate into a local PouchDB): {base['ms']:,.0f} ms; longest task "
          f"{base['longest_task_ms']:.0f} ms, {base['longtask_count']} long tasks")
    for label, x in (("app", app), ("PouchDB alone", base)):
        c = x.get("cpu") or {}
        if c.get("tasks"):
            print(f"  {label}, main-thread tasks by thread CPU (Chrome trace): longest {c['longest_cpu_ms']} ms of CPU "
                  f"({c['its_wall_ms']} ms wall); longest by wall {c['longest_wall_ms']} ms with {c['its_cpu_ms']} ms "
                  f"of CPU; over 50 ms: {c['over_50_wall']} by wall, {c['over_50_cpu']} by CPU")
    for task in (app.get("cpu") or {}).get("heaviest", [])[:5]:
        print(f"    app task {task['cpu_ms']} ms CPU ({task['wall_ms']} ms wall): "
              + "; ".join(f"{n} {w}/{c}" for n, w, c in task["parts"]))
    found = app.get("python_steps")
    if found:
        print(f"  app, Python steps over {STEP_MS} ms (BENCH_SYNC_STEPS=1): {len(found['steps'])}; collections "
              f"{len(found['gcs'])}, longest {max((g[1] for g in found['gcs']), default=0)} ms")
        for ms, _, gc_ms, where in sorted(found["steps"], reverse=True)[:8]:
            print(f"    {ms} ms (gc {gc_ms}): {' > '.join(where[-4:])}")
    for label, x in (("app", app), ("PouchDB alone", base)):
        if (x.get("cpu") or {}).get("cpu_ms_total") is not None:
            print(f"  {label}, main-thread CPU (all tasks, Chrome trace): {x['cpu']['cpu_ms_total'] / 1000:.2f} s")
    first = hist.get("first_search")
    if first:
        c = first.get("cpu") or {}
        print(f"  first search of the course, which indexes its {figures['conversations']:,} conversations: "
              f"{first['ms']:,.0f} ms to the drawn page ({first['hits']} hits); longest task {c.get('longest_cpu_ms')} ms "
              f"CPU ({c.get('its_wall_ms')} wall), over 50 ms: {c.get('over_50_wall')} by wall, "
              f"{c.get('over_50_cpu')} by CPU; main-thread CPU {(c.get('cpu_ms_total') or 0) / 1000:.2f} s")
    print(f"  ratio app / PouchDB alone: {r['time_to_pouchdb_alone']:.2f}")
    print(f"  storage (navigator.storage.estimate usage): app after sync {app['storage_usage_bytes'] / 1e6:.1f} MB, "
          f"history without sync (seeded, index built) {hist['storage_usage_bytes'] / 1e6:.1f} MB, ratio "
          f"{r['storage_to_history_only']:.2f}; PouchDB alone {base['storage_usage_bytes'] / 1e6:.1f} MB")
    for label, x in (("app after sync", app), ("history without sync", hist), ("PouchDB alone", base)):
        details = x.get("storage_usage_details") or {}
        if details:
            print(f"    {label}: " + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in sorted(details.items())))
