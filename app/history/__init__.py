"""Conversation history per course (DESIGN.md §9, seed session-storage.md): pure Python.

- ``records``: ``TaskMeta``, ``TurnMeta`` (the seed's field names), task ids, ISO times;
- ``text``: titles (grapheme clusters), search folding and snippets, time labels;
- ``repository``: the history tables over an ``app.records.RecordBackend`` (the one module naming
  tables and indexes; ``Writes``: one transaction's changes, named for what they do);
- ``access``: the store opened once, unavailable with one notice (``guarded``);
- ``writes``: turns, archive, resume, reconciliation; ``reads``: the list in pages, search;
- ``service``: ``HistoryService``, the one face over them (and delete, undo, import);
- ``recorder``: the runtime's queue of history writes; ``reconcile``: what start-up reads of the store;
- ``export``: Markdown and JSON export, JSON import (loaded on first use).
"""

from app.history.records import TaskMeta, TurnMeta
from app.history.service import ConversationStats, HistoryService, Page, SearchHit

__all__ = ["ConversationStats", "HistoryService", "Page", "SearchHit", "TaskMeta", "TurnMeta"]
