"""Conversation history per course (DESIGN.md §9, seed session-storage.md): pure Python.

- ``records``: ``TaskMeta``, ``TurnMeta`` (the seed's field names), task ids, ISO times;
- ``text``: titles (grapheme clusters), search folding and snippets, time labels;
- ``service``: ``HistoryService`` over an ``app.records.RecordBackend``;
- ``export``: Markdown and JSON export, JSON import (loaded on first use).
"""

from app.history.records import TaskMeta, TurnMeta
from app.history.service import ConversationStats, HistoryService, Page, SearchHit

__all__ = ["ConversationStats", "HistoryService", "Page", "SearchHit", "TaskMeta", "TurnMeta"]
