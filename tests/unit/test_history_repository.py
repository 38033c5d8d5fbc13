"""History's repository (app/history/repository.py): tables, ranges and transactions (DESIGN.md §9, §14)."""

from __future__ import annotations

import pytest

from app.history.records import TaskMeta, TurnMeta
from app.history.repository import Damaged, Head, HistoryRepository, ListRange, Writes
from app.records import HIGHEST, LOWEST, MemoryBackend, RecordStoreError

T0 = 1_780_000_000_000
TASK = "task_20260528_aaaaaa"


def meta(task_id=TASK, stage="s", at=T0):
    return TaskMeta(taskId=task_id, taskName="t", stageId=stage, createdAt=at, updatedAt=at)


async def opened():
    damaged = []
    repository = HistoryRepository(MemoryBackend(), on_damaged=lambda: damaged.append(1))
    await repository.open()
    return repository, damaged


def test_a_list_range_narrows_the_end_its_cursor_is_on():
    """Paging on the cursor (DESIGN.md §9): newest first reads below the last row shown, oldest first above it;
    the time range stays the list's lower end for its total. Over all time the upper end is the
    course's last key (past the numbers: a damaged ``updatedAt`` of another type is listed)."""
    assert ListRange("s").bounds() == (["s", LOWEST], ["s\x00"])
    assert ListRange("s", since_ms=5).low == ["s", 5]
    assert ListRange("s", after=(9, TASK)).bounds() == (["s", LOWEST], ["s", 9, TASK])
    assert ListRange("s", 5, (9, TASK), oldest=True).bounds() == (["s", 9, TASK], ["s", HIGHEST])


async def test_a_conversation_is_kept_whole_in_one_transaction_and_an_add_over_it_writes_nothing():
    repository, _ = await opened()
    writes = Writes()
    writes.keep(meta(), [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
                [TurnMeta(turnId=1, timestamp="2026-05-28T00:00:00.000Z")])
    writes.make_head("s", TASK, 7)
    await repository.commit(writes)
    assert (await repository.conversation(TASK)).meta.taskId == TASK
    assert await repository.head("s") == Head(TASK, 7)
    again = Writes()
    again.end_head("s")
    again.keep(meta(at=T0 + 1), [], [], new=True)  # another tab's import took the id: the whole aborts
    with pytest.raises(RecordStoreError):
        await repository.commit(again)
    assert await repository.head("s") == Head(TASK, 7) and (await repository.meta(TASK)).updatedAt == T0


async def test_a_removed_conversation_is_put_back_exactly_as_it_was():
    repository, _ = await opened()
    writes = Writes()
    writes.keep(meta(), [], [])
    await repository.commit(writes)
    stored = await repository.stored(TASK)
    assert [table for table, _ in stored.records] == ["conversations", "messages", "turns", "search", "texts"]
    gone = Writes()
    gone.remove(stored)
    await repository.commit(gone)
    assert not await repository.holds(TASK) and (await repository.stored(TASK)).records == []
    back = Writes()
    back.restore(stored)
    await repository.commit(back)
    assert await repository.stored(TASK) == stored


async def test_a_damaged_meta_is_listed_by_its_task_id_and_reported_once_per_read():
    """DESIGN.md §5, §14: a record that cannot be read is listed (to be deleted or repaired), never hidden."""
    repository, damaged = await opened()
    listed = repository.listed({"taskId": TASK, "stageId": "s", "updatedAt": 2**60, "taskName": 3})
    assert listed == Damaged(TASK, "s", 0) and damaged == [1]
    assert repository.listed({"taskId": "not-a-task"}) is None and repository.meta_of(None) is None


def test_a_head_names_a_task_id_only_when_it_is_well_formed():
    assert Head(TASK, None).allocated == TASK
    assert Head("task_x", None).allocated is None and Head(None, 3).allocated is None


LONG_TEXT_PIECES = ["Deep LEARNING, for_all: Straße! ", "我们今天讨论机器学习的基本概念", " İstanbul cafe\u0301 ＦＵＬＬ ",
                    "x" * 70, "\n", "한국어를 ", "gpt-4 “quoted” 😀 "]


def long_text(characters: int) -> str:
    """Mixed text (words, CJK, accents that change length when folded, a combining mark) of about ``characters``."""
    out, size, i = [], 0, 0
    while size < characters:
        piece = LONG_TEXT_PIECES[i % len(LONG_TEXT_PIECES)] + str(i)
        out.append(piece)
        size += len(piece)
        i += 1
    return "".join(out)


async def test_a_long_conversation_is_kept_in_bounded_slices_with_the_same_records_as_at_once():
    """A 2,000,000-character message (DESIGN.md §14: an import has no task over 50 ms): its folding and
    its index terms are made in slices with a pause between them, not in one; the records are those
    ``keep`` writes at once."""
    messages = [{"role": "user", "id": "u1", "content": [{"type": "text", "text": long_text(2_000_000)}]},
                {"role": "assistant", "id": "a1", "content": [{"type": "text", "text": "短い 答え"}]}]
    turns = [TurnMeta(turnId=1, timestamp="2026-05-28T00:00:00.000Z")]
    pauses = []

    async def pause():
        pauses.append(1)

    sliced, whole = Writes(), Writes()
    await sliced.keep_in_steps(meta(), messages, turns, pause=pause)
    whole.keep(meta(), messages, turns)
    assert sliced.ops == whole.ops
    assert len(pauses) >= 2_000_000 // 250_000  # both the folding and the terms go in slices of the text


async def test_the_tokens_order_reads_a_course_in_bounded_slices_and_orders_it_whole():
    """DESIGN.md §14: sorting 10,000 conversations by most tokens has no task over 50 ms; no index
    holds tokens, so every meta of the course is read, but a bounded number per read (each read a
    task of its own), never the course in one."""
    from app.history.repository import TOKENS_SLICE

    repository, _ = await opened()
    writes = Writes()
    count = 2 * TOKENS_SLICE + 7
    for i in range(count):
        task = f"task_20260528_{i:06d}"
        kept = meta(task, at=T0 + i % 5).model_copy(update={"stats": meta().stats.model_copy(
            update={"totalTokens": i % 13})})
        writes.keep(kept, [], [])
    writes.keep(meta("task_20260528_zzzzzz", stage="other"), [], [])
    await repository.commit(writes)
    reads = []
    query = repository._db.query

    async def counted(*args, **kwargs):
        rows = await query(*args, **kwargs)
        reads.append((kwargs.get("limit", 0), len(rows)))
        return rows
    repository._db.query = counted
    ordered = await repository.by_tokens("s", None)
    assert len(ordered) == count and [k for k, _ in ordered] == sorted(k for k, _ in ordered)
    assert [r["taskId"] for _, r in ordered][:2] == ["task_20260528_000064", "task_20260528_000129"]
    assert len(reads) >= 3 and all(0 < limit <= TOKENS_SLICE and n <= limit for limit, n in reads)
