"""Sync of conversations as trees (DESIGN.md §16, §17 "Sync"): two devices' versions of one
conversation merge by the union of their messages; the shown branch follows the later choice."""

from __future__ import annotations

import doctest
import json

import pytest

import app.history.branching
from app.history.branching import NO_BRANCHES, Branching
from app.history.changes import HistoryChange
from app.history.merge import merge_conversation, merge_leaves
from app.history.records import TaskMeta, TurnMeta, iso
from app.history.tree import Tree
from app.storage import MemoryStorage
from app.sync.documents import conversation_doc, conversation_of, doc_id_of_task
from app.sync.engine import LEAVES, SyncEngine
from tests.unit.test_sync import (DEVICE_T0, FakeReplica, LeafReplica, _delete_goes_out, _device, _device_turn, _reply,
                                  _user)
from tests.unit.turn_events import ended

TASK = "task_20261201_abcdef"


def test_doctests():
    assert doctest.testmod(app.history.branching).failed == 0


def _turn(n, ms, message_id, tokens=0):
    usage = {"inputTokens": tokens, "outputTokens": tokens, "totalTokens": 2 * tokens} if tokens else None
    return TurnMeta(turnId=n, timestamp=iso(ms), messageId=message_id, usage=usage)


def _pair(tag):
    return [_user("q " + tag, "u-" + tag), _reply("r " + tag, "a-" + tag)]


def _ids(messages):
    return [m["id"] for m in messages]


def _tree(merged):
    return merged.branching.tree(merged.messages)


# -- the merge (app.history.merge) ---------------------------------------------------------------
def test_two_devices_that_both_continued_keep_both_turns_as_siblings_at_the_fork():
    base, t1 = _pair("1"), _turn(1, 10, "a-1", 1)
    a = (base + _pair("A"), [t1, _turn(2, 30, "a-A", 2)])   # device A went on with A (its choice at 30)
    b = (base + _pair("B"), [t1, _turn(2, 20, "a-B", 3)])   # device B went on with B (at 20)
    on_a = merge_conversation(a, b, local_at=30, remote_at=20)
    on_b = merge_conversation(b, a, local_at=20, remote_at=30)
    assert on_a.how == on_b.how == "merged"
    tree = _tree(on_a)
    assert set(tree.ids) == {"u-1", "a-1", "u-A", "a-A", "u-B", "a-B"} and len(tree) == 6
    assert tree.forks() == {"a-1": ["u-A", "u-B"]}  # the two turns are siblings where the devices diverged
    assert _ids(on_a.messages) == ["u-1", "a-1", "u-A", "a-A"]  # A's choice was the later one
    # either order gives the same tree, path and stored form: both devices converge
    assert (on_b.messages, on_b.branching) == (on_a.messages, on_a.branching)
    assert on_a.branching.shown_at == 30
    # turn metas: one per reply, each with its own usage; nothing counted twice
    assert sorted(t.messageId for t in on_a.turns) == ["a-1", "a-A", "a-B"]
    assert [t.turnId for t in on_a.turns] == [1, 2, 3]
    assert {t.messageId: t.usage.totalTokens for t in on_a.turns} == {"a-1": 2, "a-A": 4, "a-B": 6}
    # idempotent: merging the result again with either side changes nothing
    kept = (on_a.messages, on_a.turns, on_a.branching)
    for side, at in ((a, 30), (b, 20)):
        again = merge_conversation(kept, side, local_at=30, remote_at=at)
        assert again.how == "local" and (again.messages, again.branching) == (on_a.messages, on_a.branching)
        back = merge_conversation(side, kept, local_at=at, remote_at=30)
        assert back.how == "remote" and (back.messages, back.branching) == (on_a.messages, on_a.branching)


def test_an_edited_first_question_and_a_continuation_are_both_kept():
    base = _pair("1")
    edited_tree = Tree.chain(base).grow([_user("q 1, put better", "u-1e"), _reply("r 1e", "a-1e")])
    edited, branching = Branching.of_tree(edited_tree, shown_at=50)   # device A edited the first question
    assert branching.branches  # a stored tree, not a chain
    continued = base + _pair("2")                                     # device B went on from the first turn
    merged = merge_conversation((continued, [], NO_BRANCHES), (edited, [], branching), local_at=40, remote_at=0)
    tree = _tree(merged)
    assert set(tree.ids) == {"u-1", "a-1", "u-2", "a-2", "u-1e", "a-1e"}
    assert tree.children() == ["u-1", "u-1e"] and tree.children("a-1") == ["u-2"]
    assert _ids(merged.messages) == ["u-1e", "a-1e"]  # A's edit is the later choice (50 > 40)
    assert tree.show("u-1").path_ids() == ("u-1", "a-1", "u-2", "a-2")  # B's turn is under the first question


def test_the_shown_branch_follows_the_later_choice_shown_at_before_updated_at():
    base = _pair("1")
    both = Tree.chain(base + _pair("A")).grow(base + _pair("B"))  # one tree, two replies to a-1
    on_a, at_a = Branching.of_tree(both.show("a-A"), shown_at=100)   # A last chose A's branch at 100
    on_b, at_b = Branching.of_tree(both.show("a-B"), shown_at=200)   # B chose B's at 200
    assert _ids(merge_conversation((on_a, [], at_a), (on_b, [], at_b)).messages)[-1] == "a-B"
    assert _ids(merge_conversation((on_b, [], at_b), (on_a, [], at_a)).messages)[-1] == "a-B"
    # a record without shownAt (an older device's) is as late as its conversation's updatedAt
    no_time = Branching(at_b.branches, at_b.shown)
    merged = merge_conversation((on_a, [], at_a), (on_b, [], no_time), local_at=0, remote_at=50)
    assert _ids(merged.messages)[-1] == "a-A" and merged.branching.shown_at == 100
    merged = merge_conversation((on_a, [], at_a), (on_b, [], no_time), local_at=0, remote_at=250)
    assert _ids(merged.messages)[-1] == "a-B" and merged.how == "remote" and merged.branching == no_time  # as it came


def test_a_fork_only_the_earlier_device_made_keeps_its_choice_unless_the_later_went_on_below_it():
    """DESIGN.md §17: a fork shows the latest choice made on any device. Apart, B regenerated the second
    reply (a fork only B has, B's choice) then edited the first question; A edited it too, then chose
    the first question again (the later choice at the first fork). Merged on either device: the first
    question (A's choice) and, below it, B's regenerated reply (the only choice made at that fork)."""
    shared = _pair("1") + _pair("2")
    a_tree = Tree.chain(shared).grow([_user("q 1 by A", "u-1a"), _reply("r 1a", "a-1a")]).show("u-1")
    b_tree = Tree.chain(shared).grow([*shared[:3], _reply("r 2 again", "a-2b")]) \
        .grow([_user("q 1 by B", "u-1b"), _reply("r 1b", "a-1b")])
    a_path, a_branching = Branching.of_tree(a_tree, shown_at=300)
    b_path, b_branching = Branching.of_tree(b_tree, shown_at=200)
    on_a = merge_conversation((a_path, [], a_branching), (b_path, [], b_branching))
    on_b = merge_conversation((b_path, [], b_branching), (a_path, [], a_branching))
    assert _ids(on_a.messages) == _ids(on_b.messages) == ["u-1", "a-1", "u-2", "a-2b"]
    assert (on_a.messages, on_a.branching) == (on_b.messages, on_b.branching)
    # A went on below its own reply there (a turn B never saw): A's path stays, B's reply a sibling
    went_on, went_on_branching = Branching.of_tree(a_tree.grow([*shared, *_pair("3")]), shown_at=300)
    merged = merge_conversation((went_on, [], went_on_branching), (b_path, [], b_branching))
    assert _ids(merged.messages) == ["u-1", "a-1", "u-2", "a-2", "u-3", "a-3"]
    assert _tree(merged).children("u-2") == ["a-2", "a-2b"]


def test_leaves_in_conflict_merge_into_one_tree_whatever_their_order():
    base, t1 = _pair("1"), _turn(1, 10, "a-1")
    leaves = [(base + _pair(tag), [t1, _turn(2, at, "a-" + tag)], Branching(shown_at=at))
              for tag, at in (("w", 30), ("x", 20), ("y", 40))] + [(_pair("z"), [_turn(1, 5, "a-z")], NO_BRANCHES)]
    merged = merge_leaves(leaves)
    tree = _tree(merged)
    assert len(tree) == 10 and tree.forks() == {"a-1": ["u-y", "u-w", "u-x"], "": ["u-1", "u-z"]}
    assert _ids(merged.messages)[-1] == "a-y"  # the latest choice
    assert sorted(t.messageId for t in merged.turns) == ["a-1", "a-w", "a-x", "a-y", "a-z"]
    again = merge_leaves(list(reversed(leaves)))
    assert (again.messages, again.branching) == (merged.messages, merged.branching)


def test_messages_without_ids_merge_by_content_not_by_position():
    """Threads written before messages had ids (the TS original's): the same message at the same
    place is one message on both devices, a different one is not, whatever its position."""
    one = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    two = one + [{"role": "user", "content": "on A"}, {"role": "assistant", "content": "yes"}]
    three = one + [{"role": "user", "content": "on B"}, {"role": "assistant", "content": "no"}]
    merged = merge_conversation((two, []), (three, []), local_at=1, remote_at=2)
    tree = _tree(merged)
    assert len(tree) == 6 and [len(v) for v in tree.forks().values()] == [2]
    assert sorted(m["content"] for m in tree.texts()) == ["a", "no", "on A", "on B", "q", "yes"]
    assert merge_conversation((two, []), (one, []), local_at=1, remote_at=2).how == "local"


def test_a_reply_read_under_a_derived_id_is_the_reply_the_other_device_holds_under_its_own():
    """A stored reply whose id became ``7`` is read under a derived id (``app.continuity.derived_ids``)
    and this device went on below it; the other device still holds it under its real id. The merge
    keeps it once, under the real id, with this device's later turn below it: no second sibling with
    the same text (DESIGN.md §17: one message per id, no copy), whichever device merges."""
    from app.continuity import derived_ids

    before = _pair("1") + [_user("q 2", "u-2")]
    reply = _reply("r 2", "a-2")
    damaged = derived_ids(before + [{**reply, "id": 7}])  # how this device reads its record now
    assert damaged[-1]["id"] != "a-2"
    on_a = damaged + _pair("3")  # a turn sent after the damage, below the derived id
    on_b = before + [reply]
    for merged in (merge_conversation((on_a, []), (on_b, []), local_at=2, remote_at=1),
                   merge_conversation((on_b, []), (on_a, []), local_at=1, remote_at=2)):
        tree = _tree(merged)
        assert _ids(merged.messages) == ["u-1", "a-1", "u-2", "a-2", "u-3", "a-3"]
        assert len(tree) == 6 and tree.forks() == {}
    # the record with the id 7 itself (read raw, as history reads it) merges the same way
    raw = before + [{**reply, "id": 7}]
    assert _ids(merge_conversation((raw, []), (on_b, []), local_at=2, remote_at=1).messages) == _ids(on_b)


# -- documents (app.sync.documents) --------------------------------------------------------------
def _meta(**kw):
    return TaskMeta(**{"taskId": TASK, "taskName": "t", "stageId": "s1", "createdAt": 1, "updatedAt": 2, **kw})


def _stored_tree():
    """Replies A and B to the first turn, B answered twice (its fork lies off the shown path)."""
    tree = Tree.chain(_pair("1") + _pair("A")).grow(_pair("1") + _pair("B"))
    tree = tree.grow(_pair("1") + [_user("q B", "u-B"), _reply("r B again", "a-B2")])
    return Branching.of_tree(tree.show("a-A"), shown_at=1_700)


def test_a_document_carries_the_tree_and_reads_back_exactly():
    messages, branching = _stored_tree()
    assert branching.shown == {"u-B": "a-B2"}
    doc = conversation_doc(_meta(), messages, [_turn(1, 5, "a-1")], branching)
    assert doc["branches"] == branching.branches and doc["shown"] == branching.shown and doc["shownAt"] == 1_700
    read = conversation_of(json.loads(json.dumps(doc)), 10_000)
    meta, back, turns = read  # still three for every reader of a linear conversation
    assert (meta, back, turns) == (_meta(), messages, [_turn(1, 5, "a-1")]) and read.branching == branching
    assert conversation_doc(*read, read.branching) == doc  # round-trips exactly


def test_a_document_without_a_tree_is_a_chain():
    doc = conversation_doc(_meta(), _pair("1"), [])
    assert "branches" not in doc and "shown" not in doc and "shownAt" not in doc  # as an older device writes it
    assert conversation_of(doc, 10_000).branching == NO_BRANCHES


def test_sync_intake_holds_branch_messages_to_the_import_limits():
    from app.history.chatgpt import MAX_CONVERSATION_CHARS

    messages, branching = _stored_tree()
    doc = conversation_doc(_meta(), messages, [], branching)
    conversation_of(doc, 10_000)
    off_path = next(i for i, b in enumerate(doc["branches"]) if "role" in b)

    def with_branch(**changes):
        branches = [dict(b) for b in doc["branches"]]
        branches[off_path].update(changes)
        return {**doc, "branches": branches}

    # listed as Tree.record lists them (a parent before its children), so that reading them is linear:
    # a hostile order would cost the reader a pass per message
    for bad in (with_branch(content=[{"type": "text", "text": "x", "extra": 1}]),  # not the slim projection
                with_branch(content=[{"type": "text", "text": "x" * (MAX_CONVERSATION_CHARS + 1)}]),  # too long
                with_branch(parentId=5),
                {**doc, "branches": "x"}, {**doc, "branches": [5]}, {**doc, "shown": ["a"]},
                {**doc, "branches": doc["branches"][::-1]},  # a child listed before its parent
                with_branch(parentId="nowhere"),
                {**doc, "shownAt": 10_000 + 10 * 60_000 * 60 * 24}):  # a choice dated ahead would win forever
        with pytest.raises(ValueError):
            conversation_of(bad, 10_000)


# -- two devices through their engines (HistoryService.apply_synced, SyncEngine) -------------------
async def _continue(device, task, stage, tag):
    _, messages, _ = await device.bundle(task)
    await device.record_turn_in(task, ended(stage, messages + _pair(tag), usage=None, model="demo", duration_ms=5,
                                            message_id="a-" + tag))


async def test_two_devices_that_continued_offline_end_with_one_conversation_holding_both_replies():
    a, b = _device(1), _device(2)
    task = await _device_turn(a, "s", "first")
    replica_a, replica_b = FakeReplica(), FakeReplica()
    engine_a, engine_b = SyncEngine(a, replica_a, MemoryStorage()), SyncEngine(b, replica_b, MemoryStorage())
    doc_id = doc_id_of_task(task)
    await engine_a.push(task)
    assert await engine_b.remote_changed(replica_a.docs[doc_id]) == "added"
    await _continue(a, task, "s", "A")   # both go on with it, off-line
    await _continue(b, task, "s", "B")
    await engine_a.push(task)
    await engine_b.push(task)
    assert await engine_b.remote_changed(replica_a.docs[doc_id]) == "merged"   # B hears A first
    assert await engine_a.remote_changed(replica_b.docs[doc_id]) == "remote"  # then A hears B's merge: B's tree
    assert await engine_b.remote_changed(replica_a.docs[doc_id]) == "local"  # A's older document adds nothing
    assert await engine_a.remote_changed(replica_b.docs[doc_id]) == "same"
    on_a, on_b = await a.bundle(task), await b.bundle(task)
    for device, held in ((a, on_a), (b, on_b)):
        tree = held.branching.tree(held.messages)
        assert set(tree.ids) == {"u-first", "a-first", "u-A", "a-A", "u-B", "a-B"}
        assert tree.forks() == {"a-first": tree.children("a-first")} and len(tree.children("a-first")) == 2
        assert await device.total("s") == 1  # one conversation, no copy
        assert sorted(t.messageId for t in held.turns) == ["a-A", "a-B", "a-first"]
        for word in ("A", "B"):  # search finds each device's turn on either branch (DESIGN.md §17)
            assert [h.meta.taskId for h in (await device.search("s", "q " + word)).items] == [task], word
    assert (on_a.messages, on_a.branching.branches, on_a.branching.shown) == \
        (on_b.messages, on_b.branching.branches, on_b.branching.shown)
    assert replica_b.docs[doc_id]["branches"] == on_b.branching.branches  # the tree went back out
    c = _device(3)  # a third device's first sync adds the whole tree (those new here in one transaction)
    assert await SyncEngine(c, FakeReplica(), MemoryStorage()).remote_changed(replica_b.docs[doc_id]) == "added"
    on_c = await c.bundle(task)
    assert (on_c.messages, on_c.branching) == (on_b.messages, on_b.branching)


async def test_conflicting_revisions_through_the_engine_keep_every_leaf_as_a_branch():
    b = _device(2)
    doc_id = doc_id_of_task(TASK)

    def leaf(rev, tags, at):
        messages = [m for tag in tags for m in _pair(tag)]
        turns = [_turn(n + 1, DEVICE_T0 + at + n, "a-" + tag) for n, tag in enumerate(tags)]
        meta = TaskMeta(taskId=TASK, taskName="t", stageId="s", createdAt=DEVICE_T0, updatedAt=DEVICE_T0 + at + 9)
        return {**conversation_doc(meta, messages, turns), "_rev": rev}

    leaves = [leaf("3-w", ["base", "w"], 10), leaf("2-x", ["base", "x"], 20), leaf("1-z", ["z"], 40)]
    replica = LeafReplica()
    engine = SyncEngine(b, replica, MemoryStorage(), clock=lambda: DEVICE_T0 + 10_000)
    await engine.remote_changed({**leaves[0], LEAVES: leaves})
    held = await b.bundle(TASK)
    tree = held.branching.tree(held.messages)
    assert sorted(tree.ids) == sorted(["u-base", "a-base", "u-w", "a-w", "u-x", "a-x", "u-z", "a-z"])
    assert _ids(held.messages) == ["u-z", "a-z"]  # the latest leaf's path (updatedAt: no shownAt was written)
    (bulk,) = replica.resolved
    assert bulk[0]["_rev"] == "3-w" and bulk[0]["messages"] == held.messages
    assert bulk[0]["branches"] == held.branching.branches


async def _both_went_on(replica_b=None):
    """Devices A and B with one synced conversation that both continued apart (A with "A", B with
    "B"): ``(a, b, task, (replica_a, replica_b), (engine_a, engine_b), doc_id)``."""
    a, b = _device(1), _device(2)
    task = await _device_turn(a, "s", "first")
    replica_a, replica_b = FakeReplica(), replica_b if replica_b is not None else FakeReplica()
    engine_a, engine_b = SyncEngine(a, replica_a, MemoryStorage()), SyncEngine(b, replica_b, MemoryStorage())
    doc_id = doc_id_of_task(task)
    await engine_a.push(task)
    await engine_b.remote_changed(replica_a.docs[doc_id])
    await _continue(a, task, "s", "A")
    await _continue(b, task, "s", "B")
    return a, b, task, (replica_a, replica_b), (engine_a, engine_b), doc_id


async def test_a_delete_still_wins_over_a_conversation_with_branches():
    from app.sync.documents import turn_digests

    a, b, task, (replica_a, replica_b), (engine_a, engine_b), doc_id = await _both_went_on(LeafReplica())
    await engine_a.push(task)
    await engine_b.remote_changed(replica_a.docs[doc_id])   # B holds a tree with both turns
    held = await b.bundle(task)
    assert held.branching.branches
    deletion = {"_id": doc_id, "_rev": "9-a", "_deleted": True, "type": "deletion",
                "seen": turn_digests(held.branching.tree(held.messages).path())}
    assert await engine_b.remote_changed(deletion) == "deleted"
    assert await b.bundle(task) is None


async def test_a_delete_keeps_apart_the_turns_on_any_branch_the_deleting_device_never_had_and_only_those():
    """§16's delete wins, over trees (§17): the deletion names the turns of every branch its device
    had; the other device keeps apart those of its turns, on any branch, that the deletion does not
    name, and nothing the deleting device had."""
    a, b = _device(3), _device(2)   # A's clock runs later: A's branch is the one shown after a merge
    task = await _device_turn(a, "s", "first")
    replica_a, replica_b = FakeReplica(), LeafReplica()
    engine_a, engine_b = SyncEngine(a, replica_a, MemoryStorage()), SyncEngine(b, replica_b, MemoryStorage())
    doc_id = doc_id_of_task(task)
    await engine_a.push(task)
    await engine_b.remote_changed(replica_a.docs[doc_id])
    await _continue(b, task, "s", "B")
    await _continue(a, task, "s", "A")
    await engine_a.push(task)
    assert await engine_b.remote_changed(replica_a.docs[doc_id]) == "merged"
    held = await b.bundle(task)
    assert _ids(held.messages)[-1] == "a-A" and "a-B" not in _ids(held.messages)  # B's own turn on a branch
    # A deletes what it had (never B's turn): B keeps its own turn apart, though it is not on the shown path
    assert await a.delete(task)
    await _delete_goes_out(engine_a, task)
    deletion = {**replica_a.docs[doc_id], "_rev": "9-a"}
    assert await engine_b.remote_changed(deletion) == "deleted"
    (apart,) = (await b.page("s")).items
    _, kept, kept_turns = await b.bundle(apart.taskId)
    assert _ids(kept) == ["u-B", "a-B"] and [t.messageId for t in kept_turns] == ["a-B"]
    # a device that had every branch and deletes: the other keeps nothing apart
    c, d = _device(4), _device(5)
    task = await _device_turn(c, "s", "first")
    replica_c, replica_d = FakeReplica(), LeafReplica()
    engine_c, engine_d = SyncEngine(c, replica_c, MemoryStorage()), SyncEngine(d, replica_d, MemoryStorage())
    doc_id = doc_id_of_task(task)
    await engine_c.push(task)
    await engine_d.remote_changed(replica_c.docs[doc_id])
    await _continue(c, task, "s", "C")
    await _continue(d, task, "s", "D")
    await engine_c.push(task)
    await engine_d.push(task)
    await engine_d.remote_changed(replica_c.docs[doc_id])
    await engine_c.remote_changed(replica_d.docs[doc_id])   # both hold both branches, one shown
    held = await c.bundle(task)
    assert len(held.branching.tree(held.messages)) == 6
    assert await c.delete(task)
    await _delete_goes_out(engine_c, task)
    assert await engine_d.remote_changed({**replica_c.docs[doc_id], "_rev": "9-c"}) == "deleted"
    assert await d.total("s") == 0  # nothing kept apart: C had every turn of every branch


async def test_an_undo_after_the_delete_went_out_comes_back_under_a_new_id_with_its_whole_tree():
    a, b, task, (replica_a, replica_b), (engine_a, engine_b), doc_id = await _both_went_on()
    await engine_b.push(task)
    assert await engine_a.remote_changed(replica_b.docs[doc_id]) == "merged"
    await a.archive("s", (await a.bundle(task)).messages, 1)
    before = await a.bundle(task)
    assert before.branching.branches
    assert await a.delete(task)
    await _delete_goes_out(engine_a, task)
    assert await a.undo() == task
    await engine_a.local_changed(HistoryChange("undo", task, "s"))  # its deletion went out: a new id here
    (item,) = (await a.page("s")).items
    after = await a.bundle(item.taskId)
    assert item.taskId != task and (after.messages, after.branching) == (before.messages, before.branching)
    assert replica_a.docs[doc_id_of_task(item.taskId)]["branches"] == before.branching.branches


async def test_a_regenerated_reply_goes_out_with_the_change_that_wrote_it_and_arrives_as_a_sibling():
    """The change a turn's write announces carries the whole tree (DESIGN.md §15: nothing read back),
    so another device gets the new branch beside the old reply (§17)."""
    a, b = _device(1), _device(2)
    replica_a = FakeReplica()
    engine_a = SyncEngine(a, replica_a, MemoryStorage())
    heard: list[HistoryChange] = []
    a.changes.subscribe(heard.append)
    task = await _device_turn(a, "s", "first")
    await engine_a.local_changed(heard[-1])
    doc_id = doc_id_of_task(task)
    engine_b = SyncEngine(b, FakeReplica(), MemoryStorage())
    assert await engine_b.remote_changed(replica_a.docs[doc_id]) == "added"
    regenerated = [_user("first", "u-first"), _reply("another answer", "a-again")]
    await a.record_turn(ended("s", regenerated, usage=None, model="demo", duration_ms=5, message_id="a-again"), 1)
    assert heard[-1].kind == "record" and heard[-1].written is not None
    await engine_a.local_changed(heard[-1])
    assert replica_a.docs[doc_id]["branches"], "the document went out without the old reply"
    await engine_b.remote_changed(replica_a.docs[doc_id])
    held = await b.bundle(task)
    tree = held.branching.tree(held.messages)
    assert tree.children("u-first") == ["a-first", "a-again"] and _ids(held.messages)[-1] == "a-again"


async def test_a_picker_move_goes_out_and_the_other_device_shows_that_branch():
    """A switch of branch is a change of the conversation (its choice and updatedAt): it goes out as
    any write, and the other device shows the branch chosen last (DESIGN.md §17 "Sync")."""
    a, b = _device(1), _device(2)
    replica_a = FakeReplica()
    engine_a, engine_b = SyncEngine(a, replica_a, MemoryStorage()), SyncEngine(b, FakeReplica(), MemoryStorage())
    heard: list[HistoryChange] = []
    a.changes.subscribe(heard.append)
    task = await _device_turn(a, "s", "first")
    regenerated = [_user("first", "u-first"), _reply("another answer", "a-again")]
    await a.record_turn(ended("s", regenerated, usage=None, model="demo", duration_ms=5, message_id="a-again"), 1)
    await engine_a.local_changed(heard[-1])
    doc_id = doc_id_of_task(task)
    assert await engine_b.remote_changed(replica_a.docs[doc_id]) == "added"
    assert _ids((await b.bundle(task)).messages)[-1] == "a-again"
    older = [_user("first", "u-first"), _reply("ok first", "a-first")]
    assert await a.show_path("s", older) is not None
    assert heard[-1].kind == "branch"
    await engine_a.local_changed(heard[-1])
    await engine_b.remote_changed(replica_a.docs[doc_id])
    assert _ids((await b.bundle(task)).messages) == ["u-first", "a-first"]


async def test_one_tree_whose_choices_two_devices_dated_apart_settles_on_the_later_date_without_an_echo():
    """The same tree, path and turns on both devices, its ``shownAt`` apart: the device holding the
    earlier takes the later and sends nothing back; the one holding the later writes nothing (§16)."""
    messages, branching = _stored_tree()
    turns = [_turn(1, 5, "a-1")]
    a, b = _device(1), _device(2)
    assert await a.apply_synced(_meta(), messages, turns, branching) == "added"
    later = Branching(branching.branches, branching.shown, 2_500)
    assert await b.apply_synced(_meta(), messages, turns, later) == "added"
    replicas = {a: FakeReplica(), b: FakeReplica()}
    engines = {d: SyncEngine(d, replicas[d], MemoryStorage()) for d in (a, b)}
    doc_id = doc_id_of_task(TASK)
    for sender, receiver in ((b, a), (a, b)):  # each hears the other's once
        await engines[sender].push(TASK)
        doc = json.loads(json.dumps(replicas[sender].docs[doc_id]))
        before = replicas[receiver].puts
        assert await engines[receiver].remote_changed(doc) in ("remote", "same")
        assert replicas[receiver].puts == before  # nothing sent back
    on_a, on_b = await a.bundle(TASK), await b.bundle(TASK)
    assert on_a == on_b and on_a.branching == on_b.branching == later
