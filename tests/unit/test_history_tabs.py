"""Two tabs on one course: a turn that ends after the other tab made another conversation the
course's active one is kept with the conversation it continues (DESIGN.md §9), never filed into
the other tab's choice; without a history write it is merged into the stored thread (§5)."""

from __future__ import annotations

import asyncio
import itertools

from app.agent import DemoAgent
from app.history import HistoryService
from app.history.recorder import HistoryRecorder
from app.projection import serialize_thread
from app.records import MemoryBackend
from app.runtime import AgentRuntime
from app.storage import MemoryStorage
from app.store import ThreadStore
from tests.unit.held_writes import WriteHeld
from tests.unit.turn_events import ended

T0 = 1_780_000_000_000


class Clock:
    def __init__(self):
        self.now = T0

    def __call__(self):
        self.now += 1
        return self.now


class Gate:
    """The demo agent's pause between tokens: passes at once until ``close``, then waits for ``open``."""

    def __init__(self):
        self.event = asyncio.Event()
        self.event.set()

    def close(self):
        self.event.clear()

    def open(self):
        self.event.set()

    async def sleep(self, _seconds):
        await self.event.wait()


class Tab:
    """One tab: its own store, history service (own caches), recorder and runtime, over the shared
    localStorage and IndexedDB of the origin."""

    def __init__(self, storage, backend, clock, counter):
        self.gate = Gate()
        self.service = HistoryService(backend, clock=clock,
                                      random_bytes=lambda n: bytes([next(counter) % 256] * n))
        self.recorder = HistoryRecorder(self.service)
        self.store = ThreadStore(storage)
        self.runtime = AgentRuntime(self.store, DemoAgent(delay_ms=1, sleep=self.gate.sleep), clock=clock,
                                    history=self.recorder)
        self.clock = clock

    async def start(self):
        await self.service.open()
        self.runtime.hydrate()
        self.runtime.set_stage("s")

    async def turn(self, text):
        await self.runtime.send(text)
        await self.recorder.drain()
        await asyncio.sleep(0)

    async def streaming(self, text):
        """Send ``text`` with the agent held after its first token; returns the turn's task once the
        turn knows its conversation (in the browser that takes milliseconds)."""
        self.gate.close()
        task = self.runtime.send(text)
        await self.runtime._sessions["s"].conversation
        return task

    async def resume(self, task_id):
        current = self.store.load("s") or []
        messages = await self.service.resume("s", task_id, current, self.store.updated_at("s"), self.clock())
        assert self.runtime.replace_thread("s", messages)
        await self.recorder.drain()


async def two_tabs():
    storage, backend, clock, counter = MemoryStorage(), MemoryBackend(), Clock(), itertools.count()
    a = Tab(storage, backend, clock, counter)
    b = Tab(MemoryStorage.shared_with(storage), backend, clock, counter)
    await a.start()
    await b.start()
    return a, b


async def alpha_in_both(a, b) -> str:
    """Tab A's first turn "alpha", which tab B then shows; returns its conversation's task id."""
    await a.turn("alpha")
    b.runtime.on_storage_changed()
    return await a.service.head_task_id("s", allocate=False)


async def archived_then_active(a, b) -> str:
    """Tab A archives "old topic" (the conversation tab B will resume) and starts "alpha", which B
    then shows; returns the archived conversation's task id."""
    await a.turn("old topic")
    a.runtime.clear_thread()
    await a.recorder.drain()
    old = (await a.service.page("s")).items[0].taskId
    await a.turn("alpha")
    b.runtime.on_storage_changed()
    return old


async def finish(tab, task):
    for _ in range(3):
        await asyncio.sleep(0)
    tab.gate.open()
    await task
    await tab.recorder.drain()
    await asyncio.sleep(0)


def texts(messages):
    return [part["text"] for m in messages for part in m["content"] if part["type"] == "text" and m["role"] == "user"]


async def test_a_turn_ending_after_another_tab_resumed_another_conversation_stays_with_its_own():
    a, b = await two_tabs()
    old = await archived_then_active(a, b)
    current = await a.service.head_task_id("s", allocate=False)
    assert current != old

    task = await a.streaming("beta")
    await asyncio.sleep(0)
    await b.resume(old)  # tab B makes the old conversation the course's active one meanwhile
    a.runtime.on_storage_changed()  # the storage event reaches tab A while its turn runs
    await finish(a, task)

    stored = a.store.load("s")
    assert texts(stored) == ["old topic"]  # B's choice stands in localStorage
    assert [m.id for m in a.runtime.messages] == [m["id"] for m in stored]  # tab A follows it
    kept, messages, _ = await b.service.bundle(current)
    assert texts(messages) == ["alpha", "beta"] and kept.turnCount == 2  # the turn is in its own conversation
    resumed, messages, _ = await b.service.bundle(old)
    assert texts(messages) == ["old topic"] and resumed.turnCount == 1
    assert await b.service.head_task_id("s", allocate=False) == old
    assert await b.service.total("s") == 2
    assert [n.code for n in a.runtime.notices] == ["history-turn-kept"]
    assert not a.runtime.is_running


async def test_a_turn_ending_after_another_tab_started_a_new_conversation_goes_to_the_archived_one():
    a, b = await two_tabs()
    current = await alpha_in_both(a, b)

    task = await a.streaming("beta")
    await asyncio.sleep(0)
    b.runtime.clear_thread()  # New conversation in tab B: "alpha" is archived, the course is empty
    await b.recorder.drain()
    a.runtime.on_storage_changed()
    await finish(a, task)

    assert a.store.load("s") is None and a.runtime.messages == []
    kept, messages, _ = await b.service.bundle(current)
    assert texts(messages) == ["alpha", "beta"] and kept.turnCount == 2
    assert await b.service.total("s") == 1  # no stray conversation made of the lone "beta" turn
    assert await b.service.head_task_id("s", allocate=False) is None
    assert [n.code for n in a.runtime.notices] == ["history-turn-kept"]


async def test_when_history_cannot_keep_it_the_turn_is_merged_into_the_stored_thread():
    a, b = await two_tabs()
    old = await archived_then_active(a, b)

    async def refused(*_args, **_kw):
        return None  # what HistoryService's guard returns when IndexedDB fails the write

    a.service.record_turn_in = refused
    task = await a.streaming("beta")
    await asyncio.sleep(0)
    await b.resume(old)
    await finish(a, task)

    assert texts(a.store.load("s")) == ["old topic", "beta"]  # appended after the other tab's thread: not lost
    assert texts(serialize_thread(a.runtime.messages)) == ["old topic", "beta"]
    assert "history-turn-kept" not in [n.code for n in a.runtime.notices]


async def test_a_turn_of_the_same_conversation_in_the_other_tab_is_a_sibling_not_merged_after_it():
    """Both turns were sent on "alpha"'s reply: "beta" is stored as A's path (never after "gamma"'s
    reply, which its model never saw) and history keeps "gamma" beside it (DESIGN.md §17)."""
    a, b = await two_tabs()
    current = await alpha_in_both(a, b)

    task = await a.streaming("beta")
    await asyncio.sleep(0)
    await b.turn("gamma")  # the same conversation goes on in tab B
    await finish(a, task)

    assert texts(a.store.load("s")) == ["alpha", "beta"]
    assert await b.service.head_task_id("s", allocate=False) == current
    tree = await b.service.branches("s")
    reply = a.store.load("s")[1]["id"]
    assert [texts([tree.nodes[i]]) for i in tree.forks()[reply]] == [["gamma"], ["beta"]]
    assert list(a.runtime.notices) == []


async def test_a_history_write_that_hangs_leaves_the_turn_in_the_stored_thread_too(monkeypatch):
    import app.runtime
    monkeypatch.setattr(app.runtime, "RECORD_WAIT_S", 0.05)
    a, b = await two_tabs()
    old = await archived_then_active(a, b)
    never = asyncio.Event()

    async def hangs(*_args, **_kw):
        await never.wait()

    a.service.record_turn_in = hangs
    task = await a.streaming("beta")
    await asyncio.sleep(0)
    await b.resume(old)
    for _ in range(3):
        await asyncio.sleep(0)
    a.gate.open()
    await task
    await asyncio.sleep(0)
    assert texts(a.store.load("s")) == ["old topic"] and a.runtime.is_running  # held while history writes
    await asyncio.sleep(0.1)
    assert texts(a.store.load("s")) == ["old topic", "beta"] and not a.runtime.is_running
    never.set()


async def test_a_first_turn_while_another_tab_resumes_a_conversation_becomes_its_own():
    """Nothing was stored to build on, so only the other tab's history message tells the switch."""
    a, b = await two_tabs()
    await a.turn("old topic")
    a.runtime.clear_thread()
    await a.recorder.drain()
    old = (await a.service.page("s")).items[0].taskId
    b.runtime.on_storage_changed()

    task = await a.streaming("fresh question")
    await asyncio.sleep(0)
    await b.resume(old)
    a.runtime.conversation_changed_elsewhere("s", "resume", old)  # B's BroadcastChannel message
    a.runtime.on_storage_changed()
    await finish(a, task)

    assert texts(a.store.load("s")) == ["old topic"]
    _, messages, turns = await b.service.bundle(old)
    assert texts(messages) == ["old topic"] and len(turns) == 1
    assert await b.service.total("s") == 2
    fresh = [item for item in (await b.service.page("s")).items if item.taskId != old]
    _, messages, turns = await b.service.bundle(fresh[0].taskId)
    assert texts(messages) == ["fresh question"] and len(turns) == 1
    assert [n.code for n in a.runtime.notices] == ["history-turn-kept"]


async def test_a_turn_recorded_after_the_head_moved_goes_to_its_own_conversation_not_onto_the_new_head():
    """The save saw nothing (another tab's write had not arrived), but history's head moved before the
    turn's record: the record names its conversation and never writes over the other one's messages."""
    a, b = await two_tabs()
    old = await archived_then_active(a, b)
    current = await a.service.head_task_id("s", allocate=False)
    alpha = a.store.load("s")
    await b.resume(old)
    own = alpha + [{"role": "user", "id": "u-beta", "content": [{"type": "text", "text": "beta"}]}]
    await a.service.record_turn(ended("s", own, usage=None, model="demo", duration_ms=1, message_id="x",
                                      conversation_id=current), 5, own)
    _, messages, turns = await b.service.bundle(old)
    assert texts(messages) == ["old topic"] and len(turns) == 1
    _, messages, turns = await b.service.bundle(current)
    assert texts(messages) == ["alpha", "beta"] and len(turns) == 2
    assert await b.service.head_task_id("s", allocate=False) == old


async def test_a_turn_recorded_after_another_tab_archived_its_conversation_stays_in_it():
    """New conversation in another tab left the course without a head (``switched_to`` ``""``): the turn
    goes to the conversation it continued (``home_of_ending_turn``), no new head is made for it."""
    a, b = await two_tabs()
    await archived_then_active(a, b)
    current = await a.service.head_task_id("s", allocate=False)
    alpha = a.store.load("s")
    await b.service.archive("s", b.store.load("s"), 1)
    own = alpha + [{"role": "user", "id": "u-beta", "content": [{"type": "text", "text": "beta"}]}]
    await a.service.record_turn(ended("s", own, message_id="x", conversation_id=current), 5)
    _, messages, turns = await b.service.bundle(current)
    assert texts(messages) == ["alpha", "beta"] and len(turns) == 2
    assert await b.service.head_task_id("s", allocate=False) is None


async def test_resume_and_archive_never_write_a_stale_view_over_newer_turns():
    a, b = await two_tabs()
    old = await archived_then_active(a, b)
    current = await a.service.head_task_id("s", allocate=False)
    stale = b.store.load("s")  # B shows "alpha" only
    await a.turn("beta")  # recorded on the same conversation before B acts
    messages = await b.service.resume("s", old, stale, 1, a.clock())
    assert texts(messages) == ["old topic"]
    _, kept, turns = await b.service.bundle(current)
    assert texts(kept) == ["alpha", "beta"] and len(turns) == 2
    await b.service.resume("s", current, [], None, a.clock())
    await b.service.archive("s", stale, 1)
    _, kept, _ = await b.service.bundle(current)
    assert texts(kept) == ["alpha", "beta"]


async def test_a_turn_that_does_not_go_on_from_its_conversation_is_never_written_over_it():
    a, _ = await two_tabs()
    old = await archived_then_active(a, _)
    fresh = [{"role": "user", "id": "u-f", "content": [{"type": "text", "text": "fresh"}]}]
    turn = await a.service.record_turn_in(old, ended("s", fresh, usage=None, model="demo", duration_ms=1,
                                                     message_id=None))
    assert turn is not None
    _, messages, _ = await a.service.bundle(old)
    assert texts(messages) == ["old topic"]
    others = [i.taskId for i in (await a.service.page("s")).items if i.taskId != old]
    assert sorted([texts((await a.service.bundle(t))[1]) for t in others]) == [["alpha"], ["fresh"]]


async def test_another_tab_resuming_the_conversation_this_turn_continues_changes_nothing():
    a, b = await two_tabs()
    current = await alpha_in_both(a, b)
    task = await a.streaming("beta")
    a.runtime.conversation_changed_elsewhere("s", "resume", current)
    await finish(a, task)
    assert texts(a.store.load("s")) == ["alpha", "beta"] and list(a.runtime.notices) == []
    _, messages, turns = await b.service.bundle(current)
    assert texts(messages) == ["alpha", "beta"] and len(turns) == 2


# --- two tabs sending on the same reply at once: two siblings, never one after the other (§17) ---


def _question_ids(tab):
    """The ids of ``tab``'s shown user messages, in order."""
    return [m["id"] for m in serialize_thread(tab.runtime.messages) if m["role"] == "user"]


def _one_child_per_fork(path, tree):
    """True when ``path`` (slim messages) runs in ``tree`` from a first message through one child of each
    message before it: each message's parent is the message shown before it."""
    ids = [m["id"] for m in path]
    return all(tree.parent(child) == parent for parent, child in zip([None] + ids, ids))


async def _both_streaming_on_one_reply(storage, backend_a, backend_b, clock, counter):
    """Tabs A and B over one ``storage`` (B's history through ``backend_b``), both showing "alpha" and
    its reply, each with a turn running on that reply ("two from A", "two from B"). Returns
    ``(a, b, reply id, A's turn, B's turn)``."""
    a = Tab(storage, backend_a, clock, counter)
    b = Tab(MemoryStorage.shared_with(storage), backend_b, clock, counter)
    await a.start()
    await b.start()
    await alpha_in_both(a, b)
    reply = a.store.load("s")[-1]["id"]
    return a, b, reply, await a.streaming("two from A"), await b.streaming("two from B")


async def _sent_at_once(a_first: bool):
    """Tabs A and B show "alpha" and its reply; A sends "two from A" and B "two from B" on that reply at
    the same moment; the turn of ``a_first``'s tab ends (saved and recorded) first. Returns the two
    tabs, a third opened afterwards over the same storage (a reload) and the reply's id."""
    storage, backend, clock, counter = MemoryStorage(), MemoryBackend(), Clock(), itertools.count()
    a, b, reply, task_a, task_b = await _both_streaming_on_one_reply(storage, backend, backend, clock, counter)
    first, second = ((a, task_a), (b, task_b)) if a_first else ((b, task_b), (a, task_a))
    await finish(*first)
    await finish(*second)
    reloaded = Tab(MemoryStorage.shared_with(storage), backend, clock, counter)
    await reloaded.start()
    return a, b, reloaded, reply


async def _assert_siblings(a_first: bool):
    a, b, reloaded, reply = await _sent_at_once(a_first)
    tree = await b.service.branches("s")
    by_text = {texts([m])[0]: m["id"] for m in tree.texts() if m["role"] == "user"}
    two_a, two_b = by_text["two from A"], by_text["two from B"]
    assert tree.parent(two_a) == reply and tree.parent(two_b) == reply  # siblings at the fork after the reply
    assert tree.forks() == {reply: [two_a, two_b] if a_first else [two_b, two_a]}
    stored = reloaded.store.load("s")  # the branch of the tab that saved last is the one stored as shown
    assert texts(stored) == ["alpha", "two from B" if a_first else "two from A"]
    assert _one_child_per_fork(stored, tree)
    for tab in (a, b):  # each tab shows its own turn, on a path through one child per fork
        shown = serialize_thread(tab.runtime.messages)
        assert _one_child_per_fork(shown, tree), texts(shown)
        assert _question_ids(tab)[-1] == (two_a if tab is a else two_b)
    # a reload reads the same tree, both siblings kept, and shows the stored path
    again = await reloaded.service.branches("s")
    assert again.forks() == tree.forks()
    assert [m["id"] for m in serialize_thread(reloaded.runtime.messages)] == [m["id"] for m in stored]


async def test_two_tabs_sending_on_one_reply_at_once_make_two_siblings_when_the_first_sender_saves_first():
    await _assert_siblings(a_first=True)


async def test_two_tabs_sending_on_one_reply_at_once_make_two_siblings_when_the_second_sender_saves_first():
    await _assert_siblings(a_first=False)


async def test_a_turn_recorded_while_another_tab_records_its_sibling_keeps_both():
    """Tab B reads the conversation for its turn, tab A writes its turn (a sibling) to history, then B
    writes: B's write is made again of what A wrote, never over it (DESIGN.md §9, §17)."""
    storage, backend, clock, counter = MemoryStorage(), MemoryBackend(), Clock(), itertools.count()
    held = WriteHeld(backend)
    a, b, reply, task_a, task_b = await _both_streaming_on_one_reply(storage, backend, held, clock, counter)

    async def a_ends():
        await finish(a, task_a)
    held.before = a_ends
    await finish(b, task_b)

    tree = await a.service.branches("s")
    assert [texts([tree.nodes[i]]) for i in tree.forks().get(reply, [])] == [["two from A"], ["two from B"]]
    assert [n.code for n in b.runtime.notices] == []
    turns = (await a.service.bundle(await a.service.head_task_id("s", allocate=False)))[2]
    assert len(turns) == 3  # alpha, and each tab's turn
