"""Conversation history per course (DESIGN.md §9, seed session-storage.md): pure Python.

- ``records``: ``TaskMeta``, ``TurnMeta`` (the seed's field names), task ids, ISO times;
- ``text``: titles (grapheme clusters), search folding and snippets, time labels;
- ``repository``: the history tables over an ``app.records.RecordBackend`` (the one module naming
  tables and indexes; ``Writes``: one transaction's changes, named for what they do);
- ``access``: the store opened once, unavailable with one notice (``guarded``);
- ``turn_writes``: a completed turn; ``writes``: archive, resume, reconciliation; ``active``: each
  course's active conversation as this tab knows it; ``reads``: the list in pages, search;
- ``service``: ``HistoryService``, the one face over them (and delete, undo, import);
- ``recorder``: the runtime's queue of history writes; ``reconcile``: what start-up reads of the store;
- ``export``: Markdown and JSON export, JSON import (loaded on first use).

Importing the package imports none of them: each name below is imported when first asked for
(PEP 562), so ``app.history.recorder`` can be imported before ready without history's modules
(DESIGN.md §13: they are imported after ready, in slices, ``app.browser.page``).
"""

from __future__ import annotations

import importlib

__all__ = ["ConversationStats", "HistoryService", "Page", "SearchHit", "TaskMeta", "TurnMeta"]

_HOME = {"TaskMeta": "records", "TurnMeta": "records", "ConversationStats": "service", "HistoryService": "service",
         "Page": "service", "SearchHit": "service"}


def __getattr__(name: str):
    if name in _HOME:
        return getattr(importlib.import_module(f"app.history.{_HOME[name]}"), name)
    raise AttributeError(f"module 'app.history' has no attribute {name!r}")
