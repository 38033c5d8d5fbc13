"""Every damaged stored value: backed up once, valid parts kept, one notice, saving resumes (DESIGN.md §5).

The same values the browser once proved one boot each (tests/corrupt_values.py); the page still
shows the two only it can (tests/e2e/test_resilience.py).
"""

from __future__ import annotations

import json

import pytest

from app.storage import MemoryStorage
from app.store import ThreadStore
from tests.corrupt_values import BACKUP_PREFIX, CORRUPT_VALUES, KEEPS_GOOD_THREAD, KEY

NOW = 1_780_000_000_000


def backups(storage: MemoryStorage) -> dict[str, str]:
    return {k: v for k, v in storage.dump().items() if k.startswith(BACKUP_PREFIX)}


def texts(messages: list[dict]) -> list[str]:
    return [p["text"] for m in messages for p in m["content"] if p.get("type") == "text"]


@pytest.mark.parametrize("case", sorted(CORRUPT_VALUES))
def test_corrupt_value_is_backed_up_valid_parts_kept_and_one_notice_shown(case):
    raw = CORRUPT_VALUES[case]
    storage = MemoryStorage()
    storage.set_item(KEY, raw)
    store = ThreadStore(storage)
    store.hydrate(NOW)
    assert [n.code for n in store.notices] == ["storage-corrupt"]
    assert list(backups(storage).values()) == [raw]
    shown = store.load("intro-ml") or []
    if case in KEEPS_GOOD_THREAD:
        assert len(shown) == 2 and texts(shown) == ["good question", "good answer"]
    repaired = [*shown, {"role": "user", "content": [{"type": "text", "text": "after the repair"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "an answer"}]}]
    store.save("intro-ml", repaired, NOW + 1)
    stored = json.loads(storage.dump()[KEY])
    assert stored["version"] == 1
    assert stored["state"]["threads"]["intro-ml"]["messages"][-2]["content"][0]["text"] == "after the repair"
    assert list(backups(storage).values()) == [raw]
    assert [n.code for n in store.notices] == ["storage-corrupt"]
    again = ThreadStore(MemoryStorage.shared_with(storage))
    again.hydrate(NOW + 2)
    assert again.notices == [] and again.load("intro-ml") == repaired  # the next start finds it whole
