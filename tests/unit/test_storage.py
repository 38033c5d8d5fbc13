"""The string-storage interface and its in-memory implementation."""

from __future__ import annotations

import pytest

from app.storage import MemoryStorage, QuotaExceeded, StorageUnavailable, StringStorage, utf16_len


def test_utf16_len_counts_non_bmp_as_two_and_lone_surrogate_as_one():
    assert utf16_len("abc") == 3
    assert utf16_len("中文") == 2
    assert utf16_len("😀") == 2
    assert utf16_len("a\ud800") == 2


def test_memory_storage_is_a_string_storage():
    assert isinstance(MemoryStorage(), StringStorage)


def test_get_set_remove():
    s = MemoryStorage()
    assert s.get_item("k") is None
    s.set_item("k", "v")
    assert s.get_item("k") == "v"
    s.remove_item("k")
    assert s.get_item("k") is None
    s.remove_item("k")  # absent: no error


def test_write_over_quota_raises_and_keeps_old_value():
    s = MemoryStorage(quota=6)
    s.set_item("k", "😀中")  # 1 + 3 units
    with pytest.raises(QuotaExceeded):
        s.set_item("j", "ab")  # would be 7
    assert s.get_item("j") is None and s.get_item("k") == "😀中" and s.used == 4


def test_replacing_or_removing_a_value_frees_its_size():
    s = MemoryStorage(quota=5)
    s.set_item("k", "abcd")
    s.set_item("k", "wxyz")  # replaces, does not add
    s.remove_item("k")
    assert s.used == 0
    s.set_item("j", "abcd")
    assert s.dump() == {"j": "abcd"}


def test_unchanged_only_after_own_read_or_write():
    s = MemoryStorage()
    assert not s.unchanged("k")
    s.get_item("k")
    assert s.unchanged("k")
    s.set_item("k", "v")
    assert s.unchanged("k")


def test_unchanged_false_after_another_tab_writes_and_true_after_reread():
    tab1 = MemoryStorage()
    tab2 = MemoryStorage.shared_with(tab1)
    tab1.set_item("k", "v")
    assert tab2.get_item("k") == "v"
    tab2.set_item("k", "w")
    assert not tab1.unchanged("k") and tab2.unchanged("k")
    tab1.get_item("k")
    assert tab1.unchanged("k")
    tab2.remove_item("k")
    assert not tab1.unchanged("k")


def test_failed_write_changes_nothing_for_other_tabs():
    tab1 = MemoryStorage(quota=3)
    tab2 = MemoryStorage.shared_with(tab1)
    tab1.get_item("k")
    with pytest.raises(QuotaExceeded):
        tab2.set_item("k", "too long")
    assert tab1.unchanged("k")


def test_tabs_share_quota():
    tab1 = MemoryStorage(quota=4)
    tab2 = MemoryStorage.shared_with(tab1)
    tab1.set_item("a", "bc")
    with pytest.raises(QuotaExceeded):
        tab2.set_item("d", "ef")


def test_unavailable_storage_raises_on_every_access():
    s = MemoryStorage(available=False)
    for call in (lambda: s.get_item("k"), lambda: s.set_item("k", "v"), lambda: s.remove_item("k"), lambda: s.unchanged("k")):
        with pytest.raises(StorageUnavailable):
            call()


def test_counts_reads_and_writes():
    s = MemoryStorage()
    s.get_item("k")
    s.set_item("k", "v")
    s.dump()
    assert (s.reads, s.writes) == (1, 1)
