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
    from app.history import search_index
    monkeypatch.setattr(search_index, "PRESENCE_SLICE", 7, raising=False)
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
    from app.history import search_index
    monkeypatch.setattr(search_index, "OTHER_KEYS_MAX", 8, raising=False)
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
    from app.history import repository, search_index
    clock = iter(range(10**6))  # each reading of the clock: 3 ms later (folding spends the step in a few records)
    monkeypatch.setattr(search_index.time, "perf_counter", lambda: next(clock) * 0.003)
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
    from app.history import search_index
    monkeypatch.setattr(search_index, "META_SLICE", 4, raising=False)
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


# -- a turn indexes its new messages only (DESIGN.md §14) ------------------------------------------

TURN_TEXTS = ["How does backpropagation work?", "İstanbul STRASSE und Straße", "讨论机器学习的基本概念",
              "\u0301 a mark first, then ﬁne ligatures", "", "Ｆｕｌｌ-width ÉCOLE café", "plain ascii again"]


def whole_record(meta, messages):
    """The ``search`` record a full rebuild writes for ``messages``."""
    from app.history.repository import search_record
    from app.history.text import plain_text

    return search_record(meta, plain_text(messages), message_count=len(messages))


def turn_thread(n):
    """``n`` turns of a thread: a question and a reply each, of mixed scripts and foldings."""
    from tests.unit.test_history import reply, user

    out = []
    for i in range(n):
        out += [user(f"{TURN_TEXTS[i % len(TURN_TEXTS)]} q{i}", f"u{i}"),
                reply(f"{TURN_TEXTS[(i + 3) % len(TURN_TEXTS)]}", f"a{i}")]
    return out


async def stored_record(svc, backend):
    meta = (await svc.active("s"))[0]
    return meta, backend.raw("search")[meta.taskId]


async def test_a_turn_folds_only_its_new_messages_and_the_index_equals_a_whole_rebuild(monkeypatch):
    from app.history import repository
    from tests.unit.test_history import Clock
    from tests.unit.turn_events import ended

    folded_chars = []
    real = repository.fold_map_steps

    def counted(text, **kw):
        folded_chars.append(len(text))
        return real(text, **kw)

    monkeypatch.setattr(repository, "fold_map_steps", counted)
    backend = MemoryBackend()
    svc, _, _ = service(backend=backend, clock=Clock())
    for n in range(1, 16):
        thread = turn_thread(n)
        folded_chars.clear()
        await svc.record_turn(ended("s", thread, message_id=f"a{n - 1}"), n)
        meta, record = await stored_record(svc, backend)
        assert record == whole_record(meta, thread)
        if n > 1:  # the held record indexes the turns before: only this turn's text is folded
            from app.history.text import plain_text

            assert folded_chars == [len(plain_text(thread)) - len(plain_text(thread[:-2]))]
    assert ids(await svc.search("s", "istanbul")) == [meta.taskId]
    assert ids(await svc.search("s", "机器学")) == [meta.taskId]
    assert ids(await svc.search("s", "fine Q14")) == [meta.taskId]


async def test_a_turn_after_a_rename_or_over_an_older_or_stale_record_is_indexed_as_a_whole_rebuild():
    from tests.unit.test_history import Clock, reply, user
    from tests.unit.turn_events import ended

    backend = MemoryBackend()
    svc, _, _ = service(backend=backend, clock=Clock())
    thread = turn_thread(3)
    await svc.record_turn(ended("s", thread, message_id="a2"), 1)
    meta, _ = await stored_record(svc, backend)
    await svc.rename(meta.taskId, "Quantum notes")  # the title's terms are in the record, not a message's
    thread += [user("more on gradients", "u3"), reply("sure", "a3")]
    await svc.record_turn(ended("s", thread, message_id="a3"), 2)
    meta, record = await stored_record(svc, backend)
    assert record == whole_record(meta, thread) and "quantum" in record["titleOnly"]
    assert ids(await svc.search("s", "quantum gradients")) == [meta.taskId]

    old = dict(record)
    del old["messageCount"]  # as a version before it stored it
    backend.put_raw("search", old)
    thread += [user("older record", "u4"), reply("ok", "a4")]
    await svc.record_turn(ended("s", thread, message_id="a4"), 3)
    meta, record = await stored_record(svc, backend)
    assert record == whole_record(meta, thread)

    stale = dict(record, messageCount=len(thread) - 2)  # says fewer messages than are stored
    backend.put_raw("search", stale)
    thread += [user("stale count", "u5"), reply("ok", "a5")]
    await svc.record_turn(ended("s", thread, message_id="a5"), 4)
    meta, record = await stored_record(svc, backend)
    assert record == whole_record(meta, thread)
    assert ids(await svc.search("s", "stale older")) == [meta.taskId]


async def test_messages_edited_or_removed_since_the_held_record_are_indexed_whole(monkeypatch):
    from app.history import repository
    from app.history.records import TaskMeta
    from tests.unit.test_history import T0, reply

    meta = TaskMeta(taskId="task_20260528_aaaaaa", taskName="t", stageId="s", createdAt=T0, updatedAt=T0)
    thread = turn_thread(4)
    held = Writes()
    held.keep(meta, thread[:6], [])
    record = next(value for _, table, value in held.ops if table == "search")
    folded = []
    real = repository.fold_map_steps
    monkeypatch.setattr(repository, "fold_map_steps", lambda text, **kw: folded.append(len(text)) or real(text, **kw))

    async def pause():
        pass

    edited = [*thread[:2], reply("an edited reply", "a1"), *thread[3:]]
    for messages, held_messages in ((edited, thread[:6]), (thread[:4], thread[:6]), (thread, thread[:6])):
        folded.clear()
        writes = Writes()
        await writes.keep_in_steps(meta, messages, [], pause=pause, held_messages=held_messages, held_search=record)
        assert next(value for _, table, value in writes.ops if table == "search") == whole_record(meta, messages)
        from app.history.text import plain_text

        whole = len(plain_text(messages))
        assert folded == ([whole] if messages is not thread else [whole - len(plain_text(thread[:6]))])


class CountedReads(MemoryBackend):
    """A ``MemoryBackend`` that counts its read calls (one crossing each in the page)."""

    def __init__(self):
        super().__init__()
        self.reads = []

    async def get(self, table, key):
        self.reads.append(("get", table))
        return await super().get(table, key)

    async def bulk_get(self, table, keys, **kw):
        self.reads.append(("bulk_get", table))
        return await super().bulk_get(table, keys, **kw)

    async def get_all(self, reads):
        self.reads.append(("get_all", tuple(table for table, _ in reads)))
        return await super().get_all(reads)


async def test_a_turn_on_the_active_conversation_reads_history_once_and_only_its_head_and_meta_after_this_tab_wrote_it():
    from tests.unit.test_history import Clock, user
    from tests.unit.turn_events import ended

    backend = CountedReads()
    svc, _, _ = service(backend=backend, clock=Clock())
    thread = turn_thread(2)
    await svc.record_turn(ended("s", thread, message_id="a1"), 1)
    task_id = (await svc.active("s"))[0].taskId
    whole = ("get_all", ("heads", "conversations", "messages", "turns", "search"))
    for n, reads in ((3, [("get_all", ("heads", "conversations"))]), (4, [("get_all", ("heads", "conversations"))]),
                     (5, [("get_all", ("heads", "conversations")), whole]), (6, [whole]),
                     (7, [("get_all", ("heads", "conversations"))])):
        if n == 5:  # another writer (a tab, sync) stored the conversation's meta since: it is read whole
            raw = dict(backend.raw("conversations")[task_id], durationMs=99)
            backend.put_raw("conversations", raw)
        if n == 6:  # another tab's change was heard: nothing kept is trusted
            svc._writes._active.forget("s")
        if n == 7:  # a held message changed in place after it was written: its text is indexed again
            thread[0]["content"][0]["text"] = "rewritten in place"
        thread = thread[:2 * (n - 1)] + turn_thread(n)[2 * (n - 1):] if n == 7 else turn_thread(n)
        backend.reads.clear()
        await svc.record_turn(ended("s", thread, message_id=f"a{n - 1}", conversation_id=task_id), n)
        assert backend.reads == reads, n
        meta, record = await stored_record(svc, backend)
        assert meta.taskId == task_id and record == whole_record(meta, thread)
        assert backend.raw("messages")[task_id]["messages"] == thread
    assert ids(await svc.search("s", "rewritten")) == [task_id] and meta.turnCount == 6


async def test_a_keyword_with_no_term_is_found_in_titles_too_and_an_emoji_sequence_finds_only_itself():
    """A keyword with no term (emoji, punctuation) is scanned for in the titles as well as the
    messages, as a word is (DESIGN.md §18: a renamed conversation is found by its title); an emoji
    sequence finds the conversations holding it, not every one holding another sequence."""
    svc, _, _ = service()
    named = await add(svc, "s", "about dogs")
    await svc.rename(named, "Dogs 🐶 👩\u200d👩\u200d👧\u200d👦 🇫🇷")
    coder = await add(svc, "s", "a coder 👩\u200d💻 at work")
    await add(svc, "s", "plain")
    for emoji in ("🐶", "🇫🇷", "👩\u200d👩\u200d👧\u200d👦"):
        found = await svc.search("s", emoji)
        assert ids(found) == [named] and found.total == 1, emoji
        assert found.items[0].snippet == ("Dogs 🐶 👩\u200d👩\u200d👧\u200d👦 🇫🇷".partition(emoji)[0], emoji,
                                          "Dogs 🐶 👩\u200d👩\u200d👧\u200d👦 🇫🇷".partition(emoji)[2])
    assert ids(await svc.search("s", "👩\u200d💻")) == [coder]
