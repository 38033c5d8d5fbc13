"""Export and import of one conversation (DESIGN.md §9, seed §9.3).

JSON: ``{"format":"agentbar-conversation","version":2,"meta":{…},"messages":[…],"shown":{…},"turns":[…]}``
with ``meta`` = ``{taskId, taskName, stageId, createdAt, updatedAt, stats}``
and, once the conversation was renamed or pinned, ``pinned``, ``pinnedAt`` and
``changedAt`` (DESIGN.md §18; optional: a file without them imports unpinned)
(times ISO 8601 UTC with milliseconds), ``messages`` every message of the
conversation's tree (DESIGN.md §17 "Moving data"), each the slim projection (§3)
unchanged plus its ``parentId`` (``null`` for a first message), parents before
their children in the order made, ``shown`` the shown child of every fork (key
``""`` for the first message's fork), ``turns`` the per-turn meta of every
branch. Version 1 (no ``parentId``, no ``shown``: a chain) still imports. An
import reads back the stored form (``Conversation``: the shown path, ``branches``,
``shown``), so export → import → export gives the same document. ``parse_export`` refuses (``ImportRefused`` with a
``reason`` code) anything else: not JSON, another format, another version,
a bad meta or turn, messages that are not the slim projection, a tree that is not
one (an id twice, a parent that is not an earlier message), and what the
exact record shapes forbid (DESIGN.md §14: integers within ±2^53, counts ≥ 0,
``createdAt`` ≤ ``updatedAt``, nothing more than a day in the future: a name's or pin's change
time neither) and the one limit of every way in: at most ``MAX_CONVERSATION_CHARS`` characters of
text (``app.history.limits``, ``too-long``). A file
over 50 MB is refused before it is read (``check_size``); ``parse_export_sliced``
parses in slices that leave the page its turn.

Markdown: a heading, the meta, a line saying how many branches are left out
(when the tree has others), then each message of the shown path under "You"/"Assistant";
text verbatim; each tool call as JSON in a fenced block whose backtick fence is
longer than any backtick run inside it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from app.history.branching import Branching
from app.history.limits import MAX_CONVERSATION_CHARS, text_chars
from app.history.records import MAX_SAFE_INTEGER, Stats, TaskMeta, TurnMeta, iso, parse_iso
from app.history.repository import Conversation
from app.history.text import clean
from app.history.tree import Tree
from app.json_steps import run_steps
from app.projection import CUT_MARKER, failure_of

__all__ = ["FORMAT", "MAX_IMPORT_BYTES", "VERSION", "ImportRefused", "check_depth", "check_size", "checked_steps",
           "chain_document", "decode_at", "DEPTH_SLICE_CHARS", "PieceCheck", "depth_steps", "export_document", "export_json", "export_unkept",
           "export_markdown", "fence_for", "parse_export", "parse_export_sliced", "parse_steps",
           "skip_space"]

FORMAT = "agentbar-conversation"
VERSION = 2
"""The version an export is written in; ``VERSIONS`` are those an import reads (1: a chain)."""
VERSIONS = (1, 2)
_BACKTICKS = re.compile("`+")
_TURN_SLICE = 256
"""Turn metas ``parse_steps`` checks between two of its pauses."""


class ImportRefused(ValueError):
    """A file that is not an AgentBar conversation export; ``reason``: ``size`` | ``not-json`` |
    ``depth`` (valid JSON, maybe, but nested deeper than ``MAX_DEPTH``: no export is) | ``format`` |
    ``version`` | ``meta`` | ``messages`` | ``turns`` | ``numbers`` | ``not-finite`` (``NaN``, an infinity)
    | ``dates`` | ``too-long`` (more text
    than ``app.history.limits.MAX_CONVERSATION_CHARS``) (each has its message,
    ``history.importError.<reason>``, said by ``app.history.labels.import_refusal``)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


def _meta_out(meta: TaskMeta) -> dict[str, Any]:
    out = {"taskId": meta.taskId, "taskName": meta.taskName, "stageId": meta.stageId,
           "createdAt": iso(meta.createdAt), "updatedAt": iso(meta.updatedAt), "stats": meta.stats.model_dump()}
    times = {name: iso(at) for name, at in meta.changedAt.model_dump().items() if at}
    if meta.pinned or times:  # never renamed nor pinned: the file is as before (DESIGN.md §18)
        out["pinned"] = meta.pinned
        if meta.pinnedAt is not None:
            out["pinnedAt"] = iso(meta.pinnedAt)
        out["changedAt"] = times
    return out


def _names_of(raw_meta: dict) -> dict[str, Any]:
    """The optional name and pin fields of a file's meta (DESIGN.md §18: ``pinned``, a boolean;
    ``pinnedAt`` and ``changedAt``'s times in the export's ISO form) as record fields; a file without
    them is unpinned, its fields never changed. Raises ``ValueError`` for a value of another shape."""
    pinned = raw_meta.get("pinned", False)
    if not isinstance(pinned, bool):
        raise ValueError("pinned is not true or false")
    times = raw_meta.get("changedAt", {})
    if not isinstance(times, dict):
        raise ValueError("changedAt is not an object")
    changed = {name: parse_iso(times[name]) for name in ("taskName", "pinned") if name in times}
    at = raw_meta.get("pinnedAt")
    pinned_at = (parse_iso(at) if at is not None else changed.get("pinned", 0)) if pinned else None
    return {"pinnedAt": pinned_at, "changedAt": changed}


def export_json(meta: TaskMeta, messages: list[dict[str, Any]], turns: list[TurnMeta], *,
                tree: Tree | None = None) -> str:
    """The JSON export, as ``JSON.stringify`` writes it (``app.store.jsjson.js_json``): compact,
    non-ASCII written as is, a lone surrogate (a JS string cut mid-pair, which the store keeps
    exactly) as a ``\\udxxx`` escape, so the text is valid UTF-8 when saved and ``parse_export``
    gives the same strings back: the export round-trips exactly (DESIGN.md §9). Written raw, the
    page's ``Blob`` would save U+FFFD in its place. ``tree``: the conversation's tree
    (``Conversation.tree``); None: ``messages`` is a chain."""
    from app.store.jsjson import js_json

    return js_json(export_document(meta, messages, turns, tree=tree))


def export_document(meta: TaskMeta, messages: list[dict[str, Any]], turns: list[TurnMeta], *,
                    tree: Tree | None = None) -> dict[str, Any]:
    """The export as the value ``export_json`` encodes: what ``checked_steps`` holds to the import's
    rules without a text between them. Version 2 (DESIGN.md §17): every message of ``tree`` with its
    ``parentId`` and the shown child of each fork (``Tree.export``); None: the tree of ``messages``
    as a chain (``Tree.chain``: a message without an id, or with one an earlier message has, gets its
    derived id, the one the panel shows it with, ``app.continuity.derived_ids``)."""
    every, shown = (tree if tree is not None else Tree.chain(messages)).export()
    return {"format": FORMAT, "version": VERSION, "meta": _meta_out(meta), "messages": every, "shown": shown,
            "turns": [t.record() for t in turns]}


def chain_document(meta: TaskMeta, messages: list[dict[str, Any]], turns: list[TurnMeta]) -> dict[str, Any]:
    """What ``checked_steps`` holds to the import's rules for a chain of ``messages`` (each a dict),
    refused exactly when ``export_document(meta, messages, turns)`` is, at a fraction of its cost (sync's
    intake, DESIGN.md §14, §16): a version-1 document of ``messages`` with the ids ``Tree.chain`` gives
    them (``derived_ids``) and no ``parentId``, so no tree is built, exported and read back. A chain's
    export is always a tree (every message a dict with its own id, each parent the one before it:
    ``Tree.from_export`` never refuses it), and ``checked_steps`` checks a version-2 message without
    its ``parentId`` as it checks a version-1 message; the meta and turns are ``export_document``'s."""
    from app.continuity import derived_ids

    chain = [{k: v for k, v in m.items() if k != "parentId"} for m in derived_ids(messages)]
    return {"format": FORMAT, "version": 1, "meta": _meta_out(meta), "messages": chain,
            "turns": [t.record() for t in turns]}


def export_unkept(stage_id: str, messages: list[dict[str, Any]], now_ms: int, random_bytes=None) -> tuple[str, str]:
    """The JSON export of a thread that history cannot keep (IndexedDB unusable, DESIGN.md §5): the
    user downloads it before New conversation discards it, and can import it later. Its meta is made
    here: a new task id, the thread's title (``title_of``: the grapheme segmenter must be importable
    when the title needs it), ``createdAt`` = ``updatedAt`` = ``now_ms``, no turn meta (none is kept).
    Returns ``(taskId, json text)``, a version-2 chain; ``parse_export`` reads it back with
    ``messages`` unchanged, save that a message without an id (a thread the TS original wrote) has
    the derived id the export gave it (``export_document``)."""
    import os

    from app.history.records import new_task_id
    from app.history.text import title_of

    meta = TaskMeta(taskId=new_task_id(now_ms, random_bytes or os.urandom), taskName=title_of(messages) or "",
                    stageId=stage_id, createdAt=now_ms, updatedAt=now_ms)
    return meta.taskId, export_json(meta, messages, [])


MAX_DEPTH = 64
"""Deepest nesting an import may have (an export needs under 15; the store's limit too, DESIGN.md §5)."""
MAX_IMPORT_BYTES = 50_000_000
"""Largest file an import reads (50 MB, DESIGN.md §14); a larger one is refused before it is read."""
FUTURE_SLACK_MS = 86_400_000
"""How far past the importing machine's clock an imported time may lie (another device's clock; §14)."""

_BRACKET = re.compile(r"[\[\]{}]")
_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def check_size(size_bytes: int) -> None:
    """Refuse a file of more than ``MAX_IMPORT_BYTES`` before reading it: ``ImportRefused("size")``
    (DESIGN.md §14)."""
    if size_bytes > MAX_IMPORT_BYTES:
        raise ImportRefused("size", f"{size_bytes} bytes")


DEPTH_SLICE_CHARS = 32_000
"""Characters of text ``depth_steps`` checks between two of its yields."""

_STRING = re.compile(r'"[^"]*"')  # a JSON string once its escaped backslashes and quotes are gone
_BACKSLASHES = re.compile(r"\\*")


def depth_steps(text: str, *, slice_chars: int = DEPTH_SLICE_CHARS, longest: int | None = None):
    """Refuse (``ImportRefused("depth")``) a JSON ``text`` that nests arrays/objects deeper than
    ``MAX_DEPTH`` before ``json`` sees it (it would exhaust the browser's stack and kill Pyodide). It
    may well be JSON: the refusal says it is nested deeper than any export, not that it is not JSON.
    Only brackets outside strings count. The text is checked a window of about ``slice_chars`` at a
    time with a yield between windows (DESIGN.md §14: a file is checked in slices; the whole text at
    once was a task of 200-300 ms for 8 MB): a window starts outside a string; its escaped
    backslashes, escaped quotes and then its strings are removed with linear, C-speed passes and its
    brackets counted. A window whose end falls inside a string ends at that string's opening quote
    instead, and the string is walked from quote to quote (``str.find``; a quote after an odd run of
    backslashes is inside it), yielding inside it too. An unterminated string runs to the end (the
    decoder then says the file is not JSON).

    ``longest`` (characters; the export passes ``MAX_CONVERSATION_CHARS``): a string walked that
    cannot decode to ``longest`` characters or fewer (``_surely_longer``) is refused as ``too-long``
    there, before ``json`` builds it (a 40,000,000-character message ran the page out of memory)."""
    depth, at, size = 0, 0, len(text)
    while at < size:
        end = min(at + max(slice_chars, 1), size)
        if text[end - 1] == "\\":  # never between a backslash and what it escapes: past the run and one more
            end = min(_BACKSLASHES.match(text, end).end() + 1, size)
        window = text[at:end]
        flat = window.replace("\\\\", "").replace('\\"', "")
        opening = None
        if flat.count('"') % 2:  # the window ends inside a string: cut it at that string's opening quote
            opening = window.rfind('"')
            while _backslashes_before(window, opening) % 2:
                opening = window.rfind('"', 0, opening)
            flat = window[:opening].replace("\\\\", "").replace('\\"', "")
        for match in _BRACKET.finditer(_STRING.sub("", flat)):
            depth += 1 if match.group() in "[{" else -1
            if depth > MAX_DEPTH:
                raise ImportRefused("depth", f"nested deeper than {MAX_DEPTH} levels")
        if opening is not None:
            start = at + opening + 1
            end, backslashes = yield from _string_steps(text, start, slice_chars)
            if longest is not None and _surely_longer(end - start - 1, backslashes, longest):
                raise ImportRefused("too-long", f"a string passes {longest} characters")
        at = end
        yield


class PieceCheck:
    """``depth_steps`` with ``longest``, fed the text a piece at a time as the file is read (``feed``,
    then ``end``): the same refusals, in the same order, for the same text, so a file refused as
    ``too-long`` or ``depth`` is refused before its pieces are joined into one string (the join of a
    43.7 MB file's pieces was one task of 85-92 ms CPU, DESIGN.md §14). A piece is checked in windows
    of about ``slice_chars`` as ``depth_steps`` checks them; a run of backslashes ending a piece is
    held back to the next (never split from what it escapes). A string is judged (``_surely_longer``)
    once it closes, or at ``end`` when it never does, as ``depth_steps`` judges it."""

    def __init__(self, longest: int, *, slice_chars: int = DEPTH_SLICE_CHARS) -> None:
        self.longest, self.slice_chars = longest, max(slice_chars, 1)
        self.depth = 0
        self.inside = False  # within a string
        self.written = 0  # characters of the string's body so far
        self.backslashes = 0  # backslashes among them
        self.held = ""  # a run of backslashes that ended the last piece

    def feed(self, piece: str) -> None:
        """Check ``piece``, the text's next characters. Raises ``ImportRefused`` (``depth``,
        ``too-long``) where ``depth_steps`` would."""
        text = self.held + piece
        kept = text.rstrip("\\")
        self.held = text[len(kept):]
        self._check(kept)

    def end(self) -> None:
        """The text ended: check what was held back, and judge a string that never closed
        (``depth_steps`` walks it to the end of the text, its body then one character shorter)."""
        text, self.held = self.held, ""
        self._check(text)
        if self.inside and _surely_longer(self.written - 1, self.backslashes, self.longest):
            raise ImportRefused("too-long", f"a string passes {self.longest} characters")

    def _check(self, text: str) -> None:
        at, size = 0, len(text)
        while at < size:
            if self.inside:
                close = text.find('"', at)
                while close >= 0 and _backslashes_before(text, close) % 2:
                    close = text.find('"', close + 1)
                end = size if close < 0 else close
                self.written += end - at
                self.backslashes += text.count("\\", at, end)
                if close < 0:
                    return
                self.inside = False
                if _surely_longer(self.written, self.backslashes, self.longest):
                    raise ImportRefused("too-long", f"a string passes {self.longest} characters")
                at = close + 1
                continue
            end = min(at + self.slice_chars, size)
            if text[end - 1] == "\\":  # as depth_steps: past the run and one more
                end = min(_BACKSLASHES.match(text, end).end() + 1, size)
            window = text[at:end]
            flat = window.replace("\\\\", "").replace('\\"', "")
            opening = None
            if flat.count('"') % 2:
                opening = window.rfind('"')
                while _backslashes_before(window, opening) % 2:
                    opening = window.rfind('"', 0, opening)
                flat = window[:opening].replace("\\\\", "").replace('\\"', "")
            self._count(_STRING.sub("", flat))
            if opening is not None:
                self.inside, self.written, self.backslashes = True, 0, 0
                end = at + opening + 1
            at = end

    def _count(self, flat: str) -> None:
        opened = flat.count("[") + flat.count("{")
        if self.depth + opened <= MAX_DEPTH:  # cannot pass the limit here: counted at C speed
            self.depth += opened - flat.count("]") - flat.count("}")
            return
        for match in _BRACKET.finditer(flat):
            self.depth += 1 if match.group() in "[{" else -1
            if self.depth > MAX_DEPTH:
                raise ImportRefused("depth", f"nested deeper than {MAX_DEPTH} levels")


def _surely_longer(written: int, backslashes: int, longest: int) -> bool:
    """Whether a JSON string whose body is ``written`` characters long (its closing quote included),
    ``backslashes`` of them backslashes, decodes to more than ``longest`` characters, judged without
    decoding it: each escape shortens it by at most 6 characters per backslash (``\\ud83d\\ude00``:
    12 written, 1 decoded), so what stays after taking 6 per backslash is a lower bound of its
    decoded length."""
    return written > longest and written - 6 * backslashes > longest


def _string_steps(text: str, at: int, slice_chars: int):
    """From ``at``, inside a string, to just past its closing quote (``len(text)`` when it has none),
    ``slice_chars`` of it a step: a generator whose return value is ``(that position, the backslashes
    in between)``, counted slice by slice as it walks (a count of a 40,000,000-character string in
    one go was a task of its own)."""
    backslashes = 0
    while True:
        close = text.find('"', at, at + slice_chars)
        if close < 0:
            backslashes += text.count("\\", at, at + slice_chars)
            if at + slice_chars >= len(text):
                return len(text), backslashes
            at += slice_chars
            yield
            continue
        backslashes += text.count("\\", at, close)
        at = close + 1
        if _backslashes_before(text, close) % 2 == 0:
            return at, backslashes


def _backslashes_before(text: str, at: int) -> int:
    """How many backslashes run right before ``text[at]``."""
    start, span = at, 64
    while True:
        window = text[max(0, start - span):start]
        kept = window.rstrip("\\")
        start -= len(window) - len(kept)
        if kept or not window:
            return at - start
        span *= 2  # a long run of backslashes: windows that double, never a character at a time


def check_depth(text: str) -> None:
    """Refuse (``ImportRefused("depth")``) a JSON ``text`` nested deeper than ``MAX_DEPTH``, before
    ``json`` is handed it (``depth_steps`` run to the end, DESIGN.md §14)."""
    run_steps(depth_steps(text))


def decode_at(text: str, at: int, name: str = "") -> tuple[Any, int]:
    """One JSON value at ``text[at]`` through ``json``'s own decoder; returns ``(value, end)``. Raises
    ``ImportRefused("not-json")``, its detail led by ``name`` (a file's name) when given."""
    try:
        return _DECODER.raw_decode(text, at)
    except (ValueError, RecursionError) as error:
        raise ImportRefused("not-json", f"{name}: {error}" if name else str(error)) from None


def skip_space(text: str, at: int) -> int:
    """The position of the first character at or after ``at`` that is not JSON white space."""
    return _SPACE.match(text, at).end()


def _document_steps(text: str, depth_checked: bool = False):
    """The top-level object of an export, decoded value by value and the items of its arrays one by
    one (each through ``json``'s own decoder), yielding between them: a generator whose return value
    is the document. Anything else than an object is decoded whole (refused as not an export)."""
    if not depth_checked:
        yield from depth_steps(text, longest=MAX_CONVERSATION_CHARS)
    at = skip_space(text, 0)
    if not text.startswith("{", at):
        value, end = decode_at(text, at)
        if skip_space(text, end) != len(text):
            raise ImportRefused("not-json", "extra data after the document")
        return value
    document: dict[str, Any] = {}
    at = skip_space(text, at + 1)
    if text.startswith("}", at):
        at += 1
    else:
        while True:
            if not text.startswith('"', at):
                raise ImportRefused("not-json", f"a key was expected at {at}")
            key, at = decode_at(text, at)
            at = skip_space(text, at)
            if not text.startswith(":", at):
                raise ImportRefused("not-json", f"':' was expected at {at}")
            at = skip_space(text, at + 1)
            if text.startswith("[", at):  # an array: item by item
                items: list[Any] = []
                at = skip_space(text, at + 1)
                if text.startswith("]", at):
                    at += 1
                else:
                    while True:
                        item, at = decode_at(text, at)
                        items.append(item)
                        yield
                        at = skip_space(text, at)
                        if text.startswith("]", at):
                            at += 1
                            break
                        if not text.startswith(",", at):
                            raise ImportRefused("not-json", f"',' or ']' was expected at {at}")
                        at = skip_space(text, at + 1)
                value = items
            else:
                value, at = decode_at(text, at)
                yield
            document[key] = value
            at = skip_space(text, at)
            if text.startswith("}", at):
                at += 1
                break
            if not text.startswith(",", at):
                raise ImportRefused("not-json", f"',' or '}}' was expected at {at}")
            at = skip_space(text, at + 1)
    if skip_space(text, at) != len(text):
        raise ImportRefused("not-json", "extra data after the document")
    return document


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def _check_count(name: str, value: Any) -> None:
    """Refuse a count of the file that is a number history cannot keep exactly: ``not-finite`` for
    ``NaN`` or an infinity (JSON has neither; Python's parser reads them), ``numbers`` for one below 0
    or past 2^53 − 1 (DESIGN.md §14). A value that is no number is left to the record's own check."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise ImportRefused("not-finite", f"{name} = {value}")
    if not 0 <= value <= MAX_SAFE_INTEGER:
        raise ImportRefused("numbers", f"{name} = {value}")


def _meta_of(raw_meta: Any, now_ms: int) -> TaskMeta:
    """The file's meta to the exact record shape (``ImportRefused``: ``meta``, ``numbers`` or ``dates``)."""
    if not isinstance(raw_meta, dict):
        raise ImportRefused("meta", "meta is not an object")
    try:
        created, updated = parse_iso(raw_meta.get("createdAt", "")), parse_iso(raw_meta.get("updatedAt", ""))
        names = _names_of(raw_meta)
        stats = raw_meta.get("stats", {})
        if not isinstance(stats, dict):
            raise ValueError("stats is not an object")
    except (ValueError, TypeError) as error:
        raise ImportRefused("meta", _first_line(error)) from None
    for name, value in stats.items():  # a count that cannot be stored exactly, or a negative one
        if name in Stats.model_fields:
            _check_count(f"stats.{name}", value)
    if created > updated:
        raise ImportRefused("dates", "createdAt is after updatedAt")
    if updated > now_ms + FUTURE_SLACK_MS:
        raise ImportRefused("dates", "updatedAt is more than a day in the future")
    if any(at > now_ms + FUTURE_SLACK_MS for at in (names["pinnedAt"] or 0, *names["changedAt"].values())):
        # a change dated ahead would win every later rename or pin on every device (§16, §18)
        raise ImportRefused("dates", "a name or pin change is more than a day in the future")
    try:
        return TaskMeta.model_validate({**raw_meta, **names, "createdAt": created, "updatedAt": updated,
                                        "stats": Stats.model_validate(stats).model_dump()})
    except ValidationError as error:
        raise ImportRefused("meta", _first_line(error)) from None


def _turn_of(raw: Any, now_ms: int) -> TurnMeta:
    """One turn meta to the exact record shape (``ImportRefused``: ``turns``, ``numbers`` or ``dates``)."""
    if not isinstance(raw, dict):
        raise ImportRefused("turns", "a turn is not an object")
    usage = raw.get("usage")
    numbers = [("turnId", raw.get("turnId")), ("duration", raw.get("duration"))] + (
        [(f"usage.{k}", v) for k, v in usage.items()] if isinstance(usage, dict) else [])
    for name, value in numbers:
        _check_count(name, value)
    try:
        turn = TurnMeta.model_validate(raw)
        moment = parse_iso(turn.timestamp)
    except (ValidationError, ValueError) as error:
        raise ImportRefused("turns", _first_line(error)) from None
    if moment > now_ms + FUTURE_SLACK_MS:
        raise ImportRefused("dates", "a turn's timestamp is more than a day in the future")
    return turn


def parse_steps(text: str, now_ms: int, *, depth_checked: bool = False):
    """``parse_export`` as a generator that yields between slices of work (each top-level value, each
    message and turn decoded, then each message checked, then every ``_TURN_SLICE`` turns checked), so a caller can give the page its turn
    (``parse_export_sliced``); its return value is ``(meta, messages, turns)``, a ``Conversation``
    (``checked_steps``). Raises
    ``ImportRefused`` (DESIGN.md §14). ``depth_checked``: ``text`` was written by ``json.dumps`` of
    values already read from JSON whose depth was checked (ChatGPT's import): not scanned again."""
    document = yield from _document_steps(text, depth_checked)
    return _file_rules((yield from checked_steps(document, now_ms)))


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def _file_rules(conversation: Conversation) -> Conversation:
    """What a file adds to ``checked_steps``' rules (DESIGN.md §14, §18): a conversation without a
    message is not an export (``ImportRefused("messages")``), nor one whose message id, on any
    branch, holds a C0/C1 control character; its title loses control characters and noncharacters
    as a rename's does (``app.history.names.printable``). Returns the conversation so corrected."""
    from app.history.names import printable

    meta, messages, turns = conversation
    if not messages:
        raise ImportRefused("messages", "no messages")
    for message in (*messages, *conversation.branches):
        if isinstance(message.get("id"), str) and _CONTROL.search(message["id"]):
            raise ImportRefused("messages", f"a message id holds a control character: {message['id']!r}")
    name = printable(meta.taskName)
    if name == meta.taskName:
        return conversation
    return Conversation(meta.model_copy(update={"taskName": name}), messages, turns, conversation.branching)


def checked_steps(document: Any, now_ms: int):
    """The rules ``parse_steps`` holds a decoded export to (``document``: the value its text decodes
    to, or ``export_document``'s), as a generator that yields after each message and every
    ``_TURN_SLICE`` turns; its return value is a ``Conversation``: ``(meta, messages, turns)`` with
    the tree's stored form (version 2: ``messages`` the shown path, ``branches`` and ``shown``, from
    ``Tree.from_export(...).record()``; version 1: ``messages`` the document's own list, a chain).
    Raises ``ImportRefused`` as ``parse_steps`` does (DESIGN.md §14, §17: a version-2 message is
    checked as the slim projection without its ``parentId``; a tree that is not one, or a ``shown``
    that is not an object, is refused as ``messages``)."""
    from app.projection import deserialize_thread, serialize_thread

    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ImportRefused("format")
    version = document.get("version")
    if type(version) is not int or version not in VERSIONS:
        raise ImportRefused("version", repr(version))
    messages, raw_turns = document.get("messages"), document.get("turns")
    meta = _meta_of(document.get("meta"), now_ms)
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise ImportRefused("messages", "not a list of messages")
    if text_chars(messages) > MAX_CONVERSATION_CHARS:  # the one limit of every way in (app.history.limits)
        raise ImportRefused("too-long", f"its text passes {MAX_CONVERSATION_CHARS} characters")
    for message in messages:  # the projection is per message: each is checked on its own
        slim = {k: v for k, v in message.items() if k != "parentId"} if version > 1 else message
        try:
            if serialize_thread(deserialize_thread([slim])) != [slim]:
                raise ValueError("not the slim projection")
        except Exception as error:  # noqa: BLE001 - any shape problem refuses the file
            raise ImportRefused("messages", _first_line(error)) from None
        yield
    branches: list[dict] = []
    chosen: dict[str, str] = {}
    if version > 1:  # the tree read, then its stored form made: a step each (thousands of messages)
        try:
            tree = Tree.from_export(messages, document.get("shown", {}))
        except ValueError as error:
            raise ImportRefused("messages", _first_line(error)) from None
        yield
        messages, branches, chosen = tree.record()
        yield
    if not isinstance(raw_turns, list):
        raise ImportRefused("turns", "not a list")
    turns = []
    for turn in raw_turns:
        turns.append(_turn_of(turn, now_ms))
        if len(turns) % _TURN_SLICE == 0:
            yield
    duration = sum(t.duration for t in turns)
    if duration > MAX_SAFE_INTEGER:
        raise ImportRefused("numbers", "the turns' durations add up past 2^53")
    meta = meta.model_copy(update={"turnCount": len(turns), "durationMs": duration})
    return Conversation(meta, messages, turns, Branching(branches, chosen))


def parse_export(text: str, now_ms: int | None = None) -> Conversation:
    """Validate an export to the exact record shapes (DESIGN.md §14); returns ``(meta, messages,
    turns)`` as a ``Conversation`` whose ``branches`` and ``shown`` hold the rest of a version-2
    file's tree (``checked_steps``; ``HistoryService.import_bundle`` stores them). ``now_ms``: the
    importing machine's clock (epoch ms; the wall clock when None), which no time may pass by more
    than a day. Raises ``ImportRefused`` with ``reason`` ``not-json`` |
    ``depth`` (nested deeper than ``MAX_DEPTH``) | ``format`` | ``version`` | ``meta`` | ``messages``
    (none, not the slim projection, an id holding a control character, or not a tree) | ``turns`` |
    ``numbers`` (an integer negative or past 2^53 − 1) | ``not-finite`` (``NaN`` or an infinity) | ``dates`` (``createdAt`` after
    ``updatedAt``, or in the future) | ``too-long`` (text past ``MAX_CONVERSATION_CHARS``)."""
    return run_steps(parse_steps(text, _now(now_ms)))


async def parse_export_sliced(text: str, now_ms: int | None = None, *, budget_s: float = 0.008,
                              clock: Callable[[], float] | None = None, depth_checked: bool = False):
    """``parse_export`` that gives the event loop its turn (``asyncio.sleep(0)``) whenever a slice of
    work has taken ``budget_s`` seconds, so the page has no long task while a big file is checked
    (DESIGN.md §14). Same result and errors as ``parse_export``. ``depth_checked``: ``text`` went
    through ``PieceCheck`` to its end already (``depth_steps`` is not run again)."""
    import asyncio
    import time

    clock = clock or time.perf_counter
    steps = parse_steps(text, _now(now_ms), depth_checked=depth_checked)
    began = clock()
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
        if clock() - began >= budget_s:
            await asyncio.sleep(0)
            began = clock()


def _now(now_ms: int | None) -> int:
    import time

    return int(time.time() * 1000) if now_ms is None else now_ms


def fence_for(text: str) -> str:
    """A backtick fence longer than any backtick run in ``text`` (at least three)."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    return "`" * max(3, longest + 1)


_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}(?=[^`]*$)|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")


def message_markdown(text: str, left_out_line: str | None = None) -> list[str]:
    """The lines of a message's ``text`` as the Markdown export writes them (DESIGN.md §17 "Moving
    data"): shown as written, yet unable to forge the export's structure. Outside a code fence of the
    text, a line that would open a heading (``#``, or a setext underline of ``=``/``-`` under a line
    of text), an HTML block (``<``) or that equals the export's ``left_out_line`` gets a backslash
    before its first character (a Markdown reader shows the character itself, never the backslash);
    a code fence the text leaves open is closed where the text ends, as the panel shows it. Inside a
    fence nothing changes.

    >>> message_markdown("hi\\n## Assistant\\n```\\ncode")
    ['hi', '\\\\## Assistant', '```', 'code', '```']
    """
    lines: list[str] = []
    fence: str | None = None  # the open fence's marker
    previous = ""
    for line in text.split("\n"):
        if fence is not None:
            lines.append(line)
            stripped = line.strip()
            if len(line) - len(line.lstrip(" ")) <= 3 and stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence = None
            continue
        opened = _FENCE_OPEN.match(line)
        if opened:
            fence, previous = opened.group(1), ""
            lines.append(line)
            continue
        body = line.lstrip(" ")
        indent = len(line) - len(body)
        if indent <= 3 and body and (body[0] in "#<" or (left_out_line is not None and line.strip() == left_out_line)
                                     or (_SETEXT.match(line) and (body[0] == "=" or previous.strip()))):
            line = line[:indent] + "\\" + body
        lines.append(line)
        previous = line
    if fence is not None:
        lines.append(fence)
    return lines


_MARKUP = re.compile(r"([\\`*_\[\]<>&#!~|])")


def title_markdown(title: str) -> str:
    """``title`` as the text of the export's heading: one line, each character Markdown could read as
    markup (raw HTML, a link, emphasis, code, an entity, the heading's closing ``#``) after a
    backslash, so a reader shows the title as typed (DESIGN.md §5: stored text is data, never HTML).

    >>> print(title_markdown("<b>a</b> ##"))
    \\<b\\>a\\</b\\> \\#\\#
    """
    return _MARKUP.sub(r"\\\1", " ".join(title.splitlines()))


def export_markdown(meta: TaskMeta, messages: list[dict[str, Any]], turns: list[TurnMeta], labels: dict[str, str],
                    describe_failure: Callable[[dict[str, Any]], str] = lambda error: str(error["code"]), *,
                    tree: Tree | None = None) -> str:
    """Markdown of one conversation; ``labels``: ``you``, ``assistant``, ``tool``, ``meta`` (a line
    with ``{created}``, ``{updated}`` and, if still there, ``{turns}``, ``{tokens}`` placeholders: the
    page phrases the counts with their plural forms beforehand, ``app.history.labels.markdown_meta``).
    ``messages`` is the shown path; ``tree`` (``Conversation.tree``; None: a chain): when it has
    other branches (``Tree.left_out``), ``labels["leftOut"]`` (the page phrases that count,
    ``app.history.labels.markdown_left_out``) is written as an italic line after the meta
    (DESIGN.md §17 "Moving data": Markdown prints the shown path and says how many it leaves out).
    A failed reply's marker part (``app.projection.failure_of``) is written as a quoted line of
    ``describe_failure(error)`` (the page passes the panel's localized ``turn-error`` text); a cut
    reply's marker (``app.projection.CUT_MARKER``) as a quoted line of ``labels["cut"]`` (the panel's
    ``turn-cut`` text). A message's text cannot forge the export's headings or its left-out line
    (``message_markdown``); the title is one line of text (``title_markdown``). Markdown is text for people: a lone surrogate is U+FFFD
    (``app.history.text.clean``), as the browser would save it; only the JSON export round-trips."""
    lines = [f"# {title_markdown(meta.taskName)}", "",
             labels["meta"].format(created=iso(meta.createdAt), updated=iso(meta.updatedAt),
                                   turns=meta.turnCount, tokens=meta.stats.totalTokens), ""]
    left_out = f"_{labels.get('leftOut') or tree.left_out()}_" if tree is not None and tree.left_out() else None
    if left_out is not None:
        lines += [left_out, ""]
    for message in messages:
        lines += [f"## {labels['you'] if message.get('role') == 'user' else labels['assistant']}", ""]
        for part in message.get("content") or []:
            if (failure := failure_of(part)) is not None:
                lines += [f"> ⚠ {describe_failure(failure)}", ""]
            elif part == CUT_MARKER:
                lines += [f"> ✂ {labels.get('cut', 'cut')}", ""]
            elif part.get("type") == "text":
                lines += [*message_markdown(part.get("text", ""), left_out), ""]
            else:
                body = json.dumps(part, ensure_ascii=False, indent=2)
                fence = fence_for(body)
                lines += [f"{labels['tool']}: {part.get('toolName', 'tool')}", "", f"{fence}json", body, fence, ""]
    return clean("\n".join(lines))
