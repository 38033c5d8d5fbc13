"""The turns of a thread that history adopts without their meta (DESIGN.md §9: a thread only in
``maic-agent-threads`` is adopted: the TS original's value, a history that was wiped, start-up's
reconciliation; §14: the original's value imported).

Such a thread has no per-turn meta, but its turns ran: each user message answered by the assistant
is one turn (the replies up to the next user message are one turn), whose tokens were not reported
(``usage`` ``None``, said "tokens not reported", never "0 tokens", as ChatGPT's import says them).
Its times are the thread's: ``updatedAt``, or a message's ``createdAt`` where the thread kept one
(epoch ms or ISO 8601; the slim projection keeps none, the TS original's messages may).
"""

from __future__ import annotations

from typing import Any

from app.history.records import TaskMeta, TurnMeta, iso, parse_iso

__all__ = ["adopted_meta", "thread_turns"]


def _created(message: dict[str, Any], at_most: int) -> int | None:
    """A message's ``createdAt`` in epoch ms (a number, or ISO 8601), or None when it has none that
    can be read or it is outside 0..``at_most``."""
    value = message.get("createdAt")
    try:
        ms = parse_iso(value) if isinstance(value, str) else value
    except ValueError:
        return None
    if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not 0 <= ms <= at_most:
        return None
    return int(ms)


def thread_turns(messages: list[dict[str, Any]], updated_at: int) -> list[TurnMeta]:
    """One ``TurnMeta`` per user message of ``messages`` (slim) answered by the assistant, numbered
    from 1: ``usage`` None (not reported), ``model`` "" (unknown), ``timestamp`` its last reply's
    ``createdAt``, else ``updated_at`` (epoch ms, the thread's ``updatedAt``); ``duration`` from the
    question's ``createdAt`` to the last reply's when both are known, else 0. A reply before any
    question and a question without a reply are no turn."""
    turns: list[TurnMeta] = []
    asked: int | None = None
    replies: list[dict[str, Any]] = []
    started = False

    def close() -> None:
        if not started or not replies:
            return
        end = _created(replies[-1], updated_at)
        duration = end - asked if end is not None and asked is not None and asked <= end else 0
        turns.append(TurnMeta(turnId=len(turns) + 1, timestamp=iso(end if end is not None else updated_at),
                              usage=None, model="", duration=duration))

    for message in messages:
        if message.get("role") == "user":
            close()
            started, asked, replies = True, _created(message, updated_at), []
        elif message.get("role") == "assistant":
            replies.append(message)
    close()
    return turns


def adopted_meta(task_id: str, stage_id: str, title: str, messages: list[dict[str, Any]],
                 updated_at: int) -> tuple[TaskMeta, list[TurnMeta]]:
    """``(meta, turns)`` of ``messages`` adopted as conversation ``task_id`` of ``stage_id`` titled
    ``title``: ``turns`` by ``thread_turns``; ``turnCount`` and ``durationMs`` say them, token counts
    stay 0 (not reported); ``updatedAt`` is ``updated_at`` (epoch ms), ``createdAt`` the first
    message's ``createdAt`` where known, else ``updated_at``."""
    turns = thread_turns(messages, updated_at)
    known = [ms for ms in (_created(m, updated_at) for m in messages) if ms is not None]
    meta = TaskMeta(taskId=task_id, taskName=title, stageId=stage_id, createdAt=min(known, default=updated_at),
                    updatedAt=updated_at, turnCount=len(turns), durationMs=sum(t.duration for t in turns))
    return meta, turns
