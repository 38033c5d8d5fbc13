"""History's search index over the record store (DESIGN.md §14): the queries a search makes of it
and the indexing of ``search`` records stored before it. Pure Python, over ``app.records.RecordBackend``.

``HistoryRepository`` (``app.history.repository``) writes a conversation's ``search`` record with its
posting keys (``search_record``, ``Writes.keep``); this module reads them: the ``search`` table's
indexes ``[stageId+updatedAt]`` (a course's records) and the multiEntry ``*terms`` (posting and
presence keys, ``app.history.terms``), the ``texts`` records for snippets, and the ``conversations``
records of the hits. ``HistoryService`` builds one ``SearchIndex`` beside its repository and hands it
to ``HistoryReads``, the one reader of it. Every step reads a bounded number of keys or records,
whatever the size of the course, and a damaged meta is read as missing through the repository
(``HistoryRepository.meta_of``: its ``on_damaged``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from app.history.records import TaskMeta
from app.history.repository import LIST_INDEX, HistoryRepository, ListRange, Writes
from app.history.terms import (SearchQuery, parse_posting, posting_prefix, presence_prefix, term_bounds,
                               time_hex)
from app.history.text import fold
from app.records import HIGHEST, LOWEST, RecordBackend

__all__ = ["SNIPPET_AFTER", "SNIPPET_BEFORE", "SearchIndex"]

SEARCH_INDEX = "[stageId+updatedAt]"
TERMS_INDEX = "terms"
"""The multiEntry index of ``search`` records' posting keys (``app.records.SCHEMA`` version 2)."""
WALK_BATCH = 64
"""Posting keys read per step when a query has more than one term or a run to check."""
OTHER_KEYS_MAX = 4 * WALK_BATCH
"""A query's other terms: at most this many posting keys read per batch of the rarest term's; beyond
(a word found in most conversations), each candidate left is looked up by its own key."""
RUN_CHECK_BATCH = 16
"""``search`` records read per step when candidates are checked for a query's unspaced runs."""
META_SLICE = 200
"""Metas read per step when every hit of a search is ordered by tokens."""
SNIPPET_BEFORE, SNIPPET_AFTER = 24, 60
SNIPPET_FIELDS = ["folded", "anchors"]
"""What a hit's snippet needs of its ``search`` record (its posting keys, most of it, stay in the store)."""
PRESENCE_SLICE = 1000
"""Presence keys read (and taken apart) per step when a course's records are checked against the
index (``SearchIndex.unindexed``)."""
REINDEX_BATCH = 10
"""Stored records indexed per transaction (its ops are encoded, parsed and cloned in the page's task,
~130 posting keys a record, all alive until the transaction ends: at 20 the page's collections of
them fell inside tasks over 50 ms, bench ``historysearch``)."""
REINDEX_STEP_S = 0.008
"""Indexing stored records pauses (ends its task) after this long of folding (seconds)."""


def _title_holds(raw: Any, query: SearchQuery) -> bool:
    """True when the raw meta ``raw``'s folded title holds every unspaced run of ``query``."""
    title = raw.get("taskName") if isinstance(raw, dict) else None
    return isinstance(title, str) and query.matches(fold(title))


class SearchIndex:
    """The search queries of history's ``search`` records (module docstring), read from ``backend``
    (the repository's); a meta read is validated by ``repository`` (``HistoryRepository.meta_of``)
    and a re-indexing slice is committed through it (``HistoryRepository.commit``)."""

    def __init__(self, backend: RecordBackend, repository: HistoryRepository) -> None:
        self._db = backend
        self._repository = repository

    async def find(self, stage_id: str, needle: str,
                   since_ms: int | None) -> list[tuple[TaskMeta | None, int, str | None]]:
        """Conversations of ``stage_id`` whose folded text or title holds ``needle`` (already folded),
        by a scan (a keyword with no term: punctuation, emoji): their meta (None when damaged), the
        position in the folded text and the excerpt around it in the text (``SNIPPET_BEFORE`` before,
        ``SNIPPET_AFTER`` after), DESIGN.md §14; for one whose title alone holds it, position -1 and no
        excerpt (the title is marked, §18). Text hits first, then title hits."""
        span = ListRange(stage_id, since_ms)
        hits = await self._db.scan("search", SEARCH_INDEX, span.low, span.high, field="folded", needle=needle,
                                   before=SNIPPET_BEFORE, after=SNIPPET_AFTER, show_table="texts",
                                   show_field="text")
        in_text = {key for key, _, _ in hits}
        titled = [key for key, _, _ in await self._db.scan(
            "conversations", LIST_INDEX, span.low, span.high, field="taskName", needle=needle, before=0, after=0,
            show_table="conversations", show_field="taskName") if key not in in_text]
        metas = await self._db.bulk_get("conversations", [key for key, _, _ in hits] + titled)
        found: list[tuple[TaskMeta | None, int, str | None]] = [
            (self._repository.meta_of(raw), at, excerpt) for (_, at, excerpt), raw in zip(hits, metas)]
        return found + [(self._repository.meta_of(raw), -1, None) for raw in metas[len(hits):]]

    async def term_count(self, stage_id: str, term: str, since_ms: int | None) -> int:
        """How many conversations of ``stage_id`` (updated at or after ``since_ms``) hold ``term``."""
        lower, upper, _, _ = term_bounds(stage_id, term, since_ms=since_ms)
        return await self._db.count("search", TERMS_INDEX, lower, upper)

    async def matching(self, stage_id: str, query: SearchQuery, *, since_ms: int | None, after: tuple | None,
                       oldest: bool, want: int, lead: str) -> list[tuple[int, str]]:
        """Up to ``want`` ``(updatedAt, taskId)`` of conversations of ``stage_id`` matching ``query``,
        newest first (``oldest``: oldest first), after the cursor ``after``, updated at or after
        ``since_ms`` (``want`` 0: all). Walks the postings of ``lead`` (the rarest term) in that order,
        ``WALK_BATCH`` at a time, keeping those that hold every other term (``_holding``) and, for a
        query with runs, whose folded text holds them (``_with_runs``). Every step reads a bounded
        number of keys or records, whatever the size of the course (§14)."""
        others = [t for t in query.terms if t != lead]
        single = not others and not query.runs
        found: list[tuple[int, str]] = []
        cursor = after
        while not want or len(found) < want:
            step = (want - len(found)) if single and want else WALK_BATCH
            lower, upper, lower_open, upper_open = term_bounds(stage_id, lead, since_ms=since_ms, after=cursor,
                                                               oldest=oldest)
            keys = await self._db.keys("search", TERMS_INDEX, lower, upper, lower_open=lower_open,
                                       upper_open=upper_open, reverse=not oldest, limit=step)
            batch = [p for p in map(parse_posting, keys) if p is not None]
            if not batch:
                break
            cursor = batch[-1]
            for term in others:
                if not batch:
                    break
                batch = await self._holding(stage_id, term, batch)
            if query.runs and batch:
                batch = await self._with_runs(query, batch)
            found += batch
            if len(keys) < step:
                break
        return found[:want] if want else found

    async def _holding(self, stage_id: str, term: str, batch: list[tuple[int, str]]) -> list[tuple[int, str]]:
        """Those of ``batch`` (postings ``(updatedAt, taskId)``, in walk order) whose conversation also
        holds ``term``: its posting keys within the batch's time span, at most ``OTHER_KEYS_MAX`` of
        them (in key order); a candidate beyond the last key read (``term`` is in most conversations
        of that span) is looked up by its own posting key, all such lookups at once."""
        prefix = posting_prefix(stage_id, term)
        low, high = min(t for t, _ in batch), max(t for t, _ in batch)
        keys = await self._db.keys("search", TERMS_INDEX, prefix + time_hex(low), prefix + time_hex(high) + "\0\uffff",
                                   limit=OTHER_KEYS_MAX)
        held = set(map(parse_posting, keys))
        covered = (parse_posting(keys[-1]) or (-1, "")) if len(keys) >= OTHER_KEYS_MAX else None
        beyond = [p for p in batch if p not in held and covered is not None and p > covered]
        counts = await asyncio.gather(*(self._db.count("search", TERMS_INDEX, key, key)
                                        for key in (f"{prefix}{time_hex(t)}\0{task}" for t, task in beyond)))
        held.update(p for p, n in zip(beyond, counts) if n)
        return [p for p in batch if p in held]

    async def _with_runs(self, query: SearchQuery, batch: list[tuple[int, str]]) -> list[tuple[int, str]]:
        """Those of ``batch`` whose folded text, or title (DESIGN.md §18), holds every unspaced run of
        ``query``, their ``search`` records' ``folded`` read ``RUN_CHECK_BATCH`` at a time (and the metas
        of those whose title has words of its own and whose text does not hold them)."""
        kept = []
        for start in range(0, len(batch), RUN_CHECK_BATCH):
            part = batch[start:start + RUN_CHECK_BATCH]
            records = await self._db.bulk_get("search", [task for _, task in part], fields=["folded", "titleOnly"])
            held = [isinstance(r, dict) and isinstance(r.get("folded"), str) and query.matches(r["folded"])
                    for r in records]
            # a title with words of its own (a rename, §18) may hold the runs the messages do not
            titled = [p[1] for p, r, h in zip(part, records, held) if not h and isinstance(r, dict) and r.get("titleOnly")]
            metas = dict(zip(titled, await self._db.bulk_get("conversations", titled))) if titled else {}
            kept += [p for p, h in zip(part, held) if h or _title_holds(metas.get(p[1]), query)]
        return kept

    async def metas_of(self, task_ids: list[str]) -> list[TaskMeta]:
        """The readable metas of ``task_ids`` in that order (a missing or damaged one left out), read
        ``META_SLICE`` at a time (each read and its validation a task of its own)."""
        metas = []
        for start in range(0, len(task_ids), META_SLICE):
            raws = await self._db.bulk_get("conversations", task_ids[start:start + META_SLICE])
            metas += [m for m in map(self._repository.meta_of, raws) if m is not None]
        return metas

    async def snippets_of(self, task_ids: list[str]) -> list[tuple[dict | None, dict | None, dict | None]]:
        """For each of ``task_ids``: its raw meta, ``search`` record (``SNIPPET_FIELDS`` only) and
        ``texts`` record (None when missing)."""
        metas = await self._db.bulk_get("conversations", task_ids)
        records = await self._db.bulk_get("search", task_ids, fields=SNIPPET_FIELDS)
        texts = await self._db.bulk_get("texts", task_ids)
        return list(zip(metas, records, texts))

    async def unindexed(self, stage_id: str, pause: Callable[[], Any] | None = None) -> list[str]:
        """Task ids of the ``search`` records of ``stage_id`` that the index does not hold (stored
        before schema version 2). Two counts first (the course's records, its presence keys: one
        each per indexed record, counted by the store, nothing read): when they agree every record is
        indexed and nothing more is read, so a session's first search costs the same at any size.
        Otherwise the records' keys against the presence keys, the latter read ``PRESENCE_SLICE`` at
        a time with ``pause`` awaited between slices (no task grows with the course, §14)."""
        low, high = [stage_id, LOWEST], [stage_id, HIGHEST]
        prefix = presence_prefix(stage_id)
        stored_count = await self._db.count("search", SEARCH_INDEX, low, high)
        if stored_count == await self._db.count("search", TERMS_INDEX, prefix, prefix + "\uffff"):
            return []
        stored = await self._db.primary_keys("search", SEARCH_INDEX, low, high)
        present: set[str] = set()
        after: str | None = None
        while True:
            keys = await self._db.keys("search", TERMS_INDEX, after or prefix, prefix + "\uffff",
                                       lower_open=after is not None, limit=PRESENCE_SLICE)
            present.update(key.rpartition("\0")[2] for key in keys if isinstance(key, str))
            if len(keys) < PRESENCE_SLICE:
                break
            after = keys[-1]
            if pause is not None:
                await pause()
        return [key for key in stored if isinstance(key, str) and key not in present]

    async def reindex(self, stage_id: str, pause: Callable[[], Any] | None = None) -> int:
        """Index the ``search`` records of ``stage_id`` stored before the index (``unindexed``), folded
        again from the kept text, ``REINDEX_BATCH`` per transaction with a pause between (no long task;
        each is a patch that leaves a record written meanwhile as it is: nothing is lost). Returns how
        many were indexed (DESIGN.md §14). ``pause``: awaited to end the task (the page's
        ``app.browser.tasks.next_task``; ``asyncio.sleep(0)`` when None, which in the page does not)."""
        pause = pause or (lambda: asyncio.sleep(0))
        stale = await self.unindexed(stage_id, pause)
        done = 0
        for start in range(0, len(stale), REINDEX_BATCH):
            batch = stale[start:start + REINDEX_BATCH]
            writes = Writes()
            records = await self._db.bulk_get("search", batch)
            texts = await self._db.bulk_get("texts", batch)
            metas = await self._db.bulk_get("conversations", batch)  # their titles are indexed too (§18)
            await pause()  # parsing what was read was this task's work
            began = time.perf_counter()
            for record, kept, meta in zip(records, texts, metas):
                if isinstance(record, dict):
                    text = kept.get("text") if isinstance(kept, dict) else None
                    title = meta.get("taskName") if isinstance(meta, dict) else None
                    writes.reindex(record, text if isinstance(text, str) else None,
                                   title if isinstance(title, str) else None)
                    if time.perf_counter() - began > REINDEX_STEP_S:
                        await pause()  # folding is the work: the page gets its turn
                        began = time.perf_counter()
            if writes:
                await pause()  # encoding and storing the slice start a task of their own, not the folding's
                await self._repository.commit(writes)
                done += len(writes.ops)
            await pause()
        return done
