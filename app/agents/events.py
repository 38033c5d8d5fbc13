"""Agent events the model back end adds to ``app.agent``'s three (DESIGN.md §9, §12).

``UsageReported`` is yielded once, last, by ``OpenAIAgent.run`` for every turn
that reached the server. It mirrors the per-turn meta of §9 (``model``,
``usage: {inputTokens, outputTokens, totalTokens}``): ``usage`` is ``None``
when the server reported none ("not reported" — never invented numbers).
The runtime ignores events it does not know, so this is safe to yield before
the history layer consumes it.

``ReplyCut`` says the server ended the reply at its length limit
(``finish_reason: "length"``): the runtime ends the turn with the cut status
(``app.projection.CUT``) instead of complete (§12 ``turn-cut``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ReplyCut", "TokenUsage", "UsageReported"]


@dataclass(frozen=True)
class TokenUsage:
    """Token counts of one turn, from the server's ``usage`` (summed over the turn's requests)."""

    input_tokens: int
    output_tokens: int
    total_tokens: int

    def to_meta(self) -> dict[str, int]:
        """The §9 turn-meta shape: ``{"inputTokens", "outputTokens", "totalTokens"}``."""
        return {"inputTokens": self.input_tokens, "outputTokens": self.output_tokens, "totalTokens": self.total_tokens}

    def __add__(self, other: "TokenUsage") -> "TokenUsage":
        return TokenUsage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens,
                          self.total_tokens + other.total_tokens)


@dataclass(frozen=True)
class UsageReported:
    """The turn's ``model`` (as the server named it, else the configured one) and ``usage`` (``None`` = not
    reported); ``dropped_turns``: earlier turns left out of the request because the server's context was
    full (``app.agents.context``, §12), 0 when none were."""

    model: str
    usage: TokenUsage | None
    dropped_turns: int = 0

    def to_turn_meta(self) -> dict[str, object]:
        """The §9 per-turn meta fields it fills: ``{"model", "usage", "droppedTurns"?}``, ``usage`` ``None`` =
        not reported, ``droppedTurns`` only when earlier turns were left out for the context."""
        meta: dict[str, object] = {"model": self.model, "usage": self.usage.to_meta() if self.usage else None}
        if self.dropped_turns:
            meta["droppedTurns"] = self.dropped_turns
        return meta


@dataclass(frozen=True)
class ReplyCut:
    """The server cut the reply at its length limit (``finish_reason: "length"`` on the turn's last request)."""


def usage_from_chunk(value: Any) -> TokenUsage | None:
    """A ``TokenUsage`` from a chunk's ``usage`` object, or ``None`` when it is absent or not numeric.

    ``total_tokens`` defaults to the sum when a server leaves it out.

    >>> usage_from_chunk({"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17})
    TokenUsage(input_tokens=12, output_tokens=5, total_tokens=17)
    >>> usage_from_chunk(None), usage_from_chunk({"prompt_tokens": "x"})
    (None, None)
    """
    if not isinstance(value, dict):
        return None
    prompt, completion = value.get("prompt_tokens"), value.get("completion_tokens")
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in (prompt, completion)):
        return None
    total = value.get("total_tokens")
    if not isinstance(total, int) or isinstance(total, bool) or total < 0:
        total = prompt + completion
    return TokenUsage(prompt, completion, total)
