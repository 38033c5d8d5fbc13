"""Reading history: a course's list in pages, what arrived above it, search, one conversation
(DESIGN.md §9, §14). Pure Python, over ``HistoryRepository``.

- the list pages on the cursor (``updatedAt``, ``taskId``), newest first, ``PAGE_SIZE`` a page
  (``page``), and ``newer`` returns what arrived or moved above the list's top;
- search goes through the index (``app.history.terms``: folded whole words, CJK n-grams, all
  required), newest first (or oldest, or most tokens), filtered by time and paged on the same
  cursor as the list (``search``); a course's records stored before the index are indexed at its
  first search, in slices.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from app.history.access import HistoryAccess, Segmenter, guarded
from app.history.records import TaskMeta
import re

from app.history.repository import Conversation, Damaged, HistoryRepository, ListRange
from app.history.search_index import SNIPPET_AFTER, SNIPPET_BEFORE, SearchIndex
from app.history.terms import SearchQuery, parse_query
from app.history.text import fold, needs_clusters, snippet, source_index

__all__ = ["HistoryReads", "PAGE_SIZE", "Page", "SearchHit", "SearchPage", "after_turn"]

PAGE_SIZE = 10


@dataclass(frozen=True)
class Page:
    """One page of the list: ``items`` in the list's order; ``cursor`` for the next page; ``has_more``;
    ``total``: how many the list holds (its course, in its time range), read with the page."""

    items: list[TaskMeta | Damaged]
    cursor: tuple | None
    has_more: bool
    total: int = 0
    listed: tuple | None = None
    """A first page: its rows (up to ``PAGE_SIZE``) in the order read, pinned ones among them too (what
    ``after_turn`` needs of a newest-first one); None on later pages, or when the pins were not read."""
    pins: tuple = ()
    """A first page: the course's pinned metas that lead it (``items`` starts with them)."""
    strays: tuple = ()
    """A first page over all times: the conversations no course's list holds (``HistoryRepository.
    strays``), damaged, that end it (``items`` ends with them)."""


def after_turn(page: Page, meta: TaskMeta) -> Page | None:
    """The newest-first first page over all times that a re-read (``HistoryReads.page``) gives once
    ``meta``, a conversation of ``page``'s course written by a turn (``HistoryChange.written``), is
    stored, worked out from ``page`` (read before it) with no read; None when that cannot be told
    without one: the conversation is neither among ``page.listed`` nor its pins (new, or further
    down: the total or the rows beyond could change), its pin changed, or its time does not put it
    at the top. Pinned ones lead in ``pinned_first`` order; total and has-more stay; the cursor is the
    last row's key (DESIGN.md §9, §14, §18)."""
    from app.history.names import pinned_first

    if page.listed is None:
        return None
    in_rows = any(row.taskId == meta.taskId for row in page.listed)
    in_pins = any(pin.taskId == meta.taskId for pin in page.pins)
    if not (in_rows or in_pins) or in_pins != (meta.pinnedAt is not None):
        return None
    if page.has_more and len(page.listed) < PAGE_SIZE:
        return None  # an unreadable row was left out of the page: a re-read's rows are not told here
    if not in_rows and not page.has_more:
        return None  # a pinned one outside a page that holds every row: not as read
    rest = [row for row in page.listed if row.taskId != meta.taskId]
    if rest and (rest[0].updatedAt, rest[0].taskId) > (meta.updatedAt, meta.taskId):
        return None
    listed = tuple([meta, *rest][:PAGE_SIZE])
    pins = tuple(pinned_first([meta if pin.taskId == meta.taskId else pin for pin in page.pins]))
    items = [*pins, *(row for row in listed if getattr(row, "pinnedAt", None) is None), *page.strays]
    last = listed[-1]
    return Page(items, (last.updatedAt, last.taskId), page.has_more, page.total, listed, pins, page.strays)


def _no_page() -> Page:
    return Page([], None, False)


@dataclass(frozen=True)
class SearchHit:
    """A conversation that matches: its meta and the snippet ``(before, match, after)``."""

    meta: TaskMeta
    snippet: tuple[str, str, str]


@dataclass(frozen=True)
class SearchPage:
    """One page of search results, paged like the list (DESIGN.md §14): ``items`` in the order
    asked; ``cursor`` for the next page (the last hit's ``(updatedAt, taskId)``, or its ``tokens``
    key ``(-totalTokens, -updatedAt, taskId)``); ``has_more``; ``total``: how many hits there are,
    on the first page (a one-term keyword: its index count; several terms or a CJK run: every match
    walked), else ``None`` (a later page)."""

    items: list[SearchHit]
    cursor: tuple | None
    has_more: bool
    total: int | None = None


def _no_search() -> SearchPage:
    return SearchPage([], None, False, 0)


def _tokens_order(meta: TaskMeta) -> tuple:
    """The ``tokens`` sort key of a meta: most total tokens, then newest, then task id."""
    return (-meta.stats.totalTokens, -meta.updatedAt, meta.taskId)


_SEARCH_ORDER = {
    "tokens": lambda h: (-h.meta.stats.totalTokens, -h.meta.updatedAt, h.meta.taskId),
    "oldest": lambda h: (h.meta.updatedAt, h.meta.taskId),
    "newest": lambda h: (-h.meta.updatedAt, h.meta.taskId),
}


class HistoryReads:
    """The list, search and export reads of history (module docstring); each returns an empty
    answer when history is unavailable."""

    def __init__(self, repository: HistoryRepository, index: SearchIndex, access: HistoryAccess, segmenter: Segmenter,
                 *, pause: Callable[[], Awaitable[None]] | None = None) -> None:
        self._repository, self._index, self._access, self._segmenter = repository, index, access, segmenter
        self._pause = pause  # ends the task between slices of indexing (the page's next_task); None: asyncio.sleep(0)
        self._no_strays = False  # no conversation outside every course's list was found (``_strays``)
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
        of its last item, never an offset, so nothing is shown twice or skipped. The course's pinned
        conversations lead the first page, most recently pinned first, and are left out of the sorted
        rest (DESIGN.md §18): a page after them may hold fewer than ``PAGE_SIZE``."""
        if sort == "tokens":
            page = await self._tokens_page(stage_id, cursor, since_ms)
        else:
            page = await self._time_page(ListRange(stage_id, since_ms, cursor, sort == "oldest", PAGE_SIZE + 1))
        page = await self._pinned_first(stage_id, page, cursor is None, since_ms)
        strays = await self._strays() if cursor is None and since_ms is None else []
        return replace(page, items=[*page.items, *strays], strays=tuple(strays)) if strays else page

    @guarded(list)
    async def _strays(self) -> list[Damaged]:
        """``HistoryRepository.strays``, asked again only while some were found: none are made but by
        another writer (an older version, a hand edit), and each list open would count twice."""
        if self._no_strays:
            return []
        strays = await self._repository.strays()
        self._no_strays = not strays
        return strays

    @guarded(lambda: None)
    async def _pins(self, stage_id: str, since_ms: int | None) -> list[TaskMeta] | None:
        return await self._repository.pinned(stage_id, since_ms)

    async def _pinned_first(self, stage_id: str, page: Page, first: bool, since_ms: int | None) -> Page:
        """``page`` of the sorted list without its pinned conversations, led by them on the first page."""
        rest = [m for m in page.items if getattr(m, "pinnedAt", None) is None]
        pins = await self._pins(stage_id, since_ms) if first else []
        if first and pins is not None:
            page = replace(page, listed=tuple(page.items), pins=tuple(pins))
        if len(rest) == len(page.items) and not pins:
            return page
        return replace(page, items=[*(pins or []), *rest])

    @guarded(_no_page)
    async def _time_page(self, span: ListRange) -> Page:
        rows, total = await self._repository.rows(span)
        has_more = len(rows) > PAGE_SIZE
        rows = rows[:PAGE_SIZE]
        items = await self._repository.with_messages([m for m in map(self._repository.listed, rows) if m is not None])
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
        items = await self._repository.with_messages([m for m in (self._repository.listed(r) for _, r in shown)
                                                      if m is not None])
        return Page(items, shown[-1][0] if shown else cursor, len(rows) > PAGE_SIZE, total)

    @guarded(list)
    async def newer(self, stage_id: str, top: tuple[int, str] | None) -> list[TaskMeta | Damaged]:
        """Every conversation above ``top`` (what arrived or moved up while the list was open), newest first."""
        rows = await self._repository.above(stage_id, top)
        return await self._repository.with_messages([m for m in map(self._repository.listed, rows) if m is not None])

    @guarded(bool)
    async def damaged(self, task_id: str) -> bool:
        """True when conversation ``task_id`` is stored but cannot be read (its meta or its ``messages``
        record: ``HistoryRepository.damaged``, DESIGN.md §5); False when it is not stored or history failed."""
        return await self._repository.damaged(task_id)

    @guarded()
    async def get(self, task_id: str) -> TaskMeta | None:
        """One conversation's meta."""
        return await self._repository.meta(task_id)

    async def search(self, stage_id: str, keyword: str, cursor: tuple | None = None, *,
                     since_ms: int | None = None, sort: str = "newest") -> SearchPage:
        """The next ``PAGE_SIZE`` conversations of ``stage_id`` after ``cursor`` (the previous page's
        ``SearchPage.cursor``, same keyword, sort and range; None: the first page) that match
        ``keyword``: every term of it (``app.history.terms.parse_query``, folded as §14 says: whole
        words, a keyword inside an unspaced CJK sentence too), updated at or after ``since_ms``;
        ``sort``: ``newest`` | ``oldest`` | ``tokens`` (most total tokens first). A keyword of
        punctuation only is looked for as it is, by a scan. Each hit has its snippet, the first word
        or run of the keyword marked. A course's records stored before the index are indexed at its
        first search (``SearchIndex.reindex``)."""
        query = parse_query(keyword, fold)
        if not query.needle:
            return _no_search()
        return await self._search(stage_id, query, cursor, since_ms, sort)

    async def prepare_search(self, stage_id: str) -> None:
        """Index ``stage_id``'s records stored before the index, once per course and session."""
        if stage_id not in self._refolded:
            await self._index.reindex(stage_id, self._pause)
            self._refolded.add(stage_id)

    @guarded(_no_search)
    async def _search(self, stage_id: str, query: SearchQuery, cursor: tuple | None, since_ms: int | None,
                      sort: str) -> SearchPage:
        await self.prepare_search(stage_id)
        if not query.terms:
            return await self._scan_page(stage_id, query, cursor, since_ms, sort)
        counts = [await self._index.term_count(stage_id, term, since_ms) for term in query.terms]
        lead = query.terms[counts.index(min(counts))]
        if min(counts) == 0:
            return _no_search()
        exact = len(query.terms) == 1 and not query.runs
        if sort == "tokens":
            return await self._tokens_search(stage_id, query, cursor, since_ms, lead)
        oldest = sort == "oldest"
        # the first page of a query the index cannot count alone (several terms, a CJK run to check)
        # walks every match, so its total is the matches' count, not the page's (a page of 10 of 20
        # read "10"); later pages stop at the page
        whole = cursor is None and not exact
        keys = await self._index.matching(stage_id, query, since_ms=since_ms, after=cursor, oldest=oldest,
                                               want=0 if whole else PAGE_SIZE + 1, lead=lead)
        total = counts[0] if exact else (len(keys) if whole else None)
        has_more = len(keys) > PAGE_SIZE
        keys = keys[:PAGE_SIZE]
        hits = await self._hits(query, [task for _, task in keys])
        return SearchPage(hits, tuple(keys[-1]) if keys else cursor, has_more, total)

    async def _tokens_search(self, stage_id: str, query: SearchQuery, cursor: tuple | None, since_ms: int | None,
                             lead: str) -> SearchPage:
        """``search`` sorted by most tokens (no index holds tokens): every hit's posting is walked
        (``matching``, bounded steps), their metas read in slices (``SearchIndex.metas_of``)
        and ordered here; only the page's hits are read for their snippets."""
        keys = await self._index.matching(stage_id, query, since_ms=since_ms, after=None, oldest=False,
                                               want=0, lead=lead)
        ranked = sorted(await self._index.metas_of([task for _, task in keys]), key=_tokens_order)
        if cursor is not None:
            ranked = [m for m in ranked if _tokens_order(m) > tuple(cursor)]
        shown = ranked[:PAGE_SIZE]
        hits = await self._hits(query, [m.taskId for m in shown])
        last = _tokens_order(shown[-1]) if shown else cursor
        return SearchPage(hits, last, len(ranked) > PAGE_SIZE, len(keys) if cursor is None else None)

    async def _hits(self, query: SearchQuery, task_ids: list[str]) -> list[SearchHit]:
        """The ``SearchHit`` of each of ``task_ids`` (in that order): its meta and its snippet around
        the first place its folded text holds the keyword's mark (a damaged one is left out)."""
        found: list[tuple[TaskMeta, str, bool, bool]] = []  # meta, excerpt, cut before it, cut after it
        word = re.compile(r"(?<![^\W_])" + re.escape(query.mark))
        for raw, record, kept in await self._index.snippets_of(task_ids):
            meta = self._repository.meta_of(raw)
            folded = record.get("folded") if isinstance(record, dict) else None
            if meta is None or not isinstance(folded, str):
                continue
            match = word.search(folded)
            at = match.start() if match else folded.find(query.mark)
            text = kept.get("text") if isinstance(kept, dict) else None
            if at < 0 and query.mark in fold(meta.taskName):  # found by its title alone (§18): the title marked
                found.append((meta, meta.taskName, False, False))
                continue
            if not isinstance(text, str):
                text, start = folded, at
            else:
                start = source_index(record.get("anchors") or [], max(at, 0))
            excerpt = text[max(0, start - SNIPPET_BEFORE): start + len(query.mark) + SNIPPET_AFTER]
            found.append((meta, excerpt, start > SNIPPET_BEFORE, True))
        if any(needs_clusters(excerpt) for _, excerpt, _, _ in found):
            await self._segmenter.load()  # a snippet marks whole grapheme clusters (§14)
        hits = []
        for meta, excerpt, cut, cut_after in found:
            piece = snippet(excerpt, query.mark, cut_before=cut, cut_after=cut_after)
            hits.append(SearchHit(meta, piece or ("", "", excerpt)))
        return hits

    async def _scan_page(self, stage_id: str, query: SearchQuery, cursor: tuple | None, since_ms: int | None,
                         sort: str) -> SearchPage:
        """A keyword with no term (punctuation only): a scan of the course's folded texts, paged here."""
        hits = [(meta, at, meta.taskName if excerpt is None else excerpt)  # a title hit: the title marked (§18)
                for meta, at, excerpt in await self._index.find(stage_id, query.needle, since_ms) if meta is not None]
        if any(needs_clusters(excerpt) for _, _, excerpt in hits):
            await self._segmenter.load()
        found = []
        for meta, at, excerpt in hits:
            piece = snippet(excerpt, query.needle, cut_before=at > SNIPPET_BEFORE, cut_after=at >= 0)
            if piece is not None:
                found.append(SearchHit(meta, piece))
        order = _SEARCH_ORDER.get(sort, _SEARCH_ORDER["newest"])
        found.sort(key=order)
        if cursor is not None:
            found = [h for h in found if order(h) > tuple(cursor)]
        shown = found[:PAGE_SIZE]
        last = order(shown[-1]) if shown else cursor
        return SearchPage(shown, last, len(found) > PAGE_SIZE, len(found) if cursor is None else None)

    @guarded()
    async def bundle(self, task_id: str) -> Conversation | None:
        """Meta, messages and turns of one conversation, for export."""
        return await self._repository.conversation(task_id)
