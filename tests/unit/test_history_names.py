"""Naming and pinning conversations (DESIGN.md §18): the pure rules of app/history/names.py, the
order of a course's list, storage, export and import, sync's merge and search by title."""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest

from app.history.names import NAME_GRAPHEMES, named, merged_names, pinned_meta, renamed_meta
from app.history.records import TaskMeta

T0 = 1_780_000_000_000
TASK = "task_20260601_abcdef"


def meta(**kw):
    fields = {"taskId": TASK, "taskName": "First question", "stageId": "s", "createdAt": T0, "updatedAt": T0}
    return TaskMeta(**{**fields, **kw})


def user(text, id="u"):
    return {"role": "user", "id": id, "content": [{"type": "text", "text": text}]}


# -- the rule of a name ----------------------------------------------------------
def test_a_name_is_collapsed_and_kept_whole_up_to_200_clusters():
    assert named("  My   plan\n for  exams ", [user("q")]) == "My plan for exams"
    assert named("x" * NAME_GRAPHEMES, []) == "x" * NAME_GRAPHEMES
    assert NAME_GRAPHEMES == 200


def test_an_empty_name_gives_back_the_first_question_title():
    messages = [user("What is   photosynthesis?")]
    assert named("", messages) == "What is photosynthesis?"
    assert named(" \n\t ", messages) == "What is photosynthesis?"
    assert named("", []) == ""  # no user text: the view says "Untitled conversation"


def test_a_name_over_200_clusters_is_cut_like_titles_never_half_an_emoji():
    thumbs = "👍🏽"  # two code points, one cluster
    cut = named(thumbs * 250, [])
    assert cut == thumbs * NAME_GRAPHEMES + "…"
    family = "👨‍👩‍👧"
    cut = named("a" * 199 + family + "b", [])
    assert cut == "a" * 199 + family + "…"


def test_a_name_cut_once_is_kept_as_it_is():
    once = named("é" * 300, [])
    assert named(once, []) == once


# -- meta changes ----------------------------------------------------------------
def test_rename_sets_the_name_and_its_change_time_not_updated_at():
    renamed = renamed_meta(meta(), "New  name", [user("q")], now=T0 + 50)
    assert renamed.taskName == "New name"
    assert renamed.changedAt.taskName == T0 + 50
    assert renamed.updatedAt == T0  # the list's recency is the conversation's, not its name's


def test_pin_records_when_and_unpin_clears_it():
    pinned = pinned_meta(meta(), True, now=T0 + 7)
    assert pinned.pinnedAt == T0 + 7 and pinned.pinned
    assert pinned.changedAt.pinned == T0 + 7
    again = pinned_meta(pinned, True, now=T0 + 9)
    assert again.pinnedAt == T0 + 7  # pinning a pinned one keeps its place
    unpinned = pinned_meta(pinned, False, now=T0 + 11)
    assert unpinned.pinnedAt is None and not unpinned.pinned
    assert unpinned.changedAt.pinned == T0 + 11


def test_a_meta_without_names_reads_with_defaults():
    old = TaskMeta.model_validate({"taskId": TASK, "taskName": "t", "stageId": "s", "createdAt": 1, "updatedAt": 2})
    assert old.pinnedAt is None and old.changedAt.taskName == 0 and old.changedAt.pinned == 0


# -- merging two devices' metas ------------------------------------------------------
def test_each_field_takes_its_later_change():
    base = meta()
    here = renamed_meta(base, "Renamed here", [], now=T0 + 10)
    there = pinned_meta(base, True, now=T0 + 20)
    for a, b in ((here, there), (there, here)):
        both = merged_names(a, b)
        assert both.taskName == "Renamed here" and both.pinnedAt == T0 + 20
        assert both.changedAt.taskName == T0 + 10 and both.changedAt.pinned == T0 + 20


def test_a_later_unpin_wins_over_an_earlier_pin():
    pinned = pinned_meta(meta(), True, now=T0 + 10)
    unpinned = pinned_meta(pinned, False, now=T0 + 30)
    assert merged_names(pinned, unpinned).pinnedAt is None
    assert merged_names(unpinned, pinned).pinnedAt is None


def test_the_later_of_two_renames_wins():
    a = renamed_meta(meta(), "A", [], now=T0 + 10)
    b = renamed_meta(meta(), "B", [], now=T0 + 12)
    assert merged_names(a, b).taskName == "B" and merged_names(b, a).taskName == "B"


def test_a_meta_never_named_nor_pinned_is_stored_as_before():
    assert set(meta().model_dump()) == {"taskId", "taskName", "stageId", "createdAt", "updatedAt", "stats",
                                        "turnCount", "durationMs"}
    pinned = pinned_meta(meta(), True, now=T0 + 1)
    assert TaskMeta.model_validate(pinned.model_dump()) == pinned
