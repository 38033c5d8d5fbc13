"""Start-up work after ready comes in slices the browser can pause between (DESIGN.md §13)."""

from __future__ import annotations

from app.history.reconcile import iter_stored_threads, stored_threads
from tests.unit.test_history import reply, service, user


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


async def test_reconcile_pauses_after_each_course_it_writes():
    svc, _, _ = service()
    pauses = []

    async def pause():
        pauses.append(await svc.total("a") + await svc.total("b"))  # what history holds at each pause

    threads = {"a": ([user("x"), reply("y")], 1), "b": ([user("z"), reply("w")], 2)}
    assert await svc.reconcile(threads, pause) == ["a", "b"]
    assert pauses == [1, 2]  # one course written per slice
    assert await svc.reconcile(threads, pause) == [] and pauses == [1, 2]  # in line: nothing written, no pause
