"""Stats and turn-meta text of the history panel, with plural forms (DESIGN.md §7, §9).

Pure: each function takes the page's translator ``t`` (``app.i18n.Translator``:
``t(key, **params) -> str``, plural keys picked by ``count``). The counts are
phrased by the plural keys ``history.turns`` and ``history.tokens`` (CLDR
categories of each locale: "1 turn", "2 turns"; ru "21 ход", "22 хода", "25 ходов"),
then placed in the line's template (``history.stats``, ``history.itemStats``,
``history.turnMeta``, ``history.markdownMeta``), so no line reads "1 turns".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["backup_saved_text", "import_outcome", "import_refusal", "import_said", "skipped_names", "seconds_text",
           "turns_phrase", "tokens_phrase",
           "stats_text", "item_stats_text", "turn_meta_text", "markdown_left_out", "markdown_meta",
           "model_short_name"]

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


_FILE_PATH = re.compile(r"^(?:/|~[/\\]|\.{1,2}[/\\]|[A-Za-z]:[/\\])|\\|\.(?:gguf|ggml|bin|safetensors|llamafile)$",
                        re.IGNORECASE)
"""A model id that is a file path: absolute, home- or dot-relative, with a backslash, or a model file's name."""


def model_short_name(model: str) -> str:
    r"""The model as the turn meta shows it: a model id that is a file path (llama.cpp's server started
    without ``--alias`` reports the path it loaded, vLLM the directory) by its base name; any other id
    (``gpt-4o``, ``qwen2.5:7b``, a ``org/name`` repository id) as it is. The stored id stays whole.

    >>> model_short_name("/root/.cache/agentbar/models/66d68b13c8dfdf7e/tiny-tool.gguf")
    'tiny-tool.gguf'
    >>> model_short_name(r"C:\models\qwen2.5-7b-q4_k_m.gguf"), model_short_name("/srv/models/Qwen2.5-7B/")
    ('qwen2.5-7b-q4_k_m.gguf', 'Qwen2.5-7B')
    >>> model_short_name("meta-llama/Llama-3.1-8B-Instruct"), model_short_name("models/tiny.gguf")
    ('meta-llama/Llama-3.1-8B-Instruct', 'tiny.gguf')
    """
    if not _FILE_PATH.search(model):
        return model
    return re.split(r"[/\\]", model.rstrip("/\\"))[-1] or model


def turn_meta_text(t: Translate, turn: Any, *, full_model: bool = False) -> str:
    """One assistant message's turn meta (``TurnMeta``): model, tokens (or "usage not reported"
    when ``turn.usage`` is None, DESIGN.md §12) and duration in seconds, then, when the server's
    context was full, how many earlier turns were left out (``history.contextCut``, plural forms).
    The model by its short name (``model_short_name``); ``full_model``: by its whole id (the tooltip)."""
    seconds = seconds_text(t, turn.duration)
    model = turn.model if full_model else model_short_name(turn.model)
    if turn.usage is None:
        line = t("history.turnMetaNoUsage", model=model, seconds=seconds)
    else:
        line = t("history.turnMeta", model=model, tokens=tokens_phrase(t, turn.usage.totalTokens), seconds=seconds)
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


def markdown_left_out(t: Translate, count: int) -> str:
    """The Markdown export's line saying how many branches of the conversation it leaves out
    (``history.markdownLeftOut``, plural forms; DESIGN.md §17 "Moving data"): ``count`` from
    ``app.history.tree.Tree.left_out`` (the export writes no line for 0)."""
    return t("history.markdownLeftOut", count=count)


_CHATGPT_OWN = frozenset({"format", "depth", "members"})
"""Refusals of shape that the ChatGPT import says in its own words (naming ChatGPT's export)."""


def import_refusal(t: Translate, reason: str, importer: str = "json") -> tuple[str, str]:
    """``(key, text)`` of a refused import for ``history-status`` (DESIGN.md §14: a refused file says
    why, and an unknown shape names what was expected). ``reason``: an ``ImportRefused.reason`` (or
    ``exists``, ``unavailable``, ``failed``); ``importer``: ``json`` ("Import JSON": an AgentBar export
    or a ``maic-agent-threads`` value) or ``chatgpt``, whose refusals of shape name ChatGPT's export.
    ``key`` is the ``history.importError`` key (the status's ``data-reason``)."""
    from app.history.export import MAX_DEPTH
    from app.history.limits import MAX_CONVERSATION_CHARS

    key = f"chatgpt-{reason}" if importer == "chatgpt" and reason in _CHATGPT_OWN else reason
    return key, t(f"history.importError.{key}", max=MAX_DEPTH, count=MAX_CONVERSATION_CHARS)


def backup_saved_text(t: Translate, counts: dict[str, int]) -> str:
    """The line said when a backup is saved (DESIGN.md §14): ``counts`` is its manifest's
    ``{"conversations", "versions", "threads"}``, each phrased with its plural form
    (``backup.conversations`` …: "1 conversation", "2 conversations"; ru "21 разговор") and its
    thousands separator, then placed in ``backup.exported``."""
    return t("backup.exported", **{name: t(f"backup.{name}", count=int(counts.get(name, 0)))
                                   for name in ("conversations", "versions", "threads")})


SKIP_REASONS = frozenset({"loop", "missing-node", "no-mapping", "no-message", "no-time", "times", "meta", "messages",
                          "turns", "numbers", "not-finite", "dates", "unreadable", "too-long", "not-json",
                          "not-conversations", "depth"})
"""The codes of a conversation an import could not read that have words of their own
(``history.skipReason.<code>``); any other reads as ``unreadable``."""

SHOWN_SKIPPED = 5
"""Conversations an import could not read that its outcome names at most (then "…")."""


def skipped_names(t: Translate, skipped: list[Any]) -> str:
    """The conversations an import could not read (``app.history.chatgpt.Skipped``: ``title``,
    ``code``), as ``history-status`` names them (DESIGN.md §14: never silently dropped): each title,
    kept in its own bidi run (U+2068 … U+2069: a Latin title inside Arabic text stays whole), with
    its reason in the page's locale (``too-long`` says the limit, ``MAX_CONVERSATION_CHARS``); the
    first ``SHOWN_SKIPPED``, joined by the locale's list separator (``app.listSeparator``).

    >>> from collections import namedtuple
    >>> S = namedtuple("S", "title code")
    >>> skipped_names(lambda key, **p: {"app.listSeparator": ", "}.get(key, key.rsplit(".")[-1]), [S("a", "loop"), S("b", "odd")])
    '\u2068a\u2069 (loop), \u2068b\u2069 (unreadable)'
    """
    from app.history.limits import MAX_CONVERSATION_CHARS

    def reason(code: str) -> str:
        return t("history.skipReason." + (code if code in SKIP_REASONS else "unreadable"), count=MAX_CONVERSATION_CHARS)

    said = [f"\u2068{s.title}\u2069 ({reason(s.code)})" for s in skipped[:SHOWN_SKIPPED]]
    return t("app.listSeparator").join(said) + (t("app.listSeparator") + "…" if len(skipped) > SHOWN_SKIPPED else "")


def import_said(t: Translate, result: str) -> str:
    """What ``history-status`` says of one imported file (``HistoryService.import_bundle``'s result):
    added, added as a copy beside another conversation under its id, the kept one continued from it
    (said as a backup's restore says it, DESIGN.md §14), or why nothing was imported.

    >>> t = lambda key, **p: key + "".join(f" {v}" for v in p.values())
    >>> import_said(t, "extended"), import_said(t, "exists")
    ('backup.extended 1', 'history.importError.exists')
    """
    from app.i18n import join_sentences

    if result == "ok":
        return t("history.imported")
    if result == "copy":
        return join_sentences([t("history.imported"), t("backup.renamed", count=1)])
    if result == "extended":
        return t("backup.extended", count=1)
    return t(f"history.importError.{result}")


def import_outcome(t: Translate, imported: int, existing: int, skipped: list[Any],
                   stopped: str | None = None, *, extended: int = 0) -> tuple[str, str]:
    """``(result, text)`` of an import of several conversations for ``history-status`` (DESIGN.md §14):
    how many were added (``imported``), were already kept (``existing``) and could not be read
    (``skipped``, named by ``skipped_names``). ``stopped``: the reason (an ``import_refusal`` reason,
    e.g. ``failed``, ``unavailable``) the import stopped partway, or None when it went to the end. An
    import that stopped after it added a conversation never says "nothing was changed": it says what
    it added and that the rest could not be imported. ``extended``: how many kept ones the file
    continued (``HistoryService.import_bundle``'s ``extended``), said as a restore says them.
    ``result``: ``ok`` when a conversation was added, kept or extended and nothing stopped the
    import, else ``error``; ``stopped`` with nothing added is the caller's refusal
    (``import_refusal``), not this text.

    >>> t = lambda key, **p: {"history.importedCount": "{count} imported.", "history.importStopped": "Rest failed."
    ...                       }.get(key, key).format(**p)
    >>> import_outcome(t, 2, 0, [], "failed")
    ('error', '2 imported. Rest failed.')
    """
    from app.i18n import join_sentences

    said = [t("history.importedCount", count=imported)]
    if extended:
        said.append(t("backup.extended", count=extended))
    if existing:
        said.append(t("history.importExisting", count=existing))
    if skipped:
        said.append(t("history.importSkipped", count=len(skipped), names=skipped_names(t, skipped)))
    if stopped is not None:
        said.append(t("history.importStopped"))
    return ("ok" if (imported or existing or extended) and stopped is None else "error"), join_sentences(said)
