"""Benchmark hooks: ``window.agentbarBench`` for ``python -m bench`` (issue 4).

Installed only when the page URL has ``bench=1``; otherwise ``install`` returns
at once and the page is unchanged. Every function returns JSON text (no proxies
leak to JavaScript); times are ``performance.now()`` milliseconds, so they line
up with what the benchmark measures in JavaScript.

What it exposes (``window.agentbarBench``):

- ``turn(text)``: a thenable; runs one real turn through ``runtime.send`` and
  resolves, after the runtime's own completion callback has saved it, to the
  timing record of that completion: ``finish`` (the callback starts: the turn
  is complete), ``saveIn`` / ``saveOut`` (``store.save``), ``end`` (the callback
  returns, the view rendered); the JavaScript side times the bridge itself.
- ``resync()``: the path of a ``storage`` event from another tab
  (``runtime.on_storage_changed()``): after the benchmark rewrites the stored
  value, the shown thread is read back from it. Returns the thread's length.
- ``live_sizes()``: sizes of the shown thread's last message as held live
  (compact JSON, UTF-16 units), for the stored-size figure.
- ``profile_save(repeats)``: ``cProfile`` of what a completion does to save
  (``serialize_thread`` + ``store.save``), top functions by cumulative time.

``capture()`` / ``install_captured(window)`` let the benchmark attach to a page
whose ``main()`` does not call ``install`` (it records the runtime and store as
they are constructed).

Example (in ``main()``, after the runtime and store exist)::

    from app.browser.bench_hooks import install; install(window, runtime, store)
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

__all__ = ["capture", "install", "install_captured"]

_captured: dict[str, Any] = {}


def _now() -> float:
    import js

    return float(js.performance.now())


def _compact(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _utf16(s: str) -> int:
    return len(s) if s.isascii() else len(s.encode("utf-16-le", "surrogatepass")) // 2


def install(window, runtime, store) -> None:
    """Expose ``window.agentbarBench`` when the URL asks for it (``?bench=1``); cheap otherwise."""
    if "bench=1" not in str(window.location.search):
        return
    from pyodide.ffi import create_proxy, to_js

    records: list[dict[str, float]] = []
    current: dict[str, dict[str, float]] = {}

    original_finish = runtime._finish
    original_save = store.save

    def timed_finish(session, reply, task):
        record = current["record"] = {"finish": _now()}
        try:
            return original_finish(session, reply, task)
        finally:
            record["end"] = _now()
            records.append(record)
            current.pop("record", None)

    def timed_save(*args, **kwargs):
        record = current.get("record", {})
        record["saveIn"] = _now()
        try:
            return original_save(*args, **kwargs)
        finally:
            record["saveOut"] = _now()

    runtime._finish = timed_finish  # the done callback looks it up on the instance
    store.save = timed_save

    async def _turn(text: str) -> str:
        before = len(records)
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
        """Diagnostic split of one save into its steps, timed with ``performance.now()``.

        Mirrors what a completion does (``serialize_thread`` in the runtime, then
        ``store.save``: normalize, ``unchanged``, envelope join, UTF-8 encode, copy
        to JS, bridge ``set``); reaches into the store's internals, so any step it
        cannot find is reported as missing rather than guessed.
        """
        from app import store as store_module
        from app.projection import serialize_thread

        bridge = getattr(getattr(store, "_storage", None), "_bridge", None)
        stage_id = runtime.stage_id
        messages = runtime.messages
        runs = []
        for i in range(int(repeats)):
            t = {}
            t0 = _now()
            slim = serialize_thread(messages)
            t1 = _now(); t["serialize_thread (runtime)"] = t1 - t0
            serialize_thread(slim)
            t2 = _now(); t["serialize_thread again (store.save normalizes)"] = t2 - t1
            if bridge is not None:
                bridge.unchanged(store_module.STORAGE_KEY)
            t3 = _now(); t["unchanged() (JS compare)"] = t3 - t2
            threads = dict(getattr(store, "_threads", {}))
            if hasattr(store_module, "_Thread") and hasattr(store_module, "_envelope"):
                threads[stage_id] = store_module._Thread(slim, int(_now()) + i)
                t4 = _now()
                threads[stage_id].fragment()
                t5 = _now(); t["encode own thread (_js_json)"] = t5 - t4
                keys = [store_module._js_json(k) for k in store_module._js_key_order(threads)]
                t6 = _now(); t["encode every stage-id key (_js_json each)"] = t6 - t5; t["threads stored"] = len(keys)
                value = store_module._envelope(threads)
                t7 = _now(); t["_envelope (keys + join, cached fragments)"] = t7 - t6
                data = value.encode("utf-8")
                t8 = _now(); t["str.encode utf-8"] = t8 - t7
                payload = to_js(memoryview(data))
                t9 = _now(); t["to_js(memoryview) copy to JS"] = t9 - t8
                if bridge is not None:
                    bridge.set(store_module.STORAGE_KEY, payload)
                t10 = _now(); t["bridge.set (TextDecoder + setItem, JS)"] = t10 - t9
                t["value utf16 units"] = _utf16(value)
            runs.append(t)
        runtime.on_storage_changed()  # the store re-reads what was written behind its back
        keys = list(runs[0]) if runs else []
        return _compact({k: sorted(r[k] for r in runs)[len(runs) // 2] for k in keys})

    api = {
        "turn": create_proxy(turn),
        "resync": create_proxy(resync),
        "liveSizes": create_proxy(live_sizes),
        "profileSave": create_proxy(profile_save),
        "saveSteps": create_proxy(save_steps),
    }
    window.agentbarBench = to_js(api, dict_converter=window.Object.fromEntries)


def capture() -> None:
    """Record the ``ThreadStore`` and ``AgentRuntime`` that ``main()`` is about to construct."""
    from app.runtime import AgentRuntime
    from app.store import ThreadStore

    for cls, name in ((ThreadStore, "store"), (AgentRuntime, "runtime")):
        if getattr(cls.__init__, "_bench_captured", False):
            continue
        original = cls.__init__

        def init(self, *args, __original=original, __name=name, **kwargs):
            __original(self, *args, **kwargs)
            _captured[__name] = self

        init._bench_captured = True
        cls.__init__ = init


def install_captured(window) -> None:
    """``install`` with what ``capture`` recorded (for a ``main()`` that does not call ``install``)."""
    if "runtime" in _captured and "store" in _captured and not hasattr(window, "agentbarBench"):
        install(window, _captured["runtime"], _captured["store"])
