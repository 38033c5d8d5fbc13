"""The persisted thread store: envelope, validation, migration, quota, tabs (DESIGN.md §3, §5)."""

from __future__ import annotations

import json

import pytest

import app.store.encoded as encoded_module
import app.store.envelope as envelope_module
from app.store.jsjson import js_json as json_stringify
from app.storage import MemoryStorage, UnparseableValue
from app.store import MIGRATIONS, STORAGE_KEY, Notice, SaveResult, ThreadStore
from app.store.trace import trace_save

NOW = 1_780_000_000_000


def thread(text: str) -> list[dict]:
    return [{"role": "user", "content": [{"type": "text", "text": text}]}]


def stored_value(threads: dict, version: int | None = 1) -> str:
    envelope: dict = {"state": {"threads": threads}}
    if version is not None:
        envelope["version"] = version
    return json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))


def open_store(storage: MemoryStorage, now: int = NOW) -> ThreadStore:
    store = ThreadStore(storage)
    store.hydrate(now)
    return store


def stored_threads(storage: MemoryStorage) -> dict:
    return json.loads(storage.dump()[STORAGE_KEY])["state"]["threads"]


def codes(store: ThreadStore) -> list[str]:
    return [n.code for n in store.notices]


# --- save / load / clear ---------------------------------------------------------


def test_save_load_clear_isolated_per_stage():
    storage = MemoryStorage()
    store = open_store(storage)
    assert store.save("a", thread("in a"), 1) == SaveResult(written=True)
    store.save("b", thread("in b"), 2)
    assert store.load("a") == thread("in a") and store.load("b") == thread("in b")
    assert store.updated_at("a") == 1 and store.updated_at("b") == 2
    store.clear("a")
    assert store.load("a") is None and store.updated_at("a") is None and store.load("b") == thread("in b")
    assert stored_threads(storage) == {"b": {"messages": thread("in b"), "updatedAt": 2}}
    assert store.notices == [] and store.mode == "persistent"


@pytest.mark.parametrize("stage_id", ["42", "__proto__", "课程-一", "x" * 5000, "0", "4294967295", "s\ud800"])
def test_any_stage_id_survives_a_refresh(stage_id):
    storage = MemoryStorage()
    open_store(storage).save(stage_id, thread("hello"), 5)
    again = open_store(MemoryStorage.shared_with(storage))
    assert again.load(stage_id) == thread("hello") and again.updated_at(stage_id) == 5 and again.notices == []


def test_updated_at_must_be_int_milliseconds():
    store = open_store(MemoryStorage())
    for bad in (1.5, "1", True, None):
        with pytest.raises(TypeError):
            store.save("s", thread("x"), bad)


def test_missing_value_hydrates_empty_without_writing():
    storage = MemoryStorage()
    store = open_store(storage)
    assert store.load("s") is None and storage.dump() == {} and store.notices == []


def test_clear_of_unknown_stage_writes_nothing():
    storage = MemoryStorage()
    open_store(storage).clear("nope")
    assert storage.writes == 0


# --- the encoded value (DESIGN.md §3) ----------------------------------------------


def test_envelope_is_compact_json_with_literal_non_ascii():
    storage = MemoryStorage()
    open_store(storage).save("课", thread("你好 “quotes” 😀"), NOW)
    assert storage.dump()[STORAGE_KEY] == (
        '{"state":{"threads":{"课":{"messages":[{"role":"user","content":'
        '[{"type":"text","text":"你好 “quotes” 😀"}]}],"updatedAt":1780000000000}}},"version":1}'
    )


# Produced by Node's JSON.stringify for the same object built in the same insertion
# order (array-index keys first, ascending; "4294967295" and "01" are not indices).
JS_OUTPUT = (
    '{"state":{"threads":{'
    '"7":{"messages":[{"role":"user","content":[{"type":"text","text":"y"}]}],"updatedAt":3},'
    '"42":{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"updatedAt":2},'
    '"b":{"messages":[{"role":"user","content":[{"type":"text","text":'
    '"q\\"\\\\\\n\\t\\u0001\x7f\u2028é中😀\\ud800"}]}],"updatedAt":1},'
    '"__proto__":{"messages":[{"role":"user","content":[{"type":"text","text":"p"}]}],"updatedAt":5},'
    '"4294967295":{"messages":[{"role":"user","content":[{"type":"text","text":"z"}]}],"updatedAt":4},'
    '"01":{"messages":[{"role":"user","content":[{"type":"text","text":"w"}]}],"updatedAt":6}'
    '}},"version":1}'
)


def test_envelope_matches_js_stringify_for_tricky_input():
    storage = MemoryStorage()
    store = open_store(storage)
    store.save("b", thread('q"\\\n\t\x01\x7f\u2028é中😀\ud800'), 1)
    store.save("42", thread("x"), 2)
    store.save("__proto__", thread("p"), 5)
    store.save("7", thread("y"), 3)
    store.save("4294967295", thread("z"), 4)
    store.save("01", thread("w"), 6)
    assert storage.dump()[STORAGE_KEY] == JS_OUTPUT


def test_stored_js_order_is_kept_when_rewritten():
    storage = MemoryStorage()
    storage.set_item(STORAGE_KEY, JS_OUTPUT)
    store = open_store(storage)
    store.save("b", store.load("b"), 1)  # same data: same bytes
    assert storage.dump()[STORAGE_KEY] == JS_OUTPUT and store.notices == []


def test_lone_surrogate_does_not_break_save():
    storage = MemoryStorage()
    store = open_store(storage)
    assert store.save("s", thread("bad \udc00 end"), 1).written
    value = storage.dump()[STORAGE_KEY]
    assert "\\udc00" in value
    value.encode("utf-8")  # well-formed: the browser layer can hand it over as UTF-8
    assert open_store(MemoryStorage.shared_with(storage)).load("s") == thread("bad \udc00 end")


def test_surrogate_pair_code_points_are_written_as_one_character():
    storage = MemoryStorage()
    open_store(storage).save("s", thread("\ud83d\ude00"), 1)
    assert '"text":"😀"' in storage.dump()[STORAGE_KEY]


def test_save_reencodes_only_the_changed_thread(monkeypatch):
    store = open_store(MemoryStorage())
    for i in range(5):
        store.save(f"s{i}", thread(f"t{i}"), i)
    encoded: list = []
    real = encoded_module.js_json
    monkeypatch.setattr(encoded_module, "js_json", lambda v: encoded.append(v) or real(v))
    store.save("s2", thread("changed"), 9)
    assert [v for v in encoded if isinstance(v, (dict, list))] == thread("changed")


def test_a_save_that_adds_a_turn_encodes_only_the_turns_messages_and_writes_the_same_value(monkeypatch):
    """The end of a turn re-encoded the whole thread (a 2,000,000-character message once more at
    every later turn); the messages the stored thread already held keep their JSON."""
    storage = MemoryStorage()
    store = open_store(storage)
    first = thread("héllo 中文 \ud83d\ude00 " * 5) + [{"role": "assistant", "content": [{"type": "text", "text": "ok"}]}]
    store.save("a", first, 1)
    encoded: list = []
    real = encoded_module.js_json
    monkeypatch.setattr(encoded_module, "js_json", lambda v: encoded.append(v) or real(v))
    turn = thread("next") + [{"role": "assistant", "content": [{"type": "text", "text": "\ud800 lone"}]}]
    store.save("a", [*store.load("a"), *turn], 2, base=store.load("a"))
    assert [v for v in encoded if isinstance(v, (dict, list))] == turn
    assert storage.get_item(STORAGE_KEY) == json_stringify({"state": {"threads": {"a": {
        "messages": first + turn, "updatedAt": 2}}}, "version": 1})


def test_save_does_not_reread_storage_no_other_tab_wrote():
    storage = MemoryStorage()
    store = open_store(storage)
    store.save("a", thread("1"), 1)
    reads = storage.reads
    store.save("a", thread("2"), 2)
    store.clear("a")
    assert storage.reads == reads


# --- several tabs (DESIGN.md §5) ----------------------------------------------------


def test_save_merges_other_tabs_courses():
    tab1 = MemoryStorage()
    tab2 = MemoryStorage.shared_with(tab1)
    store1, store2 = open_store(tab1), open_store(tab2)
    store1.save("a", thread("from 1"), 1)
    store2.save("b", thread("from 2"), 2)
    store1.save("a", thread("from 1 again"), 3)
    assert stored_threads(tab1) == {
        "a": {"messages": thread("from 1 again"), "updatedAt": 3},
        "b": {"messages": thread("from 2"), "updatedAt": 2},
    }


def test_clear_merges_other_tabs_courses():
    tab1 = MemoryStorage()
    tab2 = MemoryStorage.shared_with(tab1)
    store1, store2 = open_store(tab1), open_store(tab2)
    store1.save("a", thread("a"), 1)
    store2.save("b", thread("b"), 2)
    store1.clear("a")
    assert set(stored_threads(tab1)) == {"b"}


def test_reload_reports_changed_stage_ids():
    tab1 = MemoryStorage()
    tab2 = MemoryStorage.shared_with(tab1)
    store1 = open_store(tab1)
    store1.save("a", thread("a"), 1)
    store1.save("b", thread("b"), 1)
    store1.save("untouched", thread("u"), 1)
    store2 = open_store(tab2)
    store2.save("a", thread("a2"), 2)
    store2.clear("b")
    store2.save("c", thread("c"), 3)
    assert store1.reload() == {"a", "b", "c"}
    assert store1.load("a") == thread("a2") and store1.load("b") is None and store1.load("c") == thread("c")
    assert store1.reload() == set()


def test_reload_after_own_write_reports_nothing():
    store = open_store(MemoryStorage())
    store.save("a", thread("a"), 1)
    assert store.reload() == set()


# --- damaged values (DESIGN.md §5) ---------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        "{not json",
        "",
        "null",
        "[]",
        '{"version":1}',
        '{"state":{"threads":[]},"version":1}',
        '{"state":{"threads":{"a":{"messages":[],"updatedAt":NaN}}},"version":1}',
        '{"state":{"threads":{}},"version":"1"}',
    ],
)
def test_corrupt_value_backed_up_before_overwrite(raw):
    storage = MemoryStorage()
    storage.set_item(STORAGE_KEY, raw)
    store = open_store(storage, now=123)
    backup = f"{STORAGE_KEY}.backup.123"
    assert storage.dump()[backup] == raw
    assert store.notices == [Notice("storage-corrupt", {"backup_key": backup})]
    store.save("s", thread("new"), 1)
    assert storage.dump()[backup] == raw and stored_threads(storage) == {"s": {"messages": thread("new"), "updatedAt": 1}}


def good(text: str, at: int = 1) -> dict:
    return {"messages": thread(text), "updatedAt": at}


def test_invalid_thread_dropped_valid_threads_kept():
    raw = stored_value({"bad": {"messages": "oops", "updatedAt": 1}, "worse": 7, "ok": good("kept")})
    storage = MemoryStorage()
    storage.set_item(STORAGE_KEY, raw)
    store = open_store(storage)
    assert store.load("ok") == thread("kept") and store.load("bad") is None and store.load("worse") is None
    assert codes(store) == ["storage-corrupt"]


def test_tool_call_content_written_by_earlier_versions_as_empty_object_is_not_damage():
    call = {"type": "tool-call", "toolCallId": "call-1", "toolName": "regenerate_scene", "args": {"sceneId": "s1"},
            "result": {"details": {"sceneId": "s1", "content": {}}}}
    messages = [{"role": "user", "content": [{"type": "text", "text": "go"}]},
                {"role": "assistant", "content": [call]}]
    storage = MemoryStorage()
    raw = stored_value({"s": {"messages": messages, "updatedAt": 1}})
    storage.set_item(STORAGE_KEY, raw)
    store = open_store(storage)
    assert codes(store) == [] and not any(".backup." in k for k in storage.dump())
    assert store.load("s")[1]["content"][0]["result"]["details"]["content"] == {"elements": []}


def test_message_without_content_dropped_other_messages_kept():
    messages = [{"role": "user"}, *thread("kept"), {"role": "user", "content": 5}]
    storage = MemoryStorage()
    storage.set_item(STORAGE_KEY, stored_value({"s": {"messages": messages, "updatedAt": 1}}))
    store = open_store(storage)
    assert store.load("s") == thread("kept") and codes(store) == ["storage-corrupt"]


def test_unknown_part_dropped_message_kept():
    message = {"role": "assistant", "content": [{"type": "video", "url": "x"}, {"type": "text", "text": "kept"}]}
    storage = MemoryStorage()
    storage.set_item(STORAGE_KEY, stored_value({"s": {"messages": [message], "updatedAt": 1}}))
    store = open_store(storage)
    assert store.load("s") == [{"role": "assistant", "content": [{"type": "text", "text": "kept"}]}]
    assert codes(store) == ["storage-corrupt"]


@pytest.mark.parametrize("updated_at", ["1", 1.5, None, True])
def test_non_int_updated_at_treated_as_zero(updated_at):
    storage = MemoryStorage()
    storage.set_item(STORAGE_KEY, stored_value({"s": {"messages": thread("x"), "updatedAt": updated_at}}))
    store = open_store(storage)
    assert store.updated_at("s") == 0 and store.load("s") == thread("x") and codes(store) == ["storage-corrupt"]


def test_many_problems_give_one_notice_and_one_backup():
    raw = stored_value({"a": 1, "b": {"messages": [{"role": "x"}], "updatedAt": "?"}, "c": {"messages": {}}})
    storage = MemoryStorage()
    storage.set_item(STORAGE_KEY, raw)
    store = open_store(storage)
    assert codes(store) == ["storage-corrupt"]
    assert [k for k in storage.dump() if ".backup." in k] == [f"{STORAGE_KEY}.backup.{NOW}"]


def test_repaired_value_written_back_during_hydrate():
    storage = MemoryStorage()
    storage.set_item(STORAGE_KEY, stored_value({"a": 1, "ok": good("kept")}))
    open_store(storage)
    assert stored_threads(storage) == {"ok": good("kept")}
    again = open_store(MemoryStorage.shared_with(storage), now=NOW + 1)
    assert again.notices == []  # no second backup on the next start


def test_existing_backup_with_other_content_never_overwritten():
    storage = MemoryStorage()
    storage.set_item(f"{STORAGE_KEY}.backup.{NOW}", "older backup")
    storage.set_item(STORAGE_KEY, "garbage")
    store = open_store(storage)
    assert storage.dump()[f"{STORAGE_KEY}.backup.{NOW}"] == "older backup"
    assert storage.dump()[f"{STORAGE_KEY}.backup.{NOW}.1"] == "garbage"
    assert store.notices == [Notice("storage-corrupt", {"backup_key": f"{STORAGE_KEY}.backup.{NOW}.1"})]


def test_failed_backup_turns_read_only_and_never_overwrites():
    raw = stored_value({"a": 1, "ok": good("kept")})
    storage = MemoryStorage()
    storage.set_item(STORAGE_KEY, raw)
    storage.quota = storage.used + 10  # no room for a copy
    store = open_store(storage)
    assert store.mode == "read-only"
    assert store.notices == [Notice("storage-read-only", {"reason": "backup-failed"})]
    assert store.load("ok") == thread("kept")
    result = store.save("s", thread("new"), 2)
    assert result == SaveResult(written=False, kept_in_memory=True, read_only=True)
    assert store.load("s") == thread("new") and storage.dump() == {STORAGE_KEY: raw}


def test_damage_written_by_another_tab_is_backed_up_before_save_overwrites():
    tab1 = MemoryStorage()
    store1 = open_store(tab1, now=10)
    store1.save("a", thread("a"), 1)
    MemoryStorage.shared_with(tab1).set_item(STORAGE_KEY, "broken by another tab")
    store1.save("a", thread("a2"), 50)
    assert tab1.dump()[f"{STORAGE_KEY}.backup.50"] == "broken by another tab"
    assert codes(store1) == ["storage-corrupt"] and stored_threads(tab1) == {"a": good("a2", 50)}


# --- versions (DESIGN.md §3, §5) ------------------------------------------------------


def test_value_without_version_counts_as_current():
    storage = MemoryStorage()
    storage.set_item(STORAGE_KEY, stored_value({"s": good("x")}, version=None))
    writes = storage.writes
    store = open_store(storage)
    assert store.load("s") == thread("x") and store.notices == [] and storage.writes == writes


def test_v0_value_migrated_and_written_back_once():
    v0 = stored_value({"s": {"messages": [{"role": "user", "content": "old"}, {"role": "assistant", "content": "hi"}]}}, 0)
    storage = MemoryStorage()
    storage.set_item(STORAGE_KEY, v0)
    writes = storage.writes
    store = open_store(storage)
    assert storage.writes == writes + 1 and store.notices == []
    expected = [
        {"role": "user", "content": [{"type": "text", "text": "old"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
    ]
    assert store.load("s") == expected and store.updated_at("s") == 0
    assert json.loads(storage.dump()[STORAGE_KEY]) == {
        "state": {"threads": {"s": {"messages": expected, "updatedAt": 0}}},
        "version": 1,
    }
    open_store(MemoryStorage.shared_with(storage))
    assert storage.writes == writes + 1


def test_migrations_run_step_by_step_in_order(monkeypatch):
    steps: list[int] = []

    def step(n):
        def migrate(state):
            steps.append(n)
            return state

        return migrate

    monkeypatch.setattr(envelope_module, "STORE_VERSION", 3)
    monkeypatch.setitem(MIGRATIONS, 1, step(1))
    monkeypatch.setitem(MIGRATIONS, 2, step(2))
    storage = MemoryStorage()
    storage.set_item(STORAGE_KEY, stored_value({"s": good("x")}, version=1))
    store = open_store(storage)
    assert steps == [1, 2] and store.load("s") == thread("x")
    assert json.loads(storage.dump()[STORAGE_KEY])["version"] == 3


def test_newer_version_never_overwritten():
    raw = stored_value({"s": good("readable"), "t": {"messages": "v2 shape"}}, version=2)
    storage = MemoryStorage()
    storage.set_item(STORAGE_KEY, raw)
    store = open_store(storage)
    assert store.mode == "read-only"
    assert store.notices == [Notice("storage-newer-version", {"version": 2})]
    assert store.load("s") == thread("readable")
    assert store.save("s", thread("mine"), 2) == SaveResult(written=False, kept_in_memory=True, read_only=True)
    store.clear("s")
    assert storage.dump() == {STORAGE_KEY: raw}


def test_newer_version_from_another_tab_stops_writes():
    tab1 = MemoryStorage()
    store = open_store(tab1)
    store.save("a", thread("a"), 1)
    newer = stored_value({"a": good("a")}, version=7)
    MemoryStorage.shared_with(tab1).set_item(STORAGE_KEY, newer)
    assert store.save("a", thread("a2"), 2).read_only
    assert tab1.dump()[STORAGE_KEY] == newer and codes(store) == ["storage-newer-version"]


# --- quota (DESIGN.md §5) --------------------------------------------------------------


def fill(store: ThreadStore, ages: dict[str, int], size: int = 100) -> None:
    for stage_id, at in ages.items():
        store.save(stage_id, thread(stage_id * size), at)


def test_quota_prunes_least_recently_updated_other_threads_first():
    storage = MemoryStorage()
    store = open_store(storage)
    fill(store, {"c": 30, "a": 10, "b": 20})
    storage.quota = storage.used + 150
    result = store.save("new", thread("n" * 250), 40)
    assert result == SaveResult(written=True, pruned=("a", "b"))
    assert set(stored_threads(storage)) == {"c", "new"}
    assert store.load("a") is None and store.load("c") is not None
    assert store.notices == [Notice("storage-pruned", {"count": 2, "stage_ids": ["a", "b"]})]


def test_prune_ties_broken_by_js_key_order():
    storage = MemoryStorage()
    store = open_store(storage)
    fill(store, {"z": 5, "y": 5, "9": 5})
    storage.quota = storage.used + 50
    assert store.save("new", thread("n" * 100), 6).pruned == ("9",)


def test_current_thread_is_never_pruned_even_when_oldest():
    storage = MemoryStorage()
    store = open_store(storage)
    fill(store, {"old": 1, "other": 2})
    storage.quota = storage.used + 50
    assert store.save("old", thread("o" * 400), 0).pruned == ("other",)


def test_failed_save_prunes_nothing():
    storage = MemoryStorage()
    store = open_store(storage)
    fill(store, {"a": 1, "b": 2})
    before = storage.dump()
    storage.quota = storage.used + 10
    result = store.save("huge", thread("h" * 10_000), 3)
    assert result == SaveResult(written=False, kept_in_memory=True)
    assert storage.dump() == before
    assert store.load("a") is not None and store.load("b") is not None and store.load("huge") == thread("h" * 10_000)
    assert store.notices == [Notice("storage-full", {"stage_id": "huge"})]


class CountingStorage(MemoryStorage):
    """Records the size (UTF-16 units) of each value a write tried to store, whether it fitted or not."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.tried: list[int] = []

    def set_item(self, key: str, value: str) -> None:
        if key == STORAGE_KEY:
            self.tried.append(len(value))
        super().set_item(key, value)

    def splice_item(self, key: str, start: int, end: int, text: str) -> bool:
        if key == STORAGE_KEY:
            self.tried.append(-1)  # a splice: its value is the whole that set_item then records
        return super().splice_item(key, start, end, text)


def test_a_save_whose_splice_did_not_fit_never_tries_the_same_whole_value_again():
    """A reply of megabytes that does not fit: the splice, then the same value written whole, were
    two attempts of the same size (each a copy of megabytes into storage in the turn's end task)."""
    storage = CountingStorage()
    store = open_store(storage)
    fill(store, {"a": 1, "b": 2})
    storage.quota = storage.used + 50
    storage.tried.clear()
    result = store.save("huge", thread("h" * 10_000), 3)
    assert result == SaveResult(written=False, kept_in_memory=True)
    assert storage.tried[0] == -1 and storage.tried.count(storage.tried[1]) == 1, storage.tried
    assert all(size < storage.tried[1] for size in storage.tried[2:]) and len(storage.tried) > 2  # pruned ones
    storage.tried.clear()
    assert store.save("a", thread("a" * 200), 4).pruned == ("b",)  # it fits once another course is pruned
    assert storage.tried[0] == -1 and storage.tried.count(storage.tried[1]) == 1, storage.tried


def test_storage_full_said_once_and_save_resumes_when_space_frees():
    storage = MemoryStorage()
    store = open_store(storage)
    storage.quota = 50
    store.save("s", thread("x" * 100), 1)
    store.save("s", thread("x" * 101), 2)
    assert codes(store) == ["storage-full"] and store.memory_only() == {"s"}
    storage.quota = None
    assert store.save("t", thread("t"), 3).written
    assert "s" not in stored_threads(storage)  # another course's save writes only what is stored
    assert store.memory_only() == {"s"} and store.load("s") == thread("x" * 101)
    assert store.save("s", thread("x" * 102), 4).written
    assert stored_threads(storage)["s"] == good("x" * 102, 4) and store.memory_only() == set()
    storage.quota = 50
    store.save("s", thread("y" * 100), 5)
    assert codes(store) == ["storage-full", "storage-full"]


def test_thread_kept_in_memory_never_costs_another_courses_stored_thread():
    """A thread kept in memory never costs anything stored (DESIGN.md §5): 'full' has 8 stored
    messages and a 5th turn that does not fit; a small save on another course must neither drop
    'full' nor prune anything."""
    storage = MemoryStorage()
    store = open_store(storage)
    store.save("intro-ml", thread("q") + thread("a"), 1)
    eight = [m for i in range(4) for m in thread(f"full q{i}") + thread(f"full a{i}")]
    store.save("full", eight, 2)
    stored_before = stored_threads(storage)
    storage.quota = storage.used + 500
    huge = eight + thread("x" * 5_000) + thread("y")
    assert store.save("full", huge, 3) == SaveResult(written=False, kept_in_memory=True)
    assert stored_threads(storage) == stored_before
    result = store.save("intro-ml", store.load("intro-ml") + thread("hi"), 4)
    assert result == SaveResult(written=True)
    threads = stored_threads(storage)
    assert threads["full"] == {"messages": eight, "updatedAt": 2}
    assert threads["intro-ml"]["messages"][-1] == thread("hi")[0]
    assert codes(store) == ["storage-full"] and store.notices[0].params == {"stage_id": "full"}
    assert store.load("full") == huge and store.memory_only() == {"full"}


def test_pruning_ranks_only_stored_threads_not_one_kept_in_memory():
    storage = MemoryStorage()
    store = open_store(storage)
    fill(store, {"old": 1, "mid": 2})
    storage.quota = storage.used + 20
    store.save("mem", thread("m" * 5_000), 3)  # kept in memory: never written
    assert store.memory_only() == {"mem"}
    result = store.save("new", thread("n" * 150), 4)
    assert result.pruned == ("old",)
    assert set(stored_threads(storage)) == {"mid", "new"}
    assert store.load("mem") == thread("m" * 5_000)


def test_clear_of_a_course_kept_in_memory_ends_its_storage_full():
    storage = MemoryStorage()
    store = open_store(storage)
    store.save("full", thread("stored"), 1)
    storage.quota = storage.used
    store.save("full", thread("x" * 1_000), 2)
    assert store.memory_only() == {"full"}
    store.clear("full")
    assert store.memory_only() == set() and store.load("full") is None
    assert "full" not in stored_threads(storage)


def test_thread_kept_in_memory_survives_reload():
    tab1 = MemoryStorage()
    store = open_store(tab1)
    tab1.quota = 50
    store.save("s", thread("x" * 100), 1)
    tab1.quota = None
    MemoryStorage.shared_with(tab1).set_item(STORAGE_KEY, stored_value({"o": good("o")}))
    assert store.reload() == {"o"}
    assert store.load("s") == thread("x" * 100)


# --- storage unavailable (DESIGN.md §5) ---------------------------------------------------


def test_no_storage_runs_in_memory_and_says_so_once():
    store = ThreadStore(None)
    store.hydrate(NOW)
    assert store.save("s", thread("x"), 1) == SaveResult(written=False, kept_in_memory=True)
    store.clear("s")
    store.save("t", thread("y"), 2)
    assert store.mode == "memory" and store.load("t") == thread("y") and codes(store) == ["storage-unavailable"]
    assert store.reload() == set()


def test_throwing_storage_runs_in_memory():
    store = open_store(MemoryStorage(available=False))
    store.save("s", thread("x"), 1)
    assert store.mode == "memory" and store.load("s") == thread("x") and codes(store) == ["storage-unavailable"]


def test_storage_lost_mid_session_keeps_every_thread():
    storage = MemoryStorage()
    store = open_store(storage)
    store.save("a", thread("a"), 1)
    storage.available = False
    assert store.save("b", thread("b"), 2).kept_in_memory
    store.save("b", thread("b2"), 3)
    assert store.load("a") == thread("a") and store.load("b") == thread("b2")
    assert codes(store) == ["storage-unavailable"]


# --- notices and the clock ------------------------------------------------------------------


def test_take_notices_returns_each_new_notice_once():
    store = ThreadStore(None)
    assert [n.code for n in store.take_notices()] == ["storage-unavailable"]
    assert store.take_notices() == []
    assert codes(store) == ["storage-unavailable"]


def test_store_never_reads_the_clock(monkeypatch):
    import time

    def no_clock():
        raise AssertionError("the store read the clock")

    for name in ("time", "time_ns", "monotonic", "perf_counter"):
        monkeypatch.setattr(time, name, no_clock)
    storage = MemoryStorage()
    storage.set_item(STORAGE_KEY, "garbage")
    store = open_store(storage, now=77)
    store.save("s", thread("x"), 78)
    store.clear("s")
    assert f"{STORAGE_KEY}.backup.77" in storage.dump()


# --- saves hand over only the changed thread (DESIGN.md §2 cost note) -----------------


class SpliceRecorder(MemoryStorage):
    """MemoryStorage that records what each write handed over."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.handed: list[tuple[str, int]] = []  # ("set" | "splice", UTF-16 units handed over)

    def set_item(self, key, value):
        super().set_item(key, value)
        self.handed.append(("set", len(value)))

    def splice_item(self, key, start, end, text):
        done = super().splice_item(key, start, end, text)
        if done:
            self.handed[-1] = ("splice", len(text))
        return done


def assert_canonical(storage, store):
    """The spliced value is byte for byte what a whole write of the same threads gives."""
    threads = {k: envelope_module.Thread(store.load(k), store.updated_at(k)) for k in store.stage_ids()}
    assert storage.dump()[STORAGE_KEY] == envelope_module.envelope(threads)


@pytest.mark.parametrize("order", [
    ["b", "a", "b"],                 # replace an existing entry
    ["a", "b", "c"],                 # append after the last entry
    ["x", "42", "7", "100", "7"],    # array-index keys go first, in numeric order
    ["only"],
])
def test_save_after_own_write_hands_over_only_the_changed_entry(order):
    storage = SpliceRecorder()
    store = open_store(storage)
    store.save("filler", thread("填充🙂\ud800" * 500), 1)
    for n, stage_id in enumerate(order, start=2):
        storage.handed.clear()
        store.save(stage_id, thread(f"turn {n} of {stage_id} “引号” 😀"), n)
        kind, units = storage.handed[-1]
        assert kind == "splice" and units < 200
        assert_canonical(storage, store)
    assert stored_threads(storage)[order[-1]]["updatedAt"] == len(order) + 1


def test_save_after_another_tab_wrote_merges_and_splices_only_its_entry():
    tab1_storage = SpliceRecorder()
    tab1 = open_store(tab1_storage)
    tab1.save("a", thread("a1"), 1)
    tab2 = open_store(MemoryStorage.shared_with(tab1_storage))
    tab2.save("b", thread("b1"), 2)
    tab1_storage.handed.clear()
    tab1.save("a", thread("a2"), 3)
    assert [kind for kind, _ in tab1_storage.handed] == ["splice"]
    assert stored_threads(tab1_storage) == {
        "a": {"messages": thread("a2"), "updatedAt": 3}, "b": {"messages": thread("b1"), "updatedAt": 2}}
    assert_canonical(tab1_storage, tab1)


def test_first_save_after_start_up_splices_and_keeps_other_courses_bytes():
    """No long task on the first save: hydrate keeps each thread's stored text, so it is a splice."""
    raw = stored_value({"b": good("“二”", 2), "a": good("一 😀", 1)})
    storage = SpliceRecorder()
    storage.set_item(STORAGE_KEY, raw)
    store = open_store(storage)
    storage.handed.clear()
    store.save("a", thread("一 😀") + thread("new"), 3)
    assert [kind for kind, _ in storage.handed] == ["splice"]
    after = storage.dump()[STORAGE_KEY]
    assert after.startswith(raw[: raw.index('"a":')])  # "b" untouched, byte for byte
    assert json.loads(after)["state"]["threads"]["a"]["messages"][-1] == thread("new")[0]


def test_value_in_another_layout_is_read_and_then_written_whole():
    raw = json.dumps({"state": {"threads": {"a": good("x")}}, "version": 1}, indent=1)
    storage = SpliceRecorder()
    storage.set_item(STORAGE_KEY, raw)
    store = open_store(storage)
    assert store.load("a") == thread("x") and store.notices == []
    storage.handed.clear()
    store.save("a", thread("y"), 2)
    assert [kind for kind, _ in storage.handed] == ["set"]
    assert_canonical(storage, store)


def test_stored_keys_out_of_js_order_are_read_but_not_spliced():
    raw = '{"state":{"threads":{"b":' + json.dumps(good("b")) .replace(" ", "") + ',"7":' + json.dumps(good("7")).replace(" ", "") + '}},"version":1}'
    storage = SpliceRecorder()
    storage.set_item(STORAGE_KEY, raw)
    store = open_store(storage)
    assert store.load("7") == thread("7") and store.load("b") == thread("b") and store.notices == []
    storage.handed.clear()
    store.save("b", thread("b2"), 2)
    assert [kind for kind, _ in storage.handed] == ["set"]
    assert_canonical(storage, store)


class RacingStorage(SpliceRecorder):
    """Another tab saves a turn on the same course just before this tab's splice lands."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.race = None

    def splice_item(self, key, start, end, text):
        race, self.race = self.race, None
        if race is not None:
            race()
        return super().splice_item(key, start, end, text)


def test_another_tab_writing_during_the_splice_still_keeps_both_turns():
    """The closing note's race: a stale splice starts the save over, so ``base`` is re-applied."""
    storage = RacingStorage()
    tab1 = open_store(storage)
    tab1.save("s", thread("first"), 1)
    base = tab1.load("s")
    tab2 = open_store(MemoryStorage.shared_with(storage))
    storage.race = lambda: tab2.save("s", thread("first") + thread("tab two"), 2)
    result = tab1.save("s", base + thread("tab one"), 3, base=base)
    assert result.merged and result.written
    assert stored_threads(storage)["s"]["messages"] == thread("first") + thread("tab two") + thread("tab one")
    assert_canonical(storage, tab1)


def test_splice_that_does_not_fit_prunes_like_a_whole_write():
    storage = SpliceRecorder()
    store = open_store(storage)
    store.save("old", thread("o" * 300), 1)
    store.save("new", thread("n" * 300), 2)
    store.save("me", thread("m"), 3)
    storage.quota = storage.used + 100
    result = store.save("me", thread("m" * 350), 4)
    assert result.pruned == ("old",)
    assert set(stored_threads(storage)) == {"new", "me"}
    assert_canonical(storage, store)


def test_value_the_runtime_cannot_parse_is_backed_up_and_the_app_starts_empty():
    class DeepStorage(MemoryStorage):
        def get_item(self, key):
            value = super().get_item(key)
            if key == STORAGE_KEY and value is not None and value.startswith("{\"deep"):
                raise UnparseableValue(value)
            return value

    raw = '{"deep":' + "[" * 100 + "]" * 100 + "}"
    storage = DeepStorage()
    storage.set_item(STORAGE_KEY, raw)
    store = open_store(storage)
    assert codes(store) == ["storage-corrupt"]
    backup_key = store.notices[0].params["backup_key"]
    assert storage.dump()[backup_key] == raw
    assert store.save("s", thread("after"), 1).written
    assert stored_threads(storage) == {"s": {"messages": thread("after"), "updatedAt": 1}}


def test_save_on_a_base_another_tab_changed_appends_this_tabs_new_messages():
    storage = MemoryStorage()
    tab1 = open_store(storage)
    tab1.save("s", thread("first"), 1)
    base = tab1.load("s")
    tab2 = open_store(MemoryStorage.shared_with(storage))
    tab2.save("s", thread("first") + thread("tab two"), 2)
    result = tab1.save("s", base + thread("tab one"), 3, base=base)
    assert result.merged and result.written
    assert stored_threads(storage)["s"]["messages"] == thread("first") + thread("tab two") + thread("tab one")
    assert tab1.load("s") == stored_threads(storage)["s"]["messages"]


@pytest.mark.parametrize("one_first", [True, False])
def test_two_tabs_saving_turns_on_one_base_while_history_keeps_the_tree_store_the_last_path_unmerged(one_first):
    """Two tabs sent on the same reply (DESIGN.md §17): the two turns are siblings at the base's end,
    so each save stores its own path, never one turn after the other's reply; without history's tree
    (``tree_kept`` false) the later save is merged after the other's turn (§5, the test above)."""
    storage = MemoryStorage()
    tab1 = open_store(storage)
    tab1.save("s", thread("first"), 1)
    tab2 = open_store(MemoryStorage.shared_with(storage))
    base1, base2 = tab1.load("s"), tab2.load("s")
    saves = [(tab1, base1, base1 + thread("tab one")), (tab2, base2, base2 + thread("tab two"))]
    if not one_first:
        saves.reverse()
    for at, (tab, base, messages) in enumerate(saves, start=2):
        result = tab.save("s", messages, at, base=base, tree_kept=True)
        assert not result.merged and result.written
    saves = [(tab, messages) for tab, _base, messages in saves]
    assert stored_threads(storage)["s"]["messages"] == saves[-1][1]
    assert saves[-1][0].load("s") == saves[-1][1]


def test_save_on_an_unchanged_base_replaces_without_merging():
    storage = MemoryStorage()
    store = open_store(storage)
    store.save("s", thread("a"), 1)
    base = store.load("s")
    result = store.save("s", base + thread("b"), 2, base=base)
    assert not result.merged
    assert stored_threads(storage)["s"]["messages"] == thread("a") + thread("b")


# --- what the TS original writes (DESIGN.md §3, last two rules) -----------------------------


def test_value_the_ts_original_writes_is_read_without_notice_backup_or_rewrite():
    call = {"type": "tool-call", "toolCallId": "c1", "toolName": "regenerate_scene", "args": {}}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "/regenerate scene-1"}]},
        {"role": "assistant", "content": [call]},                                   # no result
        {"role": "assistant", "content": [{**call, "toolCallId": "c2", "result": {"content": []}}]},  # no details
        {"role": "assistant", "content": [{**call, "toolCallId": "c3", "result": {"details": {"sceneId": "s"}}}]},
    ]
    raw = stored_value({"intro-ml": {"messages": messages, "updatedAt": 5}})
    storage = MemoryStorage()
    storage.set_item(STORAGE_KEY, raw)
    writes = storage.writes
    store = open_store(storage)
    assert store.notices == [] and storage.writes == writes
    assert storage.dump() == {STORAGE_KEY: raw}
    assert store.load("intro-ml") == messages


# --- a re-read after another tab's save copies only what changed (no long task) ---------------


class ReadRecorder(MemoryStorage):
    """MemoryStorage counting whole reads of the value and change reads."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.whole = self.changes = 0

    def get_item(self, key):
        self.whole += key == STORAGE_KEY
        return super().get_item(key)

    def read_changes(self, key, starts, ends):
        self.changes += 1
        return super().read_changes(key, starts, ends)


def two_tabs_with(stage_ids: str):
    storage = ReadRecorder()
    tab1 = open_store(storage)
    for n, stage_id in enumerate(stage_ids):
        tab1.save(stage_id, thread(f"{stage_id} “一” 😀"), n + 1)
    tab2 = open_store(MemoryStorage.shared_with(storage))
    storage.whole = storage.changes = 0
    return storage, tab1, tab2


@pytest.mark.parametrize("change", ["replace", "insert-first", "append", "remove-middle", "remove-last", "remove-all"])
def test_reload_after_another_tabs_save_reads_only_the_changed_entries(change):
    storage, tab1, tab2 = two_tabs_with("abc")
    expected = {k: tab1.load(k) for k in "abc"}
    if change == "replace":
        tab2.save("b", thread("b2 🙂") + thread("more"), 9)
        expected["b"] = thread("b2 🙂") + thread("more")
    elif change == "insert-first":
        tab2.save("7", thread("seven"), 9)  # an array-index key: JavaScript writes it first
        expected["7"] = thread("seven")
    elif change == "append":
        tab2.save("d", thread("d"), 9)
        expected["d"] = thread("d")
    else:
        gone = {"remove-middle": "b", "remove-last": "c", "remove-all": "abc"}[change]
        for stage_id in gone:
            tab2.clear(stage_id)
            del expected[stage_id]
    before = {k: tab1.load(k) for k in "abc"}
    changed = tab1.reload()
    assert storage.whole == 0 and storage.changes == 1
    after = {k: tab1.load(k) for k in "abc7d" if tab1.load(k) is not None}
    assert after == expected
    assert changed == {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    tab1.save("a", thread("a again"), 10)
    assert_canonical(storage, tab1)
    assert stored_threads(storage)["a"]["messages"] == thread("a again")


def test_a_change_outside_the_entries_or_damage_reads_the_whole_value():
    storage, tab1, tab2 = two_tabs_with("ab")
    other = MemoryStorage.shared_with(storage)
    raw = other.get_item(STORAGE_KEY)
    other.set_item(STORAGE_KEY, raw.replace('"b":{"messages":[', '"b":{"messages":[7,'))  # a damaged message
    tab1.reload()
    assert storage.whole == 1 and codes(tab1) == ["storage-corrupt"]
    assert tab1.load("b") == thread("b “一” 😀")  # this tab's version is kept
    other.set_item(STORAGE_KEY, raw.replace('"version":1', '"version":2'))
    tab1.reload()
    assert storage.whole == 2 and tab1.mode == "read-only"


def test_reloads_after_random_saves_of_another_tab_match_a_whole_read():
    import random

    rng = random.Random(7)
    storage, tab1, tab2 = two_tabs_with("ab")
    keys = ["a", "b", "c", "7", "42", "课", "z😀"]
    for step in range(150):
        stage_id = rng.choice(keys)
        if rng.random() < 0.25:
            tab2.clear(stage_id)
        else:
            text = rng.choice(["x", "“引号”", "😀🙂", "a\\b", "\ud800"]) * rng.randint(1, 30)
            tab2.save(stage_id, thread(text), step)
        if rng.random() < 0.7:
            tab1.reload()
            fresh = open_store(MemoryStorage.shared_with(storage))
            # Tab 2 never prunes (no quota), and says so when it does: every removal is followed.
            assert tab1.memory_only() == frozenset()
            assert {k: tab1.load(k) for k in keys} == {k: fresh.load(k) for k in keys}
        if rng.random() < 0.3:
            tab1.save(rng.choice(keys), thread(f"tab one {step}"), 1_000 + step)
            assert_canonical(storage, tab1)
    assert storage.changes > 50 and tab1.notices == []


def test_storage_lost_while_a_course_is_kept_in_memory_keeps_that_version():
    storage = MemoryStorage()
    store = open_store(storage)
    store.save("a", thread("a"), 1)
    storage.quota = storage.used
    store.save("big", thread("b" * 1_000), 2)
    storage.available = False
    assert store.save("c", thread("c"), 3).kept_in_memory
    assert store.mode == "memory"
    assert [store.load(k) for k in ("a", "big", "c")] == [thread("a"), thread("b" * 1_000), thread("c")]
    store.clear("big")
    assert store.load("big") is None and store.load("a") == thread("a")


def test_replaced_elsewhere_tells_another_conversation_from_more_turns_on_the_same_one():
    tab1 = MemoryStorage()
    tab2 = MemoryStorage.shared_with(tab1)
    store1, store2 = open_store(tab1), open_store(tab2)
    store1.save("a", thread("one"), 1)
    base = store1.load("a")
    store2.reload()
    assert not store1.replaced_elsewhere("a", base) and not store1.replaced_elsewhere("a", [])
    store2.save("a", base + thread("two"), 2)  # the same conversation goes on in the other tab
    assert not store1.replaced_elsewhere("a", base)
    store2.save("a", thread("another conversation"), 3)  # resumed another one there
    assert store1.replaced_elsewhere("a", base)
    store2.clear("a")  # New conversation there
    assert store1.replaced_elsewhere("a", base)
    store2.save("a", thread("begun anew"), 4)
    assert store1.replaced_elsewhere("a", base)
    assert not store1.replaced_elsewhere("b", [])


def test_another_branch_of_the_same_conversation_shown_in_another_tab_is_no_replacement():
    """DESIGN.md §17: another tab showing another branch (the picker, or its own regenerated reply)
    keeps the course on the same conversation, so a turn ending here stays with it
    (``app.continuity.belongs``); a thread of another first message still replaced it."""
    tab1 = MemoryStorage()
    tab2 = MemoryStorage.shared_with(tab1)
    store1, store2 = open_store(tab1), open_store(tab2)
    question = {"role": "user", "id": "u1", "content": [{"type": "text", "text": "q"}]}
    answer = {"role": "assistant", "id": "a1", "content": [{"type": "text", "text": "one"}]}
    store1.save("a", [question, answer], 1)
    base = store1.load("a")
    store2.reload()
    other = {"role": "assistant", "id": "a2", "content": [{"type": "text", "text": "two"}]}
    store2.save("a", [question, other], 2)  # the other answer shown there
    assert not store1.replaced_elsewhere("a", base)
    # a turn here goes on from the answer shown here: saved as this branch, never after the other one
    turn = [{"role": "user", "id": "u2", "content": [{"type": "text", "text": "more"}]}]
    assert not store1.save("a", base + turn, 3, base=base).merged and store1.load("a") == base + turn
    store2.reload()
    store2.save("a", [{**question, "id": "u9"}, other], 4)  # another conversation there
    assert store1.replaced_elsewhere("a", base + turn)


# --- the benchmark's entry point: a steady save traced step by step (DESIGN.md §15) --------------


def test_trace_save_splices_like_a_save_and_times_each_step():
    storage = SpliceRecorder()
    store = open_store(storage)
    for n, stage_id in enumerate("abc"):
        store.save(stage_id, thread(stage_id), n + 1)
    ticks = iter(range(1_000))
    trace = trace_save(store, "b", thread("traced “一”"), 9, clock=lambda: float(next(ticks)))
    assert storage.handed[-1][0] == "splice"
    assert store.load("b") == thread("traced “一”") and store.updated_at("b") == 9
    assert_canonical(storage, store)
    assert list(trace.steps)[0].startswith("unchanged()") and all(ms >= 0 for ms in trace.steps.values())
    assert trace.threads == 3 and trace.error is None
    entry = '"b":' + json.dumps({"messages": thread("traced “一”"), "updatedAt": 9}, ensure_ascii=False,
                                separators=(",", ":"))
    assert trace.entry_units == len(entry) and trace.replaced_units > 0
    assert store.save("b", thread("after"), 10).written and storage.handed[-1][0] == "splice"


def test_trace_save_refuses_off_the_splice_path_and_writes_nothing():
    storage = MemoryStorage()
    store = open_store(storage)
    store.save("a", thread("a"), 1)
    MemoryStorage.shared_with(storage).set_item(STORAGE_KEY, stored_value({"a": good("other tab")}))
    before = storage.dump()
    with pytest.raises(LookupError):
        trace_save(store, "a", thread("traced"), 2, clock=lambda: 0.0)
    assert storage.dump() == before
    assert store.save("a", thread("mine"), 3).written and stored_threads(storage) == {"a": good("mine", 3)}
    newer = MemoryStorage()
    newer.set_item(STORAGE_KEY, stored_value({"a": good("future")}, version=2))
    read_only = open_store(newer)
    assert read_only.mode == "read-only"
    with pytest.raises(LookupError):
        trace_save(read_only, "a", thread("x"), 1, clock=lambda: 0.0)
