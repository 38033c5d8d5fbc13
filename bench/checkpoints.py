"""Benchmark part ``checkpoints`` (DESIGN.md §10): scene versions in the page, against baselines
measured in the same page and run.

- record: recording one version of a 500-element scene with base64 images (the
  ``ArtifactSnapshot`` through the version store into IndexedDB, and the slide
  redrawn): the longest main-thread task seen by a ``longtask`` observer
  (goal: none over 50 ms), with the time of the whole;
- huge: recording one document of over 5 MB (220 base64 images of ~27 KB), the same
  longest-task probes (goal: none over 50 ms: the page does not freeze);
- diff: two 500-element versions (10% of elements changed, 5% removed, 5% added):
  the read model's diff (two documents read from IndexedDB, canonical JSON,
  ``difflib``, element summary) and the diff view drawn, against the same
  ``difflib.unified_diff`` call alone on the prepared lines (goal: ≤ 2×); medians;
- list: the checkpoint list of one scene with 200 versions, opened by its button
  until drawn (layout forced), against JavaScript reading the same 200 records
  from IndexedDB (``getAll`` on the same index; goal: ≤ 1.5×); medians;
- export: the evidence pack of a conversation with many regenerated versions (every
  snapshot and scene document in the zip, images by size and hash), built while the page
  is watched: the longest main-thread task (goal: none over 50 ms) and the time of the
  whole, against the read model's conversation list alone (what the pack's JSON needs);
- start-up: reloads of the app with 20 courses × 3 scenes × 50 versions stored
  against reloads with none (same browser, the two interleaved; goal: ≤ 1.03×).

Run: ``bash tools/dev.sh bench --only checkpoints [--quick]``; ``BENCH_CHECKPOINTS_CASES=record,huge``
runs those cases alone (goals and the table then name only them). Each recording also prints its
tasks by thread CPU (``bench.trace``) and its longest Python steps (``bench.pysteps``).
"""

from __future__ import annotations

import json
import os
import statistics
import textwrap
import time
from urllib.parse import urlencode

from bench import pysteps
from bench.trace import cpu, print_cpu, traced
from bench.scripts import RUN_PY


PRELUDE = """
import asyncio, json, difflib, js, random
from app.browser import checkpoint_view as _cv
from app.checkpoints.documents import Background, Box, SceneDocument, SceneElement, canonical_json
from app.checkpoints.events import ArtifactSnapshot
from app.agent import _image
VIEW = _cv.CURRENT
CP = VIEW.checkpoints
RT = VIEW.runtime
now = js.performance.now

def big_document(seed, n=500, base=None):
    rng = random.Random(seed)
    if base is None:
        elements = []
        for i in range(n):
            kind = ("image", "text", "shape", "text")[i % 4]
            box = Box(x=rng.randrange(0, 800), y=rng.randrange(0, 440), w=rng.randrange(20, 160), h=rng.randrange(20, 100))
            elements.append(SceneElement(id=f"el-{i}", kind=kind, box=box, text=f"Point {i} 中文 “x”" if kind == "text" else None,
                                         src=_image(rng) if kind == "image" else None,
                                         color=f"#{rng.randrange(0x1000000):06x}" if kind != "image" else None))
        return SceneDocument(title=f"Big scene {seed}", background=Background(kind="image", value=_image(rng, 48, 27, 12)),
                             elements=tuple(elements))
    elements = list(base.elements)
    for i in range(0, n, 10):  # 10% changed
        e = elements[i]
        elements[i] = e.model_copy(update={"box": e.box.model_copy(update={"x": (e.box.x + 7) % 800}), "text": (e.text or "") + " edited"})
    del elements[5::20]  # 5% removed
    for i in range(n // 20):  # 5% added
        elements.append(SceneElement(id=f"new-{seed}-{i}", kind="text", box=Box(x=10, y=10, w=100, h=30), text=f"added {i}"))
    return base.model_copy(update={"elements": tuple(elements)})

def huge_document(seed, images=220):  # over 5 MB of JSON: base64 PNGs of ~27 KB each (bad input, DESIGN.md §10)
    rng = random.Random(seed)
    elements = tuple(SceneElement(id=f"img-{i}", kind="image", box=Box(x=(i * 37) % 800, y=(i * 53) % 440, w=120, h=90),
                                  src=_image(rng, 96, 72, 120)) for i in range(images))
    return SceneDocument(title=f"Huge scene {seed}", background=Background(kind="color", value="#ffffff"), elements=elements)

def snap(stage, scene, doc, at):
    return ArtifactSnapshot(stage_id=stage, scene_id=scene, document=doc, source="regenerate_scene",
                            conversation_id=RT.conversation_id(stage) or "bench", turn_id=None, tool_call_id=None, at=at)
"""

LONGTASKS = """() => {
  // Two probes of the main thread: the longtask observer (absent or silent in some headless
  // builds), and a MessageChannel heartbeat whose longest gap between beats is the longest task.
  window.__longtasks = [];
  try {
    window.__longObserver = new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__longtasks.push(e.duration); });
    window.__longObserver.observe({ type: "longtask" });
  } catch (e) { window.__longObserver = { disconnect() {} }; }
  const beat = (window.__beat = { max: 0, last: performance.now(), on: true });
  const channel = new MessageChannel();
  channel.port1.onmessage = () => {
    const t = performance.now();
    beat.max = Math.max(beat.max, t - beat.last);
    beat.last = t;
    if (beat.on) channel.port2.postMessage(0);
  };
  channel.port2.postMessage(0);
}"""

STOP_PROBES = """() => { window.__longObserver.disconnect(); window.__beat.on = false;
  return { longtasks: window.__longtasks, gap: window.__beat.max }; }"""

JS_LIST_BASELINE = """async ([artifactId, reps]) => {
  const db = await new Promise((resolve, reject) => { const r = indexedDB.open("agentbar"); r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error); });
  const times = [];
  let count = 0;
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    const records = await new Promise((resolve, reject) => {
      const index = db.transaction("versions").objectStore("versions").index("[artifactId+versionNo]");
      const req = index.getAll(IDBKeyRange.bound([artifactId, -Infinity], [artifactId, Infinity]));
      req.onsuccess = () => resolve(req.result); req.onerror = () => reject(req.error);
    });
    count = records.length;
    times.push(performance.now() - t0);
  }
  db.close();
  return { times, count };
}"""

OPEN_LIST = """async (sceneId) => {
  const node = document.querySelector(`[data-testid=scene][data-scene-id="${sceneId}"]`);
  const button = node.querySelector("[data-testid=scene-versions-open]");
  if (button.getAttribute("aria-expanded") === "true") { button.click(); await window.agentbarCheckpoints(); }
  const t0 = performance.now();
  button.click();
  await window.agentbarCheckpoints();
  const items = node.querySelectorAll("[data-testid=checkpoint-item]").length;
  void node.offsetHeight;  // layout of what was drawn
  return { ms: performance.now() - t0, items };
}"""


def run_py(page, code: str):
    return json.loads(page.evaluate(RUN_PY, PRELUDE + textwrap.dedent(code)))


def _median(values):
    return statistics.median(values) if values else None


def _open_app(run, context, course: str):
    page = context.new_page()
    page.goto(run.base + "index.html?" + urlencode({"course": course, "delay": 0}))
    run.wait_ready(page)
    return page


SHOW_COURSE = """async (id) => {
  const url = new URL(location.href);
  url.searchParams.set("course", id);
  history.pushState({}, "", url.href);
  dispatchEvent(new PopStateEvent("popstate"));
  const select = document.querySelector("[data-testid=course-select]");
  while (select.value !== id) await new Promise((resolve) => setTimeout(resolve, 20));
  await window.agentbarCheckpoints();
}"""
"""Show course ``id`` in a booted page as Back/Forward does (no boot), its scenes drawn."""


class _Page:
    """The page a case runs in: ``shared`` (the quick run's one page, left open for the next case,
    switched to ``course``) or a new context booted on ``course`` (closed by ``close()``)."""

    def __init__(self, run, course: str, shared=None) -> None:
        self.shared = shared is not None
        if self.shared:
            self.context, self.page = None, shared
            shared.evaluate(SHOW_COURSE, course)
        else:
            self.context = run.context()
            self.page = _open_app(run, self.context, course)

    def close(self) -> None:
        if not self.shared:
            self.context.close()


def bench_record(run, reps: int, shared=None) -> dict:
    case = _Page(run, "intro-ml", shared)
    page = case.page
    page.evaluate(LONGTASKS)  # the observer sees a deliberate 80 ms task, or its zero proves nothing
    page.wait_for_timeout(50)
    page.evaluate("() => { const t = performance.now(); while (performance.now() - t < 80) {} }")
    page.wait_for_timeout(100)
    observer_check = page.evaluate(STOP_PROBES)
    samples = []
    for i in range(reps):
        run_py(page, f"DOC = big_document({i}); json.dumps(len(DOC.elements))")
        page.evaluate(LONGTASKS)
        pysteps.watch(page)
        traced(run, page, detail=True)
        out = run_py(page, f"""
            t0 = now()
            item = await CP.submit(snap("intro-ml", "scene-1", DOC, {1_780_000_000_000 + i}))
            t1 = now()
            await VIEW.settle()
            json.dumps({{"record_ms": t1 - t0, "version": item.metadata["artifactVersionNo"],
                         "bytes": len(DOC.model_dump_json())}})
        """)
        out["cpu"] = cpu(run)  # each task's thread CPU beside its wall clock (Chrome trace)
        out["python_steps"] = pysteps.steps(page)  # the longest Python steps, named
        page.wait_for_timeout(100)  # longtask entries are delivered asynchronously
        probes = page.evaluate(STOP_PROBES)
        out["longtasks_ms"] = probes["longtasks"]
        out["longest_gap_ms"] = probes["gap"]
        samples.append(out)
    drawn = page.evaluate("() => document.querySelector('[data-scene-id=scene-1]').getAttribute('data-element-count')")
    case.close()
    worst = [max(max(s["longtasks_ms"], default=0.0), s["longest_gap_ms"]) for s in samples]
    return {"observer_check_ms": observer_check, "samples": samples, "record_ms_median": _median([s["record_ms"] for s in samples]),
            "longest_task_ms": max(worst), "longtask_count": sum(len(s["longtasks_ms"]) for s in samples),
            "document_bytes": samples[0]["bytes"], "element_count_drawn": int(drawn)}


def bench_huge(run, reps: int, shared=None) -> dict:
    """Recording a document over 5 MB (many base64 images) while the page is watched: the longest
    main-thread task (longtask observer and heartbeat), as for ``bench_record``."""
    case = _Page(run, "intro-ml", shared)
    page = case.page
    samples = []
    for i in range(reps):
        size = run_py(page, f"DOC = huge_document({i}); json.dumps(len(DOC.model_dump_json(exclude_none=True)))")
        page.evaluate(LONGTASKS)
        page.wait_for_timeout(50)
        pysteps.watch(page)
        traced(run, page, detail=True)
        out = run_py(page, f"""
            t0 = now()
            item = await CP.submit(snap("intro-ml", "scene-3", DOC, {1_780_000_000_000 + i}))
            t1 = now()
            await VIEW.settle()
            json.dumps({{"record_ms": t1 - t0, "version": item.metadata["artifactVersionNo"]}})
        """)
        out["cpu"] = cpu(run)
        out["python_steps"] = pysteps.steps(page)
        page.wait_for_timeout(100)
        probes = page.evaluate(STOP_PROBES)
        out.update(bytes=size, longtasks_ms=probes["longtasks"], longest_gap_ms=probes["gap"])
        samples.append(out)
    drawn = page.evaluate("() => document.querySelectorAll('[data-scene-id=scene-3] .slide img').length")
    case.close()
    worst = [max(max(s["longtasks_ms"], default=0.0), s["longest_gap_ms"]) for s in samples]
    return {"samples": samples, "document_bytes": samples[0]["bytes"], "images_drawn": drawn,
            "record_ms_median": _median([s["record_ms"] for s in samples]), "longest_task_ms": max(worst),
            "longtask_count": sum(len(s["longtasks_ms"]) for s in samples)}


def bench_export(run, versions: int, shared=None, samples_n: int = 3) -> dict:
    """The evidence pack of one conversation holding ``versions`` regenerated versions over three
    scenes: its time and the longest main-thread task while it is built, against the read model's
    list of the conversation alone (both medians of ``samples_n``; ``--quick``: one)."""
    case = _Page(run, "intro-ml", shared)
    page = case.page
    run_py(page, f"""
        from app.agent import regenerate_document
        docs = {{}}
        for i in range({versions}):
            scene = f"scene-{{i % 3 + 1}}"
            docs[scene] = regenerate_document(scene, f"step {{i}}", docs.get(scene) or CP.document("intro-ml", scene))
            await CP.submit(snap("intro-ml", scene, docs[scene], 1_780_000_000_000 + i))
        json.dumps(0)
    """)
    samples = []
    for i in range(samples_n):
        page.evaluate(LONGTASKS)
        page.wait_for_timeout(50)
        out = run_py(page, """
            from app.browser.tasks import next_task
            from app.checkpoints.exports import evidence_pack
            conversation = RT.conversation_id("intro-ml") or "bench"
            t0 = now()
            listed = await CP.read_model.list_conversation(conversation)
            t1 = now()
            data = await evidence_pack(CP.read_model, stage_id="intro-ml", conversation_id=conversation,
                                       exported_at=1_780_000_000_000, pause=next_task)
            t2 = now()
            import io, zipfile
            files = len(zipfile.ZipFile(io.BytesIO(data)).namelist())
            json.dumps({"list_ms": t1 - t0, "export_ms": t2 - t1, "zip_bytes": len(data), "files": files,
                        "checkpoints": listed["checkpoint_count"]})
        """)
        page.wait_for_timeout(100)
        probes = page.evaluate(STOP_PROBES)
        out.update(longtasks_ms=probes["longtasks"], longest_gap_ms=probes["gap"])
        samples.append(out)
    case.close()
    worst = [max(max(s["longtasks_ms"], default=0.0), s["longest_gap_ms"]) for s in samples]
    export_ms, list_ms = _median([s["export_ms"] for s in samples]), _median([s["list_ms"] for s in samples])
    return {"samples": samples, "versions": samples[0]["checkpoints"], "files": samples[0]["files"],
            "zip_bytes": samples[0]["zip_bytes"], "export_ms_median": export_ms, "list_ms_median": list_ms,
            "ratio": export_ms / list_ms if list_ms else None, "longest_task_ms": max(worst)}


def bench_diff(run, reps: int, shared=None) -> dict:
    case = _Page(run, "intro-ml", shared)
    page = case.page
    setup = run_py(page, """
        A = big_document(1); B = big_document(2, base=A)
        a = await CP.submit(snap("intro-ml", "scene-2", A, 1_780_000_000_001))
        b = await CP.submit(snap("intro-ml", "scene-2", B, 1_780_000_000_002))
        CID = b.id
        LA, LB = canonical_json(A).splitlines(), canonical_json(B).splitlines()
        json.dumps({"lines": [len(LA), len(LB)]})
    """)
    out = run_py(page, f"""
        host = js.document.querySelector('[data-scene-id=scene-2]')
        difflib_ms, model_ms, view_ms, lines = [], [], [], 0
        for _ in range({reps}):
            t0 = now()
            result = list(difflib.unified_diff(LA, LB, "a", "b", lineterm="", n=3))
            difflib_ms.append(now() - t0)
            t0 = now()
            d = await CP.read_model.diff(CID)
            t1 = now()
            node = VIEW.draw_diff(d["diff"])
            host.append(node)
            _ = node.offsetHeight
            t2 = now()
            node.remove()
            model_ms.append(t1 - t0); view_ms.append(t2 - t0); lines = len(d["diff"]["lines"])
        json.dumps({{"difflib_ms": difflib_ms, "model_ms": model_ms, "view_ms": view_ms, "diff_lines": lines,
                    "elements": {{k: len(v) for k, v in d["diff"]["elements"].items()}}}})
    """)
    case.close()
    out["canonical_lines"] = setup["lines"]
    out["difflib_ms_median"] = _median(out["difflib_ms"])
    out["model_ms_median"] = _median(out["model_ms"])
    out["view_ms_median"] = _median(out["view_ms"])
    out["ratio"] = out["view_ms_median"] / out["difflib_ms_median"]
    return out


def bench_list(run, reps: int, versions: int, shared=None) -> dict:
    case = _Page(run, "linear-algebra", shared)
    page = case.page
    run_py(page, f"""
        from app.checkpoints.documents import base_document
        base = base_document("linear-algebra", "scene-1")
        for i in range({versions}):
            doc = base.model_copy(update={{"title": f"Vectors, take {{i}}"}})
            await CP.submit(snap("linear-algebra", "scene-1", doc, 1_780_000_000_000 + i))
        await VIEW.settle()
        json.dumps(0)
    """)
    artifact = "linear-algebra/scene-1"
    app_ms, items = [], 0
    for _ in range(reps):
        result = page.evaluate(OPEN_LIST, "scene-1")
        app_ms.append(result["ms"])
        items = result["items"]
    baseline = page.evaluate(JS_LIST_BASELINE, [artifact, reps])
    parts = run_py(page, f"""
        read_ms, draw_ms = [], []
        listing = js.document.createElement("ol")
        js.document.body.append(listing)
        for _ in range({reps}):
            t0 = now()
            listed = await CP.read_model.list_scene("linear-algebra", "scene-1")
            t1 = now()
            VIEW.draw_list(listing, listed["checkpoints"], {versions})
            _ = listing.offsetHeight
            read_ms.append(t1 - t0); draw_ms.append(now() - t1)
        listing.remove()
        json.dumps({{"read_ms": read_ms, "draw_ms": draw_ms}})
    """)
    case.close()
    app_median, js_median = _median(app_ms), _median(baseline["times"])
    return {"read_model_ms_median": _median(parts["read_ms"]), "draw_ms_median": _median(parts["draw_ms"]),
            "versions": versions, "items_drawn": items, "records_read_by_js": baseline["count"],
            "app_ms": app_ms, "js_ms": baseline["times"], "app_ms_median": app_median, "js_ms_median": js_median,
            "ratio": app_median / js_median if js_median else None}


def _seed_records(courses: int, scenes: int, versions: int) -> dict:
    """Records for ``courses`` × ``scenes`` × ``versions`` made by the real version store (CPython)."""
    import asyncio

    from app.agent import regenerate_document
    from app.checkpoints.documents import base_document
    from app.checkpoints.events import ArtifactSnapshot
    from app.checkpoints.record_backend import RecordVersionBackend
    from app.checkpoints.versions import VersionStore
    from app.records import MemoryBackend

    async def make():
        records = MemoryBackend()
        await records.open()
        store = VersionStore(RecordVersionBackend(records))
        at = 1_780_000_000_000
        for c in range(courses):
            stage = f"bench-course-{c}"
            for s in range(scenes):
                scene = f"scene-{s + 1}"
                doc = base_document(stage, scene)
                for v in range(versions):
                    doc = regenerate_document(scene, f"take {v}", doc)
                    at += 1
                    await store.record(ArtifactSnapshot(stage, scene, doc, "regenerate_scene", stage, None, None, at))
        return {t: list(records.raw(t).values()) for t in ("artifacts", "versions", "snapshots")}

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API holds this thread's event loop
        return pool.submit(lambda: asyncio.run(make())).result()


SEED_IDB = """async ([table, records]) => {
  const db = await new Promise((resolve, reject) => { const r = indexedDB.open("agentbar"); r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error); });
  await new Promise((resolve, reject) => {
    const tx = db.transaction(table, "readwrite");
    for (const record of records) tx.objectStore(table).put(record);
    tx.oncomplete = resolve; tx.onerror = () => reject(tx.error);
  });
  db.close();
  return records.length;
}"""


def bench_startup(run, loads: int, courses: int, scenes: int, versions: int) -> dict:
    seeded = run.prepared(_seed_records, courses, scenes, versions)  # made beside earlier parts when prepared
    contexts = {}
    for name in ("none", "seeded"):
        context = run.context()
        page = _open_app(run, context, "bench-course-0")  # creates the database
        if name == "seeded":
            for table, rows in seeded.items():
                for start in range(0, len(rows), 200):
                    page.evaluate(SEED_IDB, [table, rows[start:start + 200]])
        contexts[name] = (context, page)
    times = {"none": [], "seeded": []}
    drawn = None
    for i in range(loads):
        for name in (("none", "seeded") if i % 2 == 0 else ("seeded", "none")):
            _, page = contexts[name]
            page.reload()
            state = run.wait_ready(page)
            times[name].append(state["ready"])
            if name == "seeded":
                drawn = page.evaluate("() => [...document.querySelectorAll('[data-testid=scene]')].map(n => n.dataset.version)")
    for context, _ in contexts.values():
        context.close()
    none, full = _median(times["none"]), _median(times["seeded"])
    return {"courses": courses, "scenes": scenes, "versions": versions,
            "stored_versions": len(seeded["versions"]),
            "snapshot_chars": sum(len(json.dumps(r)) for r in seeded["snapshots"]),
            "ready_ms": times, "none_ms_median": none, "seeded_ms_median": full, "ratio": full / none,
            "paired_ratio_median": _median([b / a for a, b in zip(times["none"], times["seeded"])]),
            "seeded_scene_versions": drawn}


QUICK_STARTUP = (1, 2, 3, 2)
"""``--quick``'s start-up case: ``(loads, courses, scenes, versions)``; the full run's is ``(9, 20, 3, 50)``."""


def prepare(run, *, quick: bool) -> None:
    """``--quick``: the start-up case's records made in the background while earlier parts run (``Run.prepare``)."""
    if quick:
        run.prepare(_seed_records, *QUICK_STARTUP[1:])


def run(run, *, quick: bool) -> dict:
    """Run the part (see the module docstring); ``quick`` keeps it under about a minute: fewer rounds
    and sizes, and the cases that run in the page share one booted page (the full run boots one each)."""
    started = time.time()
    chosen = [c.strip() for c in os.environ.get("BENCH_CHECKPOINTS_CASES", "").split(",") if c.strip()]

    def wanted(name: str) -> bool:
        return not chosen or name in chosen

    if quick:  # one booted page for the cases in the page, each on scenes of its own: the export first,
        # while its conversation holds only its own versions; then record, huge, diff; the list on
        # linear-algebra, shown in place
        figures = {}
        in_page = [name for name in ("export", "record", "huge", "diff", "list") if wanted(name)]
        if in_page:
            context = run.context()
            shared = _open_app(run, context, "intro-ml")
            cases = {"export": lambda: bench_export(run, 30, shared, samples_n=1), "record": lambda: bench_record(run, 1, shared),
                     "huge": lambda: bench_huge(run, 1, shared), "diff": lambda: bench_diff(run, 2, shared),
                     "list": lambda: bench_list(run, 2, 20, shared)}
            figures = {name: cases[name]() for name in in_page}
            context.close()
        if wanted("startup"):
            figures["startup"] = bench_startup(run, *QUICK_STARTUP)
    else:
        cases = {
            "record": lambda: bench_record(run, 5),
            "huge": lambda: bench_huge(run, 3),
            "diff": lambda: bench_diff(run, 9),
            "export": lambda: bench_export(run, 250),
            "list": lambda: bench_list(run, 9, 200),
            "startup": lambda: bench_startup(run, 9, 20, 3, 50),
        }
        figures = {name: case() for name, case in cases.items() if wanted(name)}
    if chosen:
        figures["goals"] = {}
        for name in ("record", "huge"):
            if name in figures:
                value = figures[name]["longest_task_ms"]
                figures["goals"][f"{name}: longest main-thread task (ms)"] = {"value": value, "limit": 50,
                                                                                "pass": value <= 50}
        figures["elapsed_s"] = round(time.time() - started, 1)
        return figures
    r, d, l, s = figures["record"], figures["diff"], figures["list"], figures["startup"]
    h = figures["huge"]
    figures["goals"] = {
        "record a document over 5 MB: longest main-thread task (ms)": {"value": h["longest_task_ms"], "limit": 50,
                                                                        "pass": h["longest_task_ms"] <= 50},
        "record: longest main-thread task (ms)": {"value": r["longest_task_ms"], "limit": 50,
                                                   "pass": r["longest_task_ms"] <= 50},
        "diff view / difflib alone": {"value": d["ratio"], "limit": 2.0, "pass": d["ratio"] <= 2.0},
        "evidence pack with every snapshot: longest main-thread task (ms)": {
            "value": figures["export"]["longest_task_ms"], "limit": 50, "pass": figures["export"]["longest_task_ms"] <= 50},
        "list of 200 versions / JS read": {"value": l["ratio"], "limit": 1.5, "pass": bool(l["ratio"]) and l["ratio"] <= 1.5},
        "start-up with versions / none": {"value": s["ratio"], "limit": 1.03, "pass": s["ratio"] <= 1.03},
    }
    figures["elapsed_s"] = round(time.time() - started, 1)
    return figures


def report(figures: dict) -> None:
    """Print the part's table."""
    r, d, l, s = (figures.get(name) for name in ("record", "diff", "list", "startup"))
    h = figures.get("huge")
    if r:
        print(f"  record a 500-element version ({r['document_bytes'] / 1e6:.2f} MB JSON): median {r['record_ms_median']:.1f} ms;"
              f" longest main-thread task {r['longest_task_ms']:.0f} ms (heartbeat gap; {r['longtask_count']} longtask entries);"
              f" slide drew {r['element_count_drawn']} elements; observer check saw {r['observer_check_ms']}")
        print_cpu(r["samples"][-1].get("cpu"), "", "    ")
        pysteps.report(r["samples"][-1].get("python_steps"), "    ")
    if h:
        print(f"  record a {h['document_bytes'] / 1e6:.1f} MB document ({h['images_drawn']} images drawn): median"
              f" {h['record_ms_median']:.0f} ms; longest main-thread task {h['longest_task_ms']:.0f} ms"
              f" ({h['longtask_count']} longtask entries)")
        print_cpu(h["samples"][-1].get("cpu"), "", "    ")
        pysteps.report(h["samples"][-1].get("python_steps"), "    ")
    e = figures.get("export")
    if e:
        print(f"  evidence pack of {e['versions']} versions ({e['files']} files, {e['zip_bytes'] / 1e6:.2f} MB zip):"
              f" median {e['export_ms_median']:.0f} ms vs the conversation's list alone {e['list_ms_median']:.0f} ms"
              f" → ratio {e['ratio']:.1f}; longest main-thread task {e['longest_task_ms']:.0f} ms")
    if not (d and l and s):
        return
    print(f"  diff of two 500-element versions ({d['canonical_lines'][0]}/{d['canonical_lines'][1]} canonical lines,"
          f" {d['diff_lines']} diff lines, elements {d['elements']}): difflib alone {d['difflib_ms_median']:.1f} ms,"
          f" read model diff {d['model_ms_median']:.1f} ms, drawn {d['view_ms_median']:.1f} ms → ratio {d['ratio']:.2f}")
    print(f"  list of {l['versions']} versions: drawn {l['app_ms_median']:.1f} ms ({l['items_drawn']} items) vs JS read"
          f" {l['js_ms_median']:.1f} ms ({l['records_read_by_js']} records) → ratio {l['ratio']:.2f};"
          f" of which read model (IndexedDB, JSON, validation) {l['read_model_ms_median']:.1f} ms,"
          f" drawing {l['draw_ms_median']:.1f} ms")
    print(f"  start-up with {s['courses']}×{s['scenes']}×{s['versions']} = {s['stored_versions']} versions"
          f" ({s['snapshot_chars'] / 1e6:.1f} M chars of snapshots): {s['seeded_ms_median']:.0f} ms vs none"
          f" {s['none_ms_median']:.0f} ms → ratio {s['ratio']:.3f} (paired {s['paired_ratio_median']:.3f});"
          f" scenes drawn at versions {s['seeded_scene_versions']}")
