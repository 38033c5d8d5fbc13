"""What start-up reconciliation reads from ``maic-agent-threads`` (DESIGN.md §9: localStorage wins).

``stored_threads(store)`` gives ``HistoryService.reconcile`` its input from the
page's ``app.store.ThreadStore`` (ids through ``store.stage_ids()``, never by
parsing the stored value a second time). ``iter_stored_threads(store)`` gives the same
one course at a time, so the browser layer can give the page back between courses
(DESIGN.md §13: nothing after ready over 50 ms; ``app.browser.history_view``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

__all__ = ["StoredThreads", "iter_stored_threads", "refreshed", "stored_threads"]


class StoredThreads(Protocol):
    """What reconciliation reads of the page's thread store (``app.store.ThreadStore`` has it)."""

    def stage_ids(self) -> list[str]: ...

    def load(self, stage_id: str) -> list[dict] | None: ...

    def updated_at(self, stage_id: str) -> int | None: ...


def stored_threads(store: StoredThreads) -> dict[str, tuple[list[dict], int]]:
    """``{stageId: (slim messages, updatedAt ms)}`` of every course whose active thread the store holds
    with messages (``store``: ``ThreadStore`` with ``stage_ids``, ``load``, ``updated_at``). Empty
    threads and threads without ``updatedAt`` are left out (nothing to adopt)."""
    return dict(iter_stored_threads(store))


def iter_stored_threads(store: StoredThreads) -> Iterator[tuple[str, tuple[list[dict], int]]]:
    """``stored_threads`` one course at a time: ``(stageId, (slim messages, updatedAt ms))``, in the
    store's order, each read only when asked for (one slice of start-up work, DESIGN.md §13)."""
    for stage_id in store.stage_ids():
        messages, updated = store.load(stage_id), store.updated_at(stage_id)
        if messages and updated is not None:
            yield stage_id, (messages, updated)


def refreshed(threads: dict[str, tuple[list[dict], int]], store: StoredThreads) -> dict[str, tuple[list[dict], int]]:
    """``threads`` (``{stageId: (slim messages, updatedAt ms)}`` read earlier, one course at a time)
    with every course saved since it was read (a turn, an edit or a regenerate made while start-up
    read the others) taken as ``store`` holds it now, so reconciliation never brings history in line
    with a thread the page has already replaced (a branch it left would become the one shown,
    DESIGN.md §9, §17). A course emptied meanwhile is left out.

    >>> class Store:
    ...     def load(self, stage_id): return [{"id": "b"}]
    ...     def updated_at(self, stage_id): return 2 if stage_id == "s" else 1
    >>> refreshed({"s": ([{"id": "a"}], 1), "t": ([{"id": "a"}], 1)}, Store())
    {'s': ([{'id': 'b'}], 2), 't': ([{'id': 'a'}], 1)}
    """
    fresh: dict[str, tuple[list[dict], int]] = {}
    for stage_id, (messages, updated) in threads.items():
        now = store.updated_at(stage_id)
        if now == updated:
            fresh[stage_id] = (messages, updated)
            continue
        current = store.load(stage_id)
        if current and now is not None:
            fresh[stage_id] = (current, now)
    return fresh
