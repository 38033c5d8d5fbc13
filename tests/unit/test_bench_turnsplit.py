"""The turn-write split of bench part ``turncost`` (bench/turnsplit.py, ``BENCH_TURNCOST_SPLIT=1``): the
variants it replays of a turn's captured ops, that they can be written again, their sizes, the thread
CPU it reads from a Chrome trace, and its medians (DESIGN.md §9, §14)."""

from __future__ import annotations

import json

import pytest

from app.history.records import TaskMeta, TurnMeta
from app.history.repository import Writes
from app.history.terms import posting_keys
from app.records import MemoryBackend, RecordStoreError
from bench import turnsplit

T0 = 1_780_000_000_000
TASK = "task_20260528_aaaaaa"


def meta(at: int, turns: int) -> TaskMeta:
    return TaskMeta(taskId=TASK, taskName="t", stageId="s", createdAt=T0, updatedAt=at, turnCount=turns)


def message(role: str, text: str) -> dict:
    return {"role": role, "content": [{"type": "text", "text": text}]}


def turn_ops(turns: int) -> tuple[list, list]:
    """The ops that store the conversation with ``turns - 1`` turns, then those of its next turn (as
    ``TurnWrites`` makes them: the meta as read expected, the conversation kept whole, its head)."""
    before, after = Writes(), Writes()
    messages = [m for i in range(turns)
                for m in (message("user", f"question {i} 过拟合"), message("assistant", f"answer {i}"))]
    history = [TurnMeta(turnId=i + 1, timestamp="2026-05-28T00:00:00.000Z") for i in range(turns)]
    before.keep(meta(T0 + turns - 1, turns - 1), messages[:-2], history[:-1])
    after.expect(meta(T0 + turns - 1, turns - 1))
    after.keep(meta(T0 + turns, turns), messages, history)
    after.make_head("s", TASK, None)
    return before.ops, after.ops


def test_moved_posting_keys_are_those_of_the_same_terms_written_at_the_new_time():
    terms = ["plan", "过拟", "😀"]
    keys = posting_keys("intro-ml", T0, TASK, terms)
    assert turnsplit.moved_terms(keys, T0 + 7) == posting_keys("intro-ml", T0 + 7, TASK, terms)
    assert turnsplit.moved_terms(keys, T0) == keys


def test_each_variant_writes_the_ops_its_name_says_and_moves_the_postings_unless_it_keeps_them():
    _, ops = turn_ops(3)
    held = turnsplit.search_terms(ops)
    def tables(name):
        return [(kind, table) for kind, table, _ in turnsplit.variant(ops, name, moved_at=T0 + 99, held_terms=held)]
    assert tables("whole") == [(kind, table) for kind, table, _ in ops]
    assert tables("without messages") == [(k, t) for k, t, _ in ops if t != "messages"]
    assert tables("search alone") == [("put", "search")]
    for name in turnsplit.VARIANTS:
        assert tables(name)  # every name is known
    moved = turnsplit.search_terms(turnsplit.variant(ops, "whole", moved_at=T0 + 99, held_terms=held))
    assert moved == turnsplit.moved_terms(held, T0 + 99) and moved != held
    kept = turnsplit.variant(ops, "search alone" + turnsplit.UNCHANGED, moved_at=T0 + 99, held_terms=held)
    assert turnsplit.search_terms(kept) == held
    assert turnsplit.search_terms(ops) == held  # the captured ops are left as they were
    with pytest.raises(ValueError):
        turnsplit.variant(ops, "without heads", moved_at=T0, held_terms=held)


async def test_a_turns_ops_written_once_are_written_again_as_replayable_ops_and_each_variant_holds():
    backend = MemoryBackend()
    await backend.open()
    before, ops = turn_ops(3)
    await backend.write(before)
    await backend.write(ops)
    with pytest.raises(RecordStoreError) as stale:  # the turn's expect names the meta before the turn
        await backend.write(ops)
    assert stale.value.kind == "stale"
    again = turnsplit.replayable(ops)
    assert [(kind, table) for kind, table, _ in again] == [(kind, table) for kind, table, _ in ops]
    held = turnsplit.search_terms(again)
    for tick, name in enumerate(turnsplit.VARIANTS, 1):
        written = turnsplit.variant(again, name, moved_at=T0 + 100 + tick, held_terms=held)
        await backend.write(written)
        held = turnsplit.search_terms(written) or held
        assert sorted(await backend.keys("search", "terms", "", "\uffff")) == sorted(held)
    await backend.write(again)  # the records as the turn wrote them
    assert await backend.get("search", TASK) == next(v for k, t, v in ops if t == "search")
    assert (await backend.get("conversations", TASK))["turnCount"] == 3


def test_a_new_conversations_add_is_replayed_as_a_put():
    writes = Writes()
    writes.keep(meta(T0, 1), [message("user", "hi")], [], new=True)
    assert [kind for kind, _, _ in turnsplit.replayable(writes.ops)] == ["put"] * 5


def test_sizes_name_each_ops_json_length_its_lifted_strings_and_its_posting_keys():
    _, ops = turn_ops(8)
    ops = [op for op in ops if op[1] in ("search", "texts")]
    search, texts = (next(v for _, t, v in ops if t == table) for table in ("search", "texts"))
    assert len(texts["text"]) > 100 > max(len(key) for key in search["terms"])
    rows = turnsplit.sizes(ops, lift_chars=100)
    encoded = json.dumps(search, ensure_ascii=False, separators=(",", ":"))
    assert rows[0] == {"op": "put search", "json_chars": len(encoded),
                       "lifted": [["folded", len(search["folded"])]], "postings": len(search["terms"])}
    assert rows[1]["lifted"] == [["text", len(texts["text"])]] and rows[1]["postings"] is None


def test_the_source_sent_to_the_page_runs_alone_and_gives_what_the_module_gives():
    space: dict = {}
    exec(turnsplit.page_source(), space)
    _, ops = turn_ops(2)
    held = turnsplit.search_terms(ops)
    for name in ("whole", "texts alone", "search alone" + turnsplit.UNCHANGED):
        assert space["variant"](ops, name, moved_at=T0 + 5, held_terms=held) == \
            turnsplit.variant(ops, name, moved_at=T0 + 5, held_terms=held)
    assert space["replayable"](ops) == turnsplit.replayable(ops) and space["sizes"](ops) == turnsplit.sizes(ops)


def trace_of(events: list[dict]) -> bytes:
    names = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Browser"}},
             {"ph": "M", "name": "process_name", "pid": 2, "tid": 0, "args": {"name": "Renderer"}},
             {"ph": "M", "name": "thread_name", "pid": 2, "tid": 20, "args": {"name": "CrRendererMain"}},
             {"ph": "M", "name": "thread_name", "pid": 2, "tid": 21, "args": {"name": "ThreadPoolForegroundWorker"}},
             {"ph": "M", "name": "thread_name", "pid": 1, "tid": 11, "args": {"name": "ThreadPoolForegroundWorker"}},
             {"ph": "I", "name": "clock", "pid": 2, "tid": 20, "ts": 5_000_000}]
    return json.dumps({"traceEvents": names + events}).encode()


def task(pid: int, tid: int, name: str, ts: int, dur: int, tdur: int) -> dict:
    return {"ph": "X", "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "tdur": tdur}


def test_a_windows_cpu_is_the_page_main_threads_and_the_browser_pools_tasks_inside_it_by_their_share():
    # the mark at trace 5 s is page time 1,000 ms: page ms t is trace µs 4,000,000 + 1000 t
    main, pool = "ThreadControllerImpl::RunTask", "ThreadPool_RunTask"
    trace = trace_of([
        task(2, 20, main, 4_010_000, 4_000, 3_000),   # page 10–14 ms: inside
        task(2, 20, main, 4_018_000, 4_000, 2_000),   # page 18–22 ms: half inside
        task(2, 20, main, 4_012_000, 1_000, 9_000),   # thread time over wall time: left out
        task(2, 21, pool, 4_012_000, 4_000, 4_000),   # the renderer's own pool: neither
        task(1, 11, pool, 4_011_000, 2_000, 1_500),   # the browser's pool: storage
        task(1, 11, main, 4_011_000, 2_000, 1_000),   # the browser's other tasks: neither
        task(2, 20, main, 4_030_000, 1_000, 1_000),   # after the window
    ])
    windows = {"c": {"write: whole": [[10.0, 20.0]], "later": [[29.0, 31.0]]}}
    cpu, storage = turnsplit.window_cpu(trace, windows, ("clock", 1_000.0))
    assert cpu == {"c": {"write: whole": [pytest.approx(4.0)], "later": [pytest.approx(1.0)]}}
    assert storage == {"c": {"write: whole": [pytest.approx(1.5)], "later": [0.0]}}
    with pytest.raises(ValueError):
        turnsplit.window_cpu(trace, windows, ("no such mark", 0.0))


def test_the_split_sums_up_medians_in_order_and_the_ratio_of_the_long_conversation_to_the_short():
    samples = {"long": {"write: whole (JS adapter)": [4, 2, 3], "write: whole": [10, 30, 20],
                        "prepare: lift long strings": [1, None, 3]},
               "short": {"write: whole (JS adapter)": [1, 1, 1], "write: whole": [5, 5, 4],
                         "prepare: lift long strings": [0, 0, 0]}}
    rows = turnsplit.summarise(samples, "long", "short")
    assert [r["measure"] for r in rows] == ["prepare: lift long strings", "write: whole", "write: whole (JS adapter)"]
    assert rows[0] == {"measure": "prepare: lift long strings", "long_ms": 2, "short_ms": 0, "ratio": None,
                       "long_spread": [1, 3], "short_spread": [0, 0], "n": 2}
    assert (rows[1]["long_ms"], rows[1]["short_ms"], rows[1]["ratio"]) == (20, 5, 4.0)


def test_the_report_prints_each_measure_by_wall_clock_main_thread_cpu_and_storage_cpu_with_the_sizes(capsys):
    row = {"measure": "write: whole", "long_ms": 20.0, "short_ms": 5.0, "ratio": 4.0}
    turnsplit.report({"long_course": "long", "short_course": "short", "long_turns": 1000, "short_turns": 10,
                      "reps": 5, "load": 3.5, "rows": [row], "main_cpu_rows": [{**row, "long_ms": 8.0, "ratio": 1.6}],
                      "storage_cpu_rows": [],
                      "sizes": {"long": [{"op": "put search", "json_chars": 346366, "lifted": [["folded", 264657]],
                                          "postings": 1174}],
                                "short": [{"op": "put texts", "json_chars": 3129, "lifted": [], "postings": None}]}})
    lines = capsys.readouterr().out.splitlines()
    assert "load average 3.5" in lines[0]
    assert lines[2].split() == ["write:", "whole", "20.0", "|", "5.0", "|", "4.00", "8.0", "|", "5.0", "|", "1.60", "—"]
    assert lines[3] == ("    sizes at 1,000 turns (JSON characters): put search 346,366, folded 264,657 lifted, "
                        "1,174 posting keys")
    assert lines[4] == "    sizes at 10 turns (JSON characters): put texts 3,129"
