"""AgentRuntime lifecycle rules (DESIGN.md §4), against the real ThreadStore over MemoryStorage.

Agent timing is driven by ``Ticks``: the demo agent's sleep blocks until the
test releases it, so mid-stream states are reached deterministically.
"""

import asyncio
import json
from collections import deque

import pytest

from app.agent import DemoAgent, TextDelta, element_count, reply_text, tokenize
from app.model import COMPLETE, Message, TextPart
from app.projection import STOPPED_MARKER, failed_marker, serialize_thread
from app.runtime import CANCELLED, FAILED, AgentRuntime
from app.storage import MemoryStorage
from app.store import SaveResult, STORAGE_KEY, Notice, ThreadStore

NOW = 1_780_000_000_000
REPLY_TOKENS = len(tokenize(reply_text("hello")))


async def settle(rounds: int = 8) -> None:
    """Let every runnable task run until it blocks again."""
    for _ in range(rounds):
        await asyncio.sleep(0)


class Ticks:
    """A sleep that blocks until ``advance`` releases it: one release = one agent step."""

    def __init__(self):
        self._waiting = deque()

    async def __call__(self, _seconds):
        future = asyncio.get_running_loop().create_future()
        self._waiting.append(future)
        await future

    async def advance(self, steps: int = 1) -> None:
        for _ in range(steps):
            await settle()
            while self._waiting and self._waiting[0].done():
                self._waiting.popleft()
            if self._waiting:
                self._waiting.popleft().set_result(None)
        await settle()

    async def finish(self, task) -> None:
        while not task.done():
            await self.advance()
        await settle()


class SpyStore:
    """The real ThreadStore, recording every call the runtime makes."""

    def __init__(self, store):
        self._store, self.calls = store, []

    def __getattr__(self, name):
        target = getattr(self._store, name)
        if not callable(target):
            return target

        def call(*args, **kwargs):
            self.calls.append((name, *args))
            return target(*args, **kwargs)

        return call

    def named(self, name):
        return [c for c in self.calls if c[0] == name]


def user(text):
    return Message(role="user", content=[TextPart(text=text)])


def assistant(text):
    return Message(role="assistant", content=[TextPart(text=text)], status=COMPLETE)


def seeded_storage(**threads) -> MemoryStorage:
    """A MemoryStorage already holding ``{stage_id: [Message…]}`` as another session saved them."""
    storage = MemoryStorage()
    store = ThreadStore(storage)
    store.hydrate(NOW)
    for stage_id, messages in threads.items():
        store.save(stage_id, serialize_thread(messages), NOW - 1000)
    return storage


def make(storage=None, delay_ticks=None):
    storage = storage if storage is not None else MemoryStorage()
    store = SpyStore(ThreadStore(storage))
    store.hydrate(NOW)
    store.calls.clear()
    ticks = delay_ticks or Ticks()
    clock = iter(range(NOW, NOW + 10_000))
    runtime = AgentRuntime(store, DemoAgent(sleep=ticks), clock=lambda: next(clock))
    return runtime, store, ticks, storage


def stored(storage, stage_id):
    """What a fresh tab would read for ``stage_id``."""
    store = ThreadStore(MemoryStorage.shared_with(storage))
    store.hydrate(NOW)
    return store.load(stage_id)


def texts(messages):
    return [" ".join(p.text for p in m.content if isinstance(p, TextPart)) for m in messages]


# -- stage loading ---------------------------------------------------------------


async def test_nothing_loaded_or_saved_until_stage_known():
    runtime, store, ticks, storage = make(seeded_storage(**{"intro-ml": [user("a"), assistant("b")]}))
    runtime.set_stage(None)
    assert runtime.send("hello") is None
    runtime.clear_thread()
    runtime.stop()
    await settle()
    assert store.calls == []
    assert runtime.stage_id is None and runtime.messages == [] and not runtime.has_messages
    assert stored(storage, "intro-ml") is not None


async def test_load_runs_when_stage_id_appears():
    runtime, store, _, storage = make(seeded_storage(**{"intro-ml": [user("a"), assistant("b")]}))
    seen = []
    runtime.subscribe(lambda: seen.append(texts(runtime.messages)))
    runtime.set_stage(None)
    runtime.set_stage("intro-ml")
    assert store.named("load") == [("load", "intro-ml")]
    assert texts(runtime.messages) == ["a", "b"]
    assert runtime.messages[1].status == COMPLETE and runtime.messages[0].status is None
    assert seen[-1] == ["a", "b"]


async def test_each_course_shows_its_own_thread_on_course_change():
    runtime, store, _, _ = make(seeded_storage(a=[user("in a")], b=[user("in b")]))
    runtime.set_stage("a")
    assert texts(runtime.messages) == ["in a"]
    runtime.set_stage("b")
    assert texts(runtime.messages) == ["in b"]
    runtime.set_stage("new-course")
    assert runtime.messages == [] and not runtime.has_messages
    runtime.set_stage("a")
    assert texts(runtime.messages) == ["in a"]
    assert store.named("save") == [] and store.named("clear") == []


# -- runs and saving -------------------------------------------------------------


async def test_saved_once_per_completed_turn_not_mid_stream():
    runtime, store, ticks, storage = make()
    runtime.set_stage("intro-ml")
    writes = storage.writes
    task = runtime.send("hello")
    assert runtime.is_running and [m.role for m in runtime.messages] == ["user", "assistant"]
    assert runtime.messages[1].status.type == "running"
    await ticks.advance(REPLY_TOKENS // 2)
    partial = texts(runtime.messages)[1]
    assert partial and partial != reply_text("hello")
    assert store.named("save") == [] and storage.writes == writes
    await ticks.finish(task)
    assert not runtime.is_running
    assert len(store.named("save")) == 1 and storage.writes == writes + 1
    assert runtime.messages[1].status == COMPLETE
    saved = stored(storage, "intro-ml")
    assert saved[1]["content"] == [{"type": "text", "text": reply_text("hello")}]
    task = runtime.send("again")
    await ticks.finish(task)
    assert len(store.named("save")) == 2
    assert len(stored(storage, "intro-ml")) == 4


async def test_save_is_stamped_with_the_clock_at_completion():
    runtime, store, ticks, storage = make()
    runtime.set_stage("s")
    await ticks.finish(runtime.send("hi"))
    (_, stage_id, messages, updated_at), = store.named("save")
    assert stage_id == "s" and isinstance(updated_at, int) and updated_at >= NOW
    assert messages == serialize_thread(runtime.messages)


async def test_run_saved_under_course_it_started_on_after_switch():
    runtime, store, ticks, storage = make(seeded_storage(b=[user("b's own")]))
    runtime.set_stage("a")
    task = runtime.send("hello")
    await ticks.advance(3)
    runtime.set_stage("b")
    assert texts(runtime.messages) == ["b's own"] and not runtime.is_running
    await ticks.finish(task)
    assert [c[1] for c in store.named("save")] == ["a"]
    assert texts(runtime.messages) == ["b's own"], "the shown course is untouched"
    assert [m["content"][0]["text"] for m in stored(storage, "b")] == ["b's own"]
    assert stored(storage, "a")[1]["content"][0]["text"] == reply_text("hello")
    runtime.set_stage("a")
    assert texts(runtime.messages) == ["hello", reply_text("hello")]


async def test_switching_back_shows_the_run_still_in_flight():
    runtime, store, ticks, _ = make()
    runtime.set_stage("a")
    task = runtime.send("hello")
    await ticks.advance(2)
    runtime.set_stage("b")
    await ticks.advance(2)
    runtime.set_stage("a")
    assert runtime.is_running and runtime.messages[1].status.type == "running"
    assert texts(runtime.messages)[1] == "".join(tokenize(reply_text("hello"))[:4])
    assert store.named("save") == []
    await ticks.finish(task)
    assert not runtime.is_running and texts(runtime.messages)[1] == reply_text("hello")


async def test_events_of_a_background_run_do_not_notify_the_shown_course():
    runtime, _, ticks, _ = make()
    runtime.set_stage("a")
    task = runtime.send("hello")
    runtime.set_stage("b")
    seen = []
    runtime.subscribe(lambda: seen.append(1))
    await ticks.advance(3)
    assert seen == []
    await ticks.finish(task)


async def test_send_is_ignored_while_the_course_runs_or_text_is_blank():
    runtime, _, ticks, _ = make()
    runtime.set_stage("a")
    assert runtime.send("   ") is None and runtime.messages == []
    task = runtime.send("first")
    assert runtime.send("second") is None
    assert texts(runtime.messages)[0] == "first" and len(runtime.messages) == 2
    runtime.set_stage("b")
    other = runtime.send("on b")
    assert other is not None, "another course may run at the same time"
    await ticks.finish(task)
    await ticks.finish(other)


async def test_regenerate_turn_is_saved_as_the_slim_projection():
    runtime, _, ticks, storage = make()
    runtime.set_stage("a")
    await ticks.finish(runtime.send("/regenerate scene-1 brighter"))
    part = runtime.messages[1].content[0]
    assert len(part.result["details"]["content"]["elements"]) == element_count("scene-1"), "live result stays heavy"
    raw = storage.dump()[STORAGE_KEY]
    assert "base64" not in raw and len(raw) < 2000
    saved_part = stored(storage, "a")[1]["content"][0]
    assert saved_part["toolName"] == "regenerate_scene" and "isError" not in saved_part
    assert saved_part["result"]["details"]["content"]["elements"] == [{}] * element_count("scene-1")


async def test_failed_tool_call_is_saved_as_error_with_its_result():
    runtime, _, ticks, storage = make()
    runtime.set_stage("a")
    await ticks.finish(runtime.send("/fail scene-2"))
    part = stored(storage, "a")[1]["content"][0]
    assert part["isError"] is True and part["result"]["details"]["content"] is None
    assert runtime.messages[1].status == COMPLETE


# -- stop ----------------------------------------------------------------------------


async def test_stopped_turn_saved_with_interrupted_tool_call_as_error():
    runtime, store, ticks, storage = make()
    runtime.set_stage("a")
    task = runtime.send("/regenerate scene-1")
    await ticks.advance(1)  # the tool call started, its result is 3 ticks away
    part = runtime.messages[1].content[0]
    assert part.result is None and part.is_error is None
    runtime.stop()
    await settle()
    assert task.done() and not runtime.is_running
    assert runtime.messages[1].status == CANCELLED
    assert part.is_error is True and part.result is None
    assert len(store.named("save")) == 1
    saved = stored(storage, "a")[1]["content"][0]
    assert saved["isError"] is True and "result" not in saved
    runtime2, *_ = make(storage)
    runtime2.set_stage("a")
    restored = runtime2.messages[1].content[0]
    assert restored.is_error is True and restored.result is None


async def test_stopped_text_turn_is_saved_with_what_it_had():
    runtime, store, ticks, storage = make()
    runtime.set_stage("a")
    task = runtime.send("hello")
    await ticks.advance(4)
    runtime.stop()
    await settle()
    await ticks.advance(5)
    expected = "".join(tokenize(reply_text("hello"))[:4])
    assert task.cancelled() and texts(runtime.messages)[1] == expected
    assert stored(storage, "a")[1]["content"] == [{"type": "text", "text": expected}, STOPPED_MARKER]
    assert len(store.named("save")) == 1
    reloaded, *_ = make(storage)
    reloaded.set_stage("a")
    assert reloaded.messages[1].status == CANCELLED and texts(reloaded.messages)[1] == expected


async def test_stop_before_the_turn_starts_still_completes_it():
    runtime, store, ticks, storage = make()
    runtime.set_stage("a")
    runtime.send("hello")
    runtime.stop()
    await settle()
    assert not runtime.is_running and runtime.messages[1].status == CANCELLED
    assert stored(storage, "a")[1] == {"role": "assistant", "id": runtime.messages[1].id, "content": [STOPPED_MARKER]}
    assert runtime.send("next") is not None
    reloaded, *_ = make(storage)
    reloaded.set_stage("a")
    assert [m.role for m in reloaded.messages] == ["user", "assistant"]
    assert reloaded.messages[1].status == CANCELLED and reloaded.messages[1].content == []


async def test_agent_error_ends_the_turn_as_failed_and_saves_it():
    class Failing:
        def mask_secret(self, text):
            return text

        async def run(self, history, text):
            yield TextDelta("partial")
            raise RuntimeError("backend down")

    storage = MemoryStorage()
    store = ThreadStore(storage)
    store.hydrate(NOW)
    runtime = AgentRuntime(store, Failing(), clock=lambda: NOW)
    runtime.set_stage("a")
    task = runtime.send("hi")
    await asyncio.gather(task, return_exceptions=True)
    await settle()
    assert not runtime.is_running and runtime.messages[1].status == FAILED
    # What it had, then the failure (DESIGN.md §5: nothing lost silently); a reload shows it failed.
    assert stored(storage, "a")[1]["content"] == [{"type": "text", "text": "partial"}, failed_marker(None)]
    reloaded = AgentRuntime(ThreadStore(storage), Failing(), clock=lambda: NOW)
    reloaded.hydrate()
    reloaded.set_stage("a")
    assert reloaded.messages[1].status == FAILED and [p.text for p in reloaded.messages[1].content] == ["partial"]


# -- new conversation ------------------------------------------------------------------


async def test_new_conversation_mid_run_discards_late_output_and_clears_only_that_course():
    runtime, store, ticks, storage = make(seeded_storage(a=[user("old a")], b=[user("old b")]))
    runtime.set_stage("a")
    task = runtime.send("/regenerate scene-1")
    await ticks.advance(2)
    assert runtime.has_messages and runtime.is_running
    runtime.clear_thread()
    assert runtime.messages == [] and not runtime.has_messages and not runtime.is_running
    assert stored(storage, "a") is None
    await ticks.advance(20)
    await asyncio.gather(task, return_exceptions=True)
    await settle()
    assert runtime.messages == [] and store.named("save") == []
    assert stored(storage, "a") is None
    assert [m["content"][0]["text"] for m in stored(storage, "b")] == ["old b"]
    fresh = runtime.send("after")
    await ticks.finish(fresh)
    assert [m["role"] for m in stored(storage, "a")] == ["user", "assistant"]


async def test_new_conversation_on_idle_course_empties_it():
    runtime, store, _, storage = make(seeded_storage(a=[user("old a")], b=[user("old b")]))
    runtime.set_stage("a")
    runtime.clear_thread()
    assert store.named("clear") == [("clear", "a")]
    assert runtime.messages == [] and stored(storage, "a") is None and stored(storage, "b") is not None
    runtime.set_stage("b")
    runtime.set_stage("a")
    assert runtime.messages == []


async def test_new_conversation_does_not_cancel_a_run_on_another_course():
    runtime, store, ticks, storage = make()
    runtime.set_stage("a")
    task = runtime.send("hello")
    runtime.set_stage("b")
    runtime.clear_thread()
    await ticks.finish(task)
    assert [c[1] for c in store.named("save")] == ["a"]
    assert len(stored(storage, "a")) == 2


# -- other tabs ------------------------------------------------------------------------


async def test_storage_event_refreshes_idle_shown_course():
    runtime, _, _, storage = make(seeded_storage(a=[user("v1")]))
    runtime.set_stage("a")
    other_tab = ThreadStore(MemoryStorage.shared_with(storage))
    other_tab.hydrate(NOW)
    other_tab.save("a", serialize_thread([user("v1"), assistant("from the other tab")]), NOW + 5)
    seen = []
    runtime.subscribe(lambda: seen.append(texts(runtime.messages)))
    runtime.on_storage_changed()
    assert texts(runtime.messages) == ["v1", "from the other tab"]
    assert seen and seen[-1] == ["v1", "from the other tab"]


async def test_storage_event_for_another_course_leaves_the_shown_thread():
    runtime, _, _, storage = make(seeded_storage(a=[user("v1")]))
    runtime.set_stage("a")
    shown = runtime.messages
    other_tab = ThreadStore(MemoryStorage.shared_with(storage))
    other_tab.hydrate(NOW)
    other_tab.save("b", serialize_thread([user("b")]), NOW + 5)
    runtime.on_storage_changed()
    assert runtime.messages == shown
    runtime.set_stage("b")
    assert texts(runtime.messages) == ["b"]


async def test_storage_event_does_not_replace_a_running_thread_and_its_save_keeps_the_other_tabs_turn():
    runtime, _, ticks, storage = make(seeded_storage(a=[user("v1")]))
    runtime.set_stage("a")
    task = runtime.send("hello")
    await ticks.advance(2)
    other_tab = ThreadStore(MemoryStorage.shared_with(storage))
    other_tab.hydrate(NOW)
    other_tab.save("a", serialize_thread([user("v1"), user("other")]), NOW + 5)
    runtime.on_storage_changed()
    assert texts(runtime.messages)[:2] == ["v1", "hello"] and runtime.is_running
    await ticks.finish(task)
    saved = [m["content"][0]["text"] for m in stored(storage, "a")]
    assert saved[:3] == ["v1", "other", "hello"] and len(saved) == 4
    assert texts(runtime.messages)[:3] == ["v1", "other", "hello"]


async def test_two_tabs_finishing_turns_on_one_course_keep_both_turns():
    tab_a, _, ticks_a, storage = make()
    tab_a.set_stage("a")
    store_b = ThreadStore(MemoryStorage.shared_with(storage))
    store_b.hydrate(NOW)
    tab_b = AgentRuntime(store_b, DemoAgent(), clock=lambda: NOW + 1)
    tab_b.set_stage("a")
    task = tab_a.send("from A")
    await ticks_a.advance(2)
    await tab_b.send("from B")
    await ticks_a.finish(task)
    users = [m["content"][0]["text"] for m in stored(storage, "a") if m["role"] == "user"]
    assert users == ["from B", "from A"]
    assert texts(tab_a.messages)[0] == "from B" and texts(tab_a.messages)[2] == "from A"


async def test_a_turn_finishing_after_another_tab_cleared_the_course_is_kept_alone():
    runtime, _, ticks, storage = make(seeded_storage(a=[user("old")]))
    runtime.set_stage("a")
    task = runtime.send("new")
    await ticks.advance(1)
    other_tab = ThreadStore(MemoryStorage.shared_with(storage))
    other_tab.hydrate(NOW)
    other_tab.clear("a")
    await ticks.finish(task)
    assert [m["content"][0]["text"] for m in stored(storage, "a") if m["role"] == "user"] == ["new"]


# -- notices and listeners ------------------------------------------------------------------


async def test_store_notices_are_shown_once_each():
    storage = MemoryStorage(available=False)
    store = ThreadStore(storage)
    runtime = AgentRuntime(store, DemoAgent(), clock=lambda: NOW)
    runtime.hydrate()
    runtime.set_stage("a")
    await runtime.send("one")
    await runtime.send("two")
    assert [n.code for n in runtime.notices] == ["storage-unavailable"]
    assert texts(runtime.messages)[2] == "two"


async def test_repeated_notices_are_not_repeated_but_distinct_ones_are_added():
    class NoisyStore:
        queue = [[Notice("storage-full", {"stage_id": "a"})], [Notice("storage-full", {"stage_id": "a"})],
                 [Notice("storage-pruned", {"count": 1, "stage_ids": ["x"]})]]

        def load(self, stage_id):
            return None

        def save(self, *args, **kwargs):
            return SaveResult(written=False, kept_in_memory=True)

        def take_notices(self):
            return self.queue.pop(0) if self.queue else []

        def memory_only(self):
            return frozenset({"a"})

        def notice_holds(self, notice):
            return True

    runtime = AgentRuntime(NoisyStore(), DemoAgent(), clock=lambda: NOW)
    seen = []
    runtime.subscribe(lambda: seen.append(runtime.notices))
    runtime.set_stage("a")
    await runtime.send("one")
    await runtime.send("two")
    assert [n.code for n in runtime.notices] == ["storage-full", "storage-pruned"]
    assert seen, "listeners hear about notices"


async def test_corrupt_value_notice_appears_when_the_course_loads():
    storage = MemoryStorage()
    storage.set_item(STORAGE_KEY, "{not json")
    store = ThreadStore(storage)
    store.hydrate(NOW)  # the browser layer hydrates before the runtime shows a course
    runtime = AgentRuntime(store, DemoAgent(), clock=lambda: NOW)
    runtime.set_stage("a")
    (notice,) = runtime.notices
    assert notice.code == "storage-corrupt" and notice.params["backup_key"] in storage.dump()


async def test_subscribe_notifies_every_change_until_unsubscribed():
    runtime, _, ticks, _ = make()
    calls = []
    unsubscribe = runtime.subscribe(lambda: calls.append((runtime.is_running, len(runtime.messages))))
    runtime.set_stage("a")
    task = runtime.send("hello")
    assert calls[-1] == (True, 2)
    await ticks.advance(3)
    streamed = len(calls)
    assert streamed >= 4
    await ticks.finish(task)
    assert calls[-1] == (False, 2)
    unsubscribe()
    unsubscribe()
    runtime.set_stage("b")
    assert calls[-1] == (False, 2) and len(calls) > streamed


async def test_returning_to_an_idle_course_reads_what_another_tab_saved_meanwhile():
    runtime, _, _, storage = make(seeded_storage(b=[user("b v1")]))
    runtime.set_stage("b")
    runtime.set_stage("a")
    other_tab = ThreadStore(MemoryStorage.shared_with(storage))
    other_tab.hydrate(NOW)
    other_tab.save("b", serialize_thread([user("b v2")]), NOW + 5)
    runtime.on_storage_changed()
    runtime.set_stage("b")
    assert texts(runtime.messages) == ["b v2"]


async def test_storage_full_notice_goes_away_once_a_save_succeeds_again():
    storage = MemoryStorage()
    runtime, _, ticks, storage = make(storage)
    runtime.set_stage("a")
    storage.quota = storage.used + 10
    task = runtime.send("does not fit")
    await ticks.finish(task)
    assert [n.code for n in runtime.notices] == ["storage-full"]
    storage.quota = None
    task = runtime.send("fits again")
    await ticks.finish(task)
    assert runtime.notices == ()
    assert len(stored(storage, "a")) == 4


async def test_dismissed_notice_is_hidden():
    runtime = AgentRuntime(ThreadStore(MemoryStorage(available=False)), DemoAgent(), clock=lambda: NOW)
    runtime.hydrate()
    runtime.set_stage("a")
    assert [n.code for n in runtime.notices] == ["storage-unavailable"]
    seen = []
    runtime.subscribe(lambda: seen.append(len(runtime.notices)))
    runtime.dismiss_notice("storage-unavailable")
    assert runtime.notices == () and seen == [0]


# -- a thread kept in memory (DESIGN.md §5), another tab's damaged write -------------------------


async def test_storage_full_notice_names_its_course_and_stays_while_only_that_course_is_in_memory():
    runtime, _, ticks, storage = make(seeded_storage(small=[user("q"), assistant("a")]))
    runtime.set_stage("full")
    await ticks.finish(runtime.send("fits"))
    storage.quota = storage.used + 600
    await ticks.finish(runtime.send("does not fit " * 100))
    assert [(n.code, n.params) for n in runtime.notices] == [("storage-full", {"stage_id": "full"})]
    runtime.set_stage("small")
    await ticks.finish(runtime.send("hi"))  # room for this one: written, but 'full' is still in memory
    assert len(stored(storage, "small")) == 4 and len(stored(storage, "full")) == 2
    assert [n.params["stage_id"] for n in runtime.notices if n.code == "storage-full"] == ["full"]
    runtime.set_stage("full")
    runtime.clear_thread()
    assert runtime.notices == ()


async def test_another_tabs_damaged_write_keeps_this_tabs_turns_shown_and_saved_back():
    runtime, _, ticks, storage = make()
    runtime.set_stage("a")
    await ticks.finish(runtime.send("one"))
    await ticks.finish(runtime.send("two"))
    MemoryStorage.shared_with(storage).set_item(STORAGE_KEY, "garbage{")
    runtime.on_storage_changed()
    assert texts(runtime.messages)[::2] == ["one", "two"]
    assert [n.code for n in runtime.notices] == ["storage-corrupt"]
    backup_key = runtime.notices[0].params["backup_key"]
    assert storage.dump()[backup_key] == "garbage{"
    await ticks.finish(runtime.send("three"))
    assert [m["content"][0]["text"] for m in stored(storage, "a") if m["role"] == "user"] == ["one", "two", "three"]
    assert [n.code for n in runtime.notices] == ["storage-corrupt"]


async def test_another_tabs_damaged_write_during_a_stream_keeps_the_earlier_turns():
    runtime, _, ticks, storage = make()
    runtime.set_stage("a")
    await ticks.finish(runtime.send("one"))
    task = runtime.send("streaming")
    await ticks.advance(2)
    MemoryStorage.shared_with(storage).set_item(STORAGE_KEY, '{"state":{"threads":{"a":{"messages":"oops"}}}}')
    runtime.on_storage_changed()
    await ticks.finish(task)
    assert [m["content"][0]["text"] for m in stored(storage, "a") if m["role"] == "user"] == ["one", "streaming"]


async def test_another_tabs_removal_of_the_key_is_followed():
    runtime, _, ticks, storage = make()
    runtime.set_stage("a")
    await ticks.finish(runtime.send("one"))
    MemoryStorage.shared_with(storage).remove_item(STORAGE_KEY)
    runtime.on_storage_changed()
    assert runtime.messages == [] and runtime.notices == ()


async def test_threads_restored_shows_the_restored_thread_of_the_idle_shown_course_and_writes_nothing():
    """DESIGN.md §14: a restore writes courses' threads into the store; the shown course shows its own
    at once, another course's is read when it is shown, and nothing is written by the runtime."""
    storage = MemoryStorage()
    store = ThreadStore(storage)
    runtime = AgentRuntime(store, DemoAgent(), clock=lambda: NOW)
    runtime.hydrate()
    runtime.set_stage("a")
    seen = []
    runtime.subscribe(lambda: seen.append(len(runtime.messages)))
    thread = [{"role": "user", "id": "u1", "content": [{"type": "text", "text": "restored"}]},
              {"role": "assistant", "id": "a1", "content": [{"type": "text", "text": "answer"}]}]
    store.save("a", thread, NOW - 5)
    store.save("b", thread, NOW - 5)
    assert runtime.messages == []  # the store alone does not tell the runtime
    written = storage.get_item(STORAGE_KEY)
    runtime.threads_restored({"a", "b"})
    assert texts(runtime.messages) == ["restored", "answer"] and seen[-1] == 2
    assert storage.get_item(STORAGE_KEY) == written
    runtime.threads_restored({"b"})  # another course: the shown one is not reloaded
    runtime.set_stage("b")
    assert texts(runtime.messages) == ["restored", "answer"]
