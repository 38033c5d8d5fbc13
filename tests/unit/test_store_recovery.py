"""Ways out of storage trouble without losing anything (DESIGN.md §5): backups made once, the
download that ends read-only, a newer version written by another tab, threads another tab pruned."""

from __future__ import annotations

import json

from app.agent import DemoAgent
from app.runtime import AgentRuntime
from app.storage import MemoryStorage
from app.store import STORAGE_KEY, Notice, ThreadStore

NOW = 1_780_000_000_000
BACKUP = f"{STORAGE_KEY}.backup."


def thread(*texts: str) -> list[dict]:
    return [{"role": "user", "content": [{"type": "text", "text": t}]} for t in texts]


def value(threads: dict, version: int = 1) -> str:
    return json.dumps({"state": {"threads": threads}, "version": version}, ensure_ascii=False, separators=(",", ":"))


def good(*texts: str, at: int = 1) -> dict:
    return {"messages": thread(*texts), "updatedAt": at}


def open_store(storage: MemoryStorage, now: int = NOW) -> ThreadStore:
    store = ThreadStore(storage)
    store.hydrate(now)
    return store


async def runtime_after_a_turn(stage_id: str, text: str) -> tuple[MemoryStorage, AgentRuntime]:
    """A runtime on a fresh storage, showing ``stage_id``, after one demo turn ``text``."""
    storage = MemoryStorage()
    runtime = AgentRuntime(ThreadStore(storage), DemoAgent(), clock=lambda: NOW)
    runtime.hydrate()
    runtime.set_stage(stage_id)
    await runtime.send(text)
    return storage, runtime


def backups(storage: MemoryStorage) -> dict[str, str]:
    return {k: v for k, v in storage.dump().items() if k.startswith(BACKUP)}


class KeyReads(MemoryStorage):
    """Records the keys whose value was copied out (``get_item``)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.read_keys: list[str] = []

    def get_item(self, key: str):
        self.read_keys.append(key)
        return super().get_item(key)


# --- 1a: a value is backed up once -------------------------------------------------------------


def test_the_same_damaged_value_written_again_and_again_is_backed_up_once_without_reading_backups():
    storage = KeyReads()
    store = open_store(storage)
    other = MemoryStorage.shared_with(storage)
    garbage = "g" * 1_000 + "{"
    for n in range(6):
        other.set_item(STORAGE_KEY, garbage)
        store.save("a", thread(f"turn {n}"), NOW + n)
    assert list(backups(storage).values()) == [garbage]
    assert set(storage.read_keys) == {STORAGE_KEY}  # no backup's value was read into Python
    assert {n.code for n in store.notices} == {"storage-corrupt"}
    assert json.loads(storage.dump()[STORAGE_KEY])["state"]["threads"]["a"]["messages"] == thread("turn 5")


def test_a_backup_that_does_not_fit_first_removes_duplicate_backups_and_keeps_one_of_each():
    storage = MemoryStorage()
    dup = "d" * 500
    storage.set_item(f"{BACKUP}1", dup)
    storage.set_item(f"{BACKUP}2", dup)
    storage.set_item(f"{BACKUP}3", "other damaged value")
    storage.set_item(f"{BACKUP}3.1", dup)
    raw = "x" * 400 + "{"
    storage.set_item(STORAGE_KEY, raw)
    storage.quota = storage.used + 300  # the copy fits only once the two extra copies of dup are gone
    store = open_store(storage)
    assert store.mode == "persistent"
    assert backups(storage) == {f"{BACKUP}1": dup, f"{BACKUP}3": "other damaged value", f"{BACKUP}{NOW}": raw}
    assert store.notices == [Notice("storage-corrupt", {"backup_key": f"{BACKUP}{NOW}"})]


def test_distinct_backups_are_never_removed_to_make_room():
    storage = MemoryStorage()
    storage.set_item(f"{BACKUP}1", "first damaged value")
    storage.set_item(f"{BACKUP}2", "second damaged value")
    storage.set_item(STORAGE_KEY, "broken{")
    storage.quota = storage.used + 3
    store = open_store(storage)
    assert store.mode == "read-only"
    assert backups(storage) == {f"{BACKUP}1": "first damaged value", f"{BACKUP}2": "second damaged value"}


# --- 1b: the download ends read-only -------------------------------------------------------------


def read_only_store(raw: str) -> tuple[MemoryStorage, ThreadStore]:
    storage = MemoryStorage()
    storage.set_item(STORAGE_KEY, raw)
    storage.quota = storage.used + len(raw)  # room for turns, not for a copy of raw (key and value)
    store = open_store(storage)
    assert store.notices == [Notice("storage-read-only", {"reason": "backup-failed"})]
    return storage, store


def test_download_makes_the_file_the_backup_and_writes_back_the_repaired_value_with_this_tabs_turns():
    raw = value({"kept": good("kept " * 100), "bad": {"messages": [{"role": "alien", "content": []}], "updatedAt": 1}})
    storage, store = read_only_store(raw)
    assert store.save("mine", thread("a turn made while read-only"), NOW + 1).read_only
    assert storage.dump()[STORAGE_KEY] == raw
    name = store.download_damaged(NOW + 2)
    assert name == f"{BACKUP}{NOW + 2}.txt"
    assert storage.exported == [(name, raw)]
    assert store.mode == "persistent" and store.memory_only() == frozenset()
    stored = json.loads(storage.dump()[STORAGE_KEY])["state"]["threads"]
    assert stored == {"kept": good("kept " * 100), "bad": {"messages": [], "updatedAt": 1},  # the alien dropped
                      "mine": good("a turn made while read-only", at=NOW + 1)}
    assert store.notices[1:] == [Notice("storage-exported", {"file_name": name})]
    assert not store.notice_holds(store.notices[0])
    assert store.save("mine", thread("a turn made while read-only", "next"), NOW + 3).written
    assert open_store(MemoryStorage.shared_with(storage)).notices == []  # fixed for good: the next load is clean


def test_a_second_read_only_tab_that_sees_the_repair_midway_keeps_the_first_tabs_turns():
    """Tab B reads the value between tab A's repair and A's own turn (another process can): when B
    leaves read-only it writes its turn onto what is stored then, not a whole value of its own."""
    raw = "garbage{" + "Z" * 500
    storage = MemoryStorage()
    storage.set_item(STORAGE_KEY, raw)
    storage.quota = storage.used + len(raw)
    tab_a, tab_b = open_store(storage), open_store(MemoryStorage.shared_with(storage))
    assert tab_a.save("intro-ml", thread("A turn in memory"), NOW + 1).read_only
    assert tab_b.save("linear-algebra", thread("B turn in memory"), NOW + 2).read_only
    write, seen = storage.set_item, []

    def set_item(key, text):  # B's storage event runs right after A's first write (the repaired value)
        write(key, text)
        if not seen:
            seen.append(text)
            tab_b.reload()
    storage.set_item = set_item
    tab_a.download_damaged(NOW + 3)
    storage.set_item = write
    tab_a.reload()
    stored = json.loads(storage.dump()[STORAGE_KEY])["state"]["threads"]
    assert set(stored) == {"intro-ml", "linear-algebra"}
    assert tab_a.memory_only() == frozenset() and tab_b.memory_only() == frozenset()
    assert all(n.code != "storage-pruned-elsewhere" for n in tab_a.notices)


def test_download_of_unparseable_value_keeps_the_threads_of_this_tab():
    storage, store = read_only_store("{" * 3 + "truncated " * 50)
    store.save("a", thread("one"), NOW + 1)
    store.download_damaged(NOW + 2)
    assert json.loads(storage.dump()[STORAGE_KEY])["state"]["threads"] == {"a": good("one", at=NOW + 1)}


def test_download_is_refused_for_a_newer_version_and_outside_read_only():
    newer = value({"a": good("future")}, version=2)
    storage = MemoryStorage()
    storage.set_item(STORAGE_KEY, newer)
    store = open_store(storage)
    assert store.download_damaged(NOW + 1) is None
    assert storage.exported == [] and store.mode == "read-only" and storage.dump()[STORAGE_KEY] == newer
    fine = open_store(MemoryStorage())
    assert fine.download_damaged(NOW) is None and fine.mode == "persistent"


def test_a_value_another_tab_wrote_after_the_download_is_not_taken_for_backed_up():
    storage, store = read_only_store("broken{" * 20)
    other = MemoryStorage.shared_with(storage)

    def export_then_other_tab_writes(key, file_name, export=storage.export_item):
        done = export(key, file_name)
        other.set_item(key, "BROKEN{" * 20)  # as long: no room for its backup either
        return done

    storage.export_item = export_then_other_tab_writes
    store.download_damaged(NOW + 1)
    assert storage.dump()[STORAGE_KEY] == "BROKEN{" * 20
    assert store.mode == "read-only"


def test_runtime_drops_the_read_only_notice_after_the_download():
    raw = value({"a": good("kept"), "b": 7, "c": good("padding " * 20)})
    storage, store = read_only_store(raw)
    runtime = AgentRuntime(store, DemoAgent(), clock=lambda: NOW + 5)
    runtime.hydrate()
    assert [n.code for n in runtime.notices] == ["storage-read-only"]
    assert runtime.download_damaged() == f"{BACKUP}{NOW + 5}.txt"
    assert [n.code for n in runtime.notices] == ["storage-exported"]


# --- 2: a newer version from another tab -------------------------------------------------------------


def test_newer_version_written_by_another_tab_keeps_this_tabs_threads_and_shows_none_of_it():
    storage = MemoryStorage()
    store = open_store(storage)
    store.save("a", thread("mine"), 1)
    newer = value({"a": good("future data"), "b": good("future b")}, version=2)
    MemoryStorage.shared_with(storage).set_item(STORAGE_KEY, newer)
    assert store.reload() == set()
    assert store.load("a") == thread("mine") and store.load("b") is None
    assert store.notices == [Notice("storage-newer-version", {"version": 2})]
    assert store.save("a", thread("mine", "more"), 2).read_only
    assert store.load("a") == thread("mine", "more") and storage.dump()[STORAGE_KEY] == newer


async def test_runtime_keeps_showing_its_turns_when_another_tab_writes_a_newer_version():
    storage, runtime = await runtime_after_a_turn("a", "my turn")
    MemoryStorage.shared_with(storage).set_item(STORAGE_KEY, value({"a": good("future data")}, version=2))
    runtime.on_storage_changed()
    shown = [p.text for m in runtime.messages for p in m.content]
    assert shown[0] == "my turn" and "future data" not in shown
    assert [n.code for n in runtime.notices] == ["storage-newer-version"]


# --- 3: threads another tab pruned -------------------------------------------------------------


def pruned_by_other_tab() -> tuple[MemoryStorage, ThreadStore, ThreadStore]:
    """Tab C holds c00 and c01; tab A's large save prunes c00 (the least recently updated)."""
    storage = MemoryStorage()
    seed = ThreadStore(storage)
    seed.hydrate(NOW)
    seed.save("c00", thread("c00 " * 50), 1)
    seed.save("c01", thread("c01"), 2)
    tab_c = open_store(MemoryStorage.shared_with(storage))
    tab_a = open_store(MemoryStorage.shared_with(storage))
    storage.quota = storage.used + 150
    assert tab_a.save("big", thread("b" * 200), 3).pruned == ("c00",)
    return storage, tab_c, tab_a


def test_a_thread_another_tab_pruned_is_kept_in_memory_with_a_notice():
    storage, tab_c, _ = pruned_by_other_tab()
    assert tab_c.reload() == {"big"}  # c00 did not change for this tab
    assert tab_c.load("c00") == thread("c00 " * 50)
    assert tab_c.memory_only() == {"c00"}
    assert tab_c.notices == [Notice("storage-pruned-elsewhere", {"stage_id": "c00"})]
    assert tab_c.notice_holds(tab_c.notices[0])


def test_the_next_save_of_a_pruned_thread_writes_it_back_whole_when_it_fits_and_the_notice_goes():
    storage, tab_c, _ = pruned_by_other_tab()
    storage.quota = None
    base = tab_c.load("c00")
    result = tab_c.save("c00", base + thread("next"), 4, base=base)  # its own read finds the prune first
    assert result.written and not result.merged
    assert json.loads(storage.dump()[STORAGE_KEY])["state"]["threads"]["c00"]["messages"] == base + thread("next")
    assert tab_c.memory_only() == frozenset()
    assert not tab_c.notice_holds(Notice("storage-pruned-elsewhere", {"stage_id": "c00"}))


def test_writing_a_pruned_thread_back_prunes_by_the_usual_rules():
    storage, tab_c, _ = pruned_by_other_tab()
    tab_c.reload()
    base = tab_c.load("c00")
    storage.quota = len(STORAGE_KEY) + len(value({"big": good("b" * 200, at=3), "c00": good("c00 " * 50, "next", at=4)}))
    result = tab_c.save("c00", base + thread("next"), 4, base=base)
    assert result.written and result.pruned == ("c01",)  # least recently updated other thread first
    assert set(json.loads(storage.dump()[STORAGE_KEY])["state"]["threads"]) == {"big", "c00"}


def test_the_pruning_tab_says_it_pruned_under_its_own_key_and_the_envelope_stays_as_it_was():
    storage, _, _ = pruned_by_other_tab()
    assert storage.dump()[f"{STORAGE_KEY}.pruned"] == '["c00"]'
    stored = json.loads(storage.dump()[STORAGE_KEY])
    assert set(stored) == {"state", "version"} and set(stored["state"]["threads"]) == {"c01", "big"}


def tab_c_and_another_tab() -> tuple[ThreadStore, ThreadStore]:
    """Tab C holds c00 and c01; the other tab reads the same value."""
    storage = MemoryStorage()
    tab_c = open_store(storage)
    tab_c.save("c00", thread("c00"), 1)
    tab_c.save("c01", thread("c01"), 2)
    return tab_c, open_store(MemoryStorage.shared_with(storage))


def test_a_course_cleared_elsewhere_while_another_course_is_saved_is_followed_not_kept():
    tab_c, other = tab_c_and_another_tab()
    other.clear("c00")  # a New conversation, and one save of another course, between two reads of tab C
    other.save("c01", thread("c01", "more"), 3)
    assert tab_c.reload() == {"c00", "c01"}
    assert tab_c.load("c00") is None and tab_c.memory_only() == frozenset() and tab_c.notices == []


def test_clearing_a_pruned_course_takes_it_off_the_record_so_other_tabs_follow():
    storage, tab_c, tab_a = pruned_by_other_tab()
    storage.quota = None
    tab_a.save("c00", thread("c00 again"), 5)
    tab_b = open_store(MemoryStorage.shared_with(storage))
    assert tab_b.load("c00") == thread("c00 again")
    tab_a.clear("c00")
    assert f"{STORAGE_KEY}.pruned" not in storage.dump()
    assert tab_b.reload() == {"c00"}
    assert tab_b.load("c00") is None and tab_b.notices == []


def test_a_save_that_prunes_nothing_writes_no_record():
    storage = MemoryStorage()
    store = open_store(storage)
    store.save("a", thread("a"), 1)
    store.clear("a")
    assert set(storage.dump()) == {STORAGE_KEY}


def test_a_course_cleared_in_another_tab_is_followed():
    tab_c, other = tab_c_and_another_tab()
    other.clear("c00")
    assert tab_c.reload() == {"c00"}
    assert tab_c.load("c00") is None and tab_c.memory_only() == frozenset() and tab_c.notices == []


def test_a_pruned_thread_written_again_by_another_tab_follows_the_stored_version():
    storage, tab_c, tab_a = pruned_by_other_tab()
    tab_c.reload()
    storage.quota = None
    tab_a.save("c00", thread("a new c00 from tab A"), 5)
    assert tab_c.reload() == {"c00"}
    assert tab_c.load("c00") == thread("a new c00 from tab A") and tab_c.memory_only() == frozenset()


async def test_runtime_keeps_showing_the_pruned_course_and_its_next_turn_continues_it():
    storage, runtime = await runtime_after_a_turn("c00", "first turn on c00")
    tab_a = open_store(MemoryStorage.shared_with(storage))
    tab_a.save("x", thread("x"), NOW + 1)  # a newer course than c00
    storage.quota = storage.used + 100
    assert tab_a.save("x", thread("x" * 300), NOW + 2).pruned == ("c00",)
    runtime.on_storage_changed()
    assert [m.role for m in runtime.messages] == ["user", "assistant"]
    assert [n.code for n in runtime.notices] == ["storage-pruned-elsewhere"]
    storage.quota = None
    await runtime.send("second turn")
    stored = json.loads(storage.dump()[STORAGE_KEY])["state"]["threads"]["c00"]["messages"]
    assert [m["content"][0]["text"] for m in stored if m["role"] == "user"] == ["first turn on c00", "second turn"]
    assert runtime.notices == ()


def test_read_only_ends_when_another_tab_replaces_the_damaged_value_with_a_sound_one():
    storage, store = read_only_store(value({"a": good("kept"), "b": 7, "c": good("padding " * 20)}))
    store.save("mine", thread("made while read-only"), NOW + 1)
    sound = value({"other": good("from the tab that downloaded it", at=NOW)})
    MemoryStorage.shared_with(storage).set_item(STORAGE_KEY, sound)
    store.reload()
    assert store.mode == "persistent" and not store.notice_holds(store.notices[0])
    assert json.loads(storage.dump()[STORAGE_KEY])["state"]["threads"] == {
        "other": good("from the tab that downloaded it", at=NOW), "mine": good("made while read-only", at=NOW + 1)}
