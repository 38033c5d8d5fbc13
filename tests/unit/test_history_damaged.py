"""History's ``messages`` records that cannot be read (DESIGN.md §5, §17; docs/failures.md): a record
whose shown path is missing, not a list or holds a message that does not read whole makes its
conversation damaged (one notice, never opened without what it lacks, never rewritten); branch
entries that cannot be placed (an unknown parent, a cycle, a duplicate id) are read liberally and
carried over as stored by every write, so nothing is erased. On the in-memory backend."""

from __future__ import annotations

import copy

from app.history import HistoryService
from app.history.branches import StoredForm
from app.history.branching import Branching
from app.history.merge import merge_conversation
from app.history.records import MAX_SAFE_INTEGER, TaskMeta, TurnMeta, Usage, iso
from app.history.repository import HistoryRepository, Writes, rebuilt_meta
from app.history.tree import Tree
from app.records import MemoryBackend
from tests.unit.test_history_branches import (A1, A2, PATH, T0, TASK, U1, U2, Clock, assert_both_branches, msg,
                                             seeded, service)
from tests.unit.held_writes import WriteHeld
from tests.unit.turn_events import ended

OTHER = "task_20260528_second"
ORPHAN = {"role": "user", "id": "orph", "parentId": "nope", "content": [{"type": "text", "text": "orphan"}]}
CYCLE = [{"role": "user", "id": "cy1", "parentId": "cy2", "content": [{"type": "text", "text": "cycle one"}]},
         {"role": "assistant", "id": "cy2", "parentId": "cy1", "content": [{"type": "text", "text": "cycle two"}]}]
DUPLICATE = {"role": "user", "id": "u2", "parentId": "a1", "content": [{"type": "text", "text": "duplicate of u2"}]}
UNPLACED = [ORPHAN, *CYCLE, DUPLICATE]
BAD_REPLY = {"role": "assistant", "id": "zz", "content": [{"type": "text", "text": None}]}


def planted(backend: MemoryBackend, task_id: str = TASK, **fields) -> dict:
    """The ``messages`` record of ``task_id`` with ``fields`` written over it, stored as is."""
    record = {**copy.deepcopy(backend.raw("messages")[task_id]), **fields}
    backend.put_raw("messages", record)
    return record


def with_unplaced(backend: MemoryBackend) -> None:
    record = backend.raw("messages")[TASK]
    planted(backend, branches=[*UNPLACED, *record.get("branches", [])])


def kept_unplaced(backend: MemoryBackend, task_id: str = TASK) -> list[dict]:
    return [b for b in backend.raw("messages")[task_id].get("branches", []) if b in UNPLACED]


def heard(backend: MemoryBackend):
    """A service over ``backend`` and the list of the notices it gives."""
    notices: list = []
    return HistoryService(backend, clock=Clock(), on_notice=notices.append), notices


async def archived_beside_head(backend: MemoryBackend) -> None:
    """A second conversation of course ``s`` (``OTHER``), the course's head: ``TASK`` is archived."""
    writes = Writes()
    meta = TaskMeta(taskId=OTHER, taskName="other", stageId="s", createdAt=T0, updatedAt=T0 + 5)
    writes.keep(meta, [msg("user", "o1", "other"), msg("assistant", "o2", "reply")], [])
    writes.make_head("s", OTHER, 7)
    await backend.write(writes.ops)


# -- branch entries that cannot be placed: carried over, never erased ----------------------------

def test_a_grown_tree_is_written_with_the_entries_it_could_not_place_as_stored():
    messages, branches, shown = Tree.chain([U1, A1, U2, A2]).record()
    form = StoredForm(messages, [*UNPLACED, *branches], shown)
    grown = form.written([U1, A1, U2, A2, msg("user", "u3", "why")])
    assert [m["id"] for m in grown.messages] == ["u1", "a1", "u2", "a2", "u3"]
    assert [b for b in grown.branches if b in UNPLACED] == UNPLACED
    # written again: carried once, not twice
    again = grown.written([*grown.messages, msg("assistant", "a3", "less light")])
    assert [b for b in again.branches if b in UNPLACED] == UNPLACED


async def test_a_turn_on_a_conversation_with_unplaceable_branch_entries_keeps_them_stored():
    backend = await seeded()
    with_unplaced(backend)
    svc = service(backend)
    thread = PATH + [msg("user", "u3", "why"), msg("assistant", "a3", "less light")]
    await svc.record_turn(ended("s", thread, message_id="a3", conversation_id=TASK), 2)
    record = backend.raw("messages")[TASK]
    assert [m["id"] for m in record["messages"]][-2:] == ["u3", "a3"]
    assert kept_unplaced(backend) == UNPLACED
    # the next turn starts from what this tab remembers of its write: still kept
    thread += [msg("user", "u4", "more"), msg("assistant", "a4", "ok")]
    await svc.record_turn(ended("s", thread, message_id="a4", conversation_id=TASK), 3)
    assert kept_unplaced(backend) == UNPLACED


async def test_showing_another_branch_keeps_the_entries_it_cannot_place():
    backend = await seeded(head=False)
    with_unplaced(backend)
    svc = service(backend)
    tree = await svc.branches_in(TASK)
    assert "orph" not in tree and "cy1" not in tree  # read liberally: not shown
    shown = await svc.show_path_in(TASK, tree.show("a2").path())
    assert shown.path_ids()[-1] == "a2" and kept_unplaced(backend) == UNPLACED


# -- a shown path that cannot be read: the conversation is damaged ------------------------------

async def test_a_conversation_whose_messages_are_not_a_list_is_refused_with_one_notice_and_not_rewritten():
    backend = await seeded(head=False)
    await archived_beside_head(backend)
    record = planted(backend, messages="x")
    svc, notices = heard(backend)
    assert await svc.resume("s", TASK, [], None, 9) is None
    assert [n.code for n in notices] == ["history-damaged"]
    assert await svc.damaged(TASK) and not await svc.damaged(OTHER) and not await svc.damaged("task_20260528_nothin")
    assert backend.raw("messages")[TASK] == record and backend.raw("heads")["s"]["taskId"] == OTHER


async def test_a_conversation_without_its_messages_record_is_damaged():
    backend = await seeded(head=False)
    await archived_beside_head(backend)
    del backend._tables["messages"][TASK]
    svc, notices = heard(backend)
    assert await svc.resume("s", TASK, [], None, 9) is None
    assert [n.code for n in notices] == ["history-damaged"] and await svc.damaged(TASK)
    assert TASK not in backend._tables["messages"] and backend.raw("heads")["s"]["taskId"] == OTHER


async def test_a_conversation_without_its_messages_record_is_listed_as_damaged_with_one_notice():
    backend = await seeded(head=False)
    await archived_beside_head(backend)
    del backend._tables["messages"][TASK]
    svc, notices = heard(backend)
    for sort in ("newest", "oldest", "tokens"):
        page = await svc.page("s", sort=sort)
        assert {(m.taskId, m.damaged, m.taskName) for m in page.items} == {(TASK, True, ""), (OTHER, False, "other")}
    assert [(m.taskId, m.damaged) for m in await svc.newer("s", None)] == [(OTHER, False), (TASK, True)]
    assert [n.code for n in notices] == ["history-damaged"]


async def test_a_conversation_with_a_reply_that_cannot_be_read_is_not_opened_without_it():
    backend = await seeded(head=False)
    await archived_beside_head(backend)
    held = backend.raw("messages")[TASK]["messages"]
    record = planted(backend, messages=[held[0], BAD_REPLY, *held[2:]])
    svc, notices = heard(backend)
    assert await svc.resume("s", TASK, [], None, 9) is None  # never two questions in a row, said nowhere
    assert [n.code for n in notices] == ["history-damaged"] and await svc.damaged(TASK)
    assert backend.raw("messages")[TASK] == record


def test_a_sync_merge_keeps_the_entries_either_side_could_not_place():
    messages, branches, shown = Tree.chain([U1, A1, U2, A2]).record()
    local = (messages, [], Branching([*UNPLACED, *branches], shown))
    remote = (messages + [msg("user", "u3", "why")], [])  # the other device went on
    merged = merge_conversation(local, remote, local_at=1, remote_at=2)
    assert [m["id"] for m in merged.messages][-1] == "u3"
    assert [b for b in merged.branching.branches if b in UNPLACED] == UNPLACED
    # the other way round: what this device receives keeps what the other could not place
    back = merge_conversation(remote, local, local_at=2, remote_at=1)
    assert [b for b in back.branching.branches if b in UNPLACED] == UNPLACED


# -- a shown path that repeats a message id: read up to it, the rest never made real -------------

async def chain_of_four() -> MemoryBackend:
    """A store holding ``TASK`` of course ``s``, the chain u1 a1 u2 a2, no course head."""
    backend = MemoryBackend()
    await backend.open()
    writes = Writes()
    meta = TaskMeta(taskId=TASK, taskName="t", stageId="s", createdAt=T0, updatedAt=T0, turnCount=2)
    writes.keep(meta, [U1, A1, U2, A2], [])
    await backend.write(writes.ops)
    return backend


async def test_a_path_stored_twice_over_opens_once_and_a_turn_makes_no_copy_of_it():
    from app.projection import live_thread, serialize_thread

    backend = await chain_of_four()
    planted(backend, messages=[U1, A1, U2, A2] * 2)
    svc, notices = heard(backend)
    opened = await svc.resume("s", TASK, [], None, 9)
    assert [m["id"] for m in opened] == ["u1", "a1", "u2", "a2"]
    tree = await svc.branches_in(TASK)
    assert tree.path_ids() == ("u1", "a1", "u2", "a2") and len(tree) == 4
    thread = serialize_thread(live_thread(opened)) + [msg("user", "u3", "why"), msg("assistant", "a3", "less light")]
    await svc.record_turn(ended("s", thread, message_id="a3", conversation_id=TASK), 2)
    record = backend.raw("messages")[TASK]
    # the copies were the same messages (same id, same content): held once, no message made of them
    assert [m["id"] for m in record["messages"]] == ["u1", "a1", "u2", "a2", "u3", "a3"]
    assert not record.get("branches") and notices == []


async def test_a_repeated_id_with_other_content_is_not_shown_and_every_write_keeps_it_as_stored():
    backend = await chain_of_four()
    other = msg("user", "u1", "another first question under a taken id")
    planted(backend, messages=[U1, A1, U2, A2, other])
    svc = service(backend)
    assert [m["id"] for m in await svc.resume("s", TASK, [], None, 9)] == ["u1", "a1", "u2", "a2"]
    assert len(await svc.branches_in(TASK)) == 4
    thread = [U1, A1, U2, A2, msg("user", "u3", "why"), msg("assistant", "a3", "less light")]
    await svc.record_turn(ended("s", thread, message_id="a3", conversation_id=TASK), 2)
    record = backend.raw("messages")[TASK]
    assert [m["id"] for m in record["messages"]] == ["u1", "a1", "u2", "a2", "u3", "a3"]
    assert record["branches"] == [{**other, "parentId": "a2"}]  # kept as stored, after the message before it
    tree = await svc.branches_in(TASK)
    assert len(tree) == 6 and tree.nodes["u1"] == U1
    # a sync merge with a device that went on keeps it too
    local = (record["messages"], [], Branching(record["branches"]))
    remote = ([U1, A1, U2, A2, other], [])
    for merged in (merge_conversation(local, remote, local_at=2, remote_at=1),
                   merge_conversation(remote, local, local_at=1, remote_at=2)):
        assert [m["id"] for m in merged.messages] == ["u1", "a1", "u2", "a2", "u3", "a3"]
        assert {**other, "parentId": "a2"} in merged.branching.branches


async def test_a_conversation_no_course_list_holds_is_listed_as_damaged_with_one_notice_and_can_be_deleted():
    for fields in ({"stageId": 5}, {"updatedAt": None}, {"updatedAt": {"t": 1}}, {"updatedAt": ...}):
        backend = await seeded(head=False)
        await archived_beside_head(backend)
        record = {**backend.raw("conversations")[TASK], **fields}
        backend.put_raw("conversations", {k: v for k, v in record.items() if v is not ...})  # in no list's range
        svc, notices = heard(backend)
        for sort in ("newest", "oldest", "tokens"):
            page = await svc.page("s", sort=sort)
            assert [(m.taskId, m.damaged) for m in page.items] == [(OTHER, False), (TASK, True)], (fields, sort)
        assert [n.code for n in notices] == ["history-damaged"]
        assert await svc.delete(TASK)
        assert [m.taskId for m in (await svc.page("s")).items] == [OTHER]
        assert all(TASK not in backend.raw(table) for table in ("conversations", "messages", "turns", "search"))


# -- a heads record naming the wrong conversation: the thread shown goes on in its own -----------

H1 = [msg("user", "h1u", "H one"), msg("assistant", "h1a", "one reply")]
H2 = [msg("user", "h2u", "H two q1"), msg("assistant", "h2a", "two reply"), msg("user", "h2u2", "H two q2"),
      msg("assistant", "h2a2", "two reply 2")]
H1_TASK, H2_TASK = "task_20260528_honeee", "task_20260528_htwooo"


async def two_conversations(head) -> MemoryBackend:
    """Course ``s`` with "H one" and "H two" (its thread, ``H2``, the one shown) and a ``heads``
    record naming ``head`` (damaged: anything but ``H2_TASK``)."""
    backend = MemoryBackend()
    await backend.open()
    writes = Writes()
    for n, (task, path) in enumerate(((H1_TASK, H1), (H2_TASK, H2))):
        meta = TaskMeta(taskId=task, taskName=path[0]["content"][0]["text"], stageId="s", createdAt=T0 + n,
                        updatedAt=T0 + n, turnCount=len(path) // 2)
        writes.keep(meta, path, [])
    await backend.write(writes.ops)
    backend.put_raw("heads", {"stageId": "s", "taskId": head, "syncedAt": 7})
    return backend


def held_paths(backend: MemoryBackend) -> dict[str, list[str]]:
    return {task: [m["id"] for m in record["messages"]] for task, record in backend.raw("messages").items()}


async def test_a_turn_on_a_thread_whose_head_names_another_conversation_or_none_goes_on_in_its_own():
    for head in (H1_TASK, "task_20990101_zzzzzz", 5):
        backend = await two_conversations(head)
        svc = service(backend)
        ran_on = await svc.head_task_id("s")  # what the runtime takes for the thread's conversation
        for n in (3, 4):  # and again, the runtime still holding that id
            thread = [*H2, *(msg(r, f"t{k}{r[0]}", "more") for k in range(3, n + 1) for r in ("user", "assistant"))]
            await svc.record_turn(ended("s", thread, message_id=thread[-1]["id"], conversation_id=ran_on,
                                        base=thread[:-2]), n)
        held = held_paths(backend)
        assert held == {H1_TASK: ["h1u", "h1a"], H2_TASK: [m["id"] for m in thread]}, head  # no copy, nothing pasted
        assert not backend.raw("messages")[H1_TASK].get("branches")
        assert backend.raw("heads")["s"]["taskId"] == H2_TASK and len(backend.raw("conversations")) == 2


async def test_a_thread_no_conversation_holds_is_not_pasted_into_the_one_its_head_names():
    backend = await two_conversations(H1_TASK)
    svc = service(backend)
    lost = [msg("user", "x1", "a thread history never kept"), msg("assistant", "x2", "reply")]
    thread = [*lost, msg("user", "x3", "more"), msg("assistant", "x4", "ok")]
    await svc.record_turn(ended("s", thread, message_id="x4", conversation_id=H1_TASK, base=lost), 3)
    held = held_paths(backend)
    assert held[H1_TASK] == ["h1u", "h1a"] and held[H2_TASK] == [m["id"] for m in H2]
    assert [ids for task, ids in held.items() if task not in (H1_TASK, H2_TASK)] == [["x1", "x2", "x3", "x4"]]


# -- a conversation meta that cannot be read: the next turn keeps what is readable ----------------

async def test_a_turn_on_a_head_whose_meta_cannot_be_read_keeps_its_stored_turns_tree_and_readable_fields():
    backend = await seeded()
    meta_record = backend.raw("conversations")[TASK]
    backend.put_raw("conversations", {**meta_record, "turnCount": "many", "stats": "lots"})
    svc, notices = heard(backend)
    thread = PATH + [msg("user", "u3", "why"), msg("assistant", "a3", "less light")]
    usage = {"inputTokens": 4, "outputTokens": 5, "totalTokens": 9}
    await svc.record_turn(ended("s", thread, usage=usage, duration_ms=7, message_id="a3", conversation_id=TASK), 2)
    turns = backend.raw("turns")[TASK]["turns"]
    assert [t["messageId"] for t in turns] == ["a1", "a2", "a2b", "a3"]
    assert [t["turnId"] for t in turns] == [1, 2, 3, 4]
    meta = TaskMeta.model_validate(backend.raw("conversations")[TASK])  # rebuilt: readable again
    assert (meta.turnCount, meta.durationMs) == (4, 37)
    assert (meta.stats.inputTokens, meta.stats.outputTokens, meta.stats.totalTokens) == (7, 11, 18)
    assert (meta.taskName, meta.createdAt) == ("what is chlorophyll", T0)  # the readable fields kept
    assert_both_branches(backend)  # the tree beside the path stays
    assert "history-damaged" in [n.code for n in notices]
    # listed with the turns the conversation holds
    [item] = (await svc.page("s")).items
    assert (item.taskId, item.damaged, item.turnCount) == (TASK, False, 4)


async def test_a_turn_on_a_damaged_head_while_another_tab_records_there_keeps_both_turns():
    """Tab B reads the head whose meta cannot be read (rebuilt from what is readable); tab A's turn there
    lands before B's write: B's write finds the stored meta no longer as read and is made again of what
    A wrote, so both turns are kept (DESIGN.md §5, §9: two tabs never lose each other's turns)."""
    backend = await seeded()
    backend.put_raw("conversations", {**backend.raw("conversations")[TASK], "turnCount": "many"})
    held = WriteHeld(backend)
    (tab_a, _), (tab_b, _) = heard(backend), heard(held)

    async def a_records():
        await tab_a.record_turn(ended("s", PATH + [msg("user", "u4", "from A"), msg("assistant", "a4", "A")],
                                      message_id="a4", conversation_id=TASK), 2)
    held.before = a_records
    await tab_b.record_turn(ended("s", PATH + [msg("user", "u3", "from B"), msg("assistant", "a3", "B")],
                                  message_id="a3", conversation_id=TASK), 2)
    ids = [t["messageId"] for t in backend.raw("turns")[TASK]["turns"]]
    assert {"a3", "a4"} <= set(ids), ids
    assert TaskMeta.model_validate(backend.raw("conversations")[TASK]).turnCount == len(ids)


async def test_a_turn_kept_in_a_damaged_conversation_that_is_no_head_keeps_its_stored_turns_and_tree():
    """A turn that ends in its own conversation after another tab made another one active
    (``record_turn_in``), that conversation's meta unreadable: its stored turns and tree stay (§5, §9)."""
    backend = await seeded(head=False)
    backend.put_raw("conversations", {**backend.raw("conversations")[TASK], "turnCount": "many"})
    svc, _ = heard(backend)
    thread = PATH + [msg("user", "u3", "why"), msg("assistant", "a3", "less light")]
    await svc.record_turn_in(TASK, ended("s", thread, message_id="a3", conversation_id=TASK))
    assert [t["messageId"] for t in backend.raw("turns")[TASK]["turns"]] == ["a1", "a2", "a2b", "a3"]
    assert TaskMeta.model_validate(backend.raw("conversations")[TASK]).turnCount == 4
    assert_both_branches(backend)


async def test_a_damaged_meta_is_rebuilt_from_its_readable_fields_and_turns():
    backend = await seeded()
    backend.put_raw("conversations", {"taskId": TASK, "stageId": 5, "taskName": ["a"], "createdAt": T0 + 9,
                                      "updatedAt": "yesterday", "pinnedAt": T0})
    repository = HistoryRepository(backend, on_damaged=lambda: None)
    meta, raw = await repository.head_meta_or_rebuilt("s")
    assert raw is not None and raw["updatedAt"] == "yesterday"
    assert (meta.taskId, meta.stageId, meta.taskName, meta.pinnedAt) == (TASK, "s", "", T0)
    assert meta.createdAt <= meta.updatedAt and meta.turnCount == 3 and meta.stats.totalTokens == 9
    huge = [TurnMeta(turnId=n, timestamp=iso(T0), usage=Usage(totalTokens=MAX_SAFE_INTEGER)) for n in (1, 2)]
    assert rebuilt_meta({}, TASK, "s", huge).stats.totalTokens == MAX_SAFE_INTEGER  # never past what a record holds


async def test_a_conversation_whose_updated_at_is_no_number_is_listed_as_damaged_once_in_every_order():
    """IndexedDB sorts a string key after every number: such a record lies past the numbers of the
    course's list index, and is read by the same range grown to the course's last key (DESIGN.md §5:
    listed so that it can be deleted, never hidden)."""
    backend = await seeded(head=False)
    writes = Writes()
    for n in range(11):
        meta = TaskMeta(taskId=f"task_20260528_plai{n:02d}", taskName=f"plain {n}", stageId="s", createdAt=T0,
                        updatedAt=T0 + n)
        writes.keep(meta, [msg("user", f"p{n}", f"plain {n}"), msg("assistant", f"r{n}", "ok")], [])
    await backend.write(writes.ops)
    planted_meta = {**backend.raw("conversations")[TASK], "updatedAt": "yesterday"}
    backend.put_raw("conversations", planted_meta)
    svc, notices = heard(backend)
    for sort in ("newest", "oldest", "tokens"):
        first = await svc.page("s", sort=sort)
        second = await svc.page("s", first.cursor, sort=sort)
        seen = [(m.taskId, m.damaged) for m in [*first.items, *second.items]]
        assert first.total == 12 and len(seen) == 12 and not second.has_more, sort
        assert seen.count((TASK, True)) == 1 and len({task for task, _ in seen}) == 12, sort
    assert await svc.total("s") == 12
    assert TASK not in [m.taskId for m in (await svc.page("s", since_ms=T0)).items]  # no time in a range
    assert "history-damaged" in [n.code for n in notices]
    assert await svc.delete(TASK) and await svc.total("s") == 11  # listed so that it can be deleted


async def test_archiving_or_adopting_onto_a_head_whose_meta_cannot_be_read_keeps_its_stored_turns_and_tree():
    thread = PATH + [msg("user", "u3", "why"), msg("assistant", "a3", "less light")]  # went on without history
    for act in ("archive", "reconcile"):
        backend = await seeded()
        backend.put_raw("conversations", {**backend.raw("conversations")[TASK], "turnCount": "many"})
        svc, _ = heard(backend)
        if act == "archive":
            assert await svc.archive("s", thread, 5) == TASK
        else:
            assert await svc.reconcile({"s": (thread, 5)}) == ["s"]
        turns = backend.raw("turns")[TASK]["turns"]
        assert [t["messageId"] for t in turns][:3] == ["a1", "a2", "a2b"], act  # the stored turn meta stays
        meta = TaskMeta.model_validate(backend.raw("conversations")[TASK])
        assert meta.turnCount == len(turns) and meta.taskName == "what is chlorophyll", act
        assert_both_branches(backend)
        assert [m["id"] for m in backend.raw("messages")[TASK]["messages"]][-2:] == ["u3", "a3"], act


async def test_a_conversation_refused_when_opened_is_listed_as_damaged_until_a_corrected_file_is_imported():
    """docs/failures.md: a conversation whose messages cannot be read is listed as damaged once opened
    (its title and counts no longer offered as if it could be), and read normally again once a
    correct file is imported over it."""
    from app.history.export import export_json, parse_export

    backend = await seeded(head=False)
    await archived_beside_head(backend)
    svc, notices = heard(backend)
    whole = await svc.bundle(TASK)
    good = export_json(whole.meta, whole.messages, whole.turns, tree=whole.tree)
    planted(backend, messages="x")
    listed = lambda page: {(m.taskId, m.damaged) for m in page.items}  # noqa: E731
    assert listed(await svc.page("s")) == {(TASK, False), (OTHER, False)}  # not known until opened
    assert await svc.resume("s", TASK, [], None, 9) is None and await svc.damaged(TASK)
    for sort in ("newest", "oldest", "tokens"):
        assert listed(await svc.page("s", sort=sort)) == {(TASK, True), (OTHER, False)}
    assert [(m.taskId, m.damaged) for m in await svc.newer("s", None)] == [(OTHER, False), (TASK, True)]
    assert [n.code for n in notices] == ["history-damaged"]  # said once, when opened
    meta, messages, turns = (read := parse_export(good, T0 + 99))[:3]
    assert await svc.import_bundle("s", meta, messages, turns, branches=read.branches, shown=read.shown) == "ok"
    assert listed(await svc.page("s")) == {(TASK, False), (OTHER, False)}
    assert (await svc.bundle(TASK)).messages == PATH


async def test_the_stats_of_an_active_conversation_whose_meta_cannot_be_read_count_its_readable_turns():
    """The panel's stats of a course whose active conversation's meta cannot be read are those its
    next turn writes (``rebuilt_meta``: its readable turns and fields), not none (DESIGN.md §5)."""
    backend = await seeded()
    meta_record = backend.raw("conversations")[TASK]
    damaged = {**meta_record, "turnCount": "many", "stats": "lots"}
    backend.put_raw("conversations", damaged)
    svc, notices = heard(backend)
    meta, turns = await svc.active("s")
    assert meta is not None and (meta.taskId, meta.taskName, meta.turnCount, meta.durationMs) == (
        TASK, "what is chlorophyll", 3, 30)
    assert meta.stats.totalTokens == 9 and [t.messageId for t in turns] == ["a1", "a2", "a2b"]
    assert backend.raw("conversations")[TASK] == damaged  # nothing written by reading
