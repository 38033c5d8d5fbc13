"""The search index's terms, keys and query rules (DESIGN.md §9 search, §14 "History at scale").

Pure Python. The index is IndexedDB's own B-tree: each ``search`` record carries ``terms``, a list of
*posting keys*, under the multiEntry index ``*terms`` (``app.records.SCHEMA`` version 2), so a
conversation's postings are written, replaced and deleted in the same transaction as the record
itself (save, import, delete, undo, restore: whatever writes the ``search`` record).

- Terms of a folded text (``text_terms``; folding is ``app.history.text.fold``, §14): every run of
  word characters (letters, digits, combining marks; ``_`` and punctuation split) outside the
  unspaced scripts is one *word* term, cut at ``TERM_CHARS`` characters; in the unspaced scripts
  (CJK ideographs, kana, Hangul, Thai, Lao, Khmer, Myanmar) every character and every pair of
  neighbours is a term (unigrams and bigrams), so a keyword inside a sentence with no spaces is found.
- A posting key is ``"<len(stageId)>.<stageId>\\0<term>\\0<updatedAt: 14 hex digits>\\0<taskId>"``:
  one course's postings of one term sort by time, then task id, exactly as the list does, so a
  page of results newest first is one bounded index read. Every record also holds the *presence*
  key (empty term), which tells records indexed from those not (yet) indexed.
- A query (``parse_query``): the folded keyword's terms, all required (AND). A word matches a whole
  word of the text; an unspaced run of two or more characters needs all its bigrams and is then
  checked as a substring of the folded text (``SearchQuery.runs``). A keyword with no term
  (punctuation only) has ``terms == ()``: the caller scans instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["SearchQuery", "TERM_CHARS", "parse_query", "parse_posting", "posting_keys", "posting_prefix",
           "posting_term", "presence_prefix", "term_bounds", "text_terms", "text_terms_steps", "time_hex", "titled_terms"]

TERM_CHARS = 32
"""A word term keeps its first 32 characters (a longer word, a hash or base64 run, is cut alike in
the text and in the keyword)."""

_UNSPACED = ("\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u2e80-\u2fdf\u3005-\u3007\u3021-\u3029\u3031-\u3035"
             "\u3038-\u303c\u3041-\u30ff\u3131-\u318e\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f"
             "\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003ffff")
_MARKS = ("\u0300-\u036f\u0483-\u0489\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7\u0610-\u061a"
          "\u064b-\u065f\u0670\u06d6-\u06dc\u06df-\u06e4\u06e7\u06e8\u06ea-\u06ed\u0900-\u0963\u0966-\u0dff"
          "\u1ab0-\u1aff\u1dc0-\u1dff\u200c\u200d\u20d0-\u20ff\ufe20-\ufe2f")
_RUN = re.compile(f"(?:[^\\W_]|[{_MARKS}])+")
"""A run of word characters: letters and digits (``str.isalnum``) and combining marks."""
_WORD_CHAR = re.compile("[^\\W_]")
"""A letter or digit: a word holds one (the joiner between the emoji of a sequence, alone, is no word)."""
_PIECE = re.compile(f"([{_UNSPACED}]+)|([^{_UNSPACED}]+)")
_TIME_DIGITS = 14
_TIME_MAX = 16 ** _TIME_DIGITS - 1


def _pieces(run: str) -> list[tuple[str, str]]:
    """The pieces of ``run`` (a ``_RUN``): ``(unspaced, "")`` for a stretch of an unspaced script,
    ``("", word)`` for a word that holds a letter or digit (``_WORD_CHAR``); a joiner or marks alone
    are no word and are left out (every reader of pieces: the index and the query alike)."""
    return [(unspaced, word) for unspaced, word in _PIECE.findall(run) if unspaced or _WORD_CHAR.search(word)]


def _terms_of_run(run: str, into: set[str]) -> None:
    for unspaced, word in _pieces(run):
        if word:
            into.add(word[:TERM_CHARS])
        else:
            into.update(unspaced)
            into.update(unspaced[i:i + 2] for i in range(len(unspaced) - 1))


def text_terms(folded: str) -> set[str]:
    """The distinct terms of ``folded`` (text already folded by ``app.history.text.fold``): words
    (cut at ``TERM_CHARS``) and, in unspaced scripts, unigrams and bigrams. Never an empty term."""
    terms: set[str] = set()
    for run in set(_RUN.findall(folded)):  # a run met again adds no term (a conversation repeats its words)
        _terms_of_run(run, terms)
    return terms


TERMS_SLICE_RUNS = 4_000
"""Runs of word characters ``text_terms_steps`` walks between two of its yields (8,000 runs met
before, a reply of 10 MB of one repeated line, were slices of 45–68 ms of thread CPU in Pyodide on a
loaded two-core machine)."""
TERMS_SLICE_CHARS = 32_000
"""Characters of new runs ``text_terms_steps`` splits into terms between two of its yields."""


def text_terms_steps(folded: str, *, slice_runs: int = TERMS_SLICE_RUNS, slice_chars: int = TERMS_SLICE_CHARS):
    """``text_terms`` as a generator that yields (``None``) between slices of work, so a text of
    millions of characters (an imported message, DESIGN.md §14) is indexed without a long task; its
    return value is the set of terms. A run met before is skipped (its terms are in already); an
    unspaced run longer than ``slice_chars`` has its unigrams and bigrams taken window by window."""
    terms: set[str] = set()
    seen: set[str] = set()
    runs = chars = 0
    for match in _RUN.finditer(folded):
        run = match.group()
        runs += 1
        if run not in seen:
            seen.add(run)
            if len(run) <= slice_chars:
                _terms_of_run(run, terms)
                chars += len(run)
            else:
                yield from _long_run_steps(run, terms, slice_chars)
        if runs >= slice_runs or chars >= slice_chars:
            yield
            runs = chars = 0
    return terms


def _long_run_steps(run: str, into: set[str], slice_chars: int):
    """``_terms_of_run`` of a run longer than ``slice_chars``, yielding between windows of it."""
    for unspaced, word in _pieces(run):
        if word:
            into.add(word[:TERM_CHARS])
            continue
        for at in range(0, len(unspaced), slice_chars):
            window = unspaced[at:at + slice_chars + 1]  # one character more: the bigram across the cut
            into.update(window)
            into.update(window[i:i + 2] for i in range(len(window) - 1))
            yield


def time_hex(ms: int) -> str:
    """``ms`` (epoch ms, clamped to [0, 16^14 - 1]) as 14 lowercase hex digits: text that sorts as the number."""
    return format(min(max(int(ms), 0), _TIME_MAX), "014x")


def posting_prefix(stage_id: str, term: str) -> str:
    """The prefix every posting key of ``term`` in course ``stage_id`` starts with (ends in NUL)."""
    return f"{len(stage_id)}.{stage_id}\0{term}\0"


def presence_prefix(stage_id: str) -> str:
    """The prefix of the presence keys of ``stage_id`` (the empty term: one per indexed record)."""
    return posting_prefix(stage_id, "")


def posting_keys(stage_id: str, updated_at: int, task_id: str, terms: set[str] | list[str]) -> list[str]:
    """The ``terms`` field of a ``search`` record: the presence key, then one posting key per term
    (sorted, so the same text gives the same record)."""
    tail = f"{time_hex(updated_at)}\0{task_id}"
    return [presence_prefix(stage_id) + tail] + [posting_prefix(stage_id, t) + tail for t in sorted(terms)]


def posting_term(key: str) -> str | None:
    """The term of a posting key (``""`` for a presence key); ``None`` for a string that is not one.

    >>> posting_term(posting_keys("s", 5, "task_20260101_abcdef", ["plan"])[1])
    'plan'
    """
    if not isinstance(key, str):
        return None
    size, dot, rest = key.partition(".")
    if not dot or not size.isdigit() or len(rest) <= int(size):
        return None
    term, nul, _ = rest[int(size) + 1:].partition("\0")
    return term if nul else None


def titled_terms(keys: list[str], title_only: list[str], title_terms: set[str]) -> tuple[set[str], list[str]]:
    """A conversation's terms once its title's terms are ``title_terms`` (DESIGN.md §18: a renamed
    conversation is found by its title, through the same index as its messages). ``keys``: its
    ``search`` record's posting keys now; ``title_only``: the terms those keys hold for the title
    alone (not in any message). Returns ``(terms, title_only)`` of the record: the messages' terms,
    which a rename leaves as they are, and the new title's. Only the title is indexed again."""
    held = {term for term in map(posting_term, keys) if term}
    body = held - set(title_only)
    only = sorted(title_terms - body)
    return body | set(only), only


def parse_posting(key: str) -> tuple[int, str] | None:
    """``(updatedAt, taskId)`` of a posting key; ``None`` for a string that is not one."""
    if not isinstance(key, str):
        return None
    parts = key.rsplit("\0", 2)
    if len(parts) != 3 or len(parts[1]) != _TIME_DIGITS:
        return None
    try:
        return int(parts[1], 16), parts[2]
    except ValueError:
        return None


def term_bounds(stage_id: str, term: str, *, since_ms: int | None = None, after: tuple | None = None,
                oldest: bool = False) -> tuple[str, str, bool, bool]:
    """``(lower, upper, lower_open, upper_open)``: the posting keys of ``term`` in ``stage_id``
    updated at or after ``since_ms`` (None: all time) and beyond the cursor ``after`` (the
    ``(updatedAt, taskId)`` of the last result shown: older ones when newest first, newer ones when
    ``oldest``). Read in reverse for newest first."""
    prefix = posting_prefix(stage_id, term)
    lower = prefix + (time_hex(since_ms) if since_ms is not None else "")
    upper = prefix + "\uffff"
    lower_open = upper_open = False
    if after is not None:
        cursor = prefix + f"{time_hex(after[0])}\0{after[1]}"
        if oldest:
            lower, lower_open = max(lower, cursor), True
        else:
            upper, upper_open = cursor, True
    return lower, upper, lower_open, upper_open


@dataclass(frozen=True)
class SearchQuery:
    """A parsed keyword: ``needle`` (the folded keyword, whitespace collapsed), ``terms`` (all
    required; ``()`` when it has none), ``runs`` (unspaced runs of two or more characters that must
    also appear as they are in the folded text) and ``mark`` (what the snippet marks: the first word
    or run)."""

    needle: str
    terms: tuple[str, ...]
    runs: tuple[str, ...]
    mark: str

    def matches(self, folded: str) -> bool:
        """True when a folded text holding all ``terms`` also holds every run (checked per record)."""
        return all(run in folded for run in self.runs)


def parse_query(keyword: str, fold) -> SearchQuery:
    """``keyword`` as a ``SearchQuery``; ``fold``: ``app.history.text.fold`` (the one folding of §14)."""
    needle = fold(" ".join(keyword.split()))
    terms: list[str] = []
    runs: list[str] = []
    marks: list[str] = []
    for run in _RUN.findall(needle):
        for unspaced, word in _pieces(run):
            piece = word or unspaced
            marks.append(piece)
            if word:
                found = [word[:TERM_CHARS]]
            elif len(unspaced) == 1:
                found = [unspaced]
            else:
                found = [unspaced[i:i + 2] for i in range(len(unspaced) - 1)]
                if len(unspaced) > 2:
                    runs.append(unspaced)
            terms += [t for t in found if t not in terms]
    return SearchQuery(needle, tuple(terms), tuple(runs), marks[0] if marks else needle)
