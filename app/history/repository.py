"""History's tables over the app's record store (``app.records.RecordBackend``), DESIGN.md §9, §14.

The one module that knows history's table and index names and the shape of its records (with
``app.history.search_index``, the queries a search makes of the ``search`` records this module
writes); everything above them speaks of conversations, heads, turns and list ranges. Tables (declared with the rest of
the database in ``app.records.SCHEMA``):

- ``conversations``: ``TaskMeta`` records, index ``[stageId+updatedAt+taskId]`` (a course's list) and
  ``[stageId+pinnedAt]`` (its pinned conversations: an unpinned record has no ``pinnedAt``, §18);
- ``messages``: ``{taskId, messages, branches?, shown?}`` (the slim projection, §3): the shown path,
  and the messages off it with the choices at their forks (the tree, §17, ``app.history.branches``);
- ``turns``: ``{taskId, turns}`` (``TurnMeta`` records);
- ``search``: ``{taskId, stageId, updatedAt, folded, fold, anchors?, terms, titleOnly?}``, indexes
  ``[stageId+updatedAt]`` and the multiEntry ``*terms``: the search index, its posting keys written
  with the record (``app.history.terms``; ``folded`` made by ``app.history.text.fold_map``, §14),
  the title's terms among them (``titleOnly``: those no message holds, §18);
- ``texts``: ``{taskId, text}`` (the unfolded text, read only for the hits' snippets);
- ``heads``: ``{stageId, taskId, syncedAt}``: the conversation that is a course's active thread in
  ``maic-agent-threads``; ``syncedAt`` is that thread's ``updatedAt`` when history last matched it
  (``Head.matched_at`` in Python: "synced" there is not CouchDB sync, §16; the stored key keeps its name).

Reads return typed values (``TaskMeta``, ``TurnMeta``, ``Head``); a stored record that cannot be
read is reported through ``on_damaged`` (once per read) and read as missing, or listed as
``Damaged`` when it still names a conversation. Sync reads every conversation a page at a time
through ``HistoryRepository.conversation_pages`` and every scene version (``versions`` with its
``snapshots`` document) through ``version_pages``; a backup reads them as stored
(``conversation_records``, ``head_records``, ``version_records``) and a restore writes them through
``Writes`` (``put_version``, ``current_version``, ``make_head``): no module above names a table
(§15). Writes are collected in a ``Writes`` (one transaction: all stored or none) and stored with
``HistoryRepository.commit``. Every backend failure is the backend's ``RecordStoreError``, raised as is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from pydantic import ValidationError

from app.continuity import continues
from app.history.branches import StoredForm
from app.history.branching import NO_BRANCHES, Branching
from app.history.records import MAX_SAFE_INTEGER, TASK_ID, Stats, TaskMeta, TurnMeta, Usage
from app.history.terms import posting_keys, posting_term, text_terms, text_terms_steps, titled_terms
from app.history.text import fold, fold_map, fold_map_steps, plain_text, plain_text_steps
from app.json_steps import run_paused
from app.records import HIGHEST, LOWEST, RecordBackend, RecordStoreError, WriteOp

WRITE_ATTEMPTS = 3
"""How often a write is made of what history holds when another tab wrote its conversation between
the read and the write (``Writes.expect``); the last attempt writes unchecked."""


_T = TypeVar("_T")


async def unless_stale(attempt: Callable[[bool], Awaitable[_T]]) -> _T:
    """Run ``attempt(expect)`` (read the conversation, then write what it makes of it, with
    ``Writes.expect`` when ``expect``) until it does not fail with ``RecordStoreError`` kind
    ``stale``, ``WRITE_ATTEMPTS`` times at most, the last with ``expect`` False (written unchecked:
    a tab that keeps writing cannot stop this one's write for good); its result. Any other
    ``RecordStoreError`` is raised (DESIGN.md §9: two tabs never lose each other's turns; §17)."""
    for _ in range(WRITE_ATTEMPTS - 1):
        try:
            return await attempt(True)
        except RecordStoreError as error:
            if error.kind != "stale":
                raise  # else another tab wrote the conversation since it was read: read it again
    return await attempt(False)


__all__ = ["Conversation", "Damaged", "FOLD_VERSION", "Head", "HeldTurn", "HistoryRepository", "LIST_INDEX", "ListRange",
           "Stored", "WRITE_ATTEMPTS", "Writes", "conversation_records", "head_records", "held_artifacts",
           "held_conversations", "rebuilt_meta", "unless_stale", "version_pages", "version_records"]

LIST_INDEX = "[stageId+updatedAt+taskId]"
PIN_INDEX = "[stageId+pinnedAt]"
"""A course's pinned conversations (``app.records.SCHEMA`` version 3, DESIGN.md §18)."""
CONVERSATION_TABLES = ("conversations", "messages", "turns", "search", "texts")
"""The tables holding one record per conversation (keyed by ``taskId``), meta first."""
FOLD_VERSION = 2
"""The folding a ``search`` record's ``folded`` text was made with (2: DESIGN.md §14's; records
without it were lower-cased only and are folded again the first time their course is searched)."""
TOKENS_SLICE = 500
"""Metas read per step when a course is ordered by tokens (``HistoryRepository.by_tokens``)."""
REFOLD_BATCH = 50


@dataclass(frozen=True)
class Damaged:
    """A stored conversation whose meta cannot be read (a record an older version wrote with a value
    IndexedDB could not keep exactly, or changed by hand): listed so that it can be deleted or a
    corrected file imported over it, never hidden (DESIGN.md §5, §14). Reads like a ``TaskMeta`` with
    nothing known: no title, no counts; ``updatedAt`` as stored when it is a number, else 0."""

    taskId: str
    stageId: str
    updatedAt: int
    createdAt: int = 0
    taskName: str = ""
    stats: Stats = field(default_factory=Stats)
    turnCount: int = 0
    durationMs: int = 0
    damaged: bool = True


@dataclass(frozen=True)
class Head:
    """A course's head as ``heads`` keeps it: ``task_id`` (the stored value when it is a string, else
    None) and ``matched_at`` (the active thread's ``updatedAt`` when history last matched it; None
    until its first turn), DESIGN.md §9."""

    task_id: str | None
    matched_at: Any

    @property
    def allocated(self) -> str | None:
        """The head's task id when it is a well-formed one (it may have no conversation record yet)."""
        return self.task_id if self.task_id is not None and TASK_ID.match(self.task_id) else None


class _ConversationFields(NamedTuple):
    meta: TaskMeta
    messages: list[dict]
    turns: list[TurnMeta]


class Conversation(_ConversationFields):
    """One conversation read whole: its meta, slim messages (§3: the shown path, §17) and turns
    (what an export carries; unpacks as ``(meta, messages, turns)``, what every reader of a linear
    conversation takes), and ``branching``: what its ``messages`` record keeps of the tree beside the
    path (``app.history.branching.Branching``; ``NO_BRANCHES`` for a chain). Equality is the three
    fields' (compare ``branching`` apart where the tree matters)."""

    branching: Branching = NO_BRANCHES

    def __new__(cls, meta: TaskMeta, messages: list[dict], turns: list[TurnMeta],
                branching: Branching | None = None) -> "Conversation":
        made = super().__new__(cls, meta, messages, turns)
        if branching:
            made.branching = branching
        return made

    @property
    def branches(self) -> list[dict]:
        """``branching.branches``: the messages off the shown path (the stored form, opaque)."""
        return self.branching.branches

    @property
    def shown(self) -> dict[str, str]:
        """``branching.shown``: the shown child of each fork off the path (the stored form, opaque)."""
        return self.branching.shown

    @property
    def tree(self):
        """The conversation's tree (``app.history.tree.Tree.from_record``; a chain without branches).
        Read liberally (DESIGN.md §3): a stored entry of ``messages`` that is no message (a damaged
        record) is left out."""
        path = [m for m in self.messages if isinstance(m, dict)] if isinstance(self.messages, list) else []
        return self.branching.tree(path)


@dataclass(frozen=True)
class HeldTurn:
    """What a turn on conversation ``task_id`` needs of history, read together (``HistoryRepository.
    for_turn``): its course's ``head`` (None: none), the conversation's ``meta`` (None: none or
    damaged; ``held``: whether a record is stored at all), its stored ``messages`` (as stored, None
    when missing), readable ``turns`` and its ``search`` record (None when missing); ``branches``
    and ``shown``: the rest of its tree as stored (``app.history.branches``; empty for a chain)."""

    task_id: str
    head: Head | None
    meta: TaskMeta | None
    held: bool
    messages: Any
    turns: list[TurnMeta]
    search: dict | None
    branches: list[dict] = field(default_factory=list)
    shown: dict[str, str] = field(default_factory=dict)

    @property
    def form(self) -> StoredForm:
        """The conversation's ``messages`` record as read (``StoredForm``)."""
        return StoredForm(self.messages, self.branches, self.shown)


@dataclass(frozen=True)
class Stored:
    """Every record of one conversation exactly as stored, ``(table, record)`` pairs, meta first:
    what a delete removes and its undo puts back (DESIGN.md §9)."""

    task_id: str
    records: list[tuple[str, dict]]

    def record(self, table: str) -> dict | None:
        """The raw record of ``table``, if there is one."""
        return next((record for name, record in self.records if name == table), None)

    @property
    def meta_record(self) -> dict | None:
        """The raw ``conversations`` record, if there is one."""
        return self.record("conversations")


@dataclass(frozen=True)
class ListRange:
    """Which of a course's conversations one read of its list covers (DESIGN.md §9 paging):
    ``since_ms``: updated at or after (None: all time); ``after``: the cursor, the ``(updatedAt,
    taskId)`` of the last row already shown (None: from the list's start); ``oldest``: oldest first
    (else newest first); ``limit``: at most that many rows (0: all)."""

    stage_id: str
    since_ms: int | None = None
    after: tuple | None = None
    oldest: bool = False
    limit: int = 0

    @property
    def low(self) -> list:
        """The list's lower key (its time range, before any cursor)."""
        return [self.stage_id, self.since_ms if self.since_ms is not None else LOWEST]

    @property
    def high(self) -> list:
        """The list's upper key. Over all time: every key of the course, past every number, so that a
        record whose ``updatedAt`` is a string, a date or an array (IndexedDB sorts those after every
        number) is read and listed as ``Damaged``, never hidden (DESIGN.md §5, §14); no extra read,
        the same range grown to the next course's first key. With a time range (``since_ms``): the
        numbers only (such a record has no time that is in it)."""
        return [self.stage_id, HIGHEST] if self.since_ms is not None else [self.stage_id + "\x00"]

    def bounds(self) -> tuple[list, list]:
        """(lower, upper) keys of the rows this read returns: the cursor narrows one end."""
        if self.after is None:
            return self.low, self.high
        cursor = [self.stage_id, self.after[0], self.after[1]]
        return (cursor, self.high) if self.oldest else (self.low, cursor)


def search_record(meta: TaskMeta, text: str, folded_map: tuple[str, list] | None = None,
                  terms: set[str] | None = None, *, message_count: int | None = None) -> dict:
    """The ``search`` record of a conversation whose plain text is ``text`` (DESIGN.md §14 folding),
    with its posting keys (``terms``: the index, written in the same transaction as the record).
    ``folded_map``: ``fold_map(text)``, and ``terms``: ``text_terms`` of its folding, when the caller
    made them already (in slices of their own). ``message_count``: how many slim messages ``text``
    is the plain text of, kept as ``messageCount`` with the text's length (``textChars``) so that the
    next turn indexes only the messages after them (``indexed_prefix``); None: neither is kept (the
    next turn indexes the whole)."""
    folded, anchors = folded_map if folded_map is not None else fold_map(text)
    if terms is None:
        terms = text_terms(folded)
    title_only = sorted(text_terms(fold(meta.taskName)) - terms)  # the title is found too (§18)
    record = {"taskId": meta.taskId, "stageId": meta.stageId, "updatedAt": meta.updatedAt, "folded": folded,
              "fold": FOLD_VERSION,
              "terms": posting_keys(meta.stageId, meta.updatedAt, meta.taskId, terms.union(title_only))}
    if message_count is not None:
        record["messageCount"], record["textChars"] = message_count, len(text)
    if anchors:  # where folded positions and text positions part
        record["anchors"] = anchors
    if title_only:
        record["titleOnly"] = title_only
    return record


def indexed_prefix(meta: TaskMeta, messages: list[dict], held_messages: Any, held: Any) -> int | None:
    """How many of ``messages`` (a conversation's slim messages now) the stored ``search`` record
    ``held`` already folds and indexes, when the next write may fold and index only the ones after
    them (``extended_search``): ``held`` is of today's folding (``FOLD_VERSION``), of ``meta``'s
    conversation and course, says its ``messageCount``, and ``held_messages`` (the stored messages,
    written with it in one transaction) are that many and the start of ``messages``. None otherwise:
    no record, an older one, or messages edited or removed since (the whole is indexed again)."""
    if not isinstance(held, dict) or held.get("fold") != FOLD_VERSION:
        return None
    if held.get("taskId") != meta.taskId or held.get("stageId") != meta.stageId:
        return None
    count, anchors = held.get("messageCount"), held.get("anchors") or []
    if (not isinstance(count, int) or isinstance(count, bool) or not isinstance(held.get("folded"), str)
            or not isinstance(held.get("terms"), list) or not isinstance(anchors, list)
            or not isinstance(held.get("titleOnly") or [], list)):
        return None
    if not isinstance(held_messages, list) or len(held_messages) != count or not continues(messages, held_messages):
        return None
    return count


def extended_search_steps(meta: TaskMeta, messages: list[dict], text: str, held: dict, count: int):
    """The ``search`` record of ``messages`` (plain text ``text``) made from ``held``, the stored
    record of their first ``count`` (``indexed_prefix``): only the text of the messages after those
    is folded (``fold_map_steps``) and split into terms (``text_terms_steps``), and the held
    folding, anchors and terms are kept, so a turn's cost does not grow with the conversation
    (DESIGN.md §14). A generator yielding between slices of work; returns the record, equal to
    ``search_record(meta, text, message_count=len(messages))``. ``plain_text`` joins the lines of
    the messages with newlines and the folding never joins across a newline, so the text after
    the held one (which starts with a newline when both have lines) folds and splits on its own."""
    held_chars = held.get("textChars")
    if (not isinstance(held_chars, int) or isinstance(held_chars, bool) or not 0 <= held_chars <= len(text)
            or (0 < held_chars < len(text) and text[held_chars] != "\n")):
        held_chars = len(plain_text(messages[:count]))  # a record that does not say it: counted again
    tail = text[held_chars:]
    held_folded = held["folded"]
    if held_chars and tail and tail[0] != "\n":  # not the plain text of more lines: cannot happen, built whole
        folded_map = yield from fold_map_steps(text)
        terms = yield from text_terms_steps(folded_map[0])
        return search_record(meta, text, folded_map, terms, message_count=len(messages))
    folded_tail, anchors_tail = yield from fold_map_steps(tail)
    yield
    shift_folded, anchors = len(held_folded), list(held.get("anchors") or [])
    anchors += [[at + shift_folded, source + held_chars] for at, source in anchors_tail]
    title_only = set(held.get("titleOnly") or [])
    terms = {term for term in map(posting_term, held["terms"]) if term and term not in title_only}
    terms |= yield from text_terms_steps(folded_tail)
    return search_record(meta, text, (held_folded + folded_tail, anchors), terms, message_count=len(messages))


def retitled_fields(record: dict, meta: TaskMeta) -> dict:
    """The fields of ``record`` (a ``search`` record) that change when its conversation is renamed to
    ``meta.taskName``: ``terms`` and ``titleOnly``, the title's terms taken out and the new title's
    put in (``titled_terms``); the messages are not indexed again (DESIGN.md §18)."""
    keys = record.get("terms")
    only = record.get("titleOnly")
    terms, title_only = titled_terms(keys if isinstance(keys, list) else [], only if isinstance(only, list) else [],
                                     text_terms(fold(meta.taskName)))
    return {"terms": posting_keys(meta.stageId, meta.updatedAt, meta.taskId, terms), "titleOnly": title_only}


def indexed_fields(record: dict, text: str | None, title: str | None = None) -> dict | None:
    """The fields that make a ``search`` record stored before the index (or before the §14 folding)
    what ``search_record`` writes today: ``folded``, ``fold``, ``anchors`` (from ``text``, the kept
    text; its own ``folded`` when that is missing), ``terms`` and ``titleOnly`` (the terms of
    ``title``, the conversation's ``taskName``, that no message holds: an imported title is found
    too, DESIGN.md §18). ``None`` when the record names no course, time or task (it cannot be
    indexed; it stays as it is)."""
    stage_id, updated, task_id = record.get("stageId"), record.get("updatedAt"), record.get("taskId")
    if not (isinstance(stage_id, str) and isinstance(task_id, str) and isinstance(updated, int)
            and not isinstance(updated, bool)):
        return None
    if isinstance(text, str):
        folded, anchors = fold_map(text)
    else:
        folded, anchors = record.get("folded"), record.get("anchors")
        if not isinstance(folded, str):
            return None
    terms = text_terms(folded)
    title_only = sorted(text_terms(fold(title)) - terms) if isinstance(title, str) else []
    return {"folded": folded, "fold": FOLD_VERSION, "anchors": anchors or None,
            "terms": posting_keys(stage_id, updated, task_id, terms.union(title_only)), "titleOnly": title_only or None}


class Writes:
    """The changes of ONE transaction, named for what they do; ``HistoryRepository.commit`` stores
    them all or none (``RecordBackend.write``). What it keeps whole is remembered (``kept``): the
    change history announces after the commit carries it (``app.history.changes``, DESIGN.md §15)."""

    def __init__(self) -> None:
        self._ops: list[WriteOp] = []
        self._kept: dict[str, Conversation] = {}
        self._indexed: dict[str, tuple[dict, str]] = {}
        self._forms: dict[str, StoredForm] = {}

    @property
    def ops(self) -> list[WriteOp]:
        """The backend's write ops, in order."""
        return list(self._ops)

    def kept(self, task_id: str) -> Conversation | None:
        """The conversation ``task_id`` as these writes keep it whole (``keep``), None when they do not
        (its meta, messages and turns are those written: a later change of the lists passed in does not
        reach it)."""
        return self._kept.get(task_id)

    def kept_index(self, task_id: str) -> tuple[dict, str] | None:
        """The ``search`` record and plain text these writes keep for ``task_id`` (``keep``), None
        when they keep none."""
        return self._indexed.get(task_id)

    def kept_form(self, task_id: str) -> StoredForm | None:
        """The ``messages`` record these writes keep for ``task_id`` (``keep``): its shown path, branches
        and choices; None when they keep none."""
        return self._forms.get(task_id)

    def keep(self, meta: TaskMeta, messages: list[dict], turns: list[TurnMeta], *, new: bool = False,
             branches: list[dict] | None = None, shown: dict[str, str] | None = None) -> None:
        """Store a conversation whole: meta, slim messages (its shown path), turns, its search and text
        records. ``new``: the meta is added, not put (should another tab store that task id meanwhile,
        the whole transaction aborts and nothing is written twice). ``branches`` and ``shown``: the rest
        of its tree in the stored form (``app.history.tree.Tree.record``, DESIGN.md §17); without them
        the conversation is stored as a chain. Search folds the text of every message, on every branch."""
        form = StoredForm(messages, list(branches or ()), dict(shown or {}))
        indexed = form.indexed()
        text = plain_text(indexed)
        self._keep(meta, form, turns, new, text, search_record(meta, text, message_count=len(indexed)))

    async def keep_in_steps(self, meta: TaskMeta, messages: list[dict], turns: list[TurnMeta], *,
                            pause: Callable[[], Awaitable[None]], new: bool = False,
                            held_messages: Any = None, held_search: Any = None,
                            held_text: str | None = None, branches: list[dict] | None = None,
                            shown: dict[str, str] | None = None, held_branches: list[dict] | None = None) -> None:
        """``keep`` in slices with ``pause`` awaited between them: the plain text (``plain_text_steps``)
        and its folding (``fold_map_steps``), then the index terms (``text_terms_steps``), then the records (DESIGN.md
        §13: start-up adopts a course of 50 turns without a task over 50 ms, in two slices; §14: a
        conversation of millions of characters, an import, is folded and indexed in many). The ops
        are those ``keep`` adds. ``held_messages`` and ``held_search``: the conversation's messages
        and ``search`` record as stored, when read: if that record indexes the start of ``messages``
        (``indexed_prefix``), only the messages after it are folded and indexed (a turn).
        ``held_text``: the plain text that record was made of, when known (kept in memory since this
        tab wrote it): the record is extended only if the text of ``messages`` starts with it.
        ``branches``, ``shown``: as ``keep``'s; ``held_branches``: the stored ones (read with
        ``held_messages``)."""
        form = StoredForm(messages, list(branches or ()), dict(shown or {}))
        indexed = form.indexed()
        held_indexed = StoredForm(held_messages, list(held_branches or ())).indexed() \
            if isinstance(held_messages, list) else held_messages
        text = await run_paused(plain_text_steps(indexed), pause)
        count = None if new else indexed_prefix(meta, indexed, held_indexed, held_search)
        if count is not None and held_text is not None and not text.startswith(held_text):
            count = None  # a held message's text differs from what was indexed: the whole again
        if count is not None:
            search = await run_paused(extended_search_steps(meta, indexed, text, held_search, count), pause)
        else:
            folded_map = await run_paused(fold_map_steps(text), pause)
            await pause()
            terms = await run_paused(text_terms_steps(folded_map[0]), pause)
            search = search_record(meta, text, folded_map, terms, message_count=len(indexed))
        self._keep(meta, form, turns, new, text, search)

    def _keep(self, meta: TaskMeta, form: StoredForm, turns: list[TurnMeta], new: bool, text: str,
              search: dict) -> None:
        self._kept[meta.taskId] = Conversation(meta, list(form.messages), list(turns), form.branching)
        self._forms[meta.taskId] = form
        self._indexed[meta.taskId] = (search, text)
        self._ops += [("add" if new else "put", "conversations", meta.model_dump()),
                      ("put", "messages", {"taskId": meta.taskId, **form.fields()}),
                      ("put", "turns", {"taskId": meta.taskId, "turns": [t.record() for t in turns]}),
                      ("put", "search", search),
                      ("put", "texts", {"taskId": meta.taskId, "text": text})]

    def keep_branching(self, task_id: str, branching: Branching) -> None:
        """Keep ``branching`` (the tree beside the shown path, DESIGN.md §17: ``branches``, ``shown``,
        ``shownAt``) in the ``messages`` record these writes keep for ``task_id`` (``keep`` first), and
        in what ``kept`` says was written. When ``keep`` was given other branches (or none), its
        ``search`` and ``texts`` records are made again of every branch (search finds text on every
        branch); pass the same ``branches`` to ``keep`` and the text is folded once. Empty ``branching``: the record of a chain, as
        ``keep`` writes it. ``KeyError`` when these writes keep no conversation ``task_id``."""
        kept = self._kept[task_id]
        form = StoredForm(kept.messages, list(branching.branches), dict(branching.shown))
        records: dict[str, dict] = {"messages": {"taskId": task_id, "messages": kept.messages, **branching.fields()}}
        if form.branches != self._forms[task_id].branches:  # ``keep`` folded other branches: fold these
            indexed = form.indexed()
            text = plain_text(indexed)
            search = search_record(kept.meta, text, message_count=len(indexed))
            records.update(search=search, texts={"taskId": task_id, "text": text})
            self._indexed[task_id] = (search, text)
        for table, record in records.items():
            at = max(n for n, (verb, name, held) in enumerate(self._ops)
                     if verb == "put" and name == table and held.get("taskId") == task_id)
            self._ops[at] = ("put", table, record)
        self._kept[task_id] = Conversation(*kept, branching)
        self._forms[task_id] = form

    def set_names(self, meta: TaskMeta, search: dict | None) -> None:
        """Store ``meta`` with a new name or pin (DESIGN.md §18) over its record; a new name also
        re-indexes the title in ``search`` (its ``search`` record as read, None: left as it is), as a
        patch applied only while that record is the one read (same ``updatedAt``)."""
        self._ops.append(("put", "conversations", meta.model_dump()))
        if search is not None and isinstance(search.get("terms"), list):
            self._ops.append(("patch", "search", {"key": meta.taskId, "if": {"updatedAt": search.get("updatedAt")},
                                                  "set": retitled_fields(search, meta)}))

    def expect(self, meta: TaskMeta, stored: dict | None = None) -> None:
        """The transaction writes only while conversation ``meta.taskId``'s stored meta still has the
        ``updatedAt`` and ``turnCount`` of ``meta`` (as read before these writes were made); else it
        aborts whole, ``RecordStoreError`` kind ``stale``: another tab wrote the conversation
        meanwhile (a turn, a branch shown), and writes made of what was read would drop its change
        (DESIGN.md §9: two tabs never lose each other's turns; §17). ``stored``: the record as read
        when ``meta`` was made again from it (it could not be read, ``rebuilt_meta``): its own
        ``updatedAt`` and ``turnCount`` are expected then, whatever their types (a missing one is
        ``None``, §5). Put first: checked before any write."""
        held = stored if stored is not None else {"updatedAt": meta.updatedAt, "turnCount": meta.turnCount}
        self._ops.insert(0, ("expect", "conversations", {"key": meta.taskId, "if": {
            "updatedAt": held.get("updatedAt"), "turnCount": held.get("turnCount")}}))

    def make_head(self, stage_id: str, task_id: str, matched_at: int | None) -> None:
        """Make ``task_id`` the head of ``stage_id``, matched to the thread of ``updatedAt`` ``matched_at``."""
        self._ops.append(("put", "heads", {"stageId": stage_id, "taskId": task_id, "syncedAt": matched_at}))

    def put_version(self, version: dict, document: Any) -> None:
        """Store a scene version (DESIGN.md §10) over any of its id, with its whole ``document`` (a
        ``BulkValue`` holding no ``None``, ``app.records``) in its ``snapshots`` record."""
        self._ops += [("put", "versions", version),
                      ("put", "snapshots", {"versionId": version["versionId"], "document": document})]

    def current_version(self, version: dict) -> None:
        """Make ``version`` (a stored scene version with its timeline ``item``) its scene's artifact
        record: the scene's current version and latest timeline item (DESIGN.md §10)."""
        self._ops.append(("put", "artifacts", {
            "schema": version.get("schema", 1), "artifactId": version["artifactId"], "stageId": version["stageId"],
            "sceneId": version["sceneId"], "path": (version.get("item") or {}).get("path", ""),
            "versionNo": version["versionNo"], "versionId": version["versionId"],
            "updatedAt": version.get("updatedAt", 0), "latest": version.get("item")}))

    def end_head(self, stage_id: str) -> None:
        """``stage_id`` has no active conversation any more (its conversation stays, archived)."""
        self._ops.append(("delete", "heads", stage_id))

    def remove(self, stored: Stored) -> None:
        """Delete every record of a conversation (``HistoryRepository.stored``)."""
        self._ops += [("delete", table, stored.task_id) for table, _ in stored.records]

    def restore(self, stored: Stored) -> None:
        """Put back every record of a removed conversation, as it was."""
        self._ops += [("put", table, record) for table, record in stored.records]

    def reindex(self, record: dict, text: str | None, title: str | None = None) -> None:
        """Bring a ``search`` record stored before the index up to date (``indexed_fields``; ``title``:
        its conversation's ``taskName``), as ONE patch: applied only if the record is still the one
        read (same ``updatedAt``, still without ``terms``), so a save by this or another tab meanwhile
        is never written over (§14)."""
        fields = indexed_fields(record, text, title)
        if fields is not None:
            self._ops.append(("patch", "search", {"key": record["taskId"], "if": {
                "updatedAt": record["updatedAt"], "terms": record.get("terms")}, "set": fields}))

    def __bool__(self) -> bool:
        return bool(self._ops)


def _head_of(record: Any) -> Head | None:
    """A ``heads`` record as a ``Head`` (None when there is none)."""
    if not isinstance(record, dict):
        return None
    task_id = record.get("taskId")
    return Head(task_id if isinstance(task_id, str) else None, record.get("syncedAt"))


def rebuilt_meta(raw: Any, task_id: str, stage_id: str, turns: list[TurnMeta]) -> TaskMeta:
    """The meta of conversation ``task_id`` of course ``stage_id`` made again from ``raw``, its stored
    ``conversations`` record that cannot be read (DESIGN.md §5: a damaged record gives no wrong data),
    and ``turns``, its readable turn metas: the turn count, duration and token stats are those of
    ``turns`` (§9: the stats count every turn held); ``taskName``, ``createdAt``, ``updatedAt``,
    ``pinnedAt`` and ``changedAt`` are kept where each reads on its own (a time: an integer within
    ±(2^53 − 1); a missing or unreadable one is the other time, else 0; never ``createdAt`` after
    ``updatedAt``), the rest as for a new conversation (no title: ``""``). Raises nothing."""
    fields = raw if isinstance(raw, dict) else {}
    times = {name: value for name in ("createdAt", "updatedAt")
             if isinstance(value := fields.get(name), int) and not isinstance(value, bool)
             and abs(value) <= MAX_SAFE_INTEGER}
    created = times.get("createdAt", times.get("updatedAt", 0))
    used = [t.usage or Usage() for t in turns]
    def total(values) -> int:  # a count within what a record holds (§14), however many turns
        return min(MAX_SAFE_INTEGER, sum(values))
    meta = TaskMeta(taskId=task_id, taskName="", stageId=stage_id, createdAt=created,
                    updatedAt=max(created, times.get("updatedAt", created)), turnCount=len(turns),
                    durationMs=total(t.duration for t in turns),
                    stats=Stats(inputTokens=total(u.inputTokens for u in used),
                                outputTokens=total(u.outputTokens for u in used),
                                totalTokens=total(u.totalTokens for u in used)))
    for name in ("taskName", "pinnedAt", "changedAt"):
        if fields.get(name) is not None:
            try:
                meta = TaskMeta.model_validate({**meta.model_dump(), name: fields[name]})
            except ValidationError:
                pass  # that field is lost: the rest is kept
    return meta


def _tokens_key(raw: Any) -> tuple:
    """The order of the ``tokens`` sort of a raw meta: most total tokens, then newest, then task id."""
    if not isinstance(raw, dict):
        return (0, 0, "")
    stats = raw.get("stats")
    tokens = stats.get("totalTokens") if isinstance(stats, dict) else 0
    updated = raw.get("updatedAt")
    return (-(tokens if isinstance(tokens, int) else 0), -(updated if isinstance(updated, int) else 0),
            str(raw.get("taskId", "")))


class HistoryRepository:
    """History's records over a ``RecordBackend`` (module docstring). ``on_damaged()``: called once
    for each record read that cannot be validated (the service turns it into one notice)."""

    def __init__(self, backend: RecordBackend, on_damaged: Callable[[], None]) -> None:
        self._db = backend
        self._on_damaged = on_damaged
        self._unreadable: set[str] = set()  # conversations found unreadable when opened (``damaged``)

    # -- the store ---------------------------------------------------------
    async def open(self) -> None:
        """Open the record store (raises ``RecordStoreError``)."""
        await self._db.open()

    async def persist(self) -> bool:
        """Ask the browser to keep this origin's storage (DESIGN.md §9: at the first archive)."""
        return await self._db.persist()

    async def commit(self, writes: Writes) -> None:
        """Store ``writes`` in one transaction (all or none). A conversation whose ``messages`` record
        they put or delete is no longer known unreadable (``damaged``: a corrected file imported over it)."""
        await self._db.write(writes.ops)
        for verb, table, value in writes.ops:
            if table in ("messages", "conversations") and verb in ("put", "add", "delete"):
                self._unreadable.discard(value if verb == "delete" else value.get("taskId"))

    # -- reading records ---------------------------------------------------
    def meta_of(self, raw: Any) -> TaskMeta | None:
        """A stored meta, or None (``on_damaged``) when it cannot be read."""
        if raw is None:
            return None
        try:
            return TaskMeta.model_validate(raw)
        except ValidationError:
            self._on_damaged()
            return None

    def listed(self, raw: Any) -> TaskMeta | Damaged | None:
        """A list row: its meta, or ``Damaged`` (``on_damaged``) when the record cannot be read but
        names a conversation (a task id) that can still be deleted; None otherwise."""
        meta = self.meta_of(raw)
        if meta is not None or not isinstance(raw, dict):
            return meta
        task_id, stage_id, updated = raw.get("taskId"), raw.get("stageId"), raw.get("updatedAt")
        if not isinstance(task_id, str) or not TASK_ID.match(task_id):
            return None
        number = isinstance(updated, (int, float)) and not isinstance(updated, bool) and abs(updated) < 2**53
        return Damaged(task_id, stage_id if isinstance(stage_id, str) else "", int(updated) if number else 0)

    async def with_messages(self, items: list[TaskMeta | Damaged]) -> list[TaskMeta | Damaged]:
        """``items`` (list rows) with each readable meta whose conversation has no ``messages`` record
        listed as ``Damaged`` (``on_damaged``): it cannot be opened, so it is listed as one that can be
        deleted or imported over, never as a title that opens nothing (DESIGN.md §5); so is one whose
        ``messages`` record was found unreadable when opened (``damaged``), until it is written again.
        One read of the rows' records, only their ``taskId`` crossing (``RecordBackend.bulk_get`` ``fields``)."""
        metas = [item for item in items if not item.damaged]
        if not metas:
            return items
        held = await self._db.bulk_get("messages", [meta.taskId for meta in metas], fields=["taskId"])
        missing = {meta.taskId for meta, record in zip(metas, held) if record is None}
        if missing:
            self._on_damaged()
        # one found unreadable when opened was said then (``damaged``): listed as damaged since
        missing |= {meta.taskId for meta in metas if meta.taskId in self._unreadable}
        if not missing:
            return items
        return [Damaged(item.taskId, item.stageId, item.updatedAt) if item.taskId in missing else item
                for item in items]

    def _turns_of(self, raw: Any) -> list[TurnMeta]:
        turns = []
        for item in (raw or {}).get("turns", []) if isinstance(raw, dict) else []:
            try:
                turns.append(TurnMeta.model_validate(item))
            except ValidationError:
                self._on_damaged()
        return turns

    # -- one conversation --------------------------------------------------
    async def head(self, stage_id: str) -> Head | None:
        """``stage_id``'s head, or None when it has none."""
        return _head_of(await self._db.get("heads", stage_id))

    async def head_id(self, stage_id: str) -> str | None:
        """The well-formed task id the head of ``stage_id`` names (it may have no conversation yet)."""
        head = await self.head(stage_id)
        return head.allocated if head else None

    async def head_meta(self, stage_id: str) -> TaskMeta | None:
        """The meta of ``stage_id``'s head conversation (None: no head, or no readable record)."""
        head = await self.head(stage_id)
        return await self.meta(head.task_id) if head is not None and head.task_id is not None else None

    async def head_meta_or_rebuilt(self, stage_id: str) -> tuple[TaskMeta | None, Any]:
        """``meta_or_rebuilt`` of ``stage_id``'s head conversation. ``(None, None)``: no head, or no
        record stored."""
        head = await self.head(stage_id)
        if head is None or head.task_id is None:
            return None, None
        return await self.meta_or_rebuilt(head.task_id, stage_id)

    async def meta_or_rebuilt(self, task_id: str, stage_id: str) -> tuple[TaskMeta | None, Any]:
        """The meta of conversation ``task_id`` of course ``stage_id`` and, when its stored record
        cannot be read (``on_damaged``), that record as stored: the meta is then ``rebuilt_meta`` of it
        and of the conversation's readable turns, so that a write made of it keeps every turn the
        conversation holds (DESIGN.md §5, §9). ``(None, None)``: no record stored."""
        raw = await self._db.get("conversations", task_id)
        meta = self.meta_of(raw)
        if meta is not None or raw is None:
            return meta, None
        return rebuilt_meta(raw, task_id, stage_id, await self.turns(task_id)), raw

    async def holds(self, task_id: str) -> bool:
        """True when a ``conversations`` record of ``task_id`` is stored (readable or not)."""
        return (await self.held([task_id]))[0]

    async def held(self, task_ids: list[str]) -> list[bool]:
        """For each of ``task_ids``: True when a ``conversations`` record of it is stored (readable
        or not), read in one request."""
        return [raw is not None for raw in await self._db.bulk_get("conversations", task_ids)]

    async def meta(self, task_id: str) -> TaskMeta | None:
        """One conversation's meta (None: none stored, or damaged)."""
        return self.meta_of(await self._db.get("conversations", task_id))

    async def for_turn(self, stage_id: str, task_id: str) -> HeldTurn:
        """``stage_id``'s head and the meta, messages, turns and ``search`` record of ``task_id``, in
        ONE read (``RecordBackend.get_all``): all a turn of that conversation reads (DESIGN.md §9)."""
        head, raw, messages, turns, search = await self._db.get_all(
            [("heads", stage_id), ("conversations", task_id), ("messages", task_id), ("turns", task_id),
             ("search", task_id)])
        form = StoredForm.of(messages)
        return HeldTurn(task_id, _head_of(head), self.meta_of(raw), raw is not None, form.messages,
                        self._turns_of(turns), search if isinstance(search, dict) else None, form.branches, form.shown)

    async def holding(self, stage_id: str, thread: list[dict]) -> str | None:
        """The conversation of course ``stage_id`` whose tree ``thread`` starts in (``StoredForm.starts``:
        its first message is one of the tree's first messages), the most recently updated first; None
        when none does. Reads every conversation of the course: only for a turn whose conversation
        holds none of the thread it was built on (a damaged ``heads`` record, DESIGN.md §5, §17)."""
        rows = await self._db.query("conversations", LIST_INDEX, [stage_id, LOWEST], [stage_id, HIGHEST], reverse=True)
        ids = [row["taskId"] for row in rows if isinstance(row, dict) and isinstance(row.get("taskId"), str)]
        for task_id, record in zip(ids, await self._db.bulk_get("messages", ids) if ids else []):
            if StoredForm.of(record).starts(thread):
                return task_id
        return None

    async def strays(self) -> list[Damaged]:
        """The conversations no course's list holds, each as ``Damaged`` (``on_damaged``): records whose
        list key is no key of a course (``stageId`` not a string, ``updatedAt`` null, an object or
        missing: in no range of the list's index), so that they can be listed, deleted or imported
        over, never hidden (DESIGN.md §5). Two counts when there are none; the keys are compared
        only when the counts differ."""
        every = await self._db.count("conversations", "taskId", "", "\uffff")
        if every <= await self._db.count("conversations", LIST_INDEX, [""], ["\uffff"]):
            return []
        listed = set(await self._db.primary_keys("conversations", LIST_INDEX, [""], ["\uffff"]))
        missing = [k for k in await self._db.primary_keys("conversations", "taskId", "", "\uffff") if k not in listed]
        rows = [self.listed(raw) for raw in await self._db.bulk_get("conversations", missing)] if missing else []
        return [row if row.damaged else Damaged(row.taskId, "", row.updatedAt) for row in rows if row is not None]

    async def head_and_meta(self, stage_id: str, task_id: str) -> tuple[Head | None, Any]:
        """``stage_id``'s head and the ``conversations`` record of ``task_id`` as stored (raw: None
        when missing), in ONE read: whether a conversation is still as this tab wrote it."""
        head, raw = await self._db.get_all([("heads", stage_id), ("conversations", task_id)])
        return _head_of(head), raw

    async def search_record(self, task_id: str) -> dict | None:
        """The ``search`` record of ``task_id`` without its folded text (its posting keys, times)."""
        record = await self._db.get("search", task_id)
        return record if isinstance(record, dict) else None

    async def pinned(self, stage_id: str, since_ms: int | None = None) -> list[TaskMeta]:
        """The readable metas of ``stage_id``'s pinned conversations (updated at or after ``since_ms``
        when given), most recently pinned first (DESIGN.md §18; ``app.history.names.pinned_first``)."""
        from app.history.names import pinned_first

        rows = await self._db.query("conversations", PIN_INDEX, [stage_id, LOWEST], [stage_id, HIGHEST])
        metas = [m for m in map(self.meta_of, rows) if m is not None]
        return pinned_first(m for m in metas if since_ms is None or m.updatedAt >= since_ms)

    async def form(self, task_id: str) -> StoredForm:
        """The ``messages`` record of ``task_id`` as stored (``StoredForm``: its shown path, branches and
        choices; ``messages`` None when missing, anything in a damaged record: callers check with
        ``continues`` or ``isinstance``)."""
        return StoredForm.of(await self._db.get("messages", task_id))

    async def whole_form(self, task_id: str) -> StoredForm | None:
        """The ``messages`` record of ``task_id`` (``form``) when it reads whole (``StoredForm.whole``);
        None, reported through ``on_damaged``, when it is missing or cannot be read as it is stored:
        the conversation is damaged (DESIGN.md §5), a caller checks first that its meta is stored."""
        form = await self.form(task_id)
        if form.whole():
            return form
        self._on_damaged()
        return None

    async def damaged(self, task_id: str) -> bool:
        """True when a ``conversations`` record of ``task_id`` is stored but it, or its ``messages``
        record, cannot be read (a conversation listed or opened as damaged, DESIGN.md §5); read
        without reporting."""
        raw, held = await self._db.get_all([("conversations", task_id), ("messages", task_id)])
        if raw is None:
            return False
        try:
            TaskMeta.model_validate(raw)
        except ValidationError:
            return True
        if StoredForm.of(held).whole():
            return False
        self._unreadable.add(task_id)  # listed as damaged from now on (``with_messages``), until written again
        return True

    async def turns(self, task_id: str) -> list[TurnMeta]:
        """The readable turn metas of ``task_id`` (a damaged one is left out, ``on_damaged``)."""
        return self._turns_of(await self._db.get("turns", task_id))

    async def conversation(self, task_id: str) -> Conversation | None:
        """Meta, messages and turns of ``task_id`` (None when its meta or messages record is missing)."""
        meta = await self.meta(task_id)
        stored = await self._db.get("messages", task_id)
        if meta is None or not isinstance(stored, dict):
            return None
        return Conversation(meta, stored.get("messages") or [], await self.turns(task_id), Branching.of(stored))

    async def conversation_pages(self, per: int) -> AsyncIterator[list[Conversation]]:
        """Every conversation stored, ``per`` at a time in task-id order, each page read in three reads
        (the metas, then the messages and turns of all of them). One whose meta cannot be read
        (``on_damaged``) or whose messages record is missing is left out of its page."""
        async for metas, messages, turns in _record_pages(self._db, per):
            page = []
            for raw, held, turns_record in zip(metas, messages, turns):
                meta = self.meta_of(raw)
                if meta is not None and isinstance(held, dict):
                    page.append(Conversation(meta, held.get("messages") or [], self._turns_of(turns_record),
                                             Branching.of(held)))
            yield page

    async def stored(self, task_id: str) -> Stored:
        """Every record of ``task_id`` as stored (for a delete and its undo)."""
        records = []
        for table in CONVERSATION_TABLES:
            record = await self._db.get(table, task_id)
            if record is not None:
                records.append((table, record))
        return Stored(task_id, records)

    # -- a course's list ---------------------------------------------------
    async def count(self, stage_id: str, since_ms: int | None = None) -> int:
        """How many conversations ``stage_id`` has (updated at or after ``since_ms`` when given)."""
        span = ListRange(stage_id, since_ms)
        return await self._db.count("conversations", LIST_INDEX, span.low, span.high)

    async def rows(self, span: ListRange) -> tuple[list[dict], int]:
        """The raw metas ``span`` covers, in its order, and how many its time range holds (one read
        for a page and the list's total)."""
        lower, upper = span.bounds()
        cursor = span.after is not None
        return await self._db.query_count("conversations", LIST_INDEX, lower, upper, count_lower=span.low,
                                          count_upper=span.high, lower_open=span.oldest and cursor,
                                          upper_open=not span.oldest and cursor, reverse=not span.oldest,
                                          limit=span.limit)

    async def by_tokens(self, stage_id: str, since_ms: int | None) -> list[tuple[tuple, dict]]:
        """Every raw meta of ``stage_id`` in range with its ``tokens`` sort key
        ``(-totalTokens, -updatedAt, taskId)``, in that order (no index holds tokens). Read
        ``TOKENS_SLICE`` at a time along the list's index, each read a task of its own (DESIGN.md
        §14: 10,000 conversations in one read and its parsing were one task of 170-310 ms)."""
        span = ListRange(stage_id, since_ms)
        keyed: list[tuple[tuple, dict]] = []
        lower, lower_open = span.low, False
        while True:
            rows = await self._db.query("conversations", LIST_INDEX, lower, span.high, lower_open=lower_open,
                                        limit=TOKENS_SLICE)
            keyed += [(_tokens_key(r), r) for r in rows]
            if len(rows) < TOKENS_SLICE:
                break
            last = rows[-1]  # in the index: its key fields are there and valid keys
            lower, lower_open = [stage_id, last["updatedAt"], last["taskId"]], True
        keyed.sort(key=lambda kr: kr[0])
        return keyed

    async def above(self, stage_id: str, top: tuple[int, str] | None) -> list[dict]:
        """The raw metas above ``top`` (the list's first ``(updatedAt, taskId)``), newest first."""
        lower = [stage_id, top[0], top[1]] if top else [stage_id, LOWEST]
        return await self._db.query("conversations", LIST_INDEX, lower, [stage_id, HIGHEST],
                                    lower_open=top is not None, reverse=True)


async def head_records(backend: RecordBackend, stage_ids: list[str]) -> list[dict]:
    """The heads of ``stage_ids`` that name a task id, as stored (``{stageId, taskId, syncedAt}``),
    read in one request, in the order of ``stage_ids``: what a backup keeps (§14)."""
    records = await backend.bulk_get("heads", list(stage_ids)) if stage_ids else []
    return [r for r in records if isinstance(r, dict) and isinstance(r.get("taskId"), str)]


async def held_conversations(backend: RecordBackend, task_ids: list[str]) -> dict[str, dict]:
    """The conversations stored under those of ``task_ids`` that have a ``conversations`` record, by
    task id, each as a backup's conversation line is (``{"meta", "messages", "turns", "branches"?,
    "shown"?}``: ``messages`` ``[]`` when its record is missing or holds none, ``turns`` ``[]`` when
    missing), as stored and unchecked; three requests. What a restore merges a backup's conversations
    against (§14; their trees, §17)."""
    metas = await backend.bulk_get("conversations", task_ids)
    held = await backend.bulk_get("messages", task_ids)
    turns = await backend.bulk_get("turns", task_ids)
    return {task_id: {"meta": meta, **(form := StoredForm.of(m)).fields(), "messages": form.messages or [],
                      "turns": (t or {}).get("turns") or []}
            for task_id, meta, m, t in zip(task_ids, metas, held, turns) if meta is not None}


async def conversation_records(backend: RecordBackend, per: int) -> AsyncIterator[list[dict]]:
    """Every conversation stored, ``per`` at a time in task-id order, as stored and unchecked: one
    ``{"meta": conversations record, "messages": [...], "turns": [...]}`` for each ``conversations``
    record (``[]`` for a missing messages or turns record), with ``branches`` and ``shown`` when its
    tree has any (§17: a backup holds whole trees); three reads a page. What a backup writes (§14): a
    damaged record goes into the file as it is, and the restore checks it."""
    async for metas, messages, turns in _record_pages(backend, per):
        yield [{"meta": meta, **StoredForm.of(m).fields(), "messages": (m or {}).get("messages") or [],
                "turns": (t or {}).get("turns") or []} for meta, m, t in zip(metas, messages, turns)]


async def _record_pages(backend: RecordBackend, per: int) -> AsyncIterator[tuple[list[dict], list, list]]:
    """The ``conversations`` records ``per`` at a time in task-id order, each page with the
    ``messages`` and ``turns`` records of the same task ids (None where missing)."""
    async for metas in _pages(backend, "conversations", "taskId", per):
        ids = [raw["taskId"] for raw in metas]
        yield metas, await backend.bulk_get("messages", ids), await backend.bulk_get("turns", ids)


async def version_pages(backend: RecordBackend, per: int) -> AsyncIterator[list[tuple[dict, dict | None]]]:
    """Every scene version stored in ``backend`` (DESIGN.md §10), ``per`` at a time in version-id order,
    each with its ``snapshots`` record (None when missing): what sync sends at its first sync (§16)."""
    async for versions in version_records(backend, per):
        snapshots = await backend.bulk_get("snapshots", [row["versionId"] for row in versions])
        yield list(zip(versions, snapshots))


async def version_records(backend: RecordBackend, per: int) -> AsyncIterator[list[dict]]:
    """Every scene version record stored in ``backend`` (DESIGN.md §10), without its document, ``per``
    at a time in version-id order: what a restore numbers the backup's versions against (§14)."""
    async for versions in _pages(backend, "versions", "versionId", per):
        yield versions


async def held_artifacts(backend: RecordBackend, artifact_ids: list[str]) -> list[bool]:
    """For each of ``artifact_ids``: True when its scene's artifact record is stored (one request)."""
    return [record is not None for record in await backend.bulk_get("artifacts", list(artifact_ids))]


async def _pages(backend: RecordBackend, table: str, key: str, per: int) -> AsyncIterator[list[dict]]:
    """The records of ``table`` in the order of their string ``key`` (its index), ``per`` at a time,
    each page read from the last key of the one before (never an offset); a record without a string
    ``key`` is left out."""
    lower, is_open = "", False
    while True:
        rows = await backend.query(table, key, lower, "\uffff", lower_open=is_open, limit=per)
        rows = [row for row in rows if isinstance(row, dict) and isinstance(row.get(key), str)]
        if not rows:
            return
        yield rows
        if len(rows) < per:
            return
        lower, is_open = rows[-1][key], True
