"""Import of the TS original's ``maic-agent-threads`` value into history (DESIGN.md §14, "Import from
other tools"; the value's shape: DESIGN.md §3, seed agentbar-thread-persistence.md).

The value is zustand-persist's envelope ``{"state": {"threads": {<stageId>: {"messages": [...],
"updatedAt": <epoch ms>}}}, "version": <n>}``, read exactly as the store reads its own
(``app.store.decode``: migrated, each thread validated, invalid messages and parts dropped as the
slim projection drops them). Each thread with a message becomes one conversation of its own course
(the value's key: a user of the original finds each course's conversation where it was), titled by
its first user text and dated by its ``updatedAt``; its turns are counted as an adopted thread's
(``app.history.adopted.thread_turns``: one per answered question, tokens not reported). Its task id is derived from the course and the
thread's content, so the same value imported twice adds nothing the second time. A thread that cannot
be read, or has no message, is named in ``skipped``; a value of another shape raises
``ImportRefused("format")``.
"""

from __future__ import annotations

import hashlib
import json
import re
from app.history.adopted import thread_turns
from app.history.chatgpt import Converted, Skipped
from app.history.export import ImportRefused, check_depth, parse_export
from app.history.records import iso, new_task_id
from app.history.text import first_user_text
from app.store.decode import decode, validate_thread

__all__ = ["EXPECTED", "looks_original", "read_original"]

EXPECTED = 'the maic-agent-threads value ({"state":{"threads":{…}},"version":…})'
"""What a refused value was expected to be (the ``ImportRefused("format")`` detail)."""

_DAY_MS = 86_400_000


def _envelope_like(text: str) -> bool:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and isinstance(value.get("state"), dict) and "threads" in value["state"]


def read_original(text: str, now_ms: int) -> Converted:
    """The threads of a ``maic-agent-threads`` value ``text`` as history documents (``Converted``'s
    shape: ``documents`` of ``(meta, messages)``, each ``meta.stageId`` its course; ``skipped``;
    ``parts_as_text`` always 0; ``turns``: each document's ``TurnMeta`` list). ``now_ms``: the importing machine's clock (epoch ms), which no
    ``updatedAt`` may pass by more than a day. Raises ``ImportRefused``: ``depth`` (nested
    deeper than any such value) or ``format`` (not such an envelope)."""
    check_depth(text)
    if not _envelope_like(text):
        raise ImportRefused("format", EXPECTED)
    _, threads, _ = decode(text)
    if threads is None:
        raise ImportRefused("format", EXPECTED)
    documents, skipped, turns = [], [], []
    for stage_id, raw in threads.items():
        thread, _ = validate_thread(raw)
        if thread is None or not thread.messages:
            skipped.append(Skipped(stage_id, "no message that can be read", "no-message"))
            continue
        updated = thread.updated_at if 0 < thread.updated_at <= now_ms + _DAY_MS else now_ms
        digest = hashlib.sha256(json.dumps([stage_id, thread.messages], sort_keys=True).encode()).digest()
        meta = {"taskId": new_task_id(updated, lambda n: digest[:n]),
                "taskName": first_user_text(thread.messages) or "", "stageId": stage_id,
                "createdAt": iso(updated), "updatedAt": iso(updated), "stats": {}}
        document = {"format": "agentbar-conversation", "version": 1, "meta": meta, "messages": thread.messages,
                    "turns": [t.record() for t in thread_turns(thread.messages, updated)]}
        try:
            checked, messages, kept = parse_export(json.dumps(document, ensure_ascii=False), now_ms)
        except ImportRefused as refused:
            skipped.append(Skipped(stage_id, str(refused), refused.reason))
            continue
        documents.append((checked, messages))
        turns.append(kept)
    return Converted(documents, skipped, 0, turns)


_OPENING = re.compile(r'\s*\{\s*(?:"version"\s*:\s*-?\d+\s*,\s*)?"state"\s*:')


OPENING_CHARS = 200
"""Characters of a file's opening ``looks_original`` looks at."""


def looks_original(text: str) -> bool:
    """True when ``text`` opens as the ``maic-agent-threads`` envelope does (``{"state":`` first,
    or after ``"version"``): the "Import JSON" control reads it with ``read_original`` instead of as
    a conversation export. Only the opening is looked at (a big file is not decoded twice)."""
    return _OPENING.match(text[:OPENING_CHARS]) is not None


class ReadCheck:
    """The "Import JSON" file's check while it is read (DESIGN.md §14), fed its decoded pieces in
    order (``each(piece, last)``): once its opening tells (``OPENING_CHARS``, or the whole file when
    shorter), a conversation export's pieces go through ``PieceCheck`` (``depth_steps``' refusals,
    ``depth`` and ``too-long`` at ``MAX_CONVERSATION_CHARS``, raised as ``ImportRefused`` before the
    pieces are joined); a ``maic-agent-threads`` value is left to ``read_original`` (a thread past the
    limit is skipped there, not the file refused). ``checked``: the text was an export, all checked."""

    def __init__(self) -> None:
        from app.history.export import PieceCheck
        from app.history.limits import MAX_CONVERSATION_CHARS

        self._check = PieceCheck(MAX_CONVERSATION_CHARS)
        self._head, self._held = "", []
        self._export: bool | None = None  # None: the opening does not tell yet
        self.checked = False

    def each(self, piece: str, last: bool) -> None:
        """The text's next decoded ``piece`` (``last``: the final one). Raises ``ImportRefused``."""
        pieces = [piece]
        if self._export is None:
            self._held.append(piece)
            self._head += piece[:OPENING_CHARS]
            if len(self._head) < OPENING_CHARS and not last:
                return
            self._export = not looks_original(self._head)
            pieces, self._held = self._held, []
        if self._export:
            for held in pieces:
                self._check.feed(held)
            if last:
                self._check.end()
                self.checked = True
