"""Import from ChatGPT's data export into history (DESIGN.md §14, "Import from other tools").

Two shapes are read:

- ``conversations.json``: a JSON array of conversations, each ``{"id"|"conversation_id", "title",
  "create_time", "update_time" (epoch seconds, float or null), "current_node", "mapping": {node id:
  {"message": {"author": {"role"}, "content": {"content_type", "parts"|"text"…}, "create_time",
  "metadata"} | null, "parent", "children"}}, "default_model_slug"?}``;
- the export zip: that file, or (the 2026 export) several ``conversations-000.json``,
  ``conversations-001.json``… beside ``export_manifest.json``, ``chat.html``, ``user.json`` and media;
  every member named ``conversations.json`` or ``conversations-<n>.json`` is read, in name order.

Every branch of ``mapping`` is kept (DESIGN.md §17 "Moving data"): each message's id is its node's
key, its parent the nearest kept ancestor (``None`` at the top), siblings in the order of their
parent's ``children``; the path from ``current_node`` up through ``parent`` to the root is the shown
path (a link on it that is missing or loops makes the conversation unreadable, as before branches;
a node elsewhere whose parents never reach a root is left out). Nodes without a message, ``system`` messages,
messages the export marks hidden (``metadata.is_visually_hidden_from_conversation``) and ChatGPT's
own notes (content types ``user_editable_context``, ``model_editable_context``, ``thoughts``,
``reasoning_recap``) are not part of the conversation a user saw and are passed over. Text parts are
kept verbatim; every other part of a named kind is kept as a text saying what it was (``[image]``,
``[audio]``, ``[<content type>]``), so nothing the user saw disappears without a trace; a part that
names no kind (null, a number, an object without ``content_type``) says nothing and is passed over.
``tool`` messages (the results of browsing, code and file tools) become assistant text. The title is
the export's when it is text, else the first question (§9's rule).

Each conversation becomes one AgentBar export document (``app.history.export``'s format, version 2:
the whole tree), checked by the same ``parse_export`` every import goes through, so it lands with
the exact record shapes and in history's stored form (the shown path, ``branches``, ``shown``). Its
task id is derived from the ChatGPT id (the same file imported twice gives the same ids, which the
history merges instead of duplicating); its times are the export's (``create_time``,
``update_time``; a missing one is taken from the messages). A conversation that cannot be read is
named with its reason in ``Converted.skipped``, never silently dropped (whatever the reason: times
out of range or that are no number, ``NaN`` and ``Infinity`` included, a value of an unexpected
type…); so is a conversation whose text passes
``MAX_CONVERSATION_CHARS`` (``too-long``, found while its messages are read, before any is built) and
a zip member that cannot be read while others can (named by its file name: the good members are
imported). A file of another shape raises ``ImportRefused("format")``.

A long conversation is read in slices (``read_conversations`` yields ``None`` between them), so the
page keeps its turn while thousands of turns are converted (DESIGN.md §14: no long task).
"""

from __future__ import annotations

import codecs
import hashlib
import io
import json
import math
import re
import zipfile
from collections.abc import Callable
from typing import Any, NamedTuple

from app.history import export
from app.history.export import ImportRefused, check_size, decode_at, depth_steps, skip_space
from app.history.limits import MAX_CONVERSATION_CHARS  # one past it is skipped as too-long before its messages are built
from app.history.records import TaskMeta, TurnMeta, iso, new_task_id
from app.history.text import TITLE_GRAPHEMES, first_user_text
from app.json_steps import run_steps

__all__ = ["MAX_CONVERSATION_CHARS", "Converted", "Skipped", "Unreadable", "conversations_of", "conversations_steps",
           "import_chatgpt", "read_conversations", "thread_path", "utf8_steps"]

EXPECTED = "ChatGPT's conversations.json (an array of conversations, each with a mapping) or its export zip"
"""What a refused file was expected to be (the ``ImportRefused("format")`` detail)."""

_MEMBER = re.compile(r"(?:.*/)?conversations(?:-\d+)?\.json\Z")
_HIDDEN_TYPES = frozenset({"user_editable_context", "model_editable_context", "thoughts", "reasoning_recap"})
_ROLES = {"user": "user", "assistant": "assistant", "tool": "assistant"}
_DAY_MS = 86_400_000
_SLICE = 256
"""Messages of a conversation read between two of ``read_conversations``' pauses."""



class Skipped(NamedTuple):
    """A conversation not imported: ``title`` (or its id, or ``#<index>``), ``reason`` (English, the
    detail, for logs and tests) and ``code``, what the status line says in the page's locale
    (``history.skipReason.<code>``: ``Unreadable.code`` or an ``ImportRefused.reason``)."""

    title: str
    reason: str
    code: str = "unreadable"


class Unreadable(ValueError):
    """Why one conversation cannot be read: ``code`` (``loop``, ``missing-node``, ``no-mapping``,
    ``no-message``, ``no-time``, ``times``, ``too-long``, ``unreadable``; each has its words, ``history.skipReason.<code>``) and the
    English detail as the message."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code


class Converted(NamedTuple):
    """The outcome: ``documents`` (one ``(meta, messages)`` per conversation, ``messages`` the slim
    projection), ``skipped`` (``Skipped`` per conversation that could not be read) and
    ``parts_as_text`` (how many non-text parts were kept as a text saying what they were),
    ``turns`` (each document's ``TurnMeta`` list, in the same order; empty lists when none are known)
    and ``trees`` (each document's ``(branches, shown)``: the rest of its tree in history's stored
    form, ``app.history.repository.Conversation``; ``([], {})`` for a conversation without branches)."""

    documents: list[tuple[TaskMeta, list[dict[str, Any]]]]
    skipped: list[Skipped]
    parts_as_text: int
    turns: list[list[TurnMeta]] = []
    trees: list[tuple[list[dict], dict[str, str]]] = []


_NODES_PER_SLICE = 2_000
"""Values (conversations, or nodes of a conversation's ``mapping``) decoded between two pauses."""


def _load_steps(text: str, name: str):
    """A conversations file's ``text`` (``name``: its file name, for the detail) decoded in slices:
    its depth checked (``depth_steps``), then its top-level array conversation by conversation and
    each conversation's ``mapping`` node by node, each value through ``json``'s own decoder, yielding
    every ``_NODES_PER_SLICE`` values (a 13 MB conversation was one task of ``json.loads``). A
    generator whose return value is the array; ``ImportRefused``: ``depth``, ``not-json``, ``format``
    (valid JSON, not an array)."""
    yield from depth_steps(text)
    at, items, count = skip_space(text, 0), [], [0]
    if not text.startswith("[", at):
        _whole(text, name)
        raise ImportRefused("format", f"{EXPECTED}: {name} is not an array")
    at = skip_space(text, at + 1)
    if text.startswith("]", at):
        at += 1
    else:
        while True:
            item, at = yield from _value_steps(text, at, name, count, "mapping")  # a conversation
            items.append(item)
            if text.startswith("]", at):
                at += 1
                break
            at = _next(text, at, name)
    if skip_space(text, at) != len(text):
        _whole(text, name)  # extra data after the array: json says so
    return items


def _whole(text: str, name: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as error:
        raise ImportRefused("not-json", f"{name}: {error}") from None


def _next(text: str, at: int, name: str) -> int:
    """Past the ``,`` between two values at ``text[at]``, or ``ImportRefused("not-json")``."""
    if not text.startswith(",", at):
        raise ImportRefused("not-json", f"{name}: ',' was expected at {at}")
    return skip_space(text, at + 1)


def _value_steps(text: str, at: int, name: str, count: list[int], split: str | None = None):
    """The JSON value at ``text[at]`` and the position after it and its spaces. With ``split``, an
    object is read key by key, and the value of key ``split`` (``*``: every value) the same way one
    level down; any other value whole. ``count[0]`` counts the values read: a pause every
    ``_NODES_PER_SLICE``."""
    count[0] += 1
    if count[0] % _NODES_PER_SLICE == 0:
        yield
    if split is None or not text.startswith("{", at):
        value, end = decode_at(text, at, name)
        return value, skip_space(text, end)
    value, at = {}, skip_space(text, at + 1)
    if text.startswith("}", at):
        return value, skip_space(text, at + 1)
    while True:
        key, at = decode_at(text, at, name)
        at = skip_space(text, at)
        if not isinstance(key, str) or not text.startswith(":", at):
            raise ImportRefused("not-json", f"{name}: a key and ':' were expected at {at}")
        inner = "*" if split != "*" and key == split else None
        value[key], at = yield from _value_steps(text, skip_space(text, at + 1), name, count, inner)
        if text.startswith("}", at):
            return value, skip_space(text, at + 1)
        at = _next(text, at, name)


def conversations_of(data: bytes) -> list[Any]:
    """``conversations_steps`` run to the end: the raw conversations of ``data``."""
    return run_steps(conversations_steps(data))


def conversations_steps(data: bytes):
    """The raw conversations of an export file's ``data`` (``conversations.json`` or the zip), as a
    generator that yields ``None`` between slices of decoding (``_load_steps``) and returns the list.

    Raises ``ImportRefused``: ``size`` (the file is over ``MAX_IMPORT_BYTES``), ``unpacked`` (a zip
    whose members to read unpack past ``MAX_IMPORT_BYTES``, counted by their declared size before any
    is read: a zip bomb guard), ``members`` (a zip, an empty one too, without ``conversations.json``
    or ``conversations-<n>.json``), ``not-json`` (not UTF-8 JSON), ``depth`` (nested deeper than any
    export) or ``format`` (not an array, or a damaged zip). A file opening with ``PK`` is a zip (no
    JSON text opens so): its local header (``PK\\3\\4``), or an empty zip's end record (``PK\\5\\6``).
    In a zip of several members, one that cannot be read (not JSON, not an array, damaged) while
    another can is in the list as a ``Skipped`` named by its file name (code ``not-json``,
    ``not-conversations``, ``depth`` or ``unreadable``); the file is refused only when none can be."""
    check_size(len(data))
    if data[:2] == b"PK":
        try:
            archive = zipfile.ZipFile(io.BytesIO(data))
            members = sorted((i for i in archive.infolist() if _MEMBER.match(i.filename)), key=lambda i: i.filename)
        except (zipfile.BadZipFile, ValueError, EOFError, OSError) as error:
            raise ImportRefused("format", f"{EXPECTED}: {error}") from None
        if not members:
            raise ImportRefused("members", "the zip holds no conversations.json nor conversations-<n>.json")
        unpacked = sum(i.file_size for i in members)
        if unpacked > export.MAX_IMPORT_BYTES:
            raise ImportRefused("unpacked", f"its conversations unpack to {unpacked} bytes")
        sources = [(i.filename, lambda i=i: _unpacked_steps(archive, i)) for i in members]
    else:
        sources = [("conversations.json", lambda: _as_is(data))]
    found: list[Any] = []
    refusals: list[ImportRefused] = []
    for name, raw in sources:
        try:
            found.extend((yield from _member(name, raw)))
        except ImportRefused as refused:
            if len(sources) == 1:
                raise
            refusals.append(refused)
            found.append(Skipped(name, str(refused), _MEMBER_CODES.get(refused.reason, "unreadable")))
    if len(refusals) == len(sources):  # no member could be read: the file is refused as the first was
        raise refusals[0]
    return found


_MEMBER_CODES = {"not-json": "not-json", "format": "not-conversations", "depth": "depth"}
"""A zip member's refusal (``ImportRefused.reason``) as the code its ``Skipped`` is named with."""


UNPACK_PIECE = 1 << 20
"""Bytes of a zip member unpacked between two pauses (``_unpacked_steps``)."""


def _unpacked_steps(archive: zipfile.ZipFile, info: zipfile.ZipInfo):
    """A zip member's bytes, unpacked ``UNPACK_PIECE`` at a time with a yield between pieces (a
    generator whose return value is the bytes): never more than its declared size, and never more
    than a piece in one step, also when its data unpack to far more than it declares (read whole,
    such a member was one long task of the page). Raises what ``zipfile`` raises (a bad checksum)."""
    pieces = []
    with archive.open(info) as stream:
        while piece := stream.read(UNPACK_PIECE):
            pieces.append(piece)
            yield
    return b"".join(pieces)


DECODE_PIECE = 1 << 20
"""Bytes of a conversations file decoded between two pauses (``utf8_steps``)."""


def utf8_steps(raw: bytes, piece: int = DECODE_PIECE):
    """``raw.decode("utf-8-sig")`` as a generator whose return value is the text: a yield first, then
    ``piece`` bytes (a few more or less) decoded between two yields, the pieces joined at the end (a
    12.7 MB file decoded whole was most of a task of 50-60 ms of thread CPU, DESIGN.md §14). A piece
    never ends inside a character: it ends before a byte that begins one (not ``0b10xxxxxx``), or at
    most 3 bytes past ``piece``. Raises the ``UnicodeDecodeError`` whole decoding raises, with the
    same position (counted after a byte order mark, as ``utf-8-sig`` counts it) and reason."""
    yield
    bom = 3 if raw.startswith(codecs.BOM_UTF8) else 0
    view, texts, at = memoryview(raw), [], bom
    while at < len(raw):
        end = min(at + max(piece, 1), len(raw))
        while end < len(raw) and end < at + max(piece, 1) + 3 and 0x80 <= raw[end] < 0xC0:
            end += 1
        try:
            texts.append(str(view[at:end], "utf-8"))
        except UnicodeDecodeError:  # the reason whole decoding gives: a sequence is at most 4 bytes
            try:
                str(view[at:end + 4], "utf-8")
            except UnicodeDecodeError as error:
                shift = at - bom
                raise UnicodeDecodeError(error.encoding, raw[bom:], error.start + shift, error.end + shift,
                                         error.reason) from None
        at = end
        yield
    return "".join(texts)


def _as_is(data: bytes):
    """``data`` as the return value of a generator of no steps (a file that is no zip)."""
    yield from ()
    return data


def _member(name: str, read: Callable[[], Any]):
    """The conversations of one file (``name``: its name in the zip; ``read()`` a generator of pauses
    whose return value is its bytes; then a generator of pauses, ``_load_steps``, whose return value
    is the list), or ``ImportRefused`` (``format`` for a member the zip cannot give back: damaged, a
    bad checksum)."""
    try:
        raw = yield from read()
    except (zipfile.BadZipFile, ValueError, EOFError, OSError, NotImplementedError) as error:
        raise ImportRefused("format", f"{name}: {error}") from None
    try:
        text = yield from utf8_steps(raw)
    except UnicodeDecodeError as error:
        raise ImportRefused("not-json", f"{name}: {error}") from None
    return (yield from _load_steps(text, name))


def thread_path(mapping: dict[str, Any], current_node: str) -> list[dict[str, Any]]:
    """The nodes from the root down to ``current_node``, following ``parent`` links (the branch
    ChatGPT showed last). Raises ``ValueError`` if ``current_node`` or a parent is missing from
    ``mapping``, or the links loop."""
    path, seen, at = [], set(), current_node
    while at is not None:
        if at in seen:
            raise Unreadable("loop", "the mapping's parent links loop")
        node = mapping.get(at) if isinstance(at, str) else None
        if not isinstance(node, dict):
            raise Unreadable("missing-node", f"node {at!r} is missing from the mapping")
        seen.add(at)
        path.append(node)
        at = node.get("parent")
    return path[::-1]


def _stand_in(kind: Any) -> str:
    """The text a part or content of ``kind`` (its ``content_type``) is kept as: ``[image]``,
    ``[audio]``, ``[<content type>]``; ``""`` (passed over) when it names no kind, as a part of the
    wrong type (null, a number, a list, an object without a content type) does: what the export
    does not say is never named by a guess."""
    if not isinstance(kind, str) or not kind.strip():
        return ""
    if kind.startswith("image"):
        return "[image]"
    return "[audio]" if kind.startswith("audio") else f"[{kind}]"


def _part_text(part: Any) -> tuple[str, bool]:
    """One content part as ``(text, is_a_stand_in)``; ``("", …)`` for a part passed over."""
    if isinstance(part, str):
        return part, False
    if not isinstance(part, dict):
        return "", False
    if isinstance(part.get("text"), str):  # an audio transcription, for one
        return part["text"], False
    return _stand_in(part.get("content_type")), True


def _texts(content: dict[str, Any]) -> tuple[list[str], int]:
    """The texts of a message's ``content`` and how many are stand-ins for non-text parts (a part
    or content that names no kind is passed over, ``_stand_in``). ``Unreadable("unreadable")`` for
    ``parts`` that are there but no list (an object, a number, a string): what the message said
    cannot be read, and its conversation is named as unreadable, never imported without it
    (DESIGN.md §14: nothing dropped silently)."""
    parts = content.get("parts")
    if parts is not None and not isinstance(parts, list):
        raise Unreadable("unreadable", f"a message's parts are a {type(parts).__name__}, not a list")
    if isinstance(parts, list):
        pairs = [_part_text(p) for p in parts]
    elif isinstance(content.get("text"), str):  # code, execution_output, tether_quote…
        pairs = [(content["text"], False)]
    elif isinstance(content.get("result"), str):
        pairs = [(content["result"], False)]
    else:
        pairs = [(_stand_in(content.get("content_type")), True)]
    kept = [(text, stand_in) for text, stand_in in pairs if text.strip()]
    return [text for text, _ in kept], sum(stand_in for _, stand_in in kept)


def _visible(message: Any) -> bool:
    if not isinstance(message, dict):
        return False
    role = (message.get("author") or {}).get("role")
    content = message.get("content")
    metadata = message.get("metadata") or {}
    return (role in _ROLES and isinstance(content, dict) and content.get("content_type") not in _HIDDEN_TYPES
            and not (isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation")))


def _ms(seconds: Any) -> int | None:
    """A time of the export (epoch seconds) in epoch ms; ``None`` when it is missing (absent or
    null). ``Unreadable("times")`` for one that is no number (``NaN``, ``Infinity``, a string…):
    refused as a time out of range is, never replaced by another (DESIGN.md §14)."""
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
        raise Unreadable("times", f"a time that is no number: {seconds!r:.40}")
    return round(seconds * 1000)


def _task_name(raw: dict[str, Any], slim: list[dict[str, Any]]) -> str:
    """The conversation's title: the export's ``title`` when it is text that is not blank; else
    (absent, or a number or any other value) the rule of every title, its first question (DESIGN.md
    §9; cut to its clusters where history keeps it, ``HistoryService.import_bundle``)."""
    title = raw.get("title")
    if isinstance(title, str) and title.strip():
        return title
    return first_user_text(slim, TITLE_GRAPHEMES * 8) or ""


def _title(raw: Any, index: int) -> str:
    """How a conversation that cannot be read is named in ``Skipped``: its title, else its id, else
    ``#<index + 1>``."""
    if isinstance(raw, dict):
        for key in ("title", "id", "conversation_id"):
            if isinstance(raw.get(key), str) and raw[key].strip():
                return raw[key]
    return f"#{index + 1}"


class _Said(NamedTuple):
    """One message as read: its role here, ``create_time`` (epoch ms or None) and model slug."""

    role: str
    moment: int | None
    model: str


def _turns(said: list[_Said], parents: list[int | None], ids: list[str], updated: int, default_model: str):
    """The turn metas (DESIGN.md §9 per-turn meta) of a conversation's messages, on every branch
    (§17: stats count every turn): ``said[i]`` is message ``i`` (in the order made, parents first),
    ``parents[i]`` the index of its parent (None at the top), ``ids[i]`` its id. A turn is a user
    message and the run of replies under it, closed at a reply that has no child or a child that is
    a user message (a regenerated reply is a turn of its own); its ``messageId`` is that last reply.
    ChatGPT's export has no token counts: ``usage`` is ``None`` ("not reported", never zeros);
    ``duration`` is from the question's ``create_time`` to its last reply's (0 when either is missing
    or they are out of order or past ``updated``); ``model`` the replies' ``model_slug``, else the
    conversation's ``default_model_slug``; ``timestamp`` the last reply's time, else (missing, or
    past ``updated``) ``updated``. A generator that yields every ``_SLICE`` messages, returning the
    records as an export holds them, in the order of their last replies."""
    children: dict[int, list[int]] = {}
    for i, parent in enumerate(parents):
        if parent is not None:
            children.setdefault(parent, []).append(i)
    turns: list[dict[str, Any]] = []
    for at, one in enumerate(said):
        if at % _SLICE == _SLICE - 1:
            yield
        kids = children.get(at, [])
        if one.role == "user" or (kids and all(said[k].role != "user" for k in kids)):
            continue
        replies, up = [one], parents[at]
        while up is not None and said[up].role != "user":
            replies.append(said[up])
            up = parents[up]
        if up is None:  # replies before any question: no turn
            continue
        asked, end = said[up], one.moment
        start = asked.moment
        known = end is not None and start is not None and 0 <= start <= end <= updated
        moment = end if end is not None and 0 <= end <= updated else updated
        model = next((r.model for r in replies if r.model), default_model)
        turns.append({"turnId": len(turns) + 1, "timestamp": iso(moment), "usage": None, "model": model,
                      "duration": end - start if known else 0, "messageId": ids[at]})
    return turns


def _model_slug(message: dict[str, Any]) -> str:
    metadata = message.get("metadata")
    slug = metadata.get("model_slug") if isinstance(metadata, dict) else None
    return slug if isinstance(slug, str) else ""


def _when(ms: int) -> str:
    """``ms`` as ISO 8601 for a reason's words, or as a number when no calendar holds it."""
    try:
        return iso(ms)
    except (ValueError, OverflowError, OSError):
        return f"{ms} ms"


def _made_order(mapping: dict[str, Any]):
    """The keys of ``mapping``'s nodes from each root down, parents before children, siblings in the
    order of their parent's ``children`` (then of the mapping), each with the key of its parent
    (None for a root): a node whose ``parent`` names no node of the mapping, and every node under it
    or in a loop of links, is never reached. A generator that first yields ``None`` once the links
    are read (a step of its own: a mapping of thousands of nodes)."""
    roots, children = [], {}
    for key, node in mapping.items():
        if not isinstance(node, dict):
            continue
        parent = node.get("parent")
        if parent is None:
            roots.append(key)
        elif isinstance(parent, str) and isinstance(mapping.get(parent), dict):
            children.setdefault(parent, []).append(key)
    for parent, kids in children.items():
        listed = mapping[parent].get("children")
        if isinstance(listed, list):
            rank = {k: n for n, k in reversed(list(enumerate(listed))) if isinstance(k, str)}
            kids.sort(key=lambda k: rank.get(k, len(rank)))
    yield None
    stack, seen = [(key, None) for key in reversed(roots)], set()
    while stack:
        key, parent = stack.pop()
        if key in seen:
            continue
        seen.add(key)
        yield key, parent
        stack.extend((kid, key) for kid in reversed(children.get(key, ())))


def _read_tree(mapping: dict[str, Any], current: Any):
    """The visible messages of every branch of ``mapping`` (``_made_order``), as a generator that
    yields between slices of ``_SLICE`` nodes; returns ``(messages, parents, on_path, said,
    parts_as_text)``: ``messages[i]`` (its id the node's key), the index of its parent (the nearest
    visible ancestor; None at the top), whether it lies on ``current``'s path (the shown path,
    ``thread_path``, whose ``Unreadable`` it raises) and what was said. Raises
    ``Unreadable("too-long")`` as soon as the texts of all branches pass ``MAX_CONVERSATION_CHARS``,
    before any message is built."""
    from app.model import Message, TextPart

    thread_path(mapping, current)  # the shown path's links: a missing node or a loop refuses it
    on_path, at = set(), current
    while at is not None:
        on_path.add(at)
        at = mapping[at].get("parent")
    yield
    order = _made_order(mapping)
    next(order)  # the links read
    yield
    found, chars, kept = [], 0, {}
    for count, (key, parent) in enumerate(order):
        if count % _SLICE == _SLICE - 1:
            yield
        kept[key] = kept.get(parent) if parent is not None else None  # the nearest visible ancestor
        message = mapping[key].get("message")
        if not _visible(message):
            continue
        texts, stand_ins = _texts(message["content"])
        chars += sum(len(text) for text in texts)
        if chars > MAX_CONVERSATION_CHARS:
            raise Unreadable("too-long", f"its text passes {MAX_CONVERSATION_CHARS} characters")
        if texts:
            found.append((key, kept[key], message, texts, stand_ins))
            kept[key] = len(found) - 1
    messages, said = [], []
    for at, (key, _, message, texts, _) in enumerate(found):
        if at % _SLICE == _SLICE - 1:
            yield
        role = _ROLES[message["author"]["role"]]
        messages.append(Message(id=key, role=role, content=[TextPart(text=t) for t in texts]))
        said.append(_Said(role, _ms(message.get("create_time")), _model_slug(message)))
    return (messages, [parent for _, parent, _, _, _ in found], [key in on_path for key, *_ in found], said,
            sum(stand_ins for *_, stand_ins in found))


def _times(raw: dict[str, Any], said: list[_Said], now_ms: int) -> tuple[int, int]:
    """``(created, updated)`` of a conversation (epoch ms), or ``Unreadable`` (``no-time``, ``times``:
    out of order, before 1970, past any calendar or more than a day after ``now_ms``)."""
    times = [one.moment for one in said if one.moment is not None]
    created = _ms(raw.get("create_time"))
    created = created if created is not None else min(times, default=None)
    updated = _ms(raw.get("update_time"))
    updated = updated if updated is not None else max(times, default=created)
    if created is None or updated is None:
        raise Unreadable("no-time", "no time in the conversation or its messages")
    if not 0 <= created <= updated <= now_ms + _DAY_MS:
        raise Unreadable("times", f"times out of order or in the future: {_when(created)} .. {_when(updated)}")
    return created, updated


def _convert(raw: Any, index: int, stage_id: str, now_ms: int):
    """One conversation to ``(meta, messages, turns, parts_as_text, branches, shown)`` (``messages``
    the shown path; ``branches`` and ``shown`` the rest of the tree, history's stored form), as a
    generator that yields between slices of work (its return value); ``ValueError`` says why it
    cannot be."""
    from app.history.export import parse_steps
    from app.projection import serialize_thread

    if not isinstance(raw, dict) or not isinstance(raw.get("mapping"), dict):
        raise Unreadable("no-mapping", "not a conversation with a mapping")
    messages, parents, on_path, said, stand_ins = yield from _read_tree(raw["mapping"], raw.get("current_node"))
    if not messages:
        raise Unreadable("no-message", "no message to show")
    created, updated = _times(raw, said, now_ms)
    slim: list[dict[str, Any]] = []
    for start in range(0, len(messages), _SLICE):  # the slim projection is per message
        slim += serialize_thread(messages[start:start + _SLICE])
        yield
    ids = [m["id"] for m in slim]
    path = [{k: v for k, v in m.items() if k != "id"} for m, shown in zip(slim, on_path) if shown]
    source = raw.get("id") or raw.get("conversation_id")
    if not isinstance(source, str) or not source:  # no id: what its shown path holds names it (two such are two)
        source = "content:" + json.dumps([raw.get("title"), created, path], sort_keys=True)
    digest = hashlib.sha256(f"chatgpt:{source}".encode("utf-8", "surrogatepass")).digest()
    meta = {"taskId": new_task_id(created, lambda n: digest[:n]), "taskName": _task_name(raw, path or slim),
            "stageId": stage_id, "createdAt": iso(created), "updatedAt": iso(updated), "stats": {}}
    default_model = raw.get("default_model_slug") if isinstance(raw.get("default_model_slug"), str) else ""
    shown = {("" if parent is None else ids[parent]): ids[at]  # current_node's path, chosen at each fork
             for at, parent in enumerate(parents) if on_path[at]}
    every = [{**m, "parentId": None if parent is None else ids[parent]} for m, parent in zip(slim, parents)]
    yield
    document = {"format": "agentbar-conversation", "version": 2, "meta": meta, "messages": every,
                "shown": shown, "turns": (yield from _turns(said, parents, ids, updated, default_model))}
    yield
    checked = yield from parse_steps(json.dumps(document, ensure_ascii=False), now_ms, depth_checked=True)
    return checked.meta, checked.messages, checked.turns, stand_ins, checked.branches, checked.shown


def read_conversations(conversations: list[Any], stage_id: str, now_ms: int):
    """Each raw conversation (``conversations_of``) read in turn: a generator of ``(meta, messages,
    turns, parts_as_text, branches, shown)`` for one that becomes a document (``_convert``; ``turns``:
    its ``TurnMeta``s, one per user→assistant turn on every branch, ``_turns``), ``Skipped`` for one
    that cannot be (any error reading it: its reason, never the whole import's failure; a ``Skipped``
    among ``conversations`` is passed on), and
    ``None`` between slices of a conversation's work (a caller gives the page its turn there,
    DESIGN.md §14: no long task, even for a conversation of thousands of turns)."""
    for index, raw in enumerate(conversations):
        if isinstance(raw, Skipped):
            yield raw
            continue
        try:
            converted = yield from _convert(raw, index, stage_id, now_ms)
        except Exception as error:  # noqa: BLE001 - a conversation that cannot be read is named, never fatal
            yield Skipped(_title(raw, index), _first_line(error), _code_of(error))
            continue
        yield converted


def _code_of(error: Exception) -> str:
    """The ``Skipped.code`` of why a conversation could not be read."""
    if isinstance(error, Unreadable):
        return error.code
    if isinstance(error, ImportRefused):
        return error.reason
    return "times" if isinstance(error, OverflowError) else "unreadable"


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def import_chatgpt(data: bytes, stage_id: str, now_ms: int) -> Converted:
    """Read a ChatGPT export (``data``: the bytes of ``conversations.json`` or of the export zip) as
    conversations of course ``stage_id``; ``now_ms``: the importing machine's clock (epoch ms), which
    no time may pass by more than a day. Raises ``ImportRefused`` for a file that is not such an
    export (``conversations_of``); a conversation that cannot be read is in ``skipped``."""
    documents, skipped, stand_ins, turns, trees = [], [], 0, [], []
    for read in read_conversations(conversations_of(data), stage_id, now_ms):
        if read is None:  # a pause between slices: nothing to give back here
            continue
        if isinstance(read, Skipped):
            skipped.append(read)
        else:
            documents.append(read[:2])
            turns.append(read[2])
            stand_ins += read[3]
            trees.append((read[4], read[5]))
    return Converted(documents, skipped, stand_ins, turns, trees)
