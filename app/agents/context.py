"""A conversation that outgrows the server's context (DESIGN.md §12, "What real servers do").

A prompt over the server's context size is refused before anything streams,
as HTTP 400 (413 on some proxies), in each server's own words:

- llama.cpp: ``request (17541 tokens) exceeds the available context size
  (2048 tokens)``, type ``exceed_context_size_error``, with ``n_prompt_tokens``
  and ``n_ctx`` beside the message;
- OpenAI: code ``context_length_exceeded``, "This model's maximum context
  length is 8192 tokens. However, your messages resulted in 9000 tokens.";
- vLLM: "This model's maximum context length is 2048 tokens. However, you
  requested 2100 tokens (1800 in the messages, 300 in the completion)."

``context_overflow(status, body)`` recognizes these (``None`` for any other
answer) and reads the two numbers when the server gives them.
``turns_that_fit(turns, overflow, fixed)`` says how many of the newest past
turns to send once more: the request's share that fits (80 % of context /
prompt, leaving room for the reply; half when the server gave no numbers),
measured in characters of the JSON sent, minus what is always sent (system
prompt, the new message, the tools), and always at least one turn fewer than
before. The agent retries once per turn and says in the turn meta how many
earlier turns it left out; a conversation never becomes unanswerable because
it grew.

Example::

    >>> overflow = context_overflow(400, '{"error":{"message":"request (3000 tokens) exceeds the available '
    ...                                  'context size (1024 tokens)","n_prompt_tokens":3000,"n_ctx":1024}}')
    >>> overflow.prompt_tokens, overflow.context_tokens
    (3000, 1024)
    >>> turns = [[{"role": "user", "content": "x" * 100}, {"role": "assistant", "content": "y" * 100}]] * 6
    >>> turns_that_fit(turns, overflow, [{"role": "user", "content": "now"}])
    1
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ContextOverflow", "context_overflow", "turns_that_fit"]

_MARKERS = ("exceeds the available context size", "exceed_context_size_error", "context_length_exceeded",
            "maximum context length")
"""Lower-case phrases by which llama.cpp, OpenAI and vLLM say the prompt is over the context size."""

_CONTEXT = re.compile(r"(?:context size \(|context length is )(\d+)")
_PROMPT = re.compile(r"(?:request \(|resulted in |\()(\d+)(?: tokens| in the messages)")

SAFETY = 0.8
"""Share of the server's context the retry aims at (the rest is left for the reply and for the
characters-per-token estimate being off)."""

SHARE_WITHOUT_NUMBERS = 0.5
"""Share of the request kept when the server did not say its sizes."""


@dataclass(frozen=True)
class ContextOverflow:
    """The server refused the prompt as over its context. ``prompt_tokens``, ``context_tokens``: its
    sizes when it said them (``None`` otherwise); ``message``: its own words (for the turn's error)."""

    prompt_tokens: int | None = None
    context_tokens: int | None = None
    message: str = ""

    @property
    def share(self) -> float:
        """Fraction (0–1) of the refused request's size that should fit."""
        if self.prompt_tokens and self.context_tokens and self.prompt_tokens > 0:
            return min(1.0, SAFETY * self.context_tokens / self.prompt_tokens)
        return SHARE_WITHOUT_NUMBERS


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def context_overflow(status: int, body: str) -> ContextOverflow | None:
    """The ``ContextOverflow`` a non-2xx answer (``status``, its body text) says, else ``None``."""
    if status not in (400, 413) or not any(marker in body.lower() for marker in _MARKERS):
        return None
    message, prompt, context = body.strip(), None, None
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        message = str(error.get("message") or message)
        prompt, context = _number(error.get("n_prompt_tokens")), _number(error.get("n_ctx"))
    elif isinstance(error, str):
        message = error
    if context is None and (found := _CONTEXT.search(message)):
        context = int(found.group(1))
    if prompt is None and (found := _PROMPT.search(message)):
        prompt = int(found.group(1))
    return ContextOverflow(prompt, context, message)


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False))


def turns_that_fit(turns: Sequence[Sequence[dict[str, Any]]], overflow: ContextOverflow,
                   fixed: Sequence[Any]) -> int:
    """How many of the newest ``turns`` (each a list of messages, oldest turn first) to send again after
    ``overflow``; ``fixed``: what the request always holds (system message, the new message, tools).
    Between 0 and ``len(turns) - 1`` (0 for no turns)."""
    if not turns:
        return 0
    sizes = [_size(list(turn)) for turn in turns]
    fixed_size = _size(list(fixed))
    budget = (sum(sizes) + fixed_size) * overflow.share - fixed_size
    kept, used = 0, 0
    for size in reversed(sizes):
        if used + size > budget:
            break
        used += size
        kept += 1
    return min(kept, len(turns) - 1)
