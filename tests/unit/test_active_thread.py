"""The course's active thread made a history conversation's, through a service (app/history/active_thread.py;
DESIGN.md §9 resume, §16 another device's version of the active conversation, §15 "a view calls services")."""

from __future__ import annotations

import asyncio
import itertools

from app.agent import DemoAgent
from app.history import HistoryService
from app.history.active_thread import ActiveThread
from app.history.branching import Branching
from app.history.changes import HistoryChange
from app.history.recorder import HistoryRecorder
from app.records import MemoryBackend
from app.runtime import AgentRuntime
from app.storage import MemoryStorage
from app.store import ThreadStore

T0 = 1_780_000_000_000


class _Gate:
    def __init__(self):
        self.event = asyncio.Event()
        self.event.set()

    async def sleep(self, _seconds):
        await self.event.wait()


async def _course(pause=None, backend=None):
    """A runtime on course ``s`` over history, its thread store, recorder, service and ``ActiveThread``
    (``pause``: awaited between the slices of a search hit's look through the tree; ``backend``:
    history's record store, a new ``MemoryBackend`` when None)."""
    now, counter = itertools.count(T0), itertools.count()
    clock = lambda: next(now)  # noqa: E731
    service = HistoryService(backend or MemoryBackend(), clock=clock, random_bytes=lambda n: bytes([next(counter) % 256] * n))
    await service.open()
    recorder, store, gate = HistoryRecorder(service), ThreadStore(MemoryStorage()), _Gate()
    runtime = AgentRuntime(store, DemoAgent(delay_ms=1, sleep=gate.sleep), clock=clock, history=recorder)
    runtime.hydrate()
    runtime.set_stage("s")
    return runtime, store, service, recorder, gate, ActiveThread(runtime, store, service, recorder, clock, pause=pause)


async def _turn(runtime, recorder, text):
    await runtime.send(text)
    await recorder.drain()


def _texts(messages):
    return [part["text"] for m in messages for part in m["content"] if part.get("type") == "text"][::2]


async def test_resume_makes_a_kept_conversation_the_active_thread_in_one_write_and_history_follows():
    runtime, store, service, recorder, _, threads = await _course()
    await _turn(runtime, recorder, "old topic")
    runtime.clear_thread()
    await recorder.drain()
    old = (await service.page("s")).items[0].taskId
    await _turn(runtime, recorder, "new topic")
    messages = await threads.resume("s", old)
    assert _texts(messages) == ["old topic"] and store.load("s") == messages
    assert await service.head_task_id("s", allocate=False) == old
    assert (await service.page("s")).total == 2  # the thread it left is kept
    assert await threads.resume("s", "task_20260101_000000") is None and store.load("s") == messages


async def test_a_resumed_conversation_whose_stored_messages_carry_unknown_fields_is_written_as_the_slim_projection():
    backend = MemoryBackend()
    runtime, store, service, recorder, _, threads = await _course(backend=backend)
    await _turn(runtime, recorder, "old topic")
    runtime.clear_thread()
    await recorder.drain()
    old = (await service.page("s")).items[0].taskId
    record = backend.raw("messages")[old]
    slim = record["messages"]
    backend.put_raw("messages", {**record, "messages": [{**m, "meta": None} for m in slim]})  # another writer's
    messages = await threads.resume("s", old)
    assert messages == slim and store.load("s") == slim  # what the thread store reads back
    again = ThreadStore(store.storage)
    again.hydrate(T0 + 99)
    assert again.load("s") == slim and again.notices == []  # the next load finds nothing damaged
    await _turn(runtime, recorder, "more on it")  # goes on from the conversation, no copy of it
    page = await service.page("s")
    assert [(m.taskId, m.turnCount) for m in page.items if m.taskId == old] == [(old, 2)] and page.total == 1
    held = backend.raw("messages")[old]
    assert held["messages"][:2] == slim and len(held["messages"]) == 4 and not held.get("branches")
    # another device's version of the active conversation is written the same way
    theirs = [*slim, {"role": "user", "id": "u-x", "content": [{"type": "text", "text": "theirs"}], "meta": None}]
    assert threads.follow(HistoryChange("sync", old, "s", "sync", head=theirs))
    assert store.load("s")[-1] == {"role": "user", "id": "u-x", "content": [{"type": "text", "text": "theirs"}]}
    assert not threads.follow(HistoryChange("sync", old, "s", "sync", head=theirs))  # already shown


async def test_a_synced_head_rebuilds_the_active_thread_once_and_never_while_a_turn_runs():
    runtime, store, service, recorder, gate, threads = await _course()
    await _turn(runtime, recorder, "mine")
    task = await service.head_task_id("s", allocate=False)
    theirs = [*store.load("s"), {"role": "user", "id": "u-x", "content": [{"type": "text", "text": "theirs"}]},
              {"role": "assistant", "id": "a-x", "content": [{"type": "text", "text": "ok"}]}]
    assert not threads.follow(HistoryChange("sync", task, "s", "sync"))  # it moved no thread
    assert threads.follow(HistoryChange("sync", task, "s", "sync", head=theirs))
    assert store.load("s") == theirs and runtime.has_messages
    assert not threads.follow(HistoryChange("sync", task, "s", "sync", head=theirs))  # already shown
    gate.event.clear()
    running = runtime.send("more")
    await asyncio.sleep(0.01)
    assert not threads.follow(HistoryChange("delete", task, "s", "sync", head=[]))  # the turn keeps its thread
    gate.event.set()
    await running
    await recorder.drain()
    assert threads.follow(HistoryChange("delete", task, "s", "sync", head=[])) and not store.load("s")


async def test_a_synced_version_with_a_sibling_beside_the_same_path_gives_the_panel_its_picker_at_once():
    """DESIGN.md §16, §17: another device's version of the active conversation whose shown path is this
    tab's, with a reply regenerated there beside it: the thread stays, and its picker counts the new
    sibling without a reload (the runtime reads history's tree again)."""
    runtime, store, service, recorder, _, threads = await _course()
    await _turn(runtime, recorder, "mine")
    task = await service.head_task_id("s", allocate=False)
    path = store.load("s")
    question, answer = path
    held = await service.bundle(task)
    theirs = {"role": "assistant", "id": "a-theirs", "parentId": question["id"],
              "content": [{"type": "text", "text": "another answer"}]}
    heard = []
    service.changes.subscribe(heard.append)
    outcome = await service.apply_synced(held.meta.model_copy(update={"updatedAt": held.meta.updatedAt + 5}), path,
                                         held.turns, Branching([{"id": answer["id"], "parentId": question["id"]},
                                                                theirs]))
    assert outcome in ("remote", "merged") and heard[-1].head == path  # the active conversation, its path as shown
    assert runtime.siblings(answer["id"]) == (1, 1)
    assert not threads.follow(heard[-1])  # no thread rebuilt: it already is that path
    for _ in range(5):
        await asyncio.sleep(0)
    assert store.load("s") == path and runtime.siblings(answer["id"]) == (1, 2)


async def test_going_on_after_another_device_deleted_the_active_conversation_continues_what_was_kept_apart():
    """DESIGN.md §16: another device deleted the active conversation while this one edited its first
    question; the edit (a turn the other never had) is kept apart as a conversation of its own, now the
    course's active one, with the same path as the panel shows. The next turn goes on in it: one
    conversation, no copy of it, and every message id in one conversation only (§5)."""
    from app.history.merge import split_turns

    runtime, store, service, recorder, _, threads = await _course()
    await _turn(runtime, recorder, "first question")
    deleted = await service.head_task_id("s", allocate=False)
    seen_ids = {m["id"] for m in store.load("s")}
    await runtime.edit(store.load("s")[0]["id"], "first question, put better")
    await recorder.drain()
    heard = []
    service.changes.subscribe(heard.append)
    kept = await service.remove_synced(deleted, lambda path: [all(m.get("id") in seen_ids for m in turn)
                                                               for turn in split_turns(path)])
    assert kept and heard[-1].head == store.load("s")  # the panel already shows what was kept
    threads.follow(heard[-1])
    for _ in range(5):
        await asyncio.sleep(0)
    await _turn(runtime, recorder, "going on")
    page = await service.page("s")
    assert [item.taskId for item in page.items] == [kept] and runtime.conversation_id("s") == kept
    held = await service.bundle(kept)
    assert _texts(held.messages) == ["first question, put better", "going on"]
    assert _texts(store.load("s")) == _texts(held.messages)


async def test_opening_a_search_hit_on_another_branch_resumes_the_conversation_showing_that_branch():
    """DESIGN.md §17: opening a hit that lies on another branch shows that branch; history stores the
    choice before the resume writes the thread, so the panel, the thread store and another tab agree."""
    runtime, store, service, recorder, _, threads = await _course()
    await _turn(runtime, recorder, "lichen facts")
    await runtime.edit(runtime.messages[0].id, "moss facts")  # the edited question is shown
    await recorder.drain()
    assert _texts(store.load("s")) == ["moss facts"]
    runtime.clear_thread()
    await recorder.drain()
    old = (await service.page("s")).items[0].taskId
    await _turn(runtime, recorder, "new topic")
    messages = await threads.resume("s", old, "moss")  # on the shown path: it stays
    assert _texts(messages) == ["moss facts"] and store.load("s") == messages
    runtime.clear_thread()
    await recorder.drain()
    await _turn(runtime, recorder, "newer topic")
    messages = await threads.resume("s", old, "LICHEN")  # only on the branch not shown: it is shown
    assert _texts(messages) == ["lichen facts"] and store.load("s") == messages
    tree = await service.branches_in(old)
    assert [m["id"] for m in tree.path()] == [m["id"] for m in messages]  # history keeps the choice
    assert len(tree) == 4 and await service.head_task_id("s", allocate=False) == old
    messages = await threads.resume("s", old, "moss")  # the conversation shown already: its branch switches
    assert _texts(messages) == ["moss facts"] and store.load("s") == messages
    assert [m["id"] for m in (await service.branches_in(old)).path()] == [m["id"] for m in messages]
    assert not await threads.show_hit("s", old, "moss")  # shown now: nothing to store
    assert await threads.show_hit("s", old, "lichen") and _texts(store.load("s")) == ["moss facts"]  # history only
    assert [m["id"] for m in (await service.branches_in(old)).path()] != [m["id"] for m in messages]


async def test_a_long_conversation_is_looked_through_for_the_hit_with_pauses():
    """DESIGN.md §13: finding which branch holds the keyword of a long conversation is no long task."""
    pauses = []

    async def pause():
        pauses.append(1)

    runtime, store, service, recorder, _, threads = await _course(pause)
    await _turn(runtime, recorder, "lichen " + "words " * 40_000)
    await runtime.edit(runtime.messages[0].id, "moss " + "words " * 40_000)
    await recorder.drain()
    task = await service.head_task_id("s", allocate=False)
    assert await threads.show_hit("s", task, "lichen") and len(pauses) >= 2
    assert _texts(store.load("s"))[0].startswith("moss")  # the store is written by a resume only


async def test_a_resumed_conversation_keeps_its_time_and_place_across_the_reload_after():
    """Resuming changes no conversation's ``updatedAt`` (the list's order, DESIGN.md §9): the thread
    written is stamped as history's head is matched, so the start-up after it (``reconcile`` of what
    ``maic-agent-threads`` holds) finds them matched; and a thread that is exactly its head's shown path
    is matched again without being adopted anew, whatever its stamp."""
    runtime, store, service, recorder, _, threads = await _course()
    await _turn(runtime, recorder, "old topic")
    runtime.clear_thread()
    await recorder.drain()
    old = (await service.page("s")).items[0]
    await _turn(runtime, recorder, "new topic")
    await threads.resume("s", old.taskId)
    assert (await service._repository.head("s")).matched_at == store.updated_at("s")  # one stamp for both
    assert await service.reconcile({"s": (store.load("s"), store.updated_at("s"))}) == []
    assert await service.reconcile({"s": (store.load("s"), store.updated_at("s") + 5)}) == []  # another stamp
    assert (await service.get(old.taskId)).updatedAt == old.updatedAt
    assert [item.taskId for item in (await service.page("s")).items][-1] == old.taskId  # still the older one


async def test_a_thread_a_damaged_value_cut_short_is_mended_from_the_conversation_history_holds():
    """A damaged ``maic-agent-threads`` value (a reply's text part a number, the next question of a role
    that is none) leaves the course's thread as its first question and its last answer: read again,
    the store says the course's thread was repaired, and ``mend`` makes history's path to that answer
    the thread, so the answer is shown under its own question and a turn goes on from it without a
    branch (DESIGN.md §5, §16, §17)."""
    import json

    runtime, store, service, recorder, _, threads = await _course()
    await _turn(runtime, recorder, "first")
    await _turn(runtime, recorder, "second")
    whole = store.load("s")
    envelope = json.loads(store.storage.get_item("maic-agent-threads"))
    stored = envelope["state"]["threads"]["s"]["messages"]
    stored[1]["content"][0]["text"] = 5
    stored[2]["role"] = "tool"
    store.storage.set_item("maic-agent-threads", json.dumps(envelope))

    again = ThreadStore(store.storage)  # a reload
    again.hydrate(T0 + 10_000)
    assert [m["id"] for m in again.load("s")] == [whole[0]["id"], whole[3]["id"]]
    assert again.take_repaired() == ["s"] and again.take_repaired() == []
    now = itertools.count(T0 + 20_000)
    runtime2 = AgentRuntime(again, DemoAgent(delay_ms=1), clock=lambda: next(now), history=recorder)
    runtime2.hydrate()
    runtime2.set_stage("s")
    mended = ActiveThread(runtime2, again, service, recorder, lambda: next(now))
    assert await mended.mend("s")
    assert again.load("s") == whole and not await mended.mend("s")  # once whole, nothing to mend
    await _turn(runtime2, recorder, "third")
    tree = await service.branches("s")
    assert _texts(tree.path()) == ["first", "second", "third"] and len(tree) == 6  # no branch


async def test_a_turn_too_big_for_the_thread_store_that_history_recorded_is_said_kept_in_history():
    """localStorage full: the turn stays in memory and history records it, so the notice says the
    conversation is not saved in this browser's quick store but history keeps it (``storage-full-kept``);
    a turn history failed to record too gets the "lost on refresh" wording (DESIGN.md §5)."""
    backend = MemoryBackend()
    runtime, store, service, recorder, _, _ = await _course(backend=backend)
    await _turn(runtime, recorder, "first")
    store.storage.quota = store.storage.used + 10
    await _turn(runtime, recorder, "too big " * 100)
    assert [(n.code, n.params) for n in runtime.notices] == [("storage-full-kept", {"stage_id": "s"})]
    backend.fail_next = "quota"  # history's write of the next turn fails too
    await _turn(runtime, recorder, "lost " * 100)
    assert [n.code for n in runtime.notices] == ["storage-full"]


async def test_a_reload_after_a_turn_too_big_for_the_thread_store_shows_the_turn_history_recorded():
    """The turn kept in memory is in history, not in ``maic-agent-threads``: after a reload the stored
    thread is the start of the conversation's shown path, and ``catch_up`` (start-up's ``settle``)
    makes that path the thread, so the turn is shown again and the next one goes on below it, with no
    branch (DESIGN.md §5, §16)."""
    runtime, store, service, recorder, _, _ = await _course()
    await _turn(runtime, recorder, "first")
    store.storage.quota = store.storage.used + 10
    await _turn(runtime, recorder, "kept " * 100)
    shown = store.load("s")
    store.storage.quota = None

    again = ThreadStore(store.storage)  # a reload
    again.hydrate(T0 + 10_000)
    assert _texts(again.load("s")) == ["first"]
    now = itertools.count(T0 + 20_000)
    runtime2 = AgentRuntime(again, DemoAgent(delay_ms=1), clock=lambda: next(now), history=recorder)
    runtime2.hydrate()
    runtime2.set_stage("s")
    caught = ActiveThread(runtime2, again, service, recorder, lambda: next(now))
    pauses = []

    async def pause():
        pauses.append(1)
    await caught.settle(pause)  # start-up's step: every stored course, a task after each course written
    assert again.load("s") == shown and len(runtime2.messages) == 4  # the panel shows the kept turn
    assert pauses == [1] and not await caught.catch_up("s")  # once shown, nothing to do
    await _turn(runtime2, recorder, "after reload")
    tree = await service.branches("s")
    assert _texts(tree.path()) == ["first", "kept " * 100, "after reload"] and len(tree) == 6  # no branch
