"""Where a turn's history transaction spends its time (DESIGN.md §9, §14): an option of bench part
``turncost``, ``BENCH_TURNCOST_SPLIT=1 bash tools/dev.sh bench --only turncost [--quick]``.

After turncost's turns, in the same page (Chromium, Pyodide; the 1,000-turn course ``intro-ml`` and
the 10-turn ``linear-algebra``), the ops of each course's last turn write
(``HistoryRepository.commit``'s ``writes.ops``, captured by ``CAPTURE_PY`` through
``bench.scripts.RUN_PY``) are replayed through a backend of the page (``IndexedDbBackend``, the
page's one connection), ``REPS`` times each (``QUICK_REPS`` with ``--quick``), the courses and
variants interleaved and the variants in another order in every repetition (``MEASURE_PY``):

- the backend's preparation alone, nothing written: the long strings lifted out
  (``lift_long_texts``, and its walk of each record's op alone) and copied to JavaScript (``_js_texts``), the JSON encoding as the backend
  does it (``dumps_in_steps``, pausing with ``next_task``) and in one ``json.dumps`` for
  comparison, the UTF-8 copy to JavaScript (``_bytes``), then the payload handed to a JavaScript
  function that decodes and parses it as ``static/indexeddb.js`` does (crossing + parse, timed from
  Python; parse alone, timed in JavaScript);
- whole writes (``VARIANTS``): the turn's ops with every posting key of the ``search`` record moved
  (a new time in each, as a turn moves them: ``app.history.terms.posting_keys``) and with the keys
  stored (unchanged); without each of ``RECORDS``; each record alone; timed from Python (the
  backend's ``write``) and in JavaScript (the adapter's ``write``, from its call to its answer:
  parse, Dexie, the transaction's completion);
- sizes: each op's JSON length, its strings long enough to be lifted, the posting keys.

Each measure is a window of the page clock; under a Chrome trace of the replays, each window also
gets the thread CPU of the page's main thread and of the browser's storage threads in it
(``window_cpu``): on a machine loaded by other work the wall clock of a write swings several-fold
between repetitions, its thread CPU much less. A replay puts records the turn just wrote
(``replayable``), or the same with posting keys of another time; at the end each course's ops are
written once more, so the page holds what its turn wrote. Only the benchmark's page does this: the
app ships none of it. Medians in ms and the ratio 1,000 turns ÷ 10 turns: ``summarise``, printed
by ``report``.

The functions ``moved_terms``, ``variant``, ``replayable``, ``search_terms`` and ``sizes`` are pure:
CPython tests them, and their source is sent to the page (``page_source``), so both run the same code.
"""

from __future__ import annotations

import inspect
import json
import os
import statistics
from pathlib import Path

from app.history.terms import time_hex
from app.json_steps import LIFT_CHARS, lift_long_texts

SPLIT_ENV = "BENCH_TURNCOST_SPLIT"
REPS, QUICK_REPS = 9, 5
"""Replays of each variant on each course (medians of these), in the full run and with ``--quick``."""
RECORDS = ("messages", "turns", "search", "texts")
"""The records a turn rewrites whole (``app.history.repository.Writes._keep``) beside its meta."""
UNCHANGED = ", postings unchanged"
VARIANTS = ("whole", "whole" + UNCHANGED, *(f"without {t}" for t in RECORDS), *(f"{t} alone" for t in RECORDS),
            "search alone" + UNCHANGED)
"""Write variants of a captured turn (``variant``); postings move in each unless it says unchanged."""


def wanted() -> bool:
    """True when the environment asks turncost for the split (``BENCH_TURNCOST_SPLIT=1``)."""
    return os.environ.get(SPLIT_ENV) == "1"


def moved_terms(terms: list[str], updated_at: int) -> list[str]:
    """A ``search`` record's ``terms`` (``posting_keys``: the presence key, then a posting key per term,
    each ending ``<time_hex>\\0<task id>``) with each key's time made ``updated_at`` (epoch ms):
    the keys a record of the same terms written at ``updated_at`` holds."""
    digits = len(time_hex(0))
    moved = []
    for key in terms:
        head, nul, task_id = key.rpartition("\0")
        moved.append(head[:-digits] + time_hex(updated_at) + nul + task_id)
    return moved


def variant(ops: list, name: str, *, moved_at: int, held_terms: list[str] | None) -> list:
    """The write ops of variant ``name`` (one of ``VARIANTS``) of a turn's ``ops`` (``WriteOp``s):
    ``whole`` every op; ``without <table>`` all but that table's put; ``<table> alone`` that put only.
    The ``search`` put keeps its record but for ``terms``: moved to ``moved_at`` (``moved_terms``), or
    ``held_terms`` (the keys stored now) when the name ends ``UNCHANGED``. ``ValueError`` for an
    unknown name."""
    base, unchanged = (name[:-len(UNCHANGED)], True) if name.endswith(UNCHANGED) else (name, False)
    if base == "whole":
        def keep(op): return True
    elif base.startswith("without ") and base[8:] in RECORDS:
        def keep(op): return not (op[0] == "put" and op[1] == base[8:])
    elif base.endswith(" alone") and base[:-6] in RECORDS:
        def keep(op): return op[0] == "put" and op[1] == base[:-6]
    else:
        raise ValueError(f"unknown variant {name!r}")
    out = []
    for kind, table, value in ops:
        if not keep((kind, table)):
            continue
        if kind == "put" and table == "search" and isinstance(value.get("terms"), list):
            terms = list(held_terms) if unchanged and held_terms is not None else moved_terms(value["terms"], moved_at)
            value = {**value, "terms": terms}
        out.append((kind, table, value))
    return out


def replayable(ops: list) -> list:
    """A turn's ``ops`` as they can be written again once written: an ``add`` becomes a ``put`` (the key
    exists now), and an ``expect`` (the meta as read before the turn, DESIGN.md §9) expects the
    values its table's put of the same key writes (the meta after the turn), so it still reads the
    record in the transaction and holds. Other ops are kept as they are."""
    written = {}
    for kind, table, value in ops:
        if kind in ("put", "add") and isinstance(value, dict):
            for field in ("taskId", "stageId"):
                if field in value:
                    written[(table, value[field])] = value
    out = []
    for kind, table, value in ops:
        if kind == "expect" and (table, value.get("key")) in written:
            record = written[(table, value["key"])]
            value = {**value, "if": {field: record.get(field) for field in value.get("if", {})}}
        out.append(("put" if kind == "add" else kind, table, value))
    return out


def search_terms(ops: list) -> list[str] | None:
    """The ``terms`` of the last ``search`` put of ``ops`` (None when they put none)."""
    found = None
    for kind, table, value in ops:
        if kind == "put" and table == "search" and isinstance(value.get("terms"), list):
            found = value["terms"]
    return found


def sizes(ops: list, lift_chars: int = LIFT_CHARS) -> list[dict]:
    """For each op of ``ops``: ``{"op": "<kind> <table>", "json_chars": its value's compact JSON length
    (what the backend encodes, the long strings included), "lifted": [[path, characters], …] of its
    strings of ``lift_chars`` or more (they cross on their own: ``lift_long_texts``), "postings": the
    count of its ``terms`` (None when it has none)}``."""
    out = []
    for kind, table, value in ops:
        terms = value.get("terms") if isinstance(value, dict) else None
        _, lifted = lift_long_texts([value], min_chars=lift_chars)
        out.append({"op": f"{kind} {table}",
                    "json_chars": len(json.dumps(value, ensure_ascii=False, separators=(",", ":"))),
                    "lifted": [[".".join(str(p) for p in path[1:]), len(text)] for path, text in lifted],
                    "postings": len(terms) if isinstance(terms, list) else None})
    return out


def page_source() -> str:
    """The pure functions above as Python source for the page (with what they import)."""
    head = ("from __future__ import annotations\nimport json\nfrom app.history.terms import time_hex\n"
            "from app.json_steps import LIFT_CHARS, lift_long_texts\n"
            f"RECORDS = {RECORDS!r}\nUNCHANGED = {UNCHANGED!r}\n")
    functions = (moved_terms, variant, replayable, search_terms, sizes)
    return head + "\n".join(inspect.getsource(f) for f in functions)


def summarise(samples: dict, long_course: str, short_course: str) -> list[dict]:
    """``samples`` ``{course: {measure: [ms, …]}}`` → one row per measure of ``long_course``: its other
    measures first, in their order, then the ``write: <variant>`` ones in the order of ``VARIANTS``, each
    before its ``(JS adapter)`` twin. A row: ``{"measure", "long_ms", "short_ms", "ratio",
    "long_spread", "short_spread", "n"}`` (medians of the numbers, None left out; spreads ``[min,
    max]``; ratio None when the short median is 0 or missing; ``n`` the long course's numbers)."""
    def numbers(values):
        return [v for v in values or () if v is not None]

    def median(values):
        return statistics.median(numbers(values)) if numbers(values) else None

    def spread(values):
        return [min(numbers(values)), max(numbers(values))] if numbers(values) else None
    def rank(measure):
        if not measure.startswith("write: "):
            return (0, 0, False)
        name = measure[len("write: "):]
        adapter = name.endswith(" (JS adapter)")
        name = name[:-len(" (JS adapter)")] if adapter else name
        return (1, VARIANTS.index(name) if name in VARIANTS else len(VARIANTS), adapter)
    rows = []
    for measure in sorted(samples[long_course], key=rank):
        values = samples[long_course][measure]
        short = samples[short_course].get(measure)
        long_ms, short_ms = median(values), median(short)
        rows.append({"measure": measure, "long_ms": long_ms, "short_ms": short_ms,
                     "ratio": long_ms / short_ms if long_ms is not None and short_ms else None,
                     "long_spread": spread(values), "short_spread": spread(short), "n": len(numbers(values))})
    return rows


def window_cpu(trace: bytes, windows: dict, clock: tuple[str, float]) -> tuple[dict, dict]:
    """Thread CPU (ms) in each window of ``windows`` (``{course: {measure: [[began, ended], …]}}``, page
    clock ms) from a Chrome trace of the page: ``(main, storage)``, each ``{course: {measure: [ms, …]}}``.
    ``main``: the page's main thread (``ThreadControllerImpl::RunTask`` on ``CrRendererMain``);
    ``storage``: the browser process's thread pool (``ThreadPool_RunTask``), where Chromium's IndexedDB
    stores records (the replays leave it little else to do). A task counts with the share of its wall
    time inside the window; one whose thread time exceeds its wall time by over 1 ms is left out
    (``bench.trace.trace_cpu``). ``clock``: the name of a ``performance.mark`` in the trace and its
    ``startTime`` (page clock ms), which places the windows on the trace's clock (µs).
    ``ValueError`` when the trace lacks the mark."""
    import bisect

    events = json.loads(trace)
    events = events.get("traceEvents", []) if isinstance(events, dict) else events
    mark = next((e for e in events if e.get("name") == clock[0] and e.get("ph") in ("I", "R", "i")), None)
    if mark is None:
        raise ValueError(f"the trace holds no mark {clock[0]!r}")
    offset = mark["ts"] - clock[1] * 1000
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e.get("ph") == "M" and e.get("name") == "thread_name"}
    browser = {e["pid"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"
               and e.get("args", {}).get("name") == "Browser"}

    def tasks(keep):
        found = sorted((e["ts"], e.get("dur", 0), e.get("tdur", 0)) for e in events
                       if e.get("ph") == "X" and keep(e) and e.get("tdur", 0) <= e.get("dur", 0) + 1000)
        return found, [t[0] for t in found]
    main = tasks(lambda e: e["name"] == "ThreadControllerImpl::RunTask" and e["pid"] == mark["pid"]
                 and threads.get((e["pid"], e["tid"])) == "CrRendererMain")
    storage = tasks(lambda e: e["name"] == "ThreadPool_RunTask" and e["pid"] in browser)

    def spent(found, began, ended):
        items, starts = found
        lo, hi = offset + began * 1000, offset + ended * 1000
        total = 0.0
        for ts, dur, tdur in items[max(0, bisect.bisect_left(starts, lo - 10_000_000)):bisect.bisect_right(starts, hi)]:
            inside = min(ts + dur, hi) - max(ts, lo)
            if dur <= 0:
                total += tdur if lo <= ts <= hi else 0
            elif inside > 0:
                total += tdur * inside / dur
        return total / 1000
    return tuple({c: {name: [spent(found, b, e) for b, e in spans] for name, spans in measures.items()}
                  for c, measures in windows.items()} for found in (main, storage))


def report(split: dict) -> None:
    """Print the split (``measure``'s figures): for each measure the medians at both lengths and their
    ratio by wall clock, by the page's main-thread CPU and by the browser's storage CPU, then the sizes
    of each course's ops."""
    long_turns, short_turns = split["long_turns"], split["short_turns"]
    print(f"  transaction split: the last turn's ops replayed, {split['reps']} times each, courses and variants "
          f"interleaved (median ms, page clock; load average {split.get('load')}); wall clock, the page's "
          "main-thread CPU and the browser's storage threads' CPU (Chrome trace), each "
          f"{long_turns:,} turns | {short_turns} turns | ratio:")
    print(f"    {'measure':<54}{'wall':>22}{'main-thread CPU':>24}{'storage CPU':>24}")

    def cell(row):
        if row is None or row["long_ms"] is None:
            return "—"
        ratio = "—" if row["ratio"] is None else f"{row['ratio']:.2f}"
        return f"{row['long_ms']:.1f} | {row['short_ms']:.1f} | {ratio}"
    main = {r["measure"]: r for r in split.get("main_cpu_rows", [])}
    storage = {r["measure"]: r for r in split.get("storage_cpu_rows", [])}
    for row in split["rows"]:
        name = row["measure"]
        print(f"    {name:<54}{cell(row):>22}{cell(main.get(name)):>24}{cell(storage.get(name)):>24}")
    for course, turns in ((split["long_course"], long_turns), (split["short_course"], short_turns)):
        parts = []
        for s in split["sizes"][course]:
            lifted = "".join(f", {path} {chars:,} lifted" for path, chars in s["lifted"])
            postings = "" if s["postings"] is None else f", {s['postings']:,} posting keys"
            parts.append(f"{s['op']} {s['json_chars']:,}{lifted}{postings}")
        print(f"    sizes at {turns:,} turns (JSON characters): " + "; ".join(parts))


# Page helpers: `window.__split.parse(payload)` decodes and parses a payload as static/indexeddb.js
# does and returns the ms it took; the adapter's `write` is timed from its call to its answer into
# `window.__split.writeMs` while `window.__split.on`.
SPLIT_JS = """() => {
  if (window.__split) return;
  const s = (window.__split = { on: false, written: null });
  const decoder = new TextDecoder();
  s.parse = (payload) => {
    const began = performance.now();
    JSON.parse(typeof payload === 'string' ? payload : decoder.decode(payload));
    return [began, performance.now()];
  };
  const adapter = window.agentbarIndexedDbAdapter;
  const write = adapter.write;
  adapter.write = function (...args) {
    const began = performance.now();
    const answer = write.apply(this, args);
    return s.on ? answer.then((r) => { s.written = [began, performance.now()]; return r; }) : answer;
  };
}"""

# Every commit's ops, kept (a reference: nothing copied while the turn runs); `_bench_split_keep(course)`
# copies the last one that puts a `messages` record (the turn's write) as that course's.
CAPTURE_PY = """
from app.history import repository as _repository
if not hasattr(_repository, "_bench_commits"):
    _repository._bench_commits, _repository._bench_split = [], {}
    _bench_commit = _repository.HistoryRepository.commit
    async def _bench_capture(self, writes):
        _repository._bench_commits.append(writes.ops)
        return await _bench_commit(self, writes)
    _repository.HistoryRepository.commit = _bench_capture

def _bench_split_keep(course):
    import copy
    turns = [ops for ops in _repository._bench_commits if any(k == "put" and t == "messages" for k, t, _ in ops)]
    _repository._bench_commits.clear()
    if turns:
        _repository._bench_split[course] = copy.deepcopy(turns[-1])
    return len(turns)
"""

# `_bench_split_measure(courses, reps)`: the replays (module docstring); JSON {samples: {course:
# {measure: [ms, …]}}, sizes: {course: sizes(ops)}}. `_bench_split_source` is page_source().
MEASURE_PY = """
import json as _json, js as _js, random as _random, types as _types
from app.browser import indexeddb as _idb
from app.browser.tasks import next_task as _next_task
from app.json_steps import dumps_in_steps as _dumps_in_steps
_split = _types.ModuleType("bench_turnsplit")
exec(_bench_split_source, _split.__dict__)

async def _bench_split_prepare(ops, add):
    now, s = _js.performance.now, _js.window.__split
    plain = [[kind, table, value] for kind, table, value in ops]
    began = now(); kept, lifted = _split.lift_long_texts(plain); add("prepare: lift long strings", began, now())
    for op in plain:  # the walk of each record's values
        if op[0] == "put" and op[1] in _split.RECORDS:
            began = now(); _split.lift_long_texts([op]); add(f"prepare: lift long strings, {op[1]} only", began, now())
    began = now()
    if lifted:
        await _idb._js_texts([text for _, text in lifted])
    add("prepare: long strings to JS (_js_texts)", began, now())
    began = now(); text = await _dumps_in_steps(kept, pause=_next_task, clock=now)
    add("prepare: JSON encode (dumps_in_steps, as the backend)", began, now())
    began = now(); _json.dumps(kept, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    add("prepare: JSON encode (one json.dumps, no pause)", began, now())
    began = now(); payload = _idb._bytes(text); add("prepare: UTF-8 bytes to JS (_bytes)", began, now())
    began = now(); inside = s.parse(payload)
    add("prepare: crossing + JS decode and parse", began, now()); add("prepare: JS decode and parse", *inside)

async def _bench_split_measure(courses, reps):
    now, s = _js.performance.now, _js.window.__split
    backend = _idb.IndexedDbBackend()
    await backend.open()
    captured = {c: _split.replayable(_repository._bench_split[c]) for c in courses}
    held = {c: _split.search_terms(captured[c]) for c in courses}
    written = {c: next(v for k, t, v in captured[c] if k == "put" and t == "search")["updatedAt"] for c in courses}
    samples = {c: {} for c in courses}
    tick = 0
    for c in courses:  # once unmeasured: the stored records are the captured ones, postings included
        await backend.write(captured[c])
    s.on = True
    try:
        for rep in range(reps):
            order = ["prepare", *_split_variants]
            _random.Random(rep).shuffle(order)  # no variant always first, nor always after the same one
            for c in courses:
                add = lambda name, began, ended, c=c: samples[c].setdefault(name, []).append([began, ended])
                for name in order:
                    if name == "prepare":
                        await _bench_split_prepare(captured[c], add)
                        continue
                    tick += 1
                    ops = _split.variant(captured[c], name, moved_at=written[c] + tick, held_terms=held[c])
                    s.written = None
                    began = now(); await backend.write(ops); add("write: " + name, began, now())
                    add("write: " + name + " (JS adapter)", *s.written)
                    held[c] = _split.search_terms(ops) or held[c]
    finally:
        s.on = False
        for c in courses:  # the records as the turn wrote them
            await backend.write(captured[c])
    _js.performance.mark("turnsplit-clock")
    clock = _js.performance.getEntriesByName("turnsplit-clock")[0].startTime
    return _json.dumps({"windows": samples, "clock": clock, "sizes": {c: _split.sizes(captured[c]) for c in courses}})
"""


def install(page) -> None:
    """Put the split's capture into turncost's page (after its counters: ``COUNT_PY``)."""
    from bench.scripts import RUN_PY

    page.evaluate(SPLIT_JS)
    page.evaluate(RUN_PY, CAPTURE_PY)


def keep(page, course: str) -> None:
    """Keep the ops of the turn just written as ``course``'s (``RuntimeError`` when no turn was)."""
    from bench.scripts import RUN_PY

    if not page.evaluate(RUN_PY, f"_bench_split_keep({course!r})"):
        raise RuntimeError(f"turncost split: no turn write of {course} was captured")


def measure(run, page, long_course: str, short_course: str, long_turns: int, short_turns: int,
            reps: int = REPS) -> dict:
    """Replay each course's kept ops in the page (module docstring) under a Chrome trace of ``run``'s
    browser (thread CPU of each measure's window: ``window_cpu``); the figures ``report`` prints.
    With ``BENCH_TRACE_DIR`` set, the trace is written there too (``turnsplit.json``)."""
    from bench.scripts import RUN_PY
    from bench.trace import TRACE_CATEGORIES

    code = (f"_bench_split_source = {page_source()!r}\n_split_variants = {VARIANTS!r}\n" + MEASURE_PY
            + f"\nawait _bench_split_measure({[long_course, short_course]!r}, {reps})")
    run.browser.start_tracing(page=page, categories=TRACE_CATEGORIES + ["blink.user_timing"])
    try:
        raw = json.loads(page.evaluate(RUN_PY, code))
    finally:
        trace = run.browser.stop_tracing()
    folder = os.environ.get("BENCH_TRACE_DIR")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / "turnsplit.json").write_bytes(trace)
        (Path(folder) / "turnsplit-windows.json").write_text(json.dumps(raw))
    wall = {c: {name: [ended - began for began, ended in windows] for name, windows in measures.items()}
            for c, measures in raw["windows"].items()}
    main, storage = window_cpu(trace, raw["windows"], ("turnsplit-clock", raw["clock"]))
    return {"long_course": long_course, "short_course": short_course, "long_turns": long_turns,
            "short_turns": short_turns, "reps": reps, "load": round(os.getloadavg()[0], 2),
            "rows": summarise(wall, long_course, short_course), "sizes": raw["sizes"],
            "main_cpu_rows": summarise(main, long_course, short_course),
            "storage_cpu_rows": summarise(storage, long_course, short_course)}
