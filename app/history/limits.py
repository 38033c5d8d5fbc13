"""The limits every way a conversation comes in is held to (DESIGN.md §14: one set of limits for
the JSON import, the ``maic-agent-threads`` value, ChatGPT's export, sync intake and a backup's
restore, ``app.backup.format.plan_merge``).

A conversation holds at most ``MAX_CONVERSATION_CHARS`` characters of text, counted as
``text_chars`` counts them: the length of its searchable text (``app.history.text.plain_text``),
every text part one per line. One past it is refused (``too-long``) before anything is written.

Example::

    >>> text_chars([{"role": "user", "content": [{"type": "text", "text": "hi"}]},
    ...             {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}])
    5
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.projection import is_status_marker

__all__ = ["MAX_CONVERSATION_CHARS", "text_chars"]

MAX_CONVERSATION_CHARS = 2_000_000
"""The most text (characters, all its messages together) a conversation may hold to be imported or
taken in by sync; one past it is refused as ``too-long`` (the copies an import makes of a 40 M
character message ran the page out of memory after a long freeze)."""


def text_chars(messages: Sequence[Any]) -> int:
    """``len(app.history.text.plain_text(messages))`` of slim ``messages``, counted without building
    the text: the length of every text part (a reply's status marker left out) plus one newline
    between two of them."""
    total = parts = 0
    for message in messages:
        for part in message.get("content") or [] if isinstance(message, dict) else []:
            if (isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
                    and not is_status_marker(part)):
                total += len(part["text"])
                parts += 1
    return total + max(parts - 1, 0)
