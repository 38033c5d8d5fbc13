"""Bench part ``turncost`` (DESIGN.md §9, §14, §16): ``bash tools/dev.sh bench --only turncost [--quick]``.

What one finished turn costs with sync on, in a real page (Chromium, Pyodide) whose course
``intro-ml`` holds a conversation of 1,000 turns (``LONG_TURNS``; ``bench.data.thread_messages``,
in ``maic-agent-threads``, adopted into history at start-up) and course ``linear-algebra`` one of 10
(``SHORT_TURNS``, the baseline, in the same page and run). Sync is turned on to an empty database of a
``pouchdb-server --in-memory`` (``tools/couchdb_server.py``) through the settings dialog, and the page
waits until it says ``synced``. Then, alternately on each course, one question is sent (the demo
agent answers at once) and the page counts, from the send until the turn's history write ended and
sync said ``synced`` again (``SETTLE_MS`` later):

- **encodes**: JSON encodes of the conversation on the page's main thread: Python's ``json.dumps``
  (every app encode goes through it: ``app.store.jsjson``, ``app.json_steps``, sync's documents) and
  JavaScript's ``JSON.stringify`` (the adapter's reads cross as JSON text) whose text holds the
  conversation's first message (its id, ``"u-<course>-0"``) and a message's ``"role"``: its messages
  as a whole, read or written, not the search text nor the new turn alone;
- **reads**: IndexedDB reads, the calls of the app's adapter (``agentbarIndexedDbAdapter``: ``get``, ``getAll``,
  ``bulkGet``, ``query``, ``queryCount``, ``count``, ``keys``, ``primaryKeys``, ``scan``), once the
  course shown before the turn went ``QUIET_MS`` without one (showing a course reads too);
- **write**: the history write's time, ``TurnWrites.record_turn`` from its call to its return
  (page clock, ms), on the 1,000-turn conversation against the 10-turn one (ratio of medians), with
  its parts: the read (``HistoryRepository.for_turn``), the records built (``Writes.keep_in_steps``)
  and the transaction (``HistoryRepository.commit``: encoding, crossing, storing).

The counters are put in by the benchmark (``COUNT_JS``, ``COUNT_PY`` through ``bench.scripts.RUN_PY``):
the app ships none of them. The sync worker's own encodes (a Worker) are not counted.
Each course gets ``ROUNDS`` turns, alternately (``QUICK_ROUNDS`` with ``--quick``, which records no
Chrome trace; the full run traces each turn: ``bench.trace.print_cpu``); a course's first turn in the
page is printed apart, the goals are judged on the turns after it.

``BENCH_TURNCOST_SPLIT=1``: after the turns, the transaction of each course's last turn is split by
replaying its ops in the same page (``bench.turnsplit``: encoding, crossing, parsing, each record).
"""

from __future__ import annotations

import json
import statistics
import time

from bench import turnsplit
from bench.scripts import RUN_PY
from bench.sync import fill_sync_settings
from bench.trace import cpu, print_cpu, traced

GOALS = {"encodes_max": 3, "reads_max": 1, "write_ratio_max": 1.5}
LONG_COURSE, SHORT_COURSE = "intro-ml", "linear-algebra"
LONG_TURNS, SHORT_TURNS = 1000, 10
ROUNDS = 4
QUICK_ROUNDS = 2
"""Rounds of one turn on each course: the first is the course's first turn in the page (what history
holds is read whole); the goals are judged on the rounds after it (the steady turn of a conversation)."""
DATABASE = "agentbar-turncost"
SETTLE_MS = 400
"""After the turn's write and ``synced``, how long the page stays quiet before the counts are read (ms)."""

# The page's IndexedDB reads and JSON.stringify of the conversation, counted while window.__turnCount.on.
COUNT_JS = """() => {
  if (window.__turnCount) return;
  const c = (window.__turnCount = { on: false, marker: '', reads: {}, encodes: [], readers: [], parts: [] });
  const adapter = window.agentbarIndexedDbAdapter;
  for (const name of ['get', 'getAll', 'bulkGet', 'query', 'queryCount', 'count', 'keys', 'primaryKeys', 'scan']) {
    const f = adapter[name];
    adapter[name] = function (...args) {
      const what = name + (typeof args[0] === 'string' ? ' ' + args[0] : '');
      c.lastRead = performance.now();
      if (c.on) c.reads[what] = (c.reads[what] || 0) + 1;
      return f.apply(this, args);
    };
  }
  const stringify = JSON.stringify;
  JSON.stringify = function (...args) {
    const text = stringify.apply(this, args);
    if (c.on && typeof text === 'string' && c.marker && text.includes(c.marker) && text.includes('"role"'))
      c.encodes.push('JSON.stringify ' + text.length);
    return text;
  };
}"""

# Python's json.dumps of the conversation, and TurnWrites.record_turn's time, while window.__turnCount.on.
COUNT_PY = """
import json, js, traceback
from app.history import turn_writes as _turn_writes

if not hasattr(json, "_bench_dumps"):
    json._bench_dumps = json.dumps
    def _dumps(*args, **kw):
        text = json._bench_dumps(*args, **kw)
        c = js.window.__turnCount
        if c.on and c.marker and c.marker in text and '"role"' in text:
            where = [f"{f.filename.rsplit('/app/', 1)[-1]}:{f.name}" for f in traceback.extract_stack(limit=4)[:-1]]
            c.encodes.push("json.dumps " + str(len(text)) + " " + " < ".join(reversed(where)))
        return text
    json.dumps = _dumps
    _record_turn = _turn_writes.TurnWrites.record_turn
    async def _timed(self, *args, **kw):
        began = js.performance.now()
        try:
            return await _record_turn(self, *args, **kw)
        finally:
            js.window.__turnWrites.push(js.performance.now() - began)
    _turn_writes.TurnWrites.record_turn = _timed
    from app.history import repository as _repository
    def _spent(owner, name, label):
        inner = getattr(owner, name, None)
        if inner is None:  # an app without that step
            return
        async def timed(*args, **kw):
            began = js.performance.now()
            try:
                return await inner(*args, **kw)
            finally:
                if js.window.__turnCount.on:
                    js.window.__turnCount.parts.push(js.Array.of(label, js.performance.now() - began))
        setattr(owner, name, timed)
    _spent(_repository.HistoryRepository, "for_turn", "read (for_turn)")
    _spent(_repository.Writes, "keep_in_steps", "records built (keep_in_steps)")
    _spent(_repository.HistoryRepository, "commit", "transaction (commit)")
    from app.browser import indexeddb as _idb
    _call = _idb.IndexedDbBackend._call
    def _where_call(self, method, *args):
        c = js.window.__turnCount
        if c.on and method not in ("write", "open", "persist"):
            frames = [f for f in traceback.extract_stack()[:-1] if "/app/" in f.filename][-4:]
            c.readers.push(method + " " + " < ".join(f"{f.filename.rsplit('/app/', 1)[-1]}:{f.name}" for f in reversed(frames)))
        return _call(self, method, *args)
    _idb.IndexedDbBackend._call = _where_call
js.window.__turnWrites = js.Array.new()
json.dumps(True)
"""

# Send `text` on the shown course; resolves [write ms, reads {name: n}, encodes [...]] once history's write
# of the turn ended and the sync status said synced SETTLE_MS ago.
TURN_JS = """async ([text, settleMs, marker]) => {
  const c = window.__turnCount;
  const status = () => document.querySelector('[data-testid=sync-status]').dataset.state;
  const writes = window.__turnWrites.length;
  c.marker = marker; c.reads = {}; c.encodes = []; c.readers = []; c.parts = []; c.on = true;
  document.querySelector('[data-testid=agent-input]').value = text;
  document.querySelector('[data-testid=agent-input]').dispatchEvent(new Event('input', { bubbles: true }));
  document.querySelector('[data-testid=agent-send]').click();
  const deadline = performance.now() + 120000;
  let quietSince = null;
  while (performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 25));
    const done = window.__turnWrites.length > writes && status() === 'synced';
    if (!done) { quietSince = null; continue; }
    if (quietSince === null) quietSince = performance.now();
    if (performance.now() - quietSince >= settleMs) break;
  }
  c.on = false;
  return [window.__turnWrites.length > writes ? window.__turnWrites[writes] : null, c.reads, c.encodes, status(), c.readers, c.parts];
}"""


def _seed(long_turns: int, short_turns: int) -> str:
    from bench import data

    return data.envelope({SHORT_COURSE: 2 * short_turns, LONG_COURSE: 2 * long_turns})


QUIET_MS = 1200
"""After a course is shown, how long the page goes without an IndexedDB read before its turn is counted
(ms; over ``app.browser.tasks.IDLE_TIMEOUT_MS``): the reads of showing the course (its stats, the
history list drawn ahead for it in idle time, its checkpoints) are the switch's, not the turn's."""


def _show(page, course: str) -> None:
    page.evaluate("() => { window.__turnCount.lastRead = performance.now(); }")
    page.select_option("[data-testid=course-select]", course)
    page.wait_for_function("c => new URLSearchParams(location.search).get('course') === c", arg=course)
    page.wait_for_function("q => performance.now() - window.__turnCount.lastRead >= q", arg=QUIET_MS, polling=100,
                           timeout=60_000)


def run(run, *, quick: bool) -> dict:
    from bench.sync import _http
    from tools import couchdb_server

    rounds = QUICK_ROUNDS if quick else ROUNDS
    figures: dict = {"long_turns": LONG_TURNS, "short_turns": SHORT_TURNS, "rounds": rounds, "turns": []}
    server = couchdb_server.start()
    try:
        _http("PUT", f"{server.origin}/{DATABASE}")
        context = run.context()
        page = context.new_page()
        run.seed(page, {"maic-agent-threads": _seed(LONG_TURNS, SHORT_TURNS)})
        t0 = time.monotonic()
        fill_sync_settings(run, page, LONG_COURSE, server.origin, DATABASE, 120_000)
        page.click("[data-testid=settings-save]")
        page.wait_for_function("() => document.querySelector('[data-testid=sync-status]').dataset.state === 'synced'",
                               timeout=300_000)
        figures["boot_and_first_sync_s"] = round(time.monotonic() - t0, 1)
        page.evaluate(COUNT_JS)
        page.evaluate(RUN_PY, COUNT_PY)
        split = turnsplit.wanted()
        if split:
            turnsplit.install(page)
        for i in range(rounds):
            for course in (LONG_COURSE, SHORT_COURSE):
                _show(page, course)
                if not quick:  # a trace's recording and reading cost seconds: the full run only
                    traced(run, page)
                ms, reads, encodes, state, readers, parts = page.evaluate(TURN_JS, [f"turncost{i}{course[:3]}q 关于“过拟合”的问题 😀", SETTLE_MS,
                                                                          json.dumps(f"u-{course}-0")])
                trace = None if quick else cpu(run)
                if ms is None:
                    raise RuntimeError(f"turncost: the turn on {course} was not written to history (sync {state})")
                if split:
                    turnsplit.keep(page, course)
                figures["turns"].append({"course": course, "round": i, "write_ms": round(ms, 1),
                                         "reads": reads, "readers": readers, "encodes": encodes,
                                         "parts": [[name, round(ms, 1)] for name, ms in parts],
                                         "cpu": trace})
        if split:
            figures["split"] = turnsplit.measure(run, page, LONG_COURSE, SHORT_COURSE, LONG_TURNS, SHORT_TURNS,
                                                  reps=turnsplit.QUICK_REPS if quick else turnsplit.REPS)
        context.close()
    finally:
        server.stop()
    return _judged(figures)


def _judged(figures: dict) -> dict:
    """``figures`` with the medians of the steady turns and the goals judged on them."""
    steady = [t for t in figures["turns"] if t["round"] > 0]
    long = [t for t in steady if t["course"] == LONG_COURSE]
    short = [t for t in steady if t["course"] == SHORT_COURSE]
    long_ms = statistics.median(t["write_ms"] for t in long)
    short_ms = statistics.median(t["write_ms"] for t in short)
    encodes = max(len(t["encodes"]) for t in steady)
    reads = max(sum(t["reads"].values()) for t in steady)
    ratio = long_ms / short_ms if short_ms else None
    figures.update(write_ms_long=long_ms, write_ms_short=short_ms, write_ratio=ratio, encodes_max=encodes,
                   reads_max=reads)
    figures["goals"] = {
        "JSON encodes of the conversation per turn": {"value": encodes, "limit": GOALS["encodes_max"],
                                                      "pass": encodes <= GOALS["encodes_max"]},
        "IndexedDB reads per turn": {"value": reads, "limit": GOALS["reads_max"], "pass": reads <= GOALS["reads_max"]},
        f"history write {LONG_TURNS} turns / {SHORT_TURNS} turns": {
            "value": ratio, "limit": GOALS["write_ratio_max"],
            "pass": ratio is not None and ratio <= GOALS["write_ratio_max"]},
    }
    return figures


def report(figures: dict) -> None:
    """Print the turn-cost table and its goals."""
    print(f"\nOne finished turn with sync on ({figures['long_turns']:,}-turn conversation against a "
          f"{figures['short_turns']}-turn one, {figures['rounds']} round(s); boot and first sync "
          f"{figures.get('boot_and_first_sync_s')} s):")
    for t in figures["turns"]:
        reads = ", ".join(f"{k} ×{v}" for k, v in sorted(t["reads"].items()))
        held = figures["long_turns"] if t["course"] == LONG_COURSE else figures["short_turns"]
        cold = " (its first turn in the page)" if t.get("round") == 0 else ""
        print(f"  {t['course']} ({held:,}-turn conversation){cold}: history write {t['write_ms']:.1f} ms; "
              f"{len(t['encodes'])} encodes, {sum(t['reads'].values())} reads ({reads})")
        if t.get("parts"):
            print("    history write's parts (ms, page clock): " + "; ".join(f"{n} {ms}" for n, ms in t["parts"]))
        for e in t["encodes"]:
            print(f"    encode: {e}")
        for r in t.get("readers", []):
            print(f"    read: {r}")
        print_cpu(t.get("cpu"), "the turn", indent="    ", heaviest=2)
    ratio = figures["write_ratio"]
    print("  goals judged on the turns after each course's first in the page (medians; most encodes and reads):")
    print(f"  history write: {figures['write_ms_long']:.1f} ms ({figures['long_turns']:,} turns) / "
          f"{figures['write_ms_short']:.1f} ms ({figures['short_turns']} turns) = "
          f"{'n/a' if ratio is None else f'{ratio:.2f}'}")
    for name, g in figures["goals"].items():
        value = g["value"]
        shown = f"{value:.2f}" if isinstance(value, float) else str(value)
        print(f"  {'PASS' if g['pass'] else 'FAIL'}  {name}: {shown} (limit {g['limit']})")
    if figures.get("split"):
        turnsplit.report(figures["split"])
