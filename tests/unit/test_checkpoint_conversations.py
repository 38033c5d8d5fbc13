"""The conversation a scene checkpoint belongs to (DESIGN.md §9, §10): history's ``taskId`` of the
course's active conversation, allocated when the conversation starts, kept across a reload, new after
New conversation, the resumed one after resume; an in-memory id per conversation without history.

The page is modelled as in the browser: history and the version store over ONE record store
(``MemoryBackend``, the same queries and atomic writes as IndexedDB), and ``maic-agent-threads`` in a
``MemoryStorage`` that a "reload" (a new runtime over the same stores) reads again.
"""

from __future__ import annotations

import asyncio
import itertools

from app.agent import DemoAgent
from app.checkpoints import MemoryVersionBackend, SceneCheckpoints
from app.checkpoints.exports import replay_case
from app.checkpoints.record_backend import RecordVersionBackend
from app.checkpoints.timeline import saved_turn_ids
from app.history import HistoryService
from app.history.records import TASK_ID
from app.history.recorder import HistoryRecorder
from app.records import MemoryBackend
from app.runtime import AgentRuntime
from app.storage import MemoryStorage
from app.store import ThreadStore
from tests.unit.turn_events import ended

STAGE = "intro-ml"


class Clock:
    def __init__(self, now=1_780_000_000_000):
        self.now = now

    def __call__(self):
        self.now += 1000
        return self.now


class Page:
    """One tab: runtime, checkpoints and history over shared stores."""

    def __init__(self, records, storage, *, history_records=None, versions=None, clock=None, sleep=None):
        self.clock = clock or Clock()
        self.store = ThreadStore(storage)
        self.store.hydrate(self.clock())
        self.checkpoints = SceneCheckpoints(versions if versions is not None else RecordVersionBackend(records))
        counter = itertools.count(1)
        self.history = HistoryService(history_records if history_records is not None else records, clock=self.clock,
                                      random_bytes=lambda n: bytes([next(counter) % 256] * n))
        self.recorder = HistoryRecorder(self.history)
        agent = DemoAgent(scenes=self.checkpoints.document, **({"delay_ms": 1, "sleep": sleep} if sleep else {}))
        self.runtime = AgentRuntime(self.store, agent, clock=self.clock,
                                    history=self.recorder, checkpoints=self.checkpoints)
        self.runtime.set_stage(STAGE)

    async def send(self, text):
        await self.runtime.send(text)
        await self.settle()

    async def settle(self):
        await self.recorder.drain()
        while self.checkpoints.busy:
            await asyncio.sleep(0)

    async def summary(self, conversation):
        return await self.checkpoints.read_model.summary(conversation)


async def opened():
    records = MemoryBackend()
    await records.open()
    return records


async def test_checkpoints_carry_the_history_task_id_and_new_conversation_starts_another_id():
    records, storage = await opened(), MemoryStorage()
    tab = Page(records, storage)
    await tab.send("/regenerate scene-1")
    first = tab.runtime.conversation_id(STAGE)
    meta, turns = await tab.history.active(STAGE)
    assert TASK_ID.match(first) and meta.taskId == first and len(turns) == 1
    assert [i.conversation_id for i in await tab.checkpoints.read_model.timeline(first)] == [first]

    tab.runtime.clear_thread()  # New conversation
    assert tab.runtime.conversation_id(STAGE) is None  # the next conversation is not named yet
    await tab.send("/regenerate scene-1 again")
    second = tab.runtime.conversation_id(STAGE)
    meta, _ = await tab.history.active(STAGE)
    assert second != first and meta.taskId == second
    assert (await tab.history.get(first)).turnCount == 1  # the archived conversation keeps its id

    now, before = await tab.summary(second), await tab.summary(first)
    assert (now["count"], now["latest_checkpoint"]["version_no"]) == (1, 2)
    assert (before["count"], before["latest_checkpoint"]["version_no"]) == (1, 1)
    scene = await tab.checkpoints.read_model.list_scene(STAGE, "scene-1")
    assert [c["version_no"] for c in scene["checkpoints"]] == [2, 1]  # the scene keeps both


async def test_the_conversation_id_survives_a_reload_and_follows_a_resume():
    records, storage = await opened(), MemoryStorage()
    tab = Page(records, storage)
    await tab.send("/regenerate scene-1")
    first = tab.runtime.conversation_id(STAGE)
    tab.runtime.clear_thread()
    await tab.send("/regenerate scene-2")
    second = tab.runtime.conversation_id(STAGE)

    reloaded = Page(records, storage)
    await reloaded.checkpoints.load_stage(STAGE)
    assert reloaded.runtime.conversation_id(STAGE) is None  # nothing read before it is asked for
    assert await reloaded.runtime.conversation(STAGE, allocate=False) == second
    await reloaded.send("/regenerate scene-2 again")  # the same conversation goes on
    assert reloaded.runtime.conversation_id(STAGE) == second
    assert (await reloaded.summary(second))["count"] == 2

    current = reloaded.store.load(STAGE)
    messages = await reloaded.recorder.run(STAGE, lambda: reloaded.history.resume(
        STAGE, first, current, reloaded.store.updated_at(STAGE), reloaded.clock()))
    assert reloaded.runtime.replace_thread(STAGE, messages)
    assert await reloaded.runtime.conversation(STAGE) == first
    await reloaded.send("/regenerate scene-3")
    assert (await reloaded.summary(first))["count"] == 2
    assert (await reloaded.summary(second))["count"] == 2
    meta, turns = await reloaded.history.active(STAGE)
    assert meta.taskId == first and len(turns) == 2


async def test_a_restore_before_the_first_turn_names_the_id_that_turn_then_takes():
    records, storage = await opened(), MemoryStorage()
    tab = Page(records, storage)
    await tab.send("/regenerate scene-1")
    listed = await tab.checkpoints.read_model.list_scene(STAGE, "scene-1")
    tab.runtime.clear_thread()
    await tab.recorder.drain()
    item = await tab.runtime.restore_checkpoint(listed["checkpoints"][0]["checkpoint_id"])  # empty thread
    await tab.recorder.drain()
    assert await tab.history.head_task_id(STAGE, allocate=False) == item.conversation_id
    assert await tab.history.active(STAGE) == (None, [])  # a head, no conversation record yet
    await tab.send("hello")
    meta, _ = await tab.history.active(STAGE)
    assert meta.taskId == item.conversation_id == tab.runtime.conversation_id(STAGE)


async def test_without_history_each_conversation_gets_its_own_in_memory_id():
    failing = MemoryBackend()
    failing.fail_open = "unavailable"  # IndexedDB unusable: history unavailable, versions in memory
    tab = Page(None, MemoryStorage(), history_records=failing, versions=MemoryVersionBackend())
    await tab.send("/regenerate scene-1")
    await tab.send("/regenerate scene-2")
    first = tab.runtime.conversation_id(STAGE)
    assert TASK_ID.match(first) and tab.history.available is False
    assert (await tab.summary(first))["count"] == 2
    tab.runtime.clear_thread()
    assert await tab.runtime.conversation(STAGE, allocate=False) is None
    await tab.send("/regenerate scene-1")
    second = tab.runtime.conversation_id(STAGE)
    assert second != first and (await tab.summary(second))["count"] == 1

    bare = AgentRuntime(tab.store, DemoAgent(), clock=Clock(), checkpoints=SceneCheckpoints())  # no history at all
    bare.set_stage("linear-algebra")
    one = await bare.conversation("linear-algebra")
    assert TASK_ID.match(one) and await bare.conversation("linear-algebra") == one


async def test_head_task_id_is_allocated_once_taken_by_the_first_turn_and_by_reconcile():
    records = await opened()
    history = HistoryService(records, clock=Clock())
    assert await history.head_task_id("s", allocate=False) is None
    allocated = await history.head_task_id("s")
    assert await history.head_task_id("s") == allocated and records.raw("heads")["s"]["taskId"] == allocated
    msgs = [{"role": "user", "id": "u", "content": [{"type": "text", "text": "hi"}]}]
    await history.record_turn(ended("s", msgs, usage=None, model="demo", duration_ms=1, message_id=None), 5)
    assert (await history.active("s"))[0].taskId == allocated
    await history.archive("s", msgs, 5)
    assert await history.head_task_id("s", allocate=False) is None
    fresh = await history.head_task_id("s")
    assert fresh != allocated
    # the page closed after saving a turn but before history recorded it: start-up adopts it under the head's id
    adopted = await history.reconcile({"s": (msgs + msgs, 9)})
    history.forget_active("s")
    assert adopted == ["s"] and (await history.active("s"))[0].taskId == fresh


async def test_the_conversation_key_changes_on_new_conversation_and_resume_even_before_the_id_is_known():
    """Views keyed on the active conversation (the checkpoint bar) must see New conversation and
    resume although ``conversation_id`` reads ``None`` on both sides of the change."""
    records, storage = await opened(), MemoryStorage()
    tab = Page(records, storage)
    await tab.send("/regenerate scene-1 one")
    first = await tab.runtime.conversation(STAGE)
    seen = [tab.runtime.conversation_key(STAGE)]
    tab.runtime.clear_thread()
    await tab.settle()
    seen.append(tab.runtime.conversation_key(STAGE))
    assert seen[1][0] is None and seen[1] != seen[0]
    messages = await tab.recorder.run(STAGE, lambda: tab.history.resume(
        STAGE, first, [], tab.store.updated_at(STAGE), tab.clock()))
    tab.runtime.replace_thread(STAGE, messages)
    seen.append(tab.runtime.conversation_key(STAGE))
    assert seen[2][0] is None and seen[2] != seen[1]  # both None, still told apart
    assert await tab.runtime.conversation(STAGE, allocate=False) == first
    assert (await tab.summary(first))["count"] == 1


async def test_a_reload_while_regenerate_streams_leaves_a_version_of_no_saved_turn_that_stays_listed():
    """A reload while ``/regenerate`` streams (DESIGN.md §4: the reply is saved only when the turn
    ends): the version written when the tool call's result arrived names the head's id and the reply's
    id. After the reload the next turn takes the head and so the version, which stays in the scene's
    list and the conversation's exports but names no turn: the reply it names was never saved."""
    records, storage = await opened(), MemoryStorage()
    written, frozen = asyncio.Event(), asyncio.Event()

    async def sleep(_seconds):
        if written.is_set():
            await frozen.wait()  # the tab is gone mid-stream: never resumed

    tab = Page(records, storage, sleep=sleep)
    tab.checkpoints.on_recorded(lambda item: written.set())
    running = asyncio.ensure_future(tab.runtime.send("/regenerate scene-1"))
    await written.wait()
    while tab.checkpoints.busy:
        await asyncio.sleep(0)
    (item,) = (await tab.checkpoints.read_model.list_scene(STAGE, "scene-1"))["checkpoints"]

    reloaded = Page(records, storage)
    await reloaded.checkpoints.load_stage(STAGE)
    saved = saved_turn_ids(reloaded.runtime.messages)
    assert item["turn_id"] not in saved  # the reply that made it was never saved
    await reloaded.send("hello")
    conversation = reloaded.runtime.conversation_id(STAGE)
    saved = saved_turn_ids(reloaded.runtime.messages)
    assert len(saved) >= 1 and item["turn_id"] not in saved
    listed = await reloaded.checkpoints.read_model.list_conversation(conversation, saved)
    assert [(c["checkpoint_id"], c["turn_id"]) for c in listed["checkpoints"]] == [(item["checkpoint_id"], None)]
    import io, json, zipfile
    case = zipfile.ZipFile(io.BytesIO(await replay_case(reloaded.checkpoints.read_model, stage_id=STAGE,
                                                          conversation_id=conversation, exported_at=1,
                                                          saved_turns=saved)))
    assert json.loads(case.read("input.json"))["runtimeContext"]["fileCheckpoints"][0]["turn_id"] is None
    scene = await reloaded.checkpoints.read_model.list_scene(STAGE, "scene-1")
    assert [c["checkpoint_id"] for c in scene["checkpoints"]] == [item["checkpoint_id"]]  # the slide did change
    running.cancel()


async def test_branches_never_branch_scene_versions_a_regenerate_on_a_branch_takes_the_next_number():
    """DESIGN.md §17: scene versions are one timeline for the course, not branched. Showing another
    branch (the picker, or a search hit opened: history's ``show_path_in``) writes no version and no
    artifact and leaves the slide as it is; a tool call on a new branch records the next version."""
    records, storage = await opened(), MemoryStorage()
    tab = Page(records, storage)
    await tab.send("/regenerate scene-1 first")
    await tab.send("/regenerate scene-1 second")
    assert [v["versionNo"] for v in records.raw("versions").values()] == [1, 2]
    first_reply = tab.runtime.messages[1].id
    await tab.runtime.regenerate(first_reply)  # a new branch at the first reply: the same question again
    await tab.settle()
    assert len(tab.runtime.messages) == 2 and tab.runtime.messages[1].id != first_reply
    assert sorted(v["versionNo"] for v in records.raw("versions").values()) == [1, 2, 3]  # the next, not 2 again
    assert (await tab.checkpoints.read_model.summary(tab.runtime.conversation_id(STAGE)))["count"] == 3

    def scene_state():
        return (records.raw("versions"), records.raw("artifacts"), records.raw("snapshots"),
                tab.checkpoints.current(STAGE, "scene-1"))

    before = scene_state()
    assert before[3].version_no == 3
    assert tab.runtime.show_sibling(tab.runtime.messages[1].id, -1) == first_reply  # the picker
    await tab.settle()
    assert len(tab.runtime.messages) == 4 and scene_state() == before
    task = tab.runtime.conversation_id(STAGE)
    tree = await tab.history.branches_in(task)
    other = tree.show(tree.children(tree.path_ids()[0])[-1])  # history shows the regenerated branch again
    assert other.path_ids() != tree.path_ids()
    assert (await tab.history.show_path_in(task, other.path())).path_ids() == other.path_ids()
    await tab.settle()
    assert scene_state() == before
    assert tab.runtime.messages[1].id == first_reply and len(tab.runtime.messages) == 4  # the first branch
    await tab.runtime.regenerate(tab.runtime.messages[3].id)  # a tool call there: still the next number
    await tab.settle()
    assert sorted(v["versionNo"] for v in records.raw("versions").values()) == [1, 2, 3, 4]
    assert tab.checkpoints.current(STAGE, "scene-1").version_no == 4
