"""A thread without ids (written by the TS original) gets ids when it is adopted, without a notice
(DESIGN.md §17, §3): the ids are derived from what is stored, so the thread store, another tab's
merge and history all see the same ids, and ``maic-agent-threads`` is not rewritten on that account."""

from __future__ import annotations

import json

from app.continuity import belongs, continues, derived_ids
from app.history.branches import StoredForm
from app.history.tree import Tree
from app.projection import live_thread, serialize_thread
from app.storage import MemoryStorage
from app.store import STORAGE_KEY, ThreadStore

NOW = 1_780_000_000_000


def _text(role: str, text: str, ident: str | None = None) -> dict:
    message = {"role": role, "content": [{"type": "text", "text": text}]}
    return message if ident is None else {"role": role, "id": ident, "content": message["content"]}


TS = [_text("user", "ts q1"), _text("assistant", "ts a1"), _text("user", "ts q2"), _text("assistant", "ts a2")]


def _ts_storage() -> tuple[MemoryStorage, str]:
    value = json.dumps({"state": {"threads": {"t-ts5": {"messages": TS, "updatedAt": NOW - 5}}}, "version": 1},
                       ensure_ascii=False, separators=(",", ":"))
    storage = MemoryStorage()
    storage.set_item(STORAGE_KEY, value)
    return storage, value


def _open(storage: MemoryStorage) -> ThreadStore:
    store = ThreadStore(storage)
    store.hydrate(NOW)
    return store


def _ids(messages: list[dict]) -> list:
    return [m.get("id") for m in messages]


def test_derived_ids_depend_only_on_what_is_stored_and_keep_given_ids():
    ids = _ids(derived_ids(TS))
    assert all(isinstance(i, str) and i for i in ids) and len(set(ids)) == 4
    assert _ids(derived_ids([dict(m) for m in TS])) == ids  # the same on every read, tab and device
    assert _ids(derived_ids(TS[:2])) == ids[:2]  # a message's id does not depend on what follows it
    assert _ids(derived_ids([TS[0], TS[0]]))[1] != ids[0]  # the same text twice: two messages
    # the same message after another one is another message (its place is part of it)
    assert derived_ids([TS[0], TS[1]])[1]["id"] != derived_ids([TS[2], TS[1]])[1]["id"]
    assert derived_ids([_text("user", "x", "u1"), TS[1]])[0]["id"] == "u1"
    assert derived_ids([_text("user", "x", "u1"), _text("user", "y", "u1")])[1]["id"] != "u1"  # a repeated id
    assert "id" not in TS[0]  # a copy: the messages given are never changed


def _live(store: ThreadStore) -> list[dict]:
    """The course's thread as the runtime holds it (``Session.messages``), written back slim."""
    return serialize_thread(live_thread(store.load("t-ts5")))


def test_a_ts_thread_is_read_with_ids_and_the_stored_value_is_not_rewritten():
    storage, value = _ts_storage()
    store = _open(storage)
    assert store.load("t-ts5") == TS  # the thread as stored
    loaded = _live(store)
    assert _ids(loaded) == _ids(derived_ids(TS)) and [m["content"] for m in loaded] == [m["content"] for m in TS]
    assert storage.get_item(STORAGE_KEY) == value and store.notices == []  # read without a notice, not rewritten
    # history adopts the thread with the same ids (its chain of the stored, id-less messages)
    assert list(Tree.chain(TS).ids) == _ids(loaded)
    # the next save that happens anyway (a new turn) writes the ids
    turn = [_text("user", "q3", "u3"), _text("assistant", "a3", "a3")]
    store.save("t-ts5", loaded + turn, NOW + 1, base=store.load("t-ts5"))
    stored = json.loads(storage.get_item(STORAGE_KEY))["state"]["threads"]["t-ts5"]["messages"]
    assert _ids(stored) == _ids(loaded) + ["u3", "a3"] and _live(_open(storage))[:4] == loaded


def test_two_tabs_on_a_ts_thread_merge_their_turns_with_nothing_lost_or_repeated():
    storage, _ = _ts_storage()
    one, two = _open(storage), _open(MemoryStorage.shared_with(storage))
    base_one, base_two = one.load("t-ts5"), two.load("t-ts5")
    live_one, live_two = _live(one), _live(two)
    assert _ids(live_one) == _ids(live_two)
    two.save("t-ts5", live_two + [_text("user", "from two", "u2"), _text("assistant", "r2", "r2")], NOW + 1,
             base=base_two)
    assert not one.replaced_elsewhere("t-ts5", base_one)  # the other tab went on with the same conversation
    result = one.save("t-ts5", live_one + [_text("user", "from one", "u1"), _text("assistant", "r1", "r1")],
                      NOW + 2, base=base_one)
    assert result.merged
    assert _ids(one.load("t-ts5")) == _ids(derived_ids(TS)) + ["u2", "r2", "u1", "r1"]


def test_a_conversation_history_adopted_without_ids_is_the_thread_read_with_ids():
    """Conversations adopted before kept the TS thread as stored (no ids; history gave them positional
    ids ``m<n>`` when it read them): the thread read now, with derived ids, still continues it, and a
    turn on it grows that conversation without a copy of any message."""
    loaded = _live(_open(_ts_storage()[0]))
    assert continues(loaded, TS) and belongs(loaded, TS) and continues(TS, loaded)
    turn = loaded + [_text("user", "q3", "u3"), _text("assistant", "a3", "a3")]
    form = StoredForm(TS).written(turn)
    assert form.messages == turn and form.branches == [] and form.shown == {}
    assert len(StoredForm(TS).tree().grow(turn)) == 6


def test_branches_stored_on_positional_ids_stay_on_their_messages():
    """A tree stored while the path had no ids: its branches name their parents by the positional ids
    ``m<n>`` history gave the path then; read now (derived ids), every branch is still there, on the
    same message, and a turn on the path (read with derived ids) neither copies nor loses one."""
    u2b = {**_text("user", "ts q2 B", "u2b"), "parentId": "m1"}
    a2b = {**_text("assistant", "ts a2 B", "a2b"), "parentId": "u2b"}
    branches = [{"id": "m2", "parentId": "m1"}, u2b, a2b]
    tree = Tree.from_record(TS, branches, {"u2b": "a2b"})
    ids = _ids(derived_ids(TS))
    assert len(tree) == 6 and tree.path_ids() == tuple(ids)
    assert tree.parent("u2b") == ids[1] and tree.siblings(ids[2]) == (1, 2) and tree.siblings("u2b") == (2, 2)
    loaded = _live(_open(_ts_storage()[0]))
    form = StoredForm(TS, branches, {"u2b": "a2b"}).written(loaded + [_text("user", "q3", "u3")])
    again = Tree.from_record(form.messages, form.branches, form.shown)
    assert len(again) == 7 and again.parent("u2b") == ids[1] and again.path_ids() == (*ids, "u3")


def test_a_ts_turn_after_a_fork_keeps_the_fork_and_gets_ids():
    """A thread AgentBar wrote with a fork, then a turn the TS original appended without ids: the tree
    the panel draws keeps the picker at the fork, and the two new messages have their derived ids."""
    from app.history.branching import grown as runtime_grown
    from app.runtime.branches import adopted_tree

    path = [_text("user", "one", "u1"), _text("assistant", "r1", "a1"), _text("user", "two", "u2"),
            _text("assistant", "r2", "a2")]
    history = Tree.chain(path).grow([*path[:2], _text("user", "two B", "u2b"), _text("assistant", "r2B", "a2b")])
    history = history.show("a2")
    stored = path + [_text("user", "ts q"), _text("assistant", "ts a")]
    tree = adopted_tree(history, runtime_grown(None, stored), stored)
    ids = _ids(derived_ids(stored))
    assert tree.path_ids() == tuple(ids) and tree.siblings("u2") == (1, 2) and len(tree) == 8
    assert _ids(serialize_thread(live_thread(stored))) == ids
    form = StoredForm(*history.record()).written(stored)
    assert Tree.from_record(form.messages, form.branches, form.shown).siblings("u2") == (1, 2)
    assert _ids(form.messages) == ids


def test_a_message_whose_stored_id_is_a_number_is_one_message_read_raw_or_slim():
    """A stored id that is no string (``7``; a damaged record): the slim projection drops it, history
    reads the record raw, and both read the message under one fresh id; the panel draws no second
    reply beside it and a turn on it writes no branch (docs/failures.md "Reading is liberal",
    DESIGN.md §17: every message has one id)."""
    from app.history.branching import grown as runtime_grown
    from app.runtime.branches import adopted_tree

    stored = [_text("user", "one", "u1"), _text("assistant", "r1", "a1"), _text("user", "two", "u2"),
              {**_text("assistant", "r2"), "id": 7}]
    # a resumed conversation goes to the thread store slim (the id dropped), and is read back from there
    live = serialize_thread(live_thread(serialize_thread(stored)))
    history = Tree.from_record(stored)  # history's read of its ``messages`` record, raw
    assert _ids(live) == list(history.path_ids()) == _ids(serialize_thread(live_thread(stored)))
    assert isinstance(live[3]["id"], str)
    tree = adopted_tree(history, runtime_grown(None, live), live)
    assert len(tree) == 4 and tree.siblings(live[3]["id"]) == (1, 1)
    form = StoredForm(stored).written(live + [_text("user", "three", "u3"), _text("assistant", "r3", "a3")])
    assert _ids(form.messages) == _ids(live) + ["u3", "a3"] and form.branches == [] and form.shown == {}
