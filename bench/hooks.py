"""Benchmark hooks: ``window.agentbarBench`` for ``python -m bench`` (DESIGN.md §13, §15).

Not shipped with the app (``dist/`` never holds it, and the app holds no code
that loads it): a benchmark page (``bench.scripts.goto_hooked``) replaces
index.html's Python with ``bench.scripts.HOOKED_MAIN``, which fetches this file
from the development server, executes it and calls ``capture(window)`` before
the app's ``main()``: the runtime's constructor is wrapped once, and
``install(window, runtime, store)`` runs on the runtime ``main()`` builds. Every function returns JSON text or a number (no proxies leak to
JavaScript); times are ``performance.now()`` milliseconds, so they line up with
what the benchmark measures in JavaScript.

What it exposes (``window.agentbarBench``):

- ``turn(text)``: a thenable; once the last turn's history write has landed (until then the
  panel reads as running, DESIGN.md §9), runs one real turn through ``runtime.send`` and
  resolves, after the runtime's own completion callback has saved it, to the
  timing record of that completion, taken from the runtime's public trace hook
  (``app.runtime.trace``, dev-only; ``app.runtime.TRACE_PHASES``): ``finish`` (``turn-end``: the
  callback starts, the turn is complete), ``saveIn`` / ``saveOut`` (``thread-save`` /
  ``thread-saved``: ``store.save``), ``end`` (``turn-ended``: the callback returns,
  the view rendered); the JavaScript side times the bridge itself.
- ``trim(n)``: cuts the shown course's *live* thread back to its first ``n``
  messages, in memory only (nothing is read or written, the store is not
  told). The session's ``base`` (the stored thread it was built on, which
  ``store.save`` checks for turns another tab saved) is left as it is: it
  still is the store's own list, so the save merges nothing. The benchmark's
  "steady" save path uses it before each turn so every repetition saves a
  thread of the same size while the store keeps the layout of the value it
  last wrote itself (the next save replaces that course's entry with one of
  the same size, through ``splice``). Returns the new length; refuses
  (returns -1) while a turn is running.
- ``resync()``: the path of a ``storage`` event from another tab
  (``runtime.on_storage_changed()``): after the benchmark rewrites the stored
  value, the shown thread is read back from it. Returns the thread's length.
- ``liveSizes()``: sizes of the shown thread's last message as held live
  (compact JSON, UTF-16 units), for the stored-size figure.
- ``profileSave(repeats)``: ``cProfile`` of what a completion does to save
  (``serialize_thread`` + ``store.save``), top functions by cumulative time; it
  profiles whichever path the store is on (the splice path when this tab wrote
  the value last).
- ``saveSteps(repeats)``: the steady (splice) save split into its steps; see
  ``save_steps``.
- ``gcLog()``: ``[start, end, generation]`` of every Python garbage collection.
- ``storageEvents()``: one record per ``storage`` event handled
  (``runtime.on_storage_changed``, traced ``storage-event`` / ``storage-event-done``): ``start``/``end``, ``getIn``/``getOut``
  (the stored value read into Python), ``readOut`` (the store's re-read done),
  ``changed`` (stage ids reported changed), ``gcBefore`` (objects tracked by
  Python's garbage collector, generation counts).

Example (the page's Python, before ``main()``)::

    hooks.capture(js.window)   # hooks: this file, executed by the benchmark page
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

__all__ = ["capture", "install"]


def _now() -> float:
    import js

    return float(js.performance.now())


def _compact(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _utf16(s: str) -> int:
    return len(s) if s.isascii() else len(s.encode("utf-16-le", "surrogatepass")) // 2


def capture(window) -> None:
    """Install the hooks on the first ``AgentRuntime`` built from now on, with its thread store (its
    first argument), as soon as it is built: its constructor is wrapped once, then put back."""
    from app.runtime import AgentRuntime

    original = AgentRuntime.__init__

    def built(runtime, store, *args, **kwargs):
        original(runtime, store, *args, **kwargs)
        AgentRuntime.__init__ = original
        install(window, runtime, store)

    AgentRuntime.__init__ = built


def install(window, runtime, store) -> None:
    """Expose ``window.agentbarBench`` when the URL asks for it (``?bench=1``); cheap otherwise."""
    if "bench=1" not in str(window.location.search):
        return
    from pyodide.ffi import create_proxy, to_js

    records: list[dict[str, float]] = []
    current: dict[str, dict[str, float]] = {}

    original_save = store.save  # profile_save and save_steps call the store itself

    def observe(phase: str, _stage_id) -> None:  # app.runtime.trace: the runtime's hook (TRACE_PHASES)
        if phase == "turn-end":
            current["record"] = {"finish": _now()}
        elif phase in ("thread-save", "thread-saved") and "record" in current:
            current["record"]["saveIn" if phase == "thread-save" else "saveOut"] = _now()
        elif phase == "turn-ended" and "record" in current:
            record = current.pop("record")
            record["end"] = _now()
            records.append(record)
        elif phase == "storage-event":
            current["event"] = {"start": _now(), "gcBefore": list(gc.get_count())}
        elif phase == "storage-event-done" and "event" in current:
            record = current.pop("event")
            record["end"] = _now()
            events.append(record)

    import gc

    events: list[dict] = []
    original_reload = store.reload
    storage = store.storage
    original_get = getattr(storage, "get_item", None)

    def timed_get(key):
        record = current.get("event")
        if record is not None:
            record["getIn"] = _now()
        try:
            return original_get(key)
        finally:
            if record is not None:
                record["getOut"] = _now()

    def timed_reload():
        try:
            changed = original_reload()
        finally:
            if "event" in current:
                current["event"]["readOut"] = _now()
        if "event" in current:
            current["event"]["changed"] = sorted(changed)
        return changed

    collections: list[list[float]] = []  # [start, end, generation] of each garbage collection

    def on_gc(phase, info):
        if phase == "start":
            collections.append([_now(), 0.0, float(info.get("generation", -1))])
        elif collections:
            collections[-1][1] = _now()

    gc.callbacks.append(on_gc)

    if original_get is not None:
        storage.get_item = timed_get
    store.reload = timed_reload
    from app.runtime.trace import trace

    trace(runtime, observe)

    async def _turn(text: str) -> str:
        before = len(records)
        for _ in range(1000):  # the last turn may still read as running until its history write lands (§9)
            session = runtime.sessions.shown
            if session is None or session.recording is None:
                break
            await asyncio.wait([session.recording], timeout=10)
            await asyncio.sleep(0)  # its release callback runs before the next send
        task = runtime.send(text)
        if task is None:
            return _compact({"error": "turn not started"})
        try:
            await task
        except asyncio.CancelledError:
            pass
        await asyncio.sleep(0)  # the completion callback runs before this resumes; be sure
        record = records[-1] if len(records) > before else {"error": "no completion recorded"}
        return _compact({**record, "messages": len(runtime.messages)})

    def turn(text: str):
        return asyncio.ensure_future(_turn(str(text)))

    def trim(n: int) -> int:
        session = runtime.sessions.shown  # the shown course's live session (messages held in memory)
        if session is None:
            return 0
        if session.task is not None:
            return -1
        session.messages = session.messages[: max(0, int(n))]  # session.base stays: see the module docstring
        return len(session.messages)

    def resync() -> int:
        runtime.on_storage_changed()
        return len(runtime.messages)

    def live_sizes() -> str:
        messages = runtime.messages
        if not messages:
            return _compact({})
        last = messages[-1].to_wire()
        results = [p.get("result") for p in last.get("content", []) if p.get("type") == "tool-call"]
        return _compact({
            "messageUtf16": _utf16(_compact(last)),
            "resultUtf16": sum(_utf16(_compact(r)) for r in results if r is not None),
            "threadUtf16": sum(_utf16(_compact(m.to_wire())) for m in messages),
            "messages": len(messages),
        })

    def profile_save(repeats: int = 5) -> str:
        import cProfile
        import io
        import pstats

        from app.projection import serialize_thread

        stage_id = runtime.stage_id
        messages = runtime.messages
        profiler = cProfile.Profile()
        profiler.enable()
        for i in range(int(repeats)):
            original_save(stage_id, serialize_thread(messages), int(_now()) + i)
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(18)
        return out.getvalue()

    def save_steps(repeats: int = 3) -> str:
        """Diagnostic split of one steady save (this tab wrote the stored value last).

        Mirrors what a completion does on that path: ``serialize_thread`` in the
        runtime, then the store's own public trace of a steady save
        (``app.store.trace.trace_save``, dev-only): the compare with the last
        written value (``unchanged()``), the new thread's fragment, ``splice_for``
        (key order and offsets over every stored thread, the entry text), the
        splice into storage, split here into what ``LocalStorage.splice_item`` does
        (UTF-8 encode of the entry only, copy to JS, ``bridge.splice``: JS compare
        with the last written value, ``TextDecoder``, slice and ``setItem``), and the
        store's bookkeeping; then the runtime's new ``session.base``. Not timed:
        ``store.save``'s merge check against ``base``, an identity test on this path
        (no other tab wrote). It writes the way a completion does, so the store stays
        on the splice path afterwards. Also reported: what the *first* splice after a
        full write does once (UTF-16 length of every entry before this course's;
        cached afterwards). When the store is not on the splice path it returns
        ``{"error": ...}`` rather than guess.
        """
        import js
        from app.projection import serialize_thread
        from app.store import STORAGE_KEY
        from app.store.trace import trace_save

        bridge = getattr(js, "agentbarStorage", None)
        if bridge is None:
            return _compact({"error": "no storage bridge (js.agentbarStorage)"})
        stage_id = runtime.stage_id
        runs = []
        for i in range(int(repeats)):
            inside: dict[str, float] = {}  # the splice into storage, split

            def splice(start: int, end: int, text: str) -> bool:
                t0 = _now()
                data = text.encode("utf-8")
                t1 = _now(); inside["  str.encode utf-8 (entry only)"] = t1 - t0
                payload = to_js(memoryview(data))
                t2 = _now(); inside["  to_js(memoryview) copy to JS"] = t2 - t1
                status = bridge.splice(STORAGE_KEY, start, end, payload)
                inside["  bridge.splice (JS: compare, decode, slice, setItem)"] = _now() - t2
                return status == "ok"

            t0 = _now()
            slim = serialize_thread(runtime.messages)
            row = {"serialize_thread (runtime)": _now() - t0}
            try:
                trace = trace_save(store, stage_id, slim, int(_now()) + i, clock=_now, splice=splice)
            except LookupError as error:
                return _compact({"error": str(error)})
            for name, ms in trace.steps.items():
                row[name] = ms
                if name == "splice into storage":
                    row.update(inside)
            t0 = _now()
            session = runtime.sessions.shown
            if session is not None:
                session.base = store.load(stage_id) or []
            row["session.base (runtime)"] = _now() - t0
            row["threads stored"] = trace.threads
            row["entry utf16 units"] = trace.entry_units
            row["replaced span utf16 units"] = trace.replaced_units
            runs.append(row)
        keys = list(runs[0]) if runs else []
        return _compact({k: sorted(r[k] for r in runs)[len(runs) // 2] for k in keys})

    api = {
        "storageEvents": create_proxy(lambda: _compact(events)),
        "gcLog": create_proxy(lambda: _compact(collections)),
        "turn": create_proxy(turn),
        "trim": create_proxy(trim),
        "resync": create_proxy(resync),
        "liveSizes": create_proxy(live_sizes),
        "profileSave": create_proxy(profile_save),
        "saveSteps": create_proxy(save_steps),
    }
    window.agentbarBench = to_js(api, dict_converter=window.Object.fromEntries)

