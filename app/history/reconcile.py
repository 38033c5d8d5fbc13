"""What start-up reconciliation reads from ``maic-agent-threads`` (DESIGN.md §9: localStorage wins).

``stored_threads(store)`` gives ``HistoryService.reconcile`` its input from the
page's ``app.store.ThreadStore`` (ids through ``store.stage_ids()``, never by
parsing the stored value a second time).
"""

from __future__ import annotations

from typing import Any

__all__ = ["stored_threads"]


def stored_threads(store: Any) -> dict[str, tuple[list[dict], int]]:
    """``{stageId: (slim messages, updatedAt ms)}`` of every course whose active thread the store holds
    with messages (``store``: ``ThreadStore`` with ``stage_ids``, ``load``, ``updated_at``). Empty
    threads and threads without ``updatedAt`` are left out (nothing to adopt)."""
    threads = {}
    for stage_id in store.stage_ids():
        messages, updated = store.load(stage_id), store.updated_at(stage_id)
        if messages and updated is not None:
            threads[stage_id] = (messages, updated)
    return threads
