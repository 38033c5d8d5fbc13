"""Stats and turn-meta text of the history panel, with plural forms (DESIGN.md §7, §9).

Pure: each function takes the page's translator ``t`` (``app.i18n.Translator``:
``t(key, **params) -> str``, plural keys picked by ``count``). The counts are
phrased by the plural keys ``history.turns`` and ``history.tokens`` (CLDR
categories of each locale: "1 turn", "2 turns"; ru "21 ход", "22 хода", "25 ходов"),
then placed in the line's template (``history.stats``, ``history.itemStats``,
``history.turnMeta``, ``history.markdownMeta``), so no line reads "1 turns".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["backup_saved_text", "import_refusal", "skipped_names", "seconds_text", "turns_phrase", "tokens_phrase",
           "stats_text", "item_stats_text", "turn_meta_text", "markdown_meta"]

Translate = Callable[..., str]


def seconds_text(t: Translate, ms: float) -> str:
    """``ms`` milliseconds as seconds with one decimal, in the locale's decimal mark
    (the locale's ``NumberRules.decimal_mark``: "0.4" in en-US, "0,4" in ru-RU and pt-BR)."""
    return f"{ms / 1000:.1f}".replace(".", getattr(t, "decimal_mark", "."))


def turns_phrase(t: Translate, turns: int) -> str:
    """``turns`` completed turns in the locale's plural form ("1 turn", "3 turns")."""
    return t("history.turns", count=int(turns))


def tokens_phrase(t: Translate, tokens: int) -> str:
    """``tokens`` tokens in the locale's plural form ("1 token", "42 tokens")."""
    return t("history.tokens", count=int(tokens))


def _tokens_of(t: Translate, stats: Any) -> str:
    """The tokens of a conversation's stats: "42 tokens", or "tokens not reported" when it has turns
    and none reported a token (an imported ChatGPT conversation: its export has no counts, its turns
    say ``usage: null``; a model server that reports no usage), never "0 tokens" for turns that ran."""
    if stats.turns and not stats.total_tokens:
        return t("history.tokensNotReported")
    return tokens_phrase(t, stats.total_tokens)


def stats_text(t: Translate, stats: Any) -> str:
    """The active conversation's line; ``stats``: ``ConversationStats`` (turns, total_tokens,
    mean_duration_ms in ms, shown in seconds with one decimal)."""
    return t("history.stats", turns=turns_phrase(t, stats.turns), tokens=_tokens_of(t, stats),
             seconds=seconds_text(t, stats.mean_duration_ms))


def item_stats_text(t: Translate, stats: Any) -> str:
    """A history item's line: its turns and total tokens (``ConversationStats``; ``_tokens_of``)."""
    return t("history.itemStats", turns=turns_phrase(t, stats.turns), tokens=_tokens_of(t, stats))


def turn_meta_text(t: Translate, turn: Any) -> str:
    """One assistant message's turn meta (``TurnMeta``): model, tokens (or "usage not reported"
    when ``turn.usage`` is None, DESIGN.md §12) and duration in seconds, then, when the server's
    context was full, how many earlier turns were left out (``history.contextCut``, plural forms)."""
    seconds = seconds_text(t, turn.duration)
    if turn.usage is None:
        line = t("history.turnMetaNoUsage", model=turn.model, seconds=seconds)
    else:
        line = t("history.turnMeta", model=turn.model, tokens=tokens_phrase(t, turn.usage.totalTokens), seconds=seconds)
    dropped = getattr(turn, "droppedTurns", None)
    if dropped:  # the server's context was full: say how many earlier turns the model did not see (§12)
        line += " · " + t("history.contextCut", count=int(dropped))
    return line


def markdown_meta(t: Translate, meta: Any) -> str:
    """The Markdown export's meta line for ``meta`` (``TaskMeta``) with its counts phrased and
    ``{created}``/``{updated}`` left for ``app.history.export.export_markdown`` to fill."""
    line = t("history.markdownMeta", turns=turns_phrase(t, meta.turnCount),
             tokens=tokens_phrase(t, meta.stats.totalTokens), created="\0created\0", updated="\0updated\0")
    line = line.replace("{", "{{").replace("}", "}}")  # a brace in a phrase stays text for str.format
    return line.replace("\0created\0", "{created}").replace("\0updated\0", "{updated}")


_CHATGPT_OWN = frozenset({"format", "depth", "members"})
"""Refusals of shape that the ChatGPT import says in its own words (naming ChatGPT's export)."""


def import_refusal(t: Translate, reason: str, importer: str = "json") -> tuple[str, str]:
    """``(key, text)`` of a refused import for ``history-status`` (DESIGN.md §14: a refused file says
    why, and an unknown shape names what was expected). ``reason``: an ``ImportRefused.reason`` (or
    ``exists``, ``unavailable``, ``failed``); ``importer``: ``json`` ("Import JSON": an AgentBar export
    or a ``maic-agent-threads`` value) or ``chatgpt``, whose refusals of shape name ChatGPT's export.
    ``key`` is the ``history.importError`` key (the status's ``data-reason``)."""
    from app.history.export import MAX_DEPTH

    key = f"chatgpt-{reason}" if importer == "chatgpt" and reason in _CHATGPT_OWN else reason
    return key, t(f"history.importError.{key}", max=MAX_DEPTH)


def backup_saved_text(t: Translate, counts: dict[str, int]) -> str:
    """The line said when a backup is saved (DESIGN.md §14): ``counts`` is its manifest's
    ``{"conversations", "versions", "threads"}``, each phrased with its plural form
    (``backup.conversations`` …: "1 conversation", "2 conversations"; ru "21 разговор") and its
    thousands separator, then placed in ``backup.exported``."""
    return t("backup.exported", **{name: t(f"backup.{name}", count=int(counts.get(name, 0)))
                                   for name in ("conversations", "versions", "threads")})


SKIP_REASONS = frozenset({"loop", "missing-node", "no-mapping", "no-message", "no-time", "times", "meta", "messages",
                          "turns", "numbers", "dates", "unreadable"})
"""The codes of a conversation an import could not read that have words of their own
(``history.skipReason.<code>``); any other reads as ``unreadable``."""

SHOWN_SKIPPED = 5
"""Conversations an import could not read that its outcome names at most (then "…")."""


def skipped_names(t: Translate, skipped: list[Any]) -> str:
    """The conversations an import could not read (``app.history.chatgpt.Skipped``: ``title``,
    ``code``), as ``history-status`` names them (DESIGN.md §14: never silently dropped): each title,
    kept in its own bidi run (U+2068 … U+2069: a Latin title inside Arabic text stays whole), with
    its reason in the page's locale; the first ``SHOWN_SKIPPED``, joined by the locale's list
    separator (``app.listSeparator``).

    >>> from collections import namedtuple
    >>> S = namedtuple("S", "title code")
    >>> skipped_names(lambda key, **p: {"app.listSeparator": ", "}.get(key, key.rsplit(".")[-1]), [S("a", "loop"), S("b", "odd")])
    '\u2068a\u2069 (loop), \u2068b\u2069 (unreadable)'
    """
    said = [f"\u2068{s.title}\u2069 ({t('history.skipReason.' + (s.code if s.code in SKIP_REASONS else 'unreadable'))})"
            for s in skipped[:SHOWN_SKIPPED]]
    return t("app.listSeparator").join(said) + (t("app.listSeparator") + "…" if len(skipped) > SHOWN_SKIPPED else "")
