"""Reading history: a course's list in pages, what arrived above it, search, one conversation
(DESIGN.md §9, §14). Pure Python, over ``HistoryRepository``.

- the list pages on the cursor (``updatedAt``, ``taskId``), newest first, ``PAGE_SIZE`` a page
  (``page``), and ``newer`` returns what arrived or moved above the list's top;
- search folds case, finds text inside unspaced CJK sentences, filters by time and sorts
  (``search``); a course's records of an earlier folding are folded again at its first search.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.history.access import HistoryAccess, Segmenter, guarded
from app.history.records import TaskMeta
from app.history.repository import SNIPPET_BEFORE, Conversation, Damaged, HistoryRepository, ListRange
from app.history.text import fold, needs_clusters, snippet

__all__ = ["HistoryReads", "PAGE_SIZE", "Page", "SearchHit"]

PAGE_SIZE = 10


@dataclass(frozen=True)
class Page:
    """One page of the list: ``items`` in the list's order; ``cursor`` for the next page; ``has_more``;
    ``total``: how many the list holds (its course, in its time range), read with the page."""

    items: list[TaskMeta | Damaged]
    cursor: tuple | None
    has_more: bool
    total: int = 0


def _no_page() -> Page:
    return Page([], None, False)


@dataclass(frozen=True)
class SearchHit:
    """A conversation that matches: its meta and the snippet ``(before, match, after)``."""

    meta: TaskMeta
    snippet: tuple[str, str, str]


_SEARCH_ORDER = {
    "tokens": lambda h: (-h.meta.stats.totalTokens, -h.meta.updatedAt, h.meta.taskId),
    "oldest": lambda h: (h.meta.updatedAt, h.meta.taskId),
    "newest": lambda h: (-h.meta.updatedAt, h.meta.taskId),
}


class HistoryReads:
    """The list, search and export reads of history (module docstring); each returns an empty
    answer when history is unavailable."""

    def __init__(self, repository: HistoryRepository, access: HistoryAccess, segmenter: Segmenter) -> None:
        self._repository, self._access, self._segmenter = repository, access, segmenter
        self._refolded: set[str] = set()  # courses whose search records all carry FOLD_VERSION

    @guarded(int)
    async def total(self, stage_id: str, since_ms: int | None = None) -> int:
        """How many conversations ``stage_id`` has (updated at or after ``since_ms`` when given)."""
        return await self._repository.count(stage_id, since_ms)

    async def page(self, stage_id: str, cursor: tuple | None = None, *, sort: str = "newest",
                   since_ms: int | None = None) -> Page:
        """The next ``PAGE_SIZE`` conversations after ``cursor`` (from the start when None) in ``sort``
        order: ``newest`` / ``oldest`` (``updatedAt``, then ``taskId``) or ``tokens`` (most total tokens
        first, then newest); only those updated at or after ``since_ms`` when given (DESIGN.md §9).
        ``cursor`` is the previous page's ``Page.cursor`` with the same ``sort`` and ``since_ms``: the key
        of its last item, never an offset, so nothing is shown twice or skipped."""
        if sort == "tokens":
            return await self._tokens_page(stage_id, cursor, since_ms)
        return await self._time_page(ListRange(stage_id, since_ms, cursor, sort == "oldest", PAGE_SIZE + 1))

    @guarded(_no_page)
    async def _time_page(self, span: ListRange) -> Page:
        rows, total = await self._repository.rows(span)
        has_more = len(rows) > PAGE_SIZE
        rows = rows[:PAGE_SIZE]
        items = [m for m in map(self._repository.listed, rows) if m is not None]
        last = rows[-1] if rows else None
        cursor = (last["updatedAt"], last["taskId"]) if isinstance(last, dict) and "updatedAt" in last else span.after
        return Page(items, cursor, has_more, total)

    @guarded(_no_page)
    async def _tokens_page(self, stage_id: str, cursor: tuple | None, since_ms: int | None) -> Page:
        """``page`` sorted by most tokens: the course's metas in range are read and ordered here (no
        index holds tokens); only the page's own records are validated. Cursor: the last item's
        ``(-totalTokens, -updatedAt, taskId)``."""
        rows = await self._repository.by_tokens(stage_id, since_ms)
        total = len(rows)
        if cursor is not None:
            after = tuple(cursor)
            rows = [kr for kr in rows if kr[0] > after]
        shown = rows[:PAGE_SIZE]
        items = [m for m in (self._repository.listed(r) for _, r in shown) if m is not None]
        return Page(items, shown[-1][0] if shown else cursor, len(rows) > PAGE_SIZE, total)

    @guarded(list)
    async def newer(self, stage_id: str, top: tuple[int, str] | None) -> list[TaskMeta | Damaged]:
        """Every conversation above ``top`` (what arrived or moved up while the list was open), newest first."""
        rows = await self._repository.above(stage_id, top)
        return [m for m in map(self._repository.listed, rows) if m is not None]

    @guarded()
    async def get(self, task_id: str) -> TaskMeta | None:
        """One conversation's meta."""
        return await self._repository.meta(task_id)

    async def search(self, stage_id: str, keyword: str, *, since_ms: int | None = None,
                     sort: str = "newest") -> list[SearchHit]:
        """Conversations of ``stage_id`` whose text holds ``keyword`` (folded as DESIGN.md §14 says:
        ``app.history.text.fold``; a keyword inside an unspaced CJK sentence matches), updated at or
        after ``since_ms``; ``sort``: ``newest`` | ``oldest`` | ``tokens`` (most total tokens first).
        A course's records of an earlier folding are folded again at its first search."""
        needle = fold(" ".join(keyword.split()))
        if not needle:
            return []
        return await self._search(stage_id, needle, since_ms, sort)

    @guarded(list)
    async def _search(self, stage_id: str, needle: str, since_ms: int | None, sort: str) -> list[SearchHit]:
        if stage_id not in self._refolded:
            await self._repository.refold(stage_id)
            self._refolded.add(stage_id)
        hits = await self._repository.find(stage_id, needle, since_ms)
        if any(needs_clusters(excerpt) for _, _, excerpt in hits):
            await self._segmenter.load()  # a snippet marks whole grapheme clusters (§14)
        found = []
        for meta, at, excerpt in hits:
            piece = snippet(excerpt, needle, cut_before=at > SNIPPET_BEFORE, cut_after=True) if meta else None
            if meta is not None and piece is not None:
                found.append(SearchHit(meta, piece))
        found.sort(key=_SEARCH_ORDER.get(sort, _SEARCH_ORDER["newest"]))
        return found

    @guarded()
    async def bundle(self, task_id: str) -> Conversation | None:
        """Meta, messages and turns of one conversation, for export."""
        return await self._repository.conversation(task_id)
