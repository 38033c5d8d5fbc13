"""Edit, regenerate and the branch picker on the runtime's thread (DESIGN.md §17): each makes a
sibling on the course's conversation tree and shows it, the agent reads the shown path only, the
course's stored thread is the shown path, history hears the choice and gives the tree back."""

import asyncio

import pytest

from app.agent import DemoAgent
from app.history.tree import Tree
from app.model import TextPart
from app.runtime import AgentRuntime
from app.storage import MemoryStorage
from app.store import ThreadStore

NOW = 1_780_000_000_000


class ReadingAgent(DemoAgent):
    """The demo agent, noting what each turn was given to read: ``(texts of history, text)``."""

    def __init__(self):
        super().__init__()
        self.requests = []

    def run(self, history, text):
        self.requests.append(([_text(m) for m in history], text))
        return super().run(history, text)


class TreeHistory:
    """A history that keeps one tree per course and answers ``branches`` with it (``HistoryPort``)."""

    keeps_conversations = False

    def __init__(self, trees=None):
        self.trees = dict(trees or {})
        self.shown = []

    def _done(self, value=None):
        future = asyncio.get_running_loop().create_future()
        future.set_result(value)
        return future

    def turn_completed(self, event, updated_at, thread=None):
        tree = self.trees.get(event.stage_id)
        self.trees[event.stage_id] = Tree.chain(thread) if tree is None else tree.grow(thread)
        return self._done(True)

    def turn_completed_in(self, task_id, event):
        return self._done(None)

    def archived(self, stage_id, messages, updated_at):
        self.trees.pop(stage_id, None)
        return self._done()

    async def head_task_id(self, stage_id, *, allocate=True):
        return "task_20261206_aaaaaa"

    async def branches(self, stage_id):
        return self.trees.get(stage_id)

    def adopted(self, stage_id, messages, updated_at):
        if stage_id not in self.trees:  # a course history lacks: its stored thread becomes a chain
            self.trees[stage_id] = Tree.chain(messages)
        return self._done(True)

    async def show_path(self, stage_id, path):
        self.shown.append((stage_id, [m["id"] for m in path]))
        tree = self.trees.get(stage_id)
        if tree is not None:
            self.trees[stage_id] = tree.grow(path)


def _text(message):
    return " ".join(p.text for p in message.content if isinstance(p, TextPart))


def make(history=None, storage=None):
    storage = storage if storage is not None else MemoryStorage()
    store = ThreadStore(storage)
    store.hydrate(NOW)
    clock = iter(range(NOW, NOW + 10_000))
    agent = ReadingAgent()
    runtime = AgentRuntime(store, agent, clock=lambda: next(clock), history=history)
    runtime.hydrate()
    runtime.set_stage("s")
    return runtime, agent, store


async def settle(rounds=8):
    for _ in range(rounds):
        await asyncio.sleep(0)


async def two_questions(runtime):
    await runtime.send("first question")
    await runtime.send("second question")
    await settle()
    return [m.id for m in runtime.messages]


def texts(runtime):
    return [_text(m) for m in runtime.messages]


async def test_edit_makes_a_sibling_question_with_a_new_id_answers_it_and_shows_it():
    runtime, agent, store = make()
    u1, a1, u2, a2 = await two_questions(runtime)
    await runtime.edit(u1, "first question, edited")
    await settle()
    path = runtime.messages
    assert [m.role for m in path] == ["user", "assistant"] and _text(path[0]) == "first question, edited"
    assert path[0].id not in (u1, a1, u2, a2) and path[1].id not in (u1, a1, u2, a2)
    assert runtime.siblings(path[0].id) == (2, 2) and runtime.siblings(u1) == (1, 2)
    assert agent.requests[-1] == ([], "first question, edited")
    assert [m["id"] for m in store.load("s")] == [path[0].id, path[1].id]  # the stored thread: the shown path


async def test_an_edit_later_in_the_thread_keeps_the_parent_and_reads_only_what_is_before_it():
    runtime, agent, _ = make()
    u1, a1, u2, _a2 = await two_questions(runtime)
    await runtime.edit(u2, "second, edited")
    await settle()
    assert [m.id for m in runtime.messages[:2]] == [u1, a1]
    new = runtime.messages[2].id
    assert new != u2 and runtime.sessions.shown.tree.parent(new) == a1
    assert runtime.siblings(new) == (2, 2)
    assert agent.requests[-1] == (["first question", _text(runtime.messages[1])], "second, edited")


async def test_regenerate_makes_a_sibling_reply_to_the_same_question_answered_anew():
    runtime, agent, store = make()
    u1, a1, u2, a2 = await two_questions(runtime)
    await runtime.regenerate(a1)
    await settle()
    assert [m.id for m in runtime.messages][:1] == [u1] and len(runtime.messages) == 2
    reply = runtime.messages[1]
    assert reply.role == "assistant" and reply.id not in (a1, a2) and _text(reply)
    assert runtime.siblings(reply.id) == (2, 2) and runtime.sessions.shown.tree.parent(reply.id) == u1
    assert agent.requests[-1] == ([], "first question")
    assert [m["id"] for m in store.load("s")] == [u1, reply.id]


async def test_the_agent_reads_the_shown_path_only_never_a_sibling():
    runtime, agent, _ = make()
    u1, a1, u2, a2 = await two_questions(runtime)
    await runtime.edit(u1, "other branch text")
    await settle()
    edited = runtime.messages[0].id
    assert runtime.show_sibling(edited, -1) == u1  # back to the first branch, and what lay under it
    assert [m.id for m in runtime.messages] == [u1, a1, u2, a2]
    await runtime.send("third question")
    await settle()
    read, _ = agent.requests[-1]
    assert read == ["first question", _text(runtime.messages[1]), "second question", _text(runtime.messages[3])]
    assert not any("other branch" in text for text in read)
    await runtime.regenerate(runtime.messages[-1].id)
    await settle()
    read, text = agent.requests[-1]
    assert text == "third question" and len(read) == 4 and not any("other branch" in t for t in read)


async def test_the_picker_shows_a_sibling_and_the_path_last_shown_under_it_and_stores_it_whole():
    history = TreeHistory()
    runtime, _, store = make(history)
    u1, a1, u2, a2 = await two_questions(runtime)
    await runtime.edit(u1, "edited")
    await settle()
    edited, reply = [m.id for m in runtime.messages]
    assert runtime.show_sibling(edited, +1) is None  # at the end: nothing changes
    assert runtime.show_sibling(u1, -1) is None  # not on the shown path
    assert runtime.show_sibling(edited, -1) == u1
    assert [m.id for m in runtime.messages] == [u1, a1, u2, a2]
    assert [m["id"] for m in store.load("s")] == [u1, a1, u2, a2]  # replaced, not merged with the old path
    assert runtime.show_sibling(u1, +1) == edited
    assert [m.id for m in runtime.messages] == [edited, reply]
    await settle()
    assert history.shown == [("s", [u1, a1, u2, a2]), ("s", [edited, reply])]
    assert [m["id"] for m in store.load("s")] == [edited, reply]


async def test_actions_are_refused_while_a_reply_runs():
    runtime, agent, store = make()
    u1, a1, u2, a2 = await two_questions(runtime)
    await runtime.edit(u1, "edited")
    await settle()
    edited = runtime.messages[0].id
    running = runtime.send("slow")
    assert running is not None and runtime.is_running
    before, asked = [m.id for m in runtime.messages], len(agent.requests)
    assert runtime.edit(edited, "again") is None
    assert runtime.regenerate(runtime.messages[1].id) is None
    assert runtime.show_sibling(edited, -1) is None
    assert [m.id for m in runtime.messages] == before and len(agent.requests) == asked
    await running
    await settle()
    assert runtime.edit(edited, "   ") is None  # blank text: nothing to send
    assert runtime.edit(runtime.messages[1].id, "a reply is no question") is None
    assert runtime.regenerate(edited) is None  # a question is no reply


async def test_the_tree_comes_back_from_history_and_shows_the_stored_branch_at_every_fork():
    history = TreeHistory()
    storage = MemoryStorage()
    runtime, _, _ = make(history, storage)
    u1, a1, u2, a2 = await two_questions(runtime)
    await runtime.regenerate(a2)
    await settle()
    second_reply = runtime.messages[3].id
    assert runtime.show_sibling(second_reply, -1) == a2
    await runtime.edit(u1, "edited")
    await settle()
    edited = runtime.messages[0].id
    assert runtime.show_sibling(edited, -1) == u1
    await settle()
    # a reload: a new runtime over the same storage and history
    reloaded, _, _ = make(history, storage)
    assert [m.id for m in reloaded.messages] == [u1, a1, u2, a2]
    await settle()
    assert reloaded.siblings(u1) == (1, 2) and reloaded.siblings(a2) == (1, 2)
    assert reloaded.show_sibling(a2, +1) == second_reply


async def test_a_tree_of_another_conversation_is_not_mixed_in():
    storage = MemoryStorage()
    first, _, _ = make(None, storage)
    u1, *_ = await two_questions(first)
    other = Tree.chain([{"id": "x1", "role": "user", "content": [{"type": "text", "text": "old"}]}])
    runtime, _, _ = make(TreeHistory({"s": other}), storage)  # history's head is another conversation
    await settle()
    assert [m.id for m in runtime.messages][:1] == [u1]
    assert runtime.siblings(u1) == (1, 1) and "x1" not in runtime.sessions.shown.tree


async def test_another_tabs_picker_move_is_followed_with_its_pickers():
    history, storage = TreeHistory(), MemoryStorage()
    tab_a, _, _ = make(history, storage)
    u1, a1, u2, a2 = await two_questions(tab_a)
    await tab_a.edit(u1, "edited")
    await settle()
    edited = tab_a.messages[0].id
    tab_b, _, _ = make(history, MemoryStorage.shared_with(storage))
    await settle()
    assert [m.id for m in tab_b.messages][:1] == [edited] and tab_b.siblings(edited) == (2, 2)
    assert tab_a.show_sibling(edited, -1) == u1
    tab_b.on_storage_changed()  # the storage event of tab A's write
    await settle()
    assert [m.id for m in tab_b.messages] == [u1, a1, u2, a2] and tab_b.siblings(u1) == (1, 2)
    await tab_b.send("third question")  # continues the path shown, saved after it
    await settle()
    assert [m.role for m in tab_b.messages] == ["user", "assistant"] * 3
    assert [m.id for m in tab_b.messages][:4] == [u1, a1, u2, a2]


async def test_new_conversation_starts_a_tree_of_its_own():
    history = TreeHistory()
    runtime, _, _ = make(history)
    u1, *_ = await two_questions(runtime)
    await runtime.edit(u1, "edited")
    await settle()
    runtime.clear_thread()
    await settle()
    assert runtime.messages == [] and len(runtime.sessions.shown.tree) == 0
    await runtime.send("a new start")
    await settle()
    assert runtime.siblings(runtime.messages[0].id) == (1, 1)


async def test_a_picker_move_keeps_the_live_messages_above_the_fork():
    runtime, _, _ = make()
    await two_questions(runtime)
    above = runtime.messages[:2]
    await runtime.edit(runtime.messages[2].id, "second, edited")
    await settle()
    edited = runtime.messages[2].id
    runtime.show_sibling(edited, -1)
    assert all(a is b for a, b in zip(runtime.messages[:2], above))  # the same objects: not drawn again
    assert texts(runtime)[2] == "second question"


class SlowTreeHistory(TreeHistory):
    """A ``TreeHistory`` whose ``branches`` answers only once ``gate`` is set (IndexedDB opening)."""

    def __init__(self, trees, gate):
        super().__init__(trees)
        self.gate = gate

    async def branches(self, stage_id):
        await self.gate.wait()
        return await super().branches(stage_id)


async def _first_reply_regenerated():
    """A tab's two questions, the first reply regenerated: (history, storage, the four first ids, the
    regenerated reply's id), for a reload over the same storage and history."""
    history, storage = TreeHistory(), MemoryStorage()
    first, _, _ = make(history, storage)
    ids = await two_questions(first)
    await first.regenerate(ids[1])
    await settle()
    return history, storage, ids, first.messages[1].id


async def test_until_historys_tree_arrives_the_painted_positions_stand_for_the_shown_path():
    history, storage, (u1, a1, u2, a2), regenerated = await _first_reply_regenerated()
    # a reload: the paint record drew the picker of the reply; history's tree comes later
    gate = asyncio.Event()
    reloaded, _, _ = make(SlowTreeHistory(history.trees, gate), storage)
    reloaded.painted_positions("s", {regenerated: (2, 2), u1: (1, 3), "elsewhere": (1, 2)})
    reloaded.painted_positions("t", {a1: (1, 4)})  # another course's record: not this one's
    await settle()
    assert [m.id for m in reloaded.messages] == [u1, regenerated]
    assert reloaded.siblings(regenerated) == (2, 2) and reloaded.siblings(u1) == (1, 3)
    assert reloaded.siblings("elsewhere") == (1, 1)  # not on the shown path
    assert reloaded.show_sibling(regenerated, -1) is None  # a picker move before the tree: kept for it
    assert [m.id for m in reloaded.messages] == [u1, regenerated]
    gate.set()
    await settle()
    assert [m.id for m in reloaded.messages] == [u1, a1, u2, a2]  # played once the tree is there
    assert reloaded.siblings(a1) == (1, 2) and reloaded.siblings(u1) == (1, 1)  # the tree's, from now on


async def test_another_tabs_history_write_brings_its_new_sibling_into_this_tabs_tree():
    history_a, storage = TreeHistory(), MemoryStorage()
    tab_a, _, _ = make(history_a, storage)
    u1, a1, u2, a2 = await two_questions(tab_a)
    history_b = TreeHistory(dict(history_a.trees))  # the same database, as tab B reads it
    tab_b, _, _ = make(history_b, MemoryStorage.shared_with(storage))
    await settle()
    await tab_a.regenerate(a1)
    await settle()
    regenerated = tab_a.messages[1].id
    assert tab_b.siblings(a1) == (1, 1)  # tab B's tree was read before tab A's history write landed
    history_b.trees = dict(history_a.trees)  # it lands; the channel says so
    tab_b.conversation_changed_elsewhere("s", "record", "task_20261206_aaaaaa")
    await settle()
    assert [m.id for m in tab_b.messages] == [u1, a1, u2, a2]  # the path shown stays
    assert tab_b.siblings(a1) == (1, 2) and regenerated in tab_b.sessions.shown.tree


class FailingTreeHistory(SlowTreeHistory):
    """History that cannot give the tree once the gate opens: it raises, or (``none``) has none."""

    def __init__(self, trees, gate, *, none=False):
        super().__init__(trees, gate)
        self.none = none

    async def branches(self, stage_id):
        await self.gate.wait()
        if self.none:
            return None
        raise RuntimeError("history failed")


@pytest.mark.parametrize("none", [False, True])
async def test_a_painted_picker_move_held_while_history_fails_is_dropped_with_a_notice(none):
    """If history fails (or has no tree), the painted pickers go and a click held on one is not kept
    for ever: it is made if the tree at hand can make it, else dropped with a notice (DESIGN.md §5, §17)."""
    history, storage, (u1, a1, u2, a2), regenerated = await _first_reply_regenerated()
    gate = asyncio.Event()
    reloaded, _, _ = make(FailingTreeHistory(history.trees, gate, none=none), storage)
    reloaded.painted_positions("s", {regenerated: (2, 2)})
    await settle()
    assert reloaded.show_sibling(regenerated, -1) is None and reloaded.notices == ()  # held for the tree
    gate.set()
    await settle()
    assert [m.id for m in reloaded.messages] == [u1, regenerated]  # the move could not be made
    assert reloaded.siblings(regenerated) == (1, 1)  # the painted picker is gone with history's answer
    assert [n.code for n in reloaded.notices] == ["branch-move-dropped"]
    assert reloaded.show_sibling(regenerated, -1) is None and [n.code for n in reloaded.notices] == [
        "branch-move-dropped"]  # not held again: nothing painted any more


async def test_two_clicks_held_on_one_painted_picker_are_both_made():
    history, storage = TreeHistory(), MemoryStorage()
    first, _, _ = make(history, storage)
    u1, a1, u2, a2 = await two_questions(first)
    await first.regenerate(a1)
    await first.regenerate(first.messages[1].id)
    await settle()
    third = first.messages[1].id
    gate = asyncio.Event()
    reloaded, _, _ = make(SlowTreeHistory(history.trees, gate), storage)
    reloaded.painted_positions("s", {third: (3, 3)})
    await settle()
    assert reloaded.show_sibling(third, -1) is None and reloaded.show_sibling(third, -1) is None
    gate.set()
    await settle()
    assert [m.id for m in reloaded.messages] == [u1, a1, u2, a2] and reloaded.notices == ()


@pytest.mark.parametrize("action", ["regenerate", "edit"])
async def test_a_branch_on_a_stored_thread_history_has_not_adopted_yet_keeps_the_replaced_messages(action):
    """A thread only ``maic-agent-threads`` holds (the TS original's, before start-up's adoption ran):
    an edit or a regenerate replaces its path there, so history adopts the stored thread first, in
    its queue before the branch's turn, and the replaced messages stay as a branch (DESIGN.md §17:
    nothing is dropped)."""
    storage = MemoryStorage()
    seeded, _, seed_store = make(None, storage)
    seed_store.save("s", [{"role": "user", "content": [{"type": "text", "text": "q1"}]},
                          {"role": "assistant", "content": [{"type": "text", "text": "a1"}]}], NOW)
    history = TreeHistory()
    runtime, _, _ = make(history, storage)
    await settle()
    question, reply = [m.id for m in runtime.messages]
    history.trees.pop("s", None)  # history has not adopted the course yet
    if action == "regenerate":
        await runtime.regenerate(reply)
    else:
        await runtime.edit(question, "q1 edited")
    await settle()
    tree = history.trees["s"]
    assert question in tree and reply in tree  # nothing the stored thread held is lost
    shown = [m.id for m in runtime.messages]
    assert [m["id"] for m in tree.path()] == shown and shown != [question, reply]


async def test_a_turn_sent_while_another_tab_shows_the_other_first_question_stays_on_its_own_path():
    """Tab B sends on the edited first question while tab A's picker shows the original one, before
    B heard of it: both threads start with a first question of one tree, so B's turn is saved on its
    own path (its branch shown, DESIGN.md §17), never appended to the path A shows."""
    history, storage = TreeHistory(), MemoryStorage()
    tab_a, _, _ = make(history, storage)
    u1, a1, u2, a2 = await two_questions(tab_a)
    await tab_a.edit(u1, "edited")
    await settle()
    edited, answer = [m.id for m in tab_a.messages]
    tab_b, _, store_b = make(history, MemoryStorage.shared_with(storage))
    await settle()
    assert tab_a.show_sibling(edited, -1) == u1  # stored now: the original first question's path
    await tab_b.send("third question")  # B has not heard the storage event yet
    await settle()
    stored = [m["id"] for m in store_b.load("s")]
    assert stored[:2] == [edited, answer] and len(stored) == 4 and u1 not in stored
    assert [m.id for m in tab_b.messages] == stored
