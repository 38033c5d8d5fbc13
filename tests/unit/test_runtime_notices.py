"""Notices raised outside the store (``AgentRuntime.add_notice``), e.g. IndexedDB unavailable (DESIGN.md §5)."""

from app.agent import DemoAgent
from app.runtime import AgentRuntime
from app.storage import MemoryStorage
from app.store import Notice, ThreadStore


def make_runtime():
    runtime = AgentRuntime(ThreadStore(MemoryStorage()), DemoAgent(delay_ms=0), clock=lambda: 1_780_000_000_000)
    runtime.hydrate()
    runtime.set_stage("intro-ml")
    return runtime


def test_added_notice_is_shown_once_and_listeners_are_told():
    runtime = make_runtime()
    calls = []
    runtime.subscribe(lambda: calls.append(1))
    runtime.add_notice(Notice("indexeddb-unavailable"))
    runtime.add_notice(Notice("indexeddb-unavailable"))  # said once
    assert [n.code for n in runtime.notices] == ["indexeddb-unavailable"]
    assert len(calls) == 1


def test_added_notice_can_be_dismissed_and_keeps_store_notices_apart():
    runtime = make_runtime()
    runtime.add_notice(Notice("indexeddb-unavailable"))
    runtime.dismiss_notice("indexeddb-unavailable")
    assert runtime.notices == ()
