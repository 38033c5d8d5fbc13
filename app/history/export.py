"""Export and import of one conversation (DESIGN.md §9, seed §9.3).

JSON: ``{"format":"agentbar-conversation","version":1,"meta":{…},"messages":[…],"turns":[…]}``
with ``meta`` = ``{taskId, taskName, stageId, createdAt, updatedAt, stats}``
(times ISO 8601 UTC with milliseconds), ``messages`` the slim projection (§3)
unchanged, ``turns`` the per-turn meta. ``import_json(export_json(x))`` gives
back ``x`` exactly. ``parse_export`` refuses (``ImportRefused`` with a
``reason`` code) anything else: not JSON, another format, another version,
a bad meta or turn, messages that are not the slim projection.

Markdown: a heading, the meta, then each message under "You"/"Assistant";
text verbatim; each tool call as JSON in a fenced block whose backtick fence is
longer than any backtick run inside it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from app.history.records import Stats, TaskMeta, TurnMeta, iso, parse_iso
from app.projection import CUT_MARKER, failure_of

__all__ = ["FORMAT", "VERSION", "ImportRefused", "export_json", "export_unkept", "export_markdown", "fence_for", "parse_export"]

FORMAT = "agentbar-conversation"
VERSION = 1
_BACKTICKS = re.compile("`+")


class ImportRefused(ValueError):
    """A file that is not an AgentBar conversation export; ``reason``: ``not-json`` | ``format`` |
    ``version`` | ``meta`` | ``messages`` | ``turns``."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


def _meta_out(meta: TaskMeta) -> dict[str, Any]:
    return {"taskId": meta.taskId, "taskName": meta.taskName, "stageId": meta.stageId,
            "createdAt": iso(meta.createdAt), "updatedAt": iso(meta.updatedAt), "stats": meta.stats.model_dump()}


def export_json(meta: TaskMeta, messages: list[dict[str, Any]], turns: list[TurnMeta]) -> str:
    """The JSON export (compact, non-ASCII written as is)."""
    document = {"format": FORMAT, "version": VERSION, "meta": _meta_out(meta), "messages": messages,
                "turns": [t.record() for t in turns]}
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


def export_unkept(stage_id: str, messages: list[dict[str, Any]], now_ms: int, random_bytes=None) -> tuple[str, str]:
    """The JSON export of a thread that history cannot keep (IndexedDB unusable, DESIGN.md §5): the
    user downloads it before New conversation discards it, and can import it later. Its meta is made
    here: a new task id, the thread's title (``title_of``: the grapheme segmenter must be importable
    when the title needs it), ``createdAt`` = ``updatedAt`` = ``now_ms``, no turn meta (none is kept).
    Returns ``(taskId, json text)``; ``parse_export`` reads it back with ``messages`` unchanged."""
    import os

    from app.history.records import new_task_id
    from app.history.text import title_of

    meta = TaskMeta(taskId=new_task_id(now_ms, random_bytes or os.urandom), taskName=title_of(messages) or "",
                    stageId=stage_id, createdAt=now_ms, updatedAt=now_ms)
    return meta.taskId, export_json(meta, messages, [])


MAX_DEPTH = 64
"""Deepest nesting an import may have (an export needs under 15; the store's limit too, DESIGN.md §5)."""

_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(r"[\[\]{}]")


def _deeper_than(text: str, limit: int) -> bool:
    """True when the JSON ``text`` nests arrays/objects deeper than ``limit`` (strings skipped)."""
    depth = 0
    for match in _BRACKET.finditer(_JSON_STRING.sub("", text)):
        depth += 1 if match.group() in "[{" else -1
        if depth > limit:
            return True
    return False


def parse_export(text: str) -> tuple[TaskMeta, list[dict[str, Any]], list[TurnMeta]]:
    """Validate an export; returns (meta, messages, turns). Raises ``ImportRefused``."""
    from app.projection import deserialize_thread, serialize_thread

    if _deeper_than(text, MAX_DEPTH):  # json.loads would exhaust the browser's stack and kill Pyodide
        raise ImportRefused("not-json", f"nested deeper than {MAX_DEPTH} levels")
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise ImportRefused("not-json", str(error)) from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ImportRefused("format")
    if document.get("version") != VERSION or type(document.get("version")) is not int:
        raise ImportRefused("version", repr(document.get("version")))
    raw_meta, messages, raw_turns = document.get("meta"), document.get("messages"), document.get("turns")
    try:
        if not isinstance(raw_meta, dict):
            raise ValueError("meta is not an object")
        meta = TaskMeta.model_validate({**raw_meta, "createdAt": parse_iso(raw_meta.get("createdAt", "")),
                                        "updatedAt": parse_iso(raw_meta.get("updatedAt", "")),
                                        "stats": Stats.model_validate(raw_meta.get("stats", {})).model_dump()})
    except (ValueError, ValidationError, TypeError) as error:
        raise ImportRefused("meta", str(error).splitlines()[0]) from None
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise ImportRefused("messages", "not a list of messages")
    try:
        if serialize_thread(deserialize_thread(messages)) != messages:
            raise ValueError("not the slim projection")
    except Exception as error:  # noqa: BLE001 - any shape problem refuses the file
        raise ImportRefused("messages", str(error).splitlines()[0] if str(error) else type(error).__name__) from None
    if not isinstance(raw_turns, list):
        raise ImportRefused("turns", "not a list")
    try:
        turns = [TurnMeta.model_validate(t) for t in raw_turns]
    except ValidationError as error:
        raise ImportRefused("turns", str(error).splitlines()[0]) from None
    meta = meta.model_copy(update={"turnCount": len(turns), "durationMs": sum(t.duration for t in turns)})
    return meta, messages, turns


def fence_for(text: str) -> str:
    """A backtick fence longer than any backtick run in ``text`` (at least three)."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    return "`" * max(3, longest + 1)


def export_markdown(meta: TaskMeta, messages: list[dict[str, Any]], turns: list[TurnMeta], labels: dict[str, str],
                    describe_failure: Callable[[dict[str, Any]], str] = lambda error: str(error["code"])) -> str:
    """Markdown of one conversation; ``labels``: ``you``, ``assistant``, ``tool``, ``meta`` (a line
    with ``{created}``, ``{updated}`` and, if still there, ``{turns}``, ``{tokens}`` placeholders: the
    page phrases the counts with their plural forms beforehand, ``app.history.labels.markdown_meta``).
    A failed reply's marker part (``app.projection.failure_of``) is written as a quoted line of
    ``describe_failure(error)`` (the page passes the panel's localized ``turn-error`` text); a cut
    reply's marker (``app.projection.CUT_MARKER``) as a quoted line of ``labels["cut"]`` (the panel's
    ``turn-cut`` text)."""
    lines = [f"# {meta.taskName}", "",
             labels["meta"].format(created=iso(meta.createdAt), updated=iso(meta.updatedAt),
                                   turns=meta.turnCount, tokens=meta.stats.totalTokens), ""]
    for message in messages:
        lines += [f"## {labels['you'] if message.get('role') == 'user' else labels['assistant']}", ""]
        for part in message.get("content") or []:
            if (failure := failure_of(part)) is not None:
                lines += [f"> ⚠ {describe_failure(failure)}", ""]
            elif part == CUT_MARKER:
                lines += [f"> ✂ {labels.get('cut', 'cut')}", ""]
            elif part.get("type") == "text":
                lines += [part.get("text", ""), ""]
            else:
                body = json.dumps(part, ensure_ascii=False, indent=2)
                fence = fence_for(body)
                lines += [f"{labels['tool']}: {part.get('toolName', 'tool')}", "", f"{fence}json", body, fence, ""]
    return "\n".join(lines)
