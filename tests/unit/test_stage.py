"""Regenerate snapshots exist in memory only and restore the scene (DESIGN.md §4, last rule)."""

import asyncio

from app.agent import DemoAgent, element_count
from app.runtime import AgentRuntime
from app.stage import StageEdits
from app.storage import MemoryStorage
from app.store import ThreadStore


def test_restore_returns_the_scene_to_the_version_before_the_call():
    edits = StageEdits()
    edits.record("s", "scene-1", "a", element_count=10)
    edits.record("s", "scene-1", "b", element_count=20)
    assert edits.version("s", "scene-1").element_count == 20
    assert edits.restore("b")
    assert edits.version("s", "scene-1").element_count == 10
    assert not edits.has_snapshot("b") and edits.has_snapshot("a")


def test_restoring_an_older_call_drops_the_later_snapshots_of_that_scene_only():
    edits = StageEdits()
    edits.record("s", "scene-1", "a", element_count=10)
    edits.record("s", "scene-2", "x", element_count=5)
    edits.record("s", "scene-1", "b", element_count=20)
    assert edits.restore("a")
    assert edits.version("s", "scene-1") is None
    assert not edits.has_snapshot("a") and not edits.has_snapshot("b")
    assert edits.has_snapshot("x") and edits.version("s", "scene-2").element_count == 5
    assert not edits.restore("a")


def test_live_regenerate_has_a_snapshot_and_a_restored_thread_has_none():
    async def scenario():
        storage = MemoryStorage()
        store = ThreadStore(storage)
        store.hydrate(0)
        runtime = AgentRuntime(store, DemoAgent(), clock=lambda: 1)
        runtime.set_stage("intro-ml")
        await runtime.send("/regenerate scene-2")
        call_id = runtime.messages[1].content[0].tool_call_id
        assert runtime.stage_edits.has_snapshot(call_id)
        assert runtime.stage_edits.version("intro-ml", "scene-2").element_count == element_count("scene-2")
        assert runtime.restore_snapshot(call_id)
        assert runtime.stage_edits.version("intro-ml", "scene-2") is None
        assert not runtime.restore_snapshot(call_id)

        fresh = ThreadStore(MemoryStorage.shared_with(storage))
        fresh.hydrate(0)
        reloaded = AgentRuntime(fresh, DemoAgent(), clock=lambda: 2)
        reloaded.set_stage("intro-ml")
        restored_id = reloaded.messages[1].content[0].tool_call_id
        assert restored_id == call_id
        assert not reloaded.stage_edits.has_snapshot(restored_id)

    asyncio.run(scenario())


def test_failed_regenerate_records_no_version():
    async def scenario():
        store = ThreadStore(MemoryStorage())
        store.hydrate(0)
        runtime = AgentRuntime(store, DemoAgent(), clock=lambda: 1)
        runtime.set_stage("intro-ml")
        await runtime.send("/fail scene-1")
        assert runtime.stage_edits.version("intro-ml", "scene-1") is None
        assert not runtime.stage_edits.has_snapshot(runtime.messages[1].content[0].tool_call_id)

    asyncio.run(scenario())


def test_revision_moves_with_each_recorded_or_restored_version_only():
    from app.stage import StageEdits

    edits = StageEdits()
    assert edits.revision == 0
    edits.record("c", "scene-1", "call-1", element_count=3)
    assert edits.revision == 1
    assert not edits.restore("no-such-call") and edits.revision == 1  # nothing changed: the marks stay drawn
    assert edits.restore("call-1") and edits.revision == 2
