"""A turn's end is one typed event the thread store and history subscribe to; where a turn belongs
when another writer moved its course on is decided in one place; the runtime's trace hook
(DESIGN.md §4, §9, §13, §15)."""

from __future__ import annotations

import dataclasses
import doctest
import json

import pytest

import app.continuity
from app.agent import DemoAgent
from app.continuity import conversation_goes_stale, home_of_ending_turn, switched_after
from app.projection import serialize_thread
from app.runtime import TRACE_PHASES, AgentRuntime, TurnEnded
from app.runtime.trace import trace
from app.storage import MemoryStorage
from app.store import STORAGE_KEY, ThreadStore

NOW = 1_780_000_000_000


def runtime_on(store=None, **kwargs):
    runtime = AgentRuntime(store or ThreadStore(MemoryStorage()), DemoAgent(), clock=lambda: NOW, **kwargs)
    runtime.hydrate()
    runtime.set_stage("intro-ml")
    return runtime


def test_continuity_rules_and_their_examples_hold():
    assert doctest.testmod(app.continuity).failed == 0


def test_a_turn_stays_in_its_own_conversation_only_when_history_can_keep_it_and_another_writer_moved_on():
    asked = []

    def replaced():
        asked.append(True)
        return True

    assert home_of_ending_turn("t1", keeps_conversations=True, switched_to="t2", thread_replaced=replaced) == "t1"
    assert home_of_ending_turn("t1", keeps_conversations=True, switched_to="", thread_replaced=replaced) == "t1"
    assert asked == [], "another tab's signal decides without re-reading storage"
    assert home_of_ending_turn("t1", keeps_conversations=True, switched_to=None, thread_replaced=replaced) == "t1"
    assert home_of_ending_turn("t1", keeps_conversations=True, switched_to="t1",
                               thread_replaced=lambda: False) is None
    assert home_of_ending_turn(None, keeps_conversations=True, switched_to="t2", thread_replaced=replaced) is None
    assert home_of_ending_turn("t1", keeps_conversations=False, switched_to="t2", thread_replaced=replaced) is None


def test_only_resume_and_new_conversation_elsewhere_move_a_running_turn():
    assert [switched_after(kind, "t9") for kind in ("resume", "archive", "delete", "import")] == ["t9", "", None, None]


def test_a_conversation_id_goes_stale_only_on_an_idle_course_another_tab_changed():
    assert conversation_goes_stale(["a", "b", "c"], ["a", "b", "x"], ["b"]) == {"a"}
    assert conversation_goes_stale([], ["a"], []) == set()


async def test_a_turn_end_is_one_frozen_event_with_the_thread_serialized_once():
    runtime = runtime_on()
    seen: list[TurnEnded] = []
    runtime.on_turn_ended(seen.append)
    await runtime.send("hello")
    (event,) = seen
    assert event.stage_id == "intro-ml" and event.base == [] and event.at == NOW
    assert event.messages == serialize_thread(runtime.messages)
    assert event.message_id == runtime.messages[-1].id and event.model == "demo" and event.usage is not None
    assert event.duration_ms == 0 and event.dropped_turns == 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.stage_id = "other"  # type: ignore[misc]


async def test_the_thread_store_writes_before_later_subscribers_hear_of_the_turn():
    store = ThreadStore(MemoryStorage())
    runtime = runtime_on(store)
    stored_when_heard = []
    runtime.on_turn_ended(lambda event: stored_when_heard.append(store.load(event.stage_id)))
    await runtime.send("hello")
    assert stored_when_heard == [serialize_thread(runtime.messages)]


async def test_a_subscribers_pending_write_holds_the_panel_until_it_lands():
    import asyncio

    storage = MemoryStorage()
    runtime = runtime_on(ThreadStore(storage))
    gate = asyncio.get_running_loop().create_future()
    runtime.on_turn_ended(lambda event: gate)
    turn = runtime.send("hello")
    assert runtime.turn_in_flight and runtime.is_running
    await turn
    assert runtime.is_running  # the history write holds the panel...
    assert not runtime.turn_in_flight  # ...but the turn is over and its thread saved: a reload keeps it
    stored = json.loads(storage.get_item(STORAGE_KEY))["state"]["threads"]["intro-ml"]["messages"]
    assert [m["role"] for m in stored] == ["user", "assistant"]
    gate.set_result(None)
    await asyncio.sleep(0)
    assert not runtime.is_running


async def test_a_superseded_turn_publishes_nothing():
    runtime = runtime_on()
    seen = []
    runtime.on_turn_ended(seen.append)
    task = runtime.send("hello")
    runtime.clear_thread()  # New conversation discards the run's output
    with pytest.raises(BaseException):
        await task
    assert seen == []


async def test_the_trace_hook_hears_each_phase_of_a_turn_end_and_of_a_storage_event_in_order():
    runtime = runtime_on()
    phases = []
    stop = trace(runtime, lambda phase, stage_id: phases.append((phase, stage_id)))
    await runtime.send("hello")
    runtime.on_storage_changed()
    assert [p for p, _ in phases] == list(TRACE_PHASES)
    assert {s for _, s in phases} == {"intro-ml"}
    stop()
    await runtime.send("again")
    assert len(phases) == len(TRACE_PHASES)


async def test_a_turns_long_texts_are_encoded_in_slices_before_its_end_and_the_save_only_joins_them(monkeypatch):
    """A 2,000,000-character message was encoded for the thread store in the turn's done callback, one
    main-thread task of about 80 ms in the browser (a 10 MB reply: about 200 ms); the turn now encodes
    it in slices, the event loop getting its turn between them, and the save takes it as encoded."""
    import asyncio

    import app.store.encoded as encoded

    long = ("lorem ipsum 中文 " * 200_000)[:2_000_000]
    storage = MemoryStorage()
    runtime = runtime_on(ThreadStore(storage))
    ticks, slices, saved_whole = [0], [], []
    real_js_json = encoded.js_json

    def js_json(value, **kw):
        if isinstance(value, str) and len(value) == len(long):
            saved_whole.append(len(value))
        elif isinstance(value, str) and len(value) > 1000:
            slices.append(ticks[0])  # how often the event loop came round before this slice
        return real_js_json(value, **kw)

    async def ticker():
        while True:
            ticks[0] += 1
            await asyncio.sleep(0)

    monkeypatch.setattr(encoded, "js_json", js_json)
    ticking = asyncio.ensure_future(ticker())
    await runtime.send(long)
    ticking.cancel()
    assert saved_whole == [], "the save encoded the long text itself, in the turn's end"
    assert len(slices) == -(-2_000_000 // encoded.SLICE_CHARS)
    assert all(a < b for a, b in zip(slices, slices[1:])), "no other task ran between two slices"
    stored = json.loads(storage.get_item(STORAGE_KEY))
    assert stored["state"]["threads"]["intro-ml"]["messages"][0]["content"][0]["text"] == long
    assert storage.get_item(STORAGE_KEY) == real_js_json(stored)
