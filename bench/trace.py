"""Thread CPU time of the page's main-thread tasks, from a Chrome trace (for the benchmark parts).

The ``longtask`` observer and the ``MessageChannel`` heartbeat time the wall clock: on a loaded
machine a task of 10 ms of work that the system holds off the CPU reads as 60 ms. A Chrome trace
(``toplevel``, V8's collections) gives each main-thread task its thread CPU time too, so a part can
report both (``bench.history_search``, ``bench.sync``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

TRACE_CATEGORIES = ["toplevel", "disabled-by-default-v8.gc"]
DETAIL_CATEGORIES = ["devtools.timeline"]
"""With ``traced(..., detail=True)``: each task's JavaScript calls (``FunctionCall``: the script's file
and function) and events, so ``trace_cpu`` can say what ran in the tasks of most CPU (``heaviest``)."""
HEAVIEST = 8
"""How many of the tasks of most thread CPU ``trace_cpu`` attributes."""


def trace_cpu(trace: bytes) -> dict:
    """Main-thread tasks of a Chrome trace (``RunTask`` on ``CrRendererMain``): the longest by thread
    CPU and by wall clock (ms, each with the other), how many ran over 50 ms of wall clock and over
    50 ms of CPU, the thread CPU of all of them (``cpu_ms_total``), and the V8 collections (ms) inside
    the tasks over 50 ms of wall clock. A task whose
    thread time exceeds its wall time by over 1 ms (seen on a two-core VM: the thread clock is not
    always exact there) is left out of the CPU figures and counted (``thread_time_above_wall``)."""
    events = json.loads(trace)
    events = events.get("traceEvents", []) if isinstance(events, dict) else events
    main = {(e["pid"], e["tid"]) for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"
            and e.get("args", {}).get("name") == "CrRendererMain"}
    mine = [e for e in events if e.get("ph") == "X" and (e.get("pid"), e.get("tid")) in main]
    tasks = [e for e in mine if e["name"] == "ThreadControllerImpl::RunTask"]
    if not tasks:
        return {"tasks": 0}
    sane = [t for t in tasks if t.get("tdur", 0) <= t.get("dur", 0) + 1000]  # thread time within wall time
    by_cpu = max(sane or tasks, key=lambda e: e.get("tdur", 0))
    by_wall = max(tasks, key=lambda e: e.get("dur", 0))
    long = [t for t in tasks if t.get("dur", 0) > 50_000]
    gcs = [e for e in mine if e["name"] in ("MinorGC", "MajorGC", "V8.GC_SCAVENGER", "V8.GC_MARK_COMPACTOR")]
    in_long = sum(g["dur"] for g in gcs if g["name"] in ("V8.GC_SCAVENGER", "V8.GC_MARK_COMPACTOR")
                  and any(t["ts"] <= g["ts"] <= t["ts"] + t["dur"] for t in long)) / 1000
    ms = lambda e, k: round(e.get(k, 0) / 1000, 1)  # noqa: E731
    heaviest = sorted(sane or tasks, key=lambda e: e.get("tdur", 0), reverse=True)[:HEAVIEST]
    return {"tasks": len(tasks), "heaviest": [_inside(t, mine) for t in heaviest],
            "longest_cpu_ms": ms(by_cpu, "tdur"), "its_wall_ms": ms(by_cpu, "dur"),
            "longest_wall_ms": ms(by_wall, "dur"), "its_cpu_ms": ms(by_wall, "tdur"),
            "over_50_wall": len(long), "over_50_cpu": sum(1 for t in sane if t.get("tdur", 0) > 50_000),
            "thread_time_above_wall": len(tasks) - len(sane),
            "cpu_ms_total": round(sum(t.get("tdur", 0) for t in sane) / 1000, 1),
            "v8_gc_ms_in_those": round(in_long, 1)}


def _inside(task: dict, events: list[dict]) -> dict:
    """A task's thread CPU and wall time (ms) and what ran in it: the events nested in it one level
    down, by thread CPU, named by what they are (``FunctionCall``: ``file:function`` of the script;
    ``EventDispatch``: the event's type; V8's collections), the 5 heaviest as ``[name, wall, cpu]``."""
    start, end = task["ts"], task["ts"] + task.get("dur", 0)
    inner = [e for e in events if e is not task and start <= e["ts"] and e["ts"] + e.get("dur", 0) <= end
             and e["name"] != "ThreadControllerImpl::RunTask"]
    top = [e for e in inner if not any(o is not e and o["ts"] <= e["ts"] and e["ts"] + e.get("dur", 0) <= o["ts"] + o.get("dur", 0)
                                       and o.get("dur", 0) > e.get("dur", 0) for o in inner)]

    def name(e: dict) -> str:
        data = e.get("args", {}).get("data", {}) or {}
        if e["name"] == "FunctionCall":
            url = str(data.get("url", "")).rsplit("/", 1)[-1]
            return f"{url}:{data.get('functionName', '')}"
        if e["name"] == "EventDispatch":
            return f"event:{data.get('type', '')}"
        return e["name"]

    top.sort(key=lambda e: e.get("tdur", e.get("dur", 0)), reverse=True)
    return {"cpu_ms": round(task.get("tdur", 0) / 1000, 1), "wall_ms": round(task.get("dur", 0) / 1000, 1),
            "parts": [[name(e), round(e.get("dur", 0) / 1000, 1), round(e.get("tdur", 0) / 1000, 1)] for e in top[:5]]}


def traced(run, page, *, detail: bool = False) -> None:
    """Start a Chrome trace of ``page`` (``TRACE_CATEGORIES``, and ``DETAIL_CATEGORIES`` with
    ``detail``) on ``run``'s browser."""
    run.browser.start_tracing(page=page, categories=TRACE_CATEGORIES + (DETAIL_CATEGORIES if detail else []))


def cpu(run) -> dict:
    """Stop the trace ``traced`` started and return its ``trace_cpu`` figures. With
    ``BENCH_TRACE_DIR`` set, the trace is also written there (``trace-<n>.json``, for DevTools)."""
    trace = run.browser.stop_tracing()
    folder = os.environ.get("BENCH_TRACE_DIR")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"trace-{len(list(Path(folder).glob('trace-*.json')))}.json").write_bytes(trace)
    return trace_cpu(trace)


def print_cpu(cpu_figures: dict | None, label: str = "", indent: str = "    ", heaviest: int = 3) -> None:
    """Print ``cpu``'s figures: the longest main-thread task by thread CPU and by wall clock, the
    tasks over 50 ms by each, then what ran in the ``heaviest`` heaviest tasks (name wall/CPU ms).
    ``label`` names what was recorded ("send", "one 10 MB line"); nothing is printed for no trace."""
    if not cpu_figures or not cpu_figures.get("tasks"):
        return
    c = cpu_figures
    print(f"{indent}{label + ', ' if label else ''}thread CPU (Chrome trace): longest by CPU {c['longest_cpu_ms']} ms "
          f"(wall {c['its_wall_ms']}), longest by wall {c['longest_wall_ms']} ms (CPU {c['its_cpu_ms']}); over 50 ms: "
          f"{c['over_50_wall']} by wall, {c['over_50_cpu']} by CPU")
    for heavy in c.get("heaviest", [])[:heaviest]:
        parts = "; ".join(f"{name} {wall}/{tcpu}" for name, wall, tcpu in heavy["parts"])
        print(f"{indent}  {heavy['cpu_ms']} ms CPU ({heavy['wall_ms']} wall): {parts}")
