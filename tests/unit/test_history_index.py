"""Search through the index (DESIGN.md §14): paged like the list, newest first, every term required,
kept in the same transaction as each write (save, import, delete, undo), records stored before the
index indexed at the first search without writing over a newer one."""

from __future__ import annotations

import random

from app.history import HistoryService
from app.history.reads import PAGE_SIZE
from app.history.repository import Writes
from app.records import SCHEMA, MemoryBackend
from tests.unit.test_history import Clock, add


def service(*, backend=None, clock=None, pause=None):
    """A service whose task ids do not repeat (hundreds of conversations here)."""
    clock = clock or Clock()
    rng = random.Random(7)
    svc = HistoryService(backend or MemoryBackend(), clock=clock, random_bytes=rng.randbytes, on_notice=lambda n: None,
                         pause=pause)
    return svc, [], clock


def ids(found):
    return [h.meta.taskId for h in found.items]


async def test_results_are_paged_newest_first_on_a_cursor_with_has_more_and_total():
    svc, _, _ = service()
    made = [await add(svc, "s", f"gradient step {i}") for i in range(2 * PAGE_SIZE + 3)]
    await add(svc, "s", "nothing to see")
    first = await svc.search("s", "Gradient")
    assert ids(first) == made[::-1][:PAGE_SIZE] and first.has_more and first.total == len(made)
    second = await svc.search("s", "gradient", first.cursor)
    third = await svc.search("s", "gradient", second.cursor)
    assert ids(second) == made[::-1][PAGE_SIZE:2 * PAGE_SIZE] and second.has_more
    assert ids(third) == made[::-1][2 * PAGE_SIZE:] and not third.has_more
    oldest = await svc.search("s", "gradient", sort="oldest")
    assert ids(oldest) == made[:PAGE_SIZE] and ids(await svc.search("s", "gradient", oldest.cursor, sort="oldest")) \
        == made[PAGE_SIZE:2 * PAGE_SIZE]
    tokens = await svc.search("s", "gradient", sort="tokens")
    assert ids(tokens) == made[::-1][:PAGE_SIZE] and tokens.has_more  # equal tokens: newest first
    assert ids(await svc.search("s", "gradient", tokens.cursor, sort="tokens")) == made[::-1][PAGE_SIZE:2 * PAGE_SIZE]


async def test_every_term_is_required_words_are_whole_and_cjk_runs_are_checked_in_order():
    svc, _, _ = service()
    both = await add(svc, "s", "the learning rate matters")
    await add(svc, "s", "learning only")
    await add(svc, "s", "rate only")
    await add(svc, "s", "relearning rates")  # neither whole word
    run = await add(svc, "s", "讨论机器学习的")
    await add(svc, "s", "学机器")  # bigrams 机器 and 学 but not 机器学
    found = await svc.search("s", "Learning RATE")
    assert ids(found) == [both] and not found.has_more and found.total == 1
    assert ids(await svc.search("s", "机器学")) == [run]
    assert ids(await svc.search("s", "nowhere")) == [] and (await svc.search("s", "nowhere")).total == 0


async def test_many_candidates_with_few_matches_are_walked_past():
    svc, _, _ = service()
    wanted = await add(svc, "s", "alpha beta")
    for i in range(80):  # newer, holding one term only (more than a walk step of the rarer one)
        await add(svc, "s", f"beta {i}")
    for i in range(70):
        await add(svc, "s", f"alpha {i}")
    assert ids(await svc.search("s", "alpha beta")) == [wanted]


async def test_a_keyword_of_punctuation_only_is_scanned_for():
    svc, _, _ = service()
    marked = await add(svc, "s", "what?! really")
    await add(svc, "s", "plain")
    found = await svc.search("s", "?!")
    assert ids(found) == [marked] and found.items[0].snippet[1] == "?!"


async def test_the_index_is_written_removed_and_restored_with_the_record():
    backend = MemoryBackend()
    svc, _, clock = service(backend=backend)
    task_id = await add(svc, "s", "photosynthesis notes")
    assert ids(await svc.search("s", "photosynthesis")) == [task_id]
    assert any("photosynthesis" in key for key in backend.raw("search")[task_id]["terms"])
    assert await svc.delete(task_id)
    assert ids(await svc.search("s", "photosynthesis")) == []
    assert await svc.undo() == task_id
    assert ids(await svc.search("s", "photosynthesis")) == [task_id]
    other = await svc.search("other", "photosynthesis")
    assert ids(other) == []  # another course's postings are its own


async def test_a_failed_write_leaves_no_postings():
    backend = MemoryBackend()
    svc, _, _ = service(backend=backend)
    await add(svc, "s", "first text")
    backend.quota_chars = sum(len(str(r)) for t in ("conversations", "messages", "turns", "search", "texts", "heads")
                              for r in backend.raw(t).values()) + 200  # the next conversation does not fit
    await add(svc, "s", "second chlorophyll")
    assert not any("chlorophyll" in str(r) for r in backend.raw("texts").values())  # nothing of it stored
    backend.quota_chars = None
    fresh, _, _ = service(backend=backend)
    assert ids(await fresh.search("s", "chlorophyll")) == []
    assert not any("chlorophyll" in k for r in backend.raw("search").values() for k in r.get("terms", []))


async def test_an_import_is_found_at_once():
    from app.history.records import TaskMeta

    svc, _, clock = service()
    meta = TaskMeta(taskId="task_20260101_abc123", taskName="t", stageId="x", createdAt=clock.now, updatedAt=clock.now)
    messages = [{"role": "user", "id": "u", "content": [{"type": "text", "text": "imported mitochondria"}]}]
    assert await svc.import_bundle("s", meta, messages, []) == "ok"
    assert ids(await svc.search("s", "mitochondria")) == ["task_20260101_abc123"]


async def test_records_stored_before_the_index_are_indexed_in_slices_and_a_newer_save_is_kept():
    backend = MemoryBackend(SCHEMA)
    svc, _, clock = service(backend=backend, clock=Clock())
    made = [await add(svc, "s", f"ribosome {i}") for i in range(120)]
    for task_id, record in backend.raw("search").items():  # as version 1 stored them
        record.pop("terms")
        backend.put_raw("search", record)
    pauses = []

    async def pause():
        pauses.append(len(writes_before))

    reloaded, _, _ = service(backend=backend, pause=pause)
    writes_before = []
    original_write = backend.write

    async def counting(ops):
        writes_before.append(len(ops))
        await original_write(ops)

    backend.write = counting
    found = await reloaded.search("s", "ribosome")
    assert ids(found) == made[::-1][:PAGE_SIZE] and found.total == 120
    assert len(writes_before) == 12 and max(writes_before) == 10  # REINDEX_BATCH per transaction
    assert pauses[-2:] == [11, 12]  # the page's own pause (a task boundary) after each slice
    assert all(r.get("terms") for r in backend.raw("search").values())


async def test_a_reindex_patch_never_writes_over_a_record_saved_meanwhile():
    backend = MemoryBackend()
    svc, _, _ = service(backend=backend)
    task_id = await add(svc, "s", "old words")
    stale = backend.raw("search")[task_id]
    stale.pop("terms")
    writes = Writes()
    writes.reindex(stale, "old words")
    await add(svc, "s", "unrelated")  # another conversation: nothing to do with it
    newer = {**backend.raw("search")[task_id], "updatedAt": stale["updatedAt"] + 5, "folded": "new words"}
    backend.put_raw("search", newer)  # saved again (by another tab) after the reindex read it
    await backend.write(writes.ops)
    assert backend.raw("search")[task_id]["folded"] == "new words"
    plain = backend.raw("search")[task_id]
    plain.pop("terms")
    backend.put_raw("search", plain)
    writes = Writes()
    writes.reindex(plain, "new words")
    await backend.write(writes.ops)
    assert any("\0new\0" in k for k in backend.raw("search")[task_id]["terms"])


async def test_a_time_range_limits_search_and_its_total():
    clock = Clock()
    svc, _, _ = service(clock=clock)
    await add(svc, "s", "enzyme old")
    clock.now += 10 * 86_400_000
    recent = await add(svc, "s", "enzyme new")
    found = await svc.search("s", "enzyme", since_ms=clock.now - 86_400_000)
    assert ids(found) == [recent] and found.total == 1


class Reads:
    """Wraps a ``MemoryBackend``'s reads: ``log`` gets ``(method, how many keys or records it returned)``."""

    def __init__(self, backend: MemoryBackend) -> None:
        self.log: list[tuple[str, int]] = []
        for name in ("keys", "primary_keys", "bulk_get"):
            original = getattr(backend, name)

            async def read(*args, _original=original, _name=name, **kwargs):
                out = await _original(*args, **kwargs)
                self.log.append((_name, len(out)))
                return out

            setattr(backend, name, read)

    def most(self, name: str) -> int:
        return max((n for method, n in self.log if method == name), default=0)


async def test_a_course_already_indexed_is_checked_by_two_counts_reading_no_key():
    backend = MemoryBackend(SCHEMA)
    svc, _, _ = service(backend=backend)
    made = [await add(svc, "s", f"enzyme {i}") for i in range(30)]
    reloaded, _, _ = service(backend=backend)  # a new session: its first search checks the index
    reads = Reads(backend)
    assert ids(await reloaded.search("s", "enzyme")) == made[::-1][:PAGE_SIZE]
    assert reads.most("primary_keys") == 0  # the course's 30 record keys were not read
    assert reads.most("keys") <= PAGE_SIZE + 1  # only the page's postings, no presence key


async def test_presence_keys_are_read_in_bounded_slices_with_the_page_given_back_between(monkeypatch):
    from app.history import repository
    monkeypatch.setattr(repository, "PRESENCE_SLICE", 7, raising=False)
    backend = MemoryBackend(SCHEMA)
    svc, _, _ = service(backend=backend)
    made = [await add(svc, "s", f"lysosome {i}") for i in range(40)]
    for record in list(backend.raw("search").values())[:5]:  # five stored before the index
        record.pop("terms")
        backend.put_raw("search", record)
    pauses = []

    async def pause():
        pauses.append(1)

    reloaded, _, _ = service(backend=backend, pause=pause)
    reads = Reads(backend)
    found = await reloaded.search("s", "lysosome")
    assert ids(found) == made[::-1][:PAGE_SIZE] and found.total == 40
    presence = [n for method, n in reads.log if method == "keys"][:6]
    assert presence[:5] == [7, 7, 7, 7, 7] and presence[5] == 0  # 35 presence keys, 7 a step
    assert len(pauses) >= 5 and all(r.get("terms") for r in backend.raw("search").values())


async def test_a_word_in_every_conversation_is_not_read_whole_for_a_rare_one(monkeypatch):
    from app.history import repository
    monkeypatch.setattr(repository, "OTHER_KEYS_MAX", 8, raising=False)
    svc, _, _ = service(backend=(backend := MemoryBackend(SCHEMA)))
    rare = []
    for i in range(120):  # "rate" in every conversation, "quantum" in every 20th (a span of 20 per hit)
        task = await add(svc, "s", f"learning rate {i}" + (" quantum" if i % 20 == 3 else ""))
        if i % 20 == 3:
            rare.append(task)
    await add(svc, "s", "quantum alone")  # newest, lacks "rate"
    reads = Reads(backend)
    found = await svc.search("s", "quantum rate")
    assert ids(found) == rare[::-1] and not found.has_more
    assert reads.most("keys") <= 8  # "rate"'s ~100 postings in the span were never read at once
    tokens = await svc.search("s", "rate quantum", sort="tokens")
    assert sorted(ids(tokens)) == sorted(rare)


async def test_unspaced_runs_are_checked_on_a_bounded_number_of_records_a_step():
    svc, _, _ = service(backend=(backend := MemoryBackend(SCHEMA)))
    made = [await add(svc, "s", f"讨论机器学习 {i}") for i in range(40)]
    for i in range(20):
        await add(svc, "s", f"学机器 {i}")  # the bigrams, not the run
    reads = Reads(backend)
    found = await svc.search("s", "机器学")
    assert ids(found) == made[::-1][:PAGE_SIZE] and found.has_more
    bulk = [n for method, n in reads.log if method == "bulk_get"]
    assert bulk and max(bulk[:-3]) <= 16  # RUN_CHECK_BATCH  # the last three: the page's metas, records, texts


async def test_a_search_reads_no_posting_keys_of_its_hits():
    svc, _, _ = service(backend=(backend := MemoryBackend(SCHEMA)))
    made = [await add(svc, "s", f"讨论机器学习 mitochondria {i}") for i in range(12)]
    original = backend.bulk_get
    crossed = []

    async def bulk_get(table, keys, **kwargs):
        out = await original(table, keys, **kwargs)
        crossed.extend(r for r in out if table == "search" and isinstance(r, dict))
        return out

    backend.bulk_get = bulk_get
    for keyword in ("机器学", "mitochondria"):  # a run checked on the records, a word's snippets
        assert ids(await svc.search("s", keyword)) == made[::-1][:PAGE_SIZE]
    assert crossed and not any("terms" in r for r in crossed)
    assert (await backend.bulk_get("search", [made[0]], fields=["updatedAt", "nothing"]))[0].keys() == {"updatedAt"}


async def test_each_slice_of_the_index_build_is_stored_in_a_task_of_its_own(monkeypatch):
    from app.history import repository
    clock = iter(range(10**6))  # each reading of the clock: 3 ms later (folding spends the step in a few records)
    monkeypatch.setattr(repository.time, "perf_counter", lambda: next(clock) * 0.003)
    backend = MemoryBackend(SCHEMA)
    svc, _, _ = service(backend=backend)
    for i in range(45):
        await add(svc, "s", f"golgi {i}")
    for record in backend.raw("search").values():
        record.pop("terms")
        backend.put_raw("search", record)
    events = []

    async def pause():
        events.append("pause")

    reloaded, _, _ = service(backend=backend, pause=pause)
    original_write, original_fold = backend.write, repository.Writes.reindex

    def fold(writes, record, text, title=None):
        events.append("fold")
        original_fold(writes, record, text, title)

    monkeypatch.setattr(repository.Writes, "reindex", fold)

    async def write(ops):
        events.append("write")
        await original_write(ops)

    backend.write = write
    assert (await reloaded.search("s", "golgi")).total == 45
    writes = [i for i, e in enumerate(events) if e == "write"]
    assert events.count("fold") == 45 and len(writes) == 5  # REINDEX_BATCH (10) a slice
    assert all(events[i - 1] == "pause" and events[i + 1] == "pause" for i in writes)  # no folding in a write's task


async def test_search_by_most_tokens_reads_metas_in_slices_and_snippets_for_the_page_only(monkeypatch):
    from app.history import repository
    monkeypatch.setattr(repository, "META_SLICE", 4, raising=False)
    svc, _, _ = service(backend=(backend := MemoryBackend(SCHEMA)))
    made = [await add(svc, "s", f"centriole {i}") for i in range(30)]
    reads = Reads(backend)
    first = await svc.search("s", "centriole", sort="tokens")
    second = await svc.search("s", "centriole", first.cursor, sort="tokens")
    assert ids(first) + ids(second) == made[::-1][:2 * PAGE_SIZE] and first.total == 30 and second.has_more
    assert reads.most("bulk_get") <= PAGE_SIZE  # metas 4 a read, the page's 10 snippets; never all 30 at once


async def test_a_cjk_run_found_on_more_than_a_page_is_counted_whole():
    """"量子纠缠" (three bigrams and a run to check) in 20 of 60 conversations: the search said 10
    (the first page drawn) where a scan of the texts finds 20; the total counts every match, and the
    pages hold them all."""
    svc, _, _ = service()
    made = []
    for i in range(60):
        rare = " 关于量子纠缠 (Quantum entanglement) 的问题" if i % 3 == 1 else ""
        made.append(await add(svc, "s", f"我们今天讨论机器学习的基本概念 #{i}{rare} 量子 纠缠"))
    wanted = made[1::3][::-1]
    first = await svc.search("s", "量子纠缠")
    assert first.total == len(wanted) == 20 and first.has_more
    second = await svc.search("s", "量子纠缠", first.cursor)
    assert ids(first) + ids(second) == wanted and not second.has_more
    assert (await svc.search("s", "量子纠缠", sort="oldest")).total == 20
    assert (await svc.search("s", "learning 量子纠缠")).total == 0
