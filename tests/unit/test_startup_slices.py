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
    logged(repository, "fold_map", "fold")
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
