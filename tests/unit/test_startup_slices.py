"""Start-up work after ready comes in slices the browser can pause between (DESIGN.md §13)."""

from __future__ import annotations

import pytest

from app.history.reconcile import iter_stored_threads, refreshed, stored_threads
from tests.unit.test_history import reply, service, user
from tests.unit.turn_events import ended


class Store:
    """A thread store double that counts the courses it was asked to load."""

    def __init__(self, threads):
        self.threads, self.loaded = threads, []

    def stage_ids(self):
        return list(self.threads)

    def load(self, stage_id):
        self.loaded.append(stage_id)
        return self.threads[stage_id][0]

    def updated_at(self, stage_id):
        return self.threads[stage_id][1]


def test_stored_threads_are_read_one_course_per_step():
    store = Store({"a": ([user("1")], 1), "empty": ([], 2), "b": ([user("2")], None), "c": ([user("3")], 3)})
    steps = iter_stored_threads(store)
    assert store.loaded == []  # nothing read before the first step is asked for
    assert next(steps) == ("a", ([user("1")], 1)) and store.loaded == ["a"]
    assert list(steps) == [("c", ([user("3")], 3))] and store.loaded == ["a", "empty", "b", "c"]
    assert stored_threads(Store(store.threads)) == {"a": ([user("1")], 1), "c": ([user("3")], 3)}



def test_a_course_saved_again_while_start_up_read_the_others_is_reconciled_as_stored_now():
    """A branch made at ready replaces a course's path in the store; start-up's reconciliation, queued
    after it, takes that path, never the one read before (which would show the branch left)."""
    store = Store({"a": ([user("1")], 1), "b": ([user("2")], 2)})
    read = stored_threads(store)
    store.threads["a"] = ([user("1 edited")], 5)  # an edit saved meanwhile
    store.threads["b"] = ([], 6)  # a course emptied meanwhile
    store.loaded.clear()
    assert refreshed(read, store) == {"a": ([user("1 edited")], 5)}
    assert store.loaded == ["a", "b"]  # only the courses saved since are read again
    store.threads["b"] = ([user("2")], 2)
    store.loaded.clear()
    assert refreshed({"b": ([user("2")], 2)}, store) == {"b": ([user("2")], 2)} and store.loaded == []

async def test_reconcile_pauses_after_each_course_it_writes():
    svc, _, _ = service()
    pauses = []

    async def pause():
        pauses.append(await svc.total("a") + await svc.total("b"))  # what history holds at each pause

    threads = {"a": ([user("x"), reply("y")], 1), "b": ([user("z"), reply("w")], 2)}
    assert await svc.reconcile(threads, pause) == ["a", "b"]
    assert pauses == [0, 0, 0, 1, 1, 1, 1, 2]  # one course written per transaction, each after 3 slices of its own
    assert await svc.reconcile(threads, pause) == [] and pauses[-1] == 2 and len(pauses) == 8  # in line: nothing


async def test_adopting_a_course_builds_title_folding_terms_and_transaction_in_slices_of_their_own(monkeypatch):
    """DESIGN.md §13: on a cold load every stored course is adopted into history after ready; its
    title, the folding of its text, its index terms and its transaction (JSON, the records' copy)
    each cost up to tens of ms with 50 turns, so no two of them may run without a pause between."""
    import app.history.repository as repository
    import app.history.writes as writes

    events = []

    def logged(module, name, label):
        original = getattr(module, name)

        def call(*args, **kwargs):
            events.append(label)
            return original(*args, **kwargs)
        monkeypatch.setattr(module, name, call)

    logged(writes, "title_of", "title")
    logged(repository, "fold_map_steps", "fold")
    logged(repository, "posting_keys", "terms")
    from app.records import MemoryBackend

    backend = MemoryBackend()
    logged(backend, "write", "write")
    svc, _, _ = service(backend=backend)

    async def pause():
        events.append("pause")

    threads = {stage: ([user(f"question {stage} " * 9), reply("answer " * 40)], n) for n, stage in enumerate("abc")}
    assert await svc.reconcile(threads, pause) == ["a", "b", "c"]
    steps = " ".join(events).split("pause")
    costly = [[e for e in step.split() if e in ("title", "fold", "terms", "write")] for step in steps]
    assert all(len(step) <= 1 for step in costly), costly  # at most one costly part per slice
    assert sum(len(step) for step in costly) == 12  # each course: its title, folding, terms, ONE write
    assert events.count("write") == 3  # a transaction per course: 5 records and its head


async def test_a_turn_recorded_before_history_is_loaded_waits_in_the_queue_and_is_kept():
    """DESIGN.md §13: history's modules load after ready; a turn sent right at ready is still recorded."""
    import asyncio

    from app.history.recorder import HistoryRecorder

    recorder = HistoryRecorder()
    assert not recorder.keeps_conversations
    first = recorder.turn_completed(ended("a", [user("x"), reply("y")], usage=None, model="demo", duration_ms=5,
                                          message_id="a"), 1)
    then = recorder.archived("a", [user("x"), reply("y")], 1)
    await asyncio.sleep(0.01)
    assert not first.done() and not then.done()
    svc, _, _ = service()
    recorder.attach(svc)
    assert (await first).turnId == 1 and await then  # in call order: recorded, then archived
    assert await svc.total("a") == 1 and (await svc.active("a"))[0] is None


def test_the_recorder_imports_none_of_historys_modules():
    """What the page imports before ready holds no history module (they load after ready, §13)."""
    import subprocess
    import sys

    code = ("import sys, app.history.recorder, app.history\n"
            "print(sorted(m for m in sys.modules if m.startswith('app.history')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['app.history', 'app.history.recorder']"


def test_record_models_are_built_one_at_a_time_and_validate_as_before():
    """The record models' validators are built apart from the import (one per step after ready, §13)."""
    from app.history import records

    for model in records.build_models():
        assert model.__pydantic_complete__  # this one is built, before the next one is
    assert [m.__name__ for m in records.MODELS] == ["Stats", "Usage", "FieldTimes", "TaskMeta", "TurnMeta"]
    with pytest.raises(Exception):
        records.TaskMeta(taskId="task_20260101_abcdef", taskName="x", stageId="s", createdAt=3, updatedAt=2)
