"""Which branch opening a search hit shows (DESIGN.md §17 "Search finds text on every branch; opening a
hit that lies on another branch shows that branch"): the pure rule, app/history/hit_branch.py."""

from __future__ import annotations

import doctest

from app.history import hit_branch
from app.history.hit_branch import HIT_SLICE_CHARS, hit_message, hit_message_steps
from app.history.tree import Tree
from tests.unit.steps import driven


def msg(role, ident, text, parent):
    return {"role": role, "id": ident, "parentId": parent, "content": [{"type": "text", "text": text}]}


# u1 → a1 → u2 → a2 (made first, not shown) | a2b (regenerated, shown); u2b: an edited question, not shown
TREE = Tree.from_export(
    [msg("user", "u1", "What is chlorophyll?", None),
     msg("assistant", "a1", "A green pigment.", "u1"),
     msg("user", "u2", "And in autumn?", "a1"),
     msg("assistant", "a2", "It breaks down: CAROTENOIDS show in the leaves.", "u2"),
     msg("user", "u2b", "Pourquoi les feuilles tombent-elles à l'automne?", "a1"),
     msg("assistant", "a3b", "叶绿素在秋天分解。", "u2b"),
     msg("assistant", "a2b", "The leaves turn yellow.", "u2")],
    {"a1": "u2", "u2": "a2b"})


def test_a_hit_on_the_shown_path_changes_nothing():
    assert [m["id"] for m in TREE.path()] == ["u1", "a1", "u2", "a2b"]
    assert hit_message(TREE, "yellow") is None
    assert hit_message(TREE, "chlorophyll") is None  # also on every branch: the shown path holds it


def test_a_hit_only_on_another_branch_names_the_message_that_holds_it_folded_as_search_folds():
    assert hit_message(TREE, "carotenoids") == "a2"  # case folded
    assert hit_message(TREE, "FEUILLES") == "u2b"
    assert hit_message(TREE, "a l'automne") == "u2b"  # accents ignored, as search ignores them
    assert TREE.show(hit_message(TREE, "carotenoids")).path_ids() == ("u1", "a1", "u2", "a2")


def test_a_cjk_keyword_inside_unspaced_text_is_found():
    assert hit_message(TREE, "秋天") == "a3b"
    assert hit_message(TREE, "叶绿素在") == "a3b"  # a run of more than two characters: checked as a substring
    assert hit_message(TREE, "素秋") is None  # its bigram is in no message


def test_several_words_the_first_message_holding_every_word_else_the_first_holding_any():
    # "breaks" (a2) and "tombent" (u2b): no message holds both; the first holding any, in the order made
    assert hit_message(TREE, "tombent breaks") == "a2"
    # "leaves" is on the shown path (a2b) alone, "feuilles" off it (u2b): a2b holds one word, u2b one
    # word, no message both; a message on the shown path holds one: nothing changes
    assert hit_message(TREE, "feuilles leaves") is None
    assert hit_message(TREE, "pourquoi automne") == "u2b"  # one message holds both
    # a message on another branch holding every word wins over a shown one holding some (a2b: leaves)
    assert hit_message(TREE, "leaves carotenoids") == "a2"


def test_words_found_whole_not_inside_other_words_and_unknown_or_empty_keywords():
    assert hit_message(TREE, "carot") is None  # search matches whole words only
    assert hit_message(TREE, "photosynthesis") is None
    assert hit_message(TREE, "") is None and hit_message(TREE, "   ") is None
    assert hit_message(Tree(), "yellow") is None


def test_a_punctuation_keyword_is_looked_for_as_it_is():
    tree = Tree.from_export([msg("user", "u", "hi", None), msg("assistant", "a", "ok", "u"),
                             msg("assistant", "b", "use ?! here", "u")], {"u": "a"})
    assert hit_message(tree, "?!") == "b"


def test_a_long_conversation_is_looked_through_in_slices_with_the_same_answer():
    """DESIGN.md §13: no long task; a tree of long messages is folded a slice at a time."""
    long = "lorem ipsum " * (HIT_SLICE_CHARS // 6)
    made = [msg("user", "u", long, None)]
    for n in range(6):
        made.append(msg("assistant", f"a{n}", f"{long} answer{n}", "u"))
    tree = Tree.from_export(made, {"u": "a0"})
    for keyword, expected in (("answer4", "a4"), ("answer0", None), ("LOREM", None), ("nowhere", None)):
        found, slices = driven(hit_message_steps(tree, keyword))
        assert found == expected == hit_message(tree, keyword), keyword
        if keyword in ("answer4", "nowhere"):  # five long messages or more looked through: a slice each at least
            assert slices >= 5, (keyword, slices)


def test_doctests():
    assert doctest.testmod(hit_branch).failed == 0
