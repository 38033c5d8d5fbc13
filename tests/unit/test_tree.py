"""The conversation tree (app/history/tree.py, DESIGN.md §17): the shown path, forks chosen by id,
the stored and export forms, growing from the runtime's path, and the union sync makes."""

from __future__ import annotations

import doctest
import random

import pytest

import app.history.tree
from app.history.tree import ROOT, Tree, with_ids


def _m(ident: str, role: str = "user", text: str | None = None) -> dict:
    return {"role": role, "id": ident, "content": [{"type": "text", "text": text or ident}]}


def _ids(messages: list[dict]) -> list[str]:
    return [m["id"] for m in messages]


def _edited() -> Tree:
    """u1 a1 u2 a2, then u2 edited (u2b, a2b), then a2b regenerated (a2c)."""
    tree = Tree.chain([_m("u1"), _m("a1", "assistant"), _m("u2"), _m("a2", "assistant")])
    tree = tree.grow([_m("u1"), _m("a1", "assistant"), _m("u2b"), _m("a2b", "assistant")])
    return tree.grow([_m("u1"), _m("a1", "assistant"), _m("u2b"), _m("a2c", "assistant")])


def test_the_module_examples_hold():
    assert doctest.testmod(app.history.tree).failed == 0


def test_a_chain_is_its_own_shown_path_and_stores_as_before():
    messages = [_m("u1"), _m("a1", "assistant")]
    tree = Tree.chain(messages)
    assert tree.path() == messages
    assert tree.record() == (messages, [], {})
    assert tree.left_out() == 0 and tree.forks() == {}


def test_an_edit_and_a_regenerate_make_siblings_and_show_the_newest():
    tree = _edited()
    assert _ids(tree.path()) == ["u1", "a1", "u2b", "a2c"]
    assert tree.siblings("u2b") == (2, 2) and tree.siblings("u2") == (1, 2)
    assert tree.siblings("a2c") == (2, 2) and tree.siblings("a1") == (1, 1)
    assert tree.parent("u2b") == "a1" and tree.parent("u1") is None
    assert tree.left_out() == 2


def test_the_picker_shows_a_sibling_and_the_path_last_shown_under_it():
    tree = _edited().show("a2b")  # under u2b, a2b is now the choice
    back = tree.step("u2b", -1)
    assert _ids(back.path()) == ["u1", "a1", "u2", "a2"]
    forward = back.step("u2", +1)
    assert _ids(forward.path()) == ["u1", "a1", "u2b", "a2b"]  # a2b, not the newest a2c
    assert forward.step("u2b", +5).siblings("u2b") == (2, 2)  # clamped at the last sibling


def test_choices_are_kept_by_id_not_by_position():
    tree = _edited().show("u2")
    # a sibling arriving from another device goes at the end; the shown one stays shown
    other = tree.grow([_m("u1"), _m("a1", "assistant"), _m("u2x")]).show("u2")
    assert _ids(other.path())[:4] == ["u1", "a1", "u2", "a2"]
    assert other.siblings("u2") == (1, 3)


def test_the_stored_form_round_trips_every_message_and_every_choice():
    tree = _edited().show("a2b").show("u2")  # off the path, u2b's fork still remembers a2b
    messages, branches, shown = tree.record()
    assert _ids(messages) == ["u1", "a1", "u2", "a2"]
    assert {b["id"]: b["parentId"] for b in branches} == {"u2": "a1", "u2b": "a1", "a2b": "u2b", "a2c": "u2b"}
    assert branches[0] == {"id": "u2", "parentId": "a1"}  # the path's own message only holds its place
    assert shown == {"u2b": "a2b"}
    back = Tree.from_record(messages, branches, shown)
    assert back.path() == tree.path()
    assert set(back.ids) == set(tree.ids)
    assert [back.siblings(i) for i in tree.ids] == [tree.siblings(i) for i in tree.ids]
    assert _ids(back.step("u2", 1).path()) == ["u1", "a1", "u2b", "a2b"]


def test_a_record_lists_branches_in_any_order_and_drops_only_what_cannot_be_placed():
    messages, branches, shown = _edited().record()
    stray = {"id": "lost", "parentId": "nowhere", "role": "user", "content": []}
    back = Tree.from_record(messages, list(reversed(branches)) + [stray, {"parentId": "u1"}, "x"], shown)
    assert set(back.ids) == set(_edited().ids)
    assert back.path() == messages


def test_the_export_form_round_trips_and_refuses_what_is_not_a_tree():
    tree = _edited().show("a2b")
    messages, shown = tree.export()
    assert messages[0]["parentId"] is None and shown == {"a1": "u2b", "u2b": "a2b"}
    back = Tree.from_export(messages, shown)
    assert back.path() == tree.path() and back.export() == (messages, shown)
    with pytest.raises(ValueError):
        Tree.from_export([{"id": "a"}, {"id": "a"}])
    with pytest.raises(ValueError):
        Tree.from_export([{"id": "b", "parentId": "a"}, {"id": "a"}])
    with pytest.raises(ValueError):
        Tree.from_export([{"role": "user"}])
    # a choice naming no child of its fork is ignored: the newest child shows
    assert _ids(Tree.from_export(messages, {"u2b": "nope"}).path())[-1] == "a2c"


def test_a_first_message_can_be_edited():
    tree = Tree.chain([_m("u1"), _m("a1", "assistant")]).grow([_m("u1b"), _m("a1b", "assistant")])
    assert tree.siblings("u1b") == (2, 2)
    messages, shown = tree.export()
    assert shown == {ROOT: "u1b"}
    assert _ids(Tree.from_export(messages, {ROOT: "u1"}).path()) == ["u1", "a1"]


def test_growing_updates_a_running_reply_in_place():
    tree = Tree.chain([_m("u1"), _m("a1", "assistant", "par")])
    grown = tree.grow([_m("u1"), _m("a1", "assistant", "partial reply")])
    assert len(grown) == 2 and grown.path()[1]["content"][0]["text"] == "partial reply"
    with pytest.raises(ValueError):
        tree.grow([{"role": "user", "content": []}])


def test_the_union_keeps_both_devices_turns_as_siblings_and_no_copy():
    base = Tree.chain([_m("u1"), _m("a1", "assistant")])
    here = base.grow([_m("u1"), _m("a1", "assistant"), _m("u2"), _m("a2", "assistant")])
    there = base.grow([_m("u1b"), _m("a1b", "assistant")])
    mine = here.merged(there)
    theirs = here.merged(there, their_choices=True)
    assert set(mine.ids) == set(theirs.ids) == {"u1", "a1", "u2", "a2", "u1b", "a1b"}
    assert _ids(mine.path()) == ["u1", "a1", "u2", "a2"]
    assert _ids(theirs.path()) == ["u1b", "a1b"]
    assert mine.siblings("u1b") == (2, 2)
    # merging is idempotent and a merged tree holds each id once
    assert mine.merged(there).export() == mine.export()


def test_random_edits_keep_every_message_and_a_consistent_path():
    rng = random.Random(7)
    tree = Tree.chain([_m("m0"), _m("m1", "assistant")])
    made = 2
    for _ in range(200):
        path = tree.path()
        cut = rng.randrange(len(path))
        new = [_m(f"m{made}"), _m(f"m{made + 1}", "assistant")]
        made += 2
        tree = tree.grow(path[:cut] + new)
        if rng.random() < 0.3:
            tree = tree.step(rng.choice(tree.ids), rng.choice((-1, 1)))
        messages, branches, shown = tree.record()
        back = Tree.from_record(messages, branches, shown)
        assert back.path() == tree.path() and len(back) == made
        assert all(back.siblings(i) == tree.siblings(i) for i in tree.ids)
        exported = Tree.from_export(*tree.export())
        assert exported.path() == tree.path()
        path_ids = tree.path_ids()
        assert all(tree.parent(b) == a for a, b in zip(path_ids, path_ids[1:]))


def test_with_ids_gives_ids_only_where_missing_or_repeated():
    counter = iter(range(100))
    out = with_ids([{"id": "a"}, {"id": ""}, {"id": "a"}, {"id": 3}], lambda: f"n{next(counter)}")
    assert _ids(out) == ["a", "n0", "n1", "n2"]
    from app.continuity import derived_ids

    bare = [{"role": "user"}, {"role": "assistant"}]
    assert Tree.chain(bare).ids == tuple(m["id"] for m in derived_ids(bare))
