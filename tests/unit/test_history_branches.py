"""History keeps conversation trees (DESIGN.md §17): the stored form, every write path keeping the
branches, a turn on a branch growing its conversation, search over every branch, and the port the
panel reads and switches branches through. On the in-memory backend (the page's queries)."""

from __future__ import annotations

import asyncio
import doctest
import itertools

from app.history import HistoryService
from app.history.changes import HistoryChange
from app.history.recorder import HistoryRecorder
from app.history.records import Stats, TaskMeta, TurnMeta, Usage, iso
from app.history.repository import Writes
from app.history.tree import Tree
from app.records import SCHEMA, MemoryBackend
from tests.unit.held_writes import WriteHeld
from tests.unit.turn_events import ended

T0 = 1_780_000_000_000
TASK = "task_20260528_seeded"


class Clock:
    def __init__(self, now=T0 + 1_000):
        self.now = now

    def __call__(self):
        self.now += 1
        return self.now


def msg(role, ident, text):
    return {"role": role, "id": ident, "content": [{"type": "text", "text": text}]}


U1, A1 = msg("user", "u1", "what is chlorophyll"), msg("assistant", "a1", "a green pigment")
U2, A2 = msg("user", "u2", "and in autumn"), msg("assistant", "a2", "it breaks down: carotenoids show")
A2B = msg("assistant", "a2b", "the leaves turn yellow")  # a regenerated answer, shown
PATH = [U1, A1, U2, A2B]


def tree_record() -> tuple[list[dict], list[dict], dict]:
    """The stored form of a conversation whose second answer was regenerated: shown a2b, a2 beside."""
    return Tree.chain([U1, A1, U2, A2]).grow(PATH).record()


def service(backend, clock=None, changes=None):
    counter = itertools.count()
    kw = {"changes": changes} if changes is not None else {}
    return HistoryService(backend, clock=clock or Clock(), random_bytes=lambda n: bytes([next(counter) % 256] * n),
                          **kw)


async def seeded(stage="s", *, head=True) -> MemoryBackend:
    """A store holding conversation ``TASK`` of course ``stage`` with two branches, its course's head."""
    backend = MemoryBackend()
    await backend.open()
    messages, branches, shown = tree_record()
    meta = TaskMeta(taskId=TASK, taskName="what is chlorophyll", stageId=stage, createdAt=T0, updatedAt=T0,
                    turnCount=3, durationMs=30, stats=Stats(inputTokens=3, outputTokens=6, totalTokens=9))
    turns = [TurnMeta(turnId=n, timestamp=iso(T0), usage=Usage(inputTokens=1, outputTokens=2, totalTokens=3),
                      duration=10, messageId=m) for n, m in enumerate(["a1", "a2", "a2b"], start=1)]
    writes = Writes()
    writes.keep(meta, messages, turns, branches=branches, shown=shown)
    if head:
        writes.make_head(stage, TASK, 1)
    await backend.write(writes.ops)
    return backend


def stored_tree(backend, task_id=TASK) -> Tree:
    record = backend.raw("messages")[task_id]
    return Tree.from_record(record["messages"], record.get("branches"), record.get("shown"))


def assert_both_branches(backend, task_id=TASK):
    tree = stored_tree(backend, task_id)
    assert {"a2", "a2b"} <= set(tree.ids) and tree.parent("a2") == tree.parent("a2b") == "u2"
    return tree


# -- (a) the stored form -----------------------------------------------------------------------

def test_schema_version_4_declares_the_tables_of_version_3_and_a_record_may_hold_a_tree():
    import app.history.branch_writes
    import app.history.branches

    assert max(SCHEMA) == 4 and SCHEMA[4] == SCHEMA[3]  # same tables and indexes: nothing to migrate
    assert doctest.testmod(app.history.branches).failed == 0
    assert doctest.testmod(app.history.branch_writes).failed == 0


async def test_a_record_stored_before_branches_reads_as_a_chain():
    backend = MemoryBackend()
    await backend.open()
    writes = Writes()
    meta = TaskMeta(taskId=TASK, taskName="t", stageId="s", createdAt=T0, updatedAt=T0)
    writes.keep(meta, [U1, A1], [])
    await backend.write(writes.ops)
    assert set(backend.raw("messages")[TASK]) == {"taskId", "messages"}  # a chain is written as before
    tree = await service(backend).branches_in(TASK)
    assert [m["id"] for m in tree.path()] == ["u1", "a1"] and tree.siblings("a1") == (1, 1)


# -- (b) every write path keeps the branches ---------------------------------------------------

async def test_a_turn_on_the_shown_path_keeps_the_other_branch():
    backend = await seeded()
    svc = service(backend)
    thread = PATH + [msg("user", "u3", "why"), msg("assistant", "a3", "less light")]
    await svc.record_turn(ended("s", thread, message_id="a3", conversation_id=TASK), 2)
    tree = assert_both_branches(backend)
    assert [m["id"] for m in tree.path()] == ["u1", "a1", "u2", "a2b", "u3", "a3"]
    # this tab's next turn starts from what it remembers of its write: the branches are remembered too
    thread += [msg("user", "u4", "more"), msg("assistant", "a4", "ok")]
    await svc.record_turn(ended("s", thread, message_id="a4", conversation_id=TASK), 3)
    assert assert_both_branches(backend).siblings("a2b") == (2, 2)


async def test_archive_resume_and_reconcile_keep_the_branches():
    backend = await seeded()
    svc = service(backend)
    longer = PATH + [msg("user", "u3", "why")]
    assert await svc.archive("s", longer, 2) == TASK  # the shown thread went on: kept with it
    assert_both_branches(backend)
    assert await svc.resume("s", TASK, [], None, 3) == longer
    await svc.resume("s", TASK, longer + [msg("assistant", "a3", "x")], 4, 5)
    assert_both_branches(backend)
    # start-up: localStorage's thread goes on from the head's: localStorage wins, the tree stays
    fresh = service(backend)
    assert await fresh.reconcile({"s": (longer + [msg("assistant", "a3", "x"), msg("user", "u4", "y")], 9)}) == ["s"]
    assert [m["id"] for m in assert_both_branches(backend).path()][-1] == "u4"
    # start-up: localStorage holds the other branch (shown in another tab before a reload): it is shown
    other = service(backend)
    assert await other.reconcile({"s": ([U1, A1, U2, A2], 10)}) == ["s"]
    tree = assert_both_branches(backend)
    assert tree.path_ids() == ("u1", "a1", "u2", "a2") and await other.total("s") == 1


async def test_rename_pin_delete_and_undo_keep_the_branches():
    backend = await seeded()
    svc = service(backend)
    assert await svc.rename(TASK, "leaves") is not None and await svc.pin(TASK, True) is not None
    assert_both_branches(backend)
    assert await svc.delete(TASK) and TASK not in backend.raw("messages")
    assert await svc.undo() == TASK
    assert_both_branches(backend)


async def test_a_backup_restored_into_an_empty_store_keeps_the_branches():
    from app.backup.tables import restore, write_backup

    async def pause():
        await asyncio.sleep(0)

    data = await write_backup(await seeded(), {"state": {"threads": {}}, "version": 1}, T0, pause)
    empty = MemoryBackend()
    await empty.open()
    await restore(empty, data, pause, local_thread=lambda stage: False, new_id=lambda meta: "task_20260528_bbbbbb")
    assert_both_branches(empty)
    assert stored_tree(empty).path_ids() == ("u1", "a1", "u2", "a2b")



async def test_a_backup_that_goes_on_from_a_branched_conversation_here_keeps_both():
    """A restore over a conversation kept here: the backup's turns join its tree, none of the branches
    here is written over (DESIGN.md §14, §17: a backup holds whole trees, nothing is lost)."""
    from app.backup.tables import restore, write_backup

    async def pause():
        await asyncio.sleep(0)

    elsewhere = MemoryBackend()
    await elsewhere.open()
    writes = Writes()
    meta = TaskMeta(taskId=TASK, taskName="what is chlorophyll", stageId="s", createdAt=T0, updatedAt=T0 + 9)
    writes.keep(meta, PATH + [msg("user", "u3", "why"), msg("assistant", "a3", "less light")], [])
    await elsewhere.write(writes.ops)
    data = await write_backup(elsewhere, {"state": {"threads": {}}, "version": 1}, T0, pause)
    here = await seeded()
    await restore(here, data, pause, local_thread=lambda stage: False, new_id=lambda meta: "task_20260528_bbbbbb")
    tree = assert_both_branches(here)
    assert tree.path_ids() == ("u1", "a1", "u2", "a2b", "u3", "a3") and len(backend_ids(here)) == 1


def backend_ids(backend) -> list:
    return list(backend.raw("conversations"))

# -- (c) a turn on a branch grows its conversation ---------------------------------------------

async def test_a_regenerated_reply_and_an_edited_question_are_branches_of_the_active_conversation():
    backend = await seeded()
    svc = service(backend)
    again = [U1, A1, U2, msg("assistant", "a2c", "chlorophyll fades")]  # regenerated once more
    usage = {"inputTokens": 5, "outputTokens": 7, "totalTokens": 12}
    await svc.record_turn(ended("s", again, usage=usage, message_id="a2c", conversation_id=TASK), 2)
    tree = assert_both_branches(backend)
    assert tree.siblings("a2c") == (3, 3) and tree.path_ids()[-1] == "a2c"
    edited = [U1, A1, msg("user", "u2b", "and in winter"), msg("assistant", "a2d", "they fall")]
    await svc.record_turn(ended("s", edited, usage=usage, message_id="a2d"), 3)  # its conversation not known
    tree = assert_both_branches(backend)
    assert tree.siblings("u2b") == (2, 2) and tree.path_ids() == ("u1", "a1", "u2b", "a2d")
    assert await svc.total("s") == 1 and await svc.head_task_id("s", allocate=False) == TASK
    kept = await svc.bundle(TASK)
    assert [t.messageId for t in kept.turns] == ["a1", "a2", "a2b", "a2c", "a2d"]  # every turn on every branch
    assert [t.turnId for t in kept.turns] == [1, 2, 3, 4, 5] and kept.meta.turnCount == 5
    assert kept.meta.stats.totalTokens == 3 * 3 + 12 * 2 and kept.meta.durationMs == 3 * 10 + 2


async def test_the_first_question_edited_is_a_branch_when_the_turn_was_sent_on_the_conversation():
    """The first question edited has no message in common with the stored path: a branch of the
    conversation the turn was sent on (its conversation id), at the first message's fork; a thread
    of another first message whose conversation is not known is a conversation of its own."""
    backend = await seeded()
    svc = service(backend)
    first = [msg("user", "u1b", "what is chlorophyll made of"), msg("assistant", "a1b", "magnesium")]
    # sent on the conversation's shown path (the stored thread the edit was made on)
    await svc.record_turn(ended("s", first, message_id="a1b", conversation_id=TASK, base=PATH), 2)
    tree = assert_both_branches(backend)
    assert tree.siblings("u1b") == (2, 2) and tree.path_ids() == ("u1b", "a1b") and await svc.total("s") == 1
    other = [msg("user", "x1", "something else"), msg("assistant", "x2", "ok")]
    await svc.record_turn(ended("s", other, message_id="x2"), 3)
    assert await svc.total("s") == 2 and await svc.head_task_id("s", allocate=False) != TASK
    assert_both_branches(backend)  # the old conversation stays whole

async def test_a_question_sent_from_an_empty_panel_on_the_head_is_a_conversation_of_its_own():
    """The panel shows nothing of the head (its stored thread was damaged and dropped, DESIGN.md §5):
    the question asked there was built on no message of it (the agent saw none, §17), so it is no
    edit of its first question: it starts a conversation of its own, the course's head, and the head
    it was sent on stays whole, archived (§4, §9), never a sibling of that first question."""
    backend = await seeded()
    svc = service(backend)
    fresh = [msg("user", "n1", "a question from an empty panel"), msg("assistant", "n2", "an answer")]
    await svc.record_turn(ended("s", fresh, message_id="n2", conversation_id=TASK, base=[]), 2)
    head = await svc.head_task_id("s", allocate=False)
    assert head != TASK and await svc.total("s") == 2
    assert [m["id"] for m in backend.raw("messages")[head]["messages"]] == ["n1", "n2"]
    tree = assert_both_branches(backend)  # the one it was sent on: whole, no new first question
    assert "n1" not in tree and tree.path_ids() == ("u1", "a1", "u2", "a2b")
    assert (await svc.bundle(head)).meta.turnCount == 1


async def test_a_conversation_opened_by_an_assistants_message_is_not_a_version_of_another_ones_first_question():
    """Conversations that open with the same assistant's message (a greeting; imported without ids,
    the TS original wrote none, it has the same derived id in each) share no question: a thread of
    one, adopted at start-up or ended as a turn whose conversation is not known, is a conversation of
    its own, not a version of the other's first question (DESIGN.md §17: a branch where there is none).
    A question edited after the greeting, on the conversation the turn was sent on, is a branch."""
    greeting = msg("assistant", "h9478b88b3164bfef", "Hello! How can I help?")
    backend = MemoryBackend()
    await backend.open()
    meta = TaskMeta(taskId=TASK, taskName="what is chlorophyll", stageId="s", createdAt=T0, updatedAt=T0)
    writes = Writes()
    writes.keep(meta, [greeting, U1, A1], [])
    writes.make_head("s", TASK, 1)
    await backend.write(writes.ops)
    svc = service(backend)
    imported = [greeting, msg("user", "x1", "something else"), msg("assistant", "x2", "ok")]
    assert await svc.reconcile({"s": (imported, 5)}) == ["s"]  # the course's stored thread, adopted
    assert await svc.total("s") == 2 and stored_tree(backend).siblings("u1") == (1, 1)
    assert stored_tree(backend).path_ids() == (greeting["id"], "u1", "a1")
    await svc.resume("s", TASK, imported, 5, 6)
    other = [greeting, msg("user", "y1", "a third question"), msg("assistant", "y2", "ok")]
    await svc.record_turn(ended("s", other, message_id="y2"), 7)  # its conversation not known
    assert await svc.total("s") == 3 and stored_tree(backend).siblings("u1") == (1, 1)
    edited = [greeting, msg("user", "u1b", "what is chlorophyll made of"), msg("assistant", "a1b", "magnesium")]
    await svc.resume("s", TASK, other, 7, 8)
    await svc.record_turn(ended("s", edited, message_id="a1b", conversation_id=TASK, base=[greeting, U1, A1]), 9)
    assert await svc.total("s") == 3 and stored_tree(backend).siblings("u1b") == (2, 2)


async def test_a_thread_through_another_first_question_of_the_tree_is_that_conversation_whoever_sends_it():
    """After the first question was edited (a fork at the first message), another tab may show the
    old first question's path (its picker) and send on it, or a reload adopt it, before its turn knows
    its conversation id: the thread's first message is a first message of the stored tree, so the
    turn grows that tree, as does the thread adopted at start-up; never a conversation of its own
    (DESIGN.md §17: no reload or tab loses the tree)."""
    backend = await seeded()
    svc = service(backend)
    first = [msg("user", "u1b", "what is chlorophyll made of"), msg("assistant", "a1b", "magnesium")]
    await svc.record_turn(ended("s", first, message_id="a1b", conversation_id=TASK, base=PATH), 2)  # shown: u1b
    on_old = [*PATH, msg("user", "u3", "and in spring"), msg("assistant", "a3", "it comes back")]
    await svc.record_turn(ended("s", on_old, message_id="a3"), 3)  # its conversation id not known
    assert await svc.total("s") == 1 and await svc.head_task_id("s", allocate=False) == TASK
    tree = assert_both_branches(backend)
    assert tree.siblings("u1b") == (2, 2) and tree.path_ids() == ("u1", "a1", "u2", "a2b", "u3", "a3")
    assert await svc.reconcile({"s": ([*first], 4)}) is not None  # a tab's stored thread on the other first question
    assert await svc.total("s") == 1 and {"u1b", "a1b", "a3"} <= set(stored_tree(backend).ids)


async def test_a_branch_of_a_conversation_no_longer_active_is_recorded_in_it():
    backend = await seeded()
    svc = service(backend)
    await svc.archive("s", PATH, 2)  # another tab started a new conversation while the turn ran
    again = [U1, A1, U2, msg("assistant", "a2c", "chlorophyll fades")]
    assert await svc.record_turn_in(TASK, ended("s", again, message_id="a2c", conversation_id=TASK)) is not None
    assert assert_both_branches(backend).siblings("a2c") == (3, 3) and await svc.total("s") == 1


# -- (d) search covers every branch ------------------------------------------------------------

async def test_a_word_only_on_another_branch_finds_the_conversation():
    backend = await seeded()
    svc = service(backend)
    assert [h.meta.taskId for h in (await svc.search("s", "carotenoids")).items] == [TASK]  # on a2, not shown
    again = [U1, A1, U2, msg("assistant", "a2c", "xanthophyll remains")]
    await svc.record_turn(ended("s", again, message_id="a2c", conversation_id=TASK), 2)
    for word in ("carotenoids", "yellow", "xanthophyll"):  # each on one branch only
        assert [h.meta.taskId for h in (await svc.search("s", word)).items] == [TASK], word
    thread = again + [msg("user", "u3", "anthocyanin"), msg("assistant", "a3", "red")]
    await svc.record_turn(ended("s", thread, message_id="a3", conversation_id=TASK), 3)  # indexed from the held one
    for word in ("carotenoids", "yellow", "anthocyanin"):
        assert [h.meta.taskId for h in (await svc.search("s", word)).items] == [TASK], word


# -- (e) the port: the panel reads the tree and shows another branch ---------------------------

async def test_the_panel_reads_the_tree_and_shows_another_branch_which_a_reload_and_another_tab_show():
    backend = await seeded()
    heard: list[HistoryChange] = []
    svc = service(backend)
    svc.changes.subscribe(heard.append)
    recorder = HistoryRecorder(svc)
    assert await recorder.branches("nothing-here") is None
    tree = await recorder.branches("s")
    assert tree.path_ids() == ("u1", "a1", "u2", "a2b") and tree.siblings("a2b") == (2, 2)
    before = (await svc.active("s"))[0].updatedAt
    shown = await recorder.show_path("s", tree.step("a2b", -1).path())
    assert shown.path_ids() == ("u1", "a1", "u2", "a2")
    assert backend.raw("messages")[TASK]["messages"] == [U1, A1, U2, A2]  # what every linear reader reads
    assert [(c.kind, c.task_id, c.stage_id) for c in heard] == [("branch", TASK, "s")]
    assert heard[0].written.messages == [U1, A1, U2, A2] and heard[0].what == "written"
    assert (await svc.active("s"))[0].updatedAt > before
    # a reload (another service over the same store) and another tab read the same branch
    assert (await service(backend).branches("s")).path_ids() == ("u1", "a1", "u2", "a2")
    # a path that is not one of the tree's writes nothing
    assert await svc.show_path("s", [U1, A2]) is None and len(heard) == 1
    assert await svc.show_path("s", [U1, A1, U2, A2]) is not None and len(heard) == 1  # already shown
    # a turn after the switch goes on from the branch now shown
    thread = [U1, A1, U2, A2, msg("user", "u3", "why"), msg("assistant", "a3", "less light")]
    await svc.record_turn(ended("s", thread, message_id="a3", conversation_id=TASK), 4)
    assert assert_both_branches(backend).path_ids()[-1] == "a3" and await svc.total("s") == 1


async def test_a_conversation_that_is_not_active_shows_another_branch_too():
    backend = await seeded(head=False)
    svc = service(backend)
    assert await svc.branches("s") is None  # no active conversation
    tree = await svc.branches_in(TASK)
    shown = await svc.show_path_in(TASK, tree.show("a2").path())
    assert shown.path_ids()[-1] == "a2" and (await svc.branches_in(TASK)).path_ids()[-1] == "a2"


async def test_each_change_carries_the_tree_as_written_so_no_subscriber_reads_it_back():
    """DESIGN.md §15: a change carries what was written; with branches that is the whole stored form."""
    backend = await seeded()
    heard: list[HistoryChange] = []
    svc = service(backend)
    svc.changes.subscribe(heard.append)
    again = [U1, A1, U2, msg("assistant", "a2c", "chlorophyll fades")]
    await svc.record_turn(ended("s", again, message_id="a2c", conversation_id=TASK), 2)
    await svc.show_path("s", PATH)
    await svc.archive("s", PATH + [msg("user", "u3", "why")], 3)
    assert [c.kind for c in heard] == ["record", "branch", "archive"]
    assert all(change.form.messages == change.written.messages for change in heard)
    assert Tree.from_record(*heard[2].form).ids == stored_tree(backend).ids  # the last write: all of it
    assert [m["id"] for m in heard[0].form.branches if "content" in m] == ["a2", "a2b"]
    assert heard[1].form.messages == PATH and heard[1].form.shown == {}


async def test_a_branch_shown_while_another_tab_records_a_turn_keeps_that_turn():
    """Tab B reads the tree to show another branch; tab A's turn (a third answer) lands before B's
    write: B's write is made again of what A wrote, so A's answer is kept (DESIGN.md §9, §17)."""
    backend = await seeded()
    held = WriteHeld(backend)
    tab_a, tab_b = service(backend), service(held)
    await tab_a.open()
    await tab_b.open()
    again = [U1, A1, U2, msg("assistant", "a2c", "chlorophyll fades")]

    async def a_records():
        await tab_a.record_turn(ended("s", again, message_id="a2c", conversation_id=TASK), 2)
    held.before = a_records
    tree = await tab_b.branches("s")
    shown = await tab_b.show_path("s", tree.show("a2").path())
    stored = stored_tree(backend)
    assert {"a2", "a2b", "a2c"} <= set(stored.ids) and stored.path_ids()[-1] == "a2"
    assert shown is not None and shown.ids == stored.ids
    assert (await tab_b.active("s"))[0].turnCount == 4


async def test_a_turn_kept_in_a_conversation_not_active_while_another_tab_records_there_keeps_both():
    """``TASK`` is no course's head (New conversation was pressed): tab B reads it for its turn (a
    regenerated answer), tab A's turn there (another answer) lands before B's write: B's write is made
    again of what A wrote, so both answers are kept (DESIGN.md §9, §17)."""
    backend = await seeded(head=False)
    held = WriteHeld(backend)
    tab_a, tab_b = service(backend), service(held)

    async def a_records():
        await tab_a.record_turn(ended("s", [U1, A1, U2, msg("assistant", "a2c", "from A")], message_id="a2c",
                                      conversation_id=TASK), 2)
    held.before = a_records
    await tab_b.record_turn(ended("s", [U1, A1, U2, msg("assistant", "a2d", "from B")], message_id="a2d",
                                  conversation_id=TASK), 2)
    stored = stored_tree(backend)
    assert {"a2", "a2b", "a2c", "a2d"} <= set(stored.ids)
    assert (await tab_a.get(TASK)).turnCount == 5
