"""One conversation changed by two writers that did not see each other (DESIGN.md §16 conflicts,
§15 one rule): another device is another writer. Whether one side goes on from the other is
``app.continuity.continues``, nothing else.

``merge_conversation(local, remote)``: remote continues local → take remote; local continues
remote → keep local; diverged → the common messages, then the turns of both after them in time
order (``"merged"``), never dropped, and never two user messages in a row (a question left without
its answer gets a stopped reply, ``app.projection.STOPPED_MARKER``, before the next question).
``merge_leaves(leaves)`` does it for every leaf of a document in conflict (CouchDB's conflicting
revisions: any number, sharing history or not). ``merged_meta`` gives the meta kept for the outcome.
Used by ``HistoryService.apply_synced`` (``app.sync.engine`` hands it what another device wrote).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from app.continuity import continues
from app.history.names import merged_names
from app.history.records import Stats, TaskMeta, TurnMeta, parse_iso

__all__ = ["Merged", "answered", "merge_conversation", "merge_leaves", "merged_meta", "split_turns"]


@dataclass(frozen=True)
class Merged:
    """The outcome: ``how`` (``local``: nothing to write here, ``remote``: take the other device's,
    ``merged``: both devices' turns), ``messages`` and ``turns`` to keep (turns renumbered 1..n)."""

    how: Literal["local", "remote", "merged"]
    messages: list[dict]
    turns: list[TurnMeta]


def split_turns(messages: list[dict]) -> list[list[dict]]:
    """``messages`` cut into turns: each starts at a ``user`` message (what comes before the first
    user message is a turn of its own).

    >>> [len(t) for t in split_turns([{"role": "user"}, {"role": "assistant"}, {"role": "user"}])]
    [2, 1]
    """
    turns: list[list[dict]] = []
    for message in messages:
        if message.get("role") == "user" or not turns:
            turns.append([])
        turns[-1].append(message)
    return turns


def _common(a: list[dict], b: list[dict]) -> int:
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return n


def _time_of(turn: list[dict], metas: dict[str, TurnMeta], fallback: int) -> int:
    """A turn's time (ms): its meta's ``timestamp`` (by assistant ``id`` = ``messageId``), else a
    message's ``createdAt``, else ``fallback`` (its order on its device)."""
    for message in turn:
        meta = metas.get(str(message.get("id"))) if message.get("id") is not None else None
        if meta is not None:
            try:
                return parse_iso(meta.timestamp)
            except ValueError:
                pass
    for message in turn:
        if isinstance(message.get("createdAt"), int):
            return message["createdAt"]
    return fallback


def merge_conversation(local: tuple[list[dict], list[TurnMeta]],
                       remote: tuple[list[dict], list[TurnMeta]]) -> Merged:
    """Merge one conversation changed on two devices (§16): ``local``/``remote`` are
    ``(messages, turns)``. Nothing of either is dropped: in a merge, each side's turns after the
    common messages are kept whole, ordered by time (a tie keeps local first), and turn metas of
    both are kept (one per ``messageId``), sorted by ``timestamp`` and renumbered.

    >>> a = [{"role": "user", "id": "u1"}]
    >>> merge_conversation((a, []), (a + [{"role": "assistant", "id": "r1"}], [])).how
    'remote'
    >>> merge_conversation((a, []), (a, [])).how
    'local'
    """
    (mine, my_turns), (theirs, their_turns) = local, remote
    if continues(mine, theirs):
        return Merged("local", mine, my_turns)
    if continues(theirs, mine):
        return Merged("remote", theirs, their_turns)
    base = _common(mine, theirs)
    metas = {t.messageId: t for t in [*my_turns, *their_turns] if t.messageId}
    seen: set[str] = set()
    segments: list[tuple[int, int, int, list[dict]]] = []
    for side, messages in enumerate((mine[base:], theirs[base:])):
        for order, turn in enumerate(split_turns(messages)):
            key = repr(turn)
            if key in seen:  # the same turn on both (already replicated once): kept once
                continue
            seen.add(key)
            segments.append((_time_of(turn, metas, order), side, order, turn))
    segments.sort(key=lambda s: (s[0], s[1], s[2]))
    messages = mine[:base] + [m for *_, turn in segments for m in turn]
    by_message: dict[str, TurnMeta] = {}
    loose: list[TurnMeta] = []
    for turn in [*my_turns, *their_turns]:
        if turn.messageId is None:
            loose.append(turn) if turn not in loose else None
        else:
            by_message.setdefault(turn.messageId, turn)
    kept = sorted([*by_message.values(), *loose], key=lambda t: (_safe_time(t), t.turnId))
    turns = [t.model_copy(update={"turnId": n}) for n, t in enumerate(kept, start=1)]
    return Merged("merged", answered(messages), turns)


def answered(messages: list[dict]) -> list[dict]:
    """``messages`` with a stopped reply (an assistant message holding ``STOPPED_MARKER`` alone, as a
    reply stopped before any output is stored, ``app.projection``) after each user message that another
    user message follows: a merge never shows two user messages in a row (§16), and nothing is made up.

    >>> [m["role"] for m in answered([{"role": "user"}, {"role": "user"}, {"role": "assistant"}])]
    ['user', 'assistant', 'user', 'assistant']
    """
    from app.projection import STOPPED_MARKER

    out: list[dict] = []
    for message in messages:
        if out and message.get("role") == "user" and out[-1].get("role") == "user":
            out.append({"role": "assistant", "content": [dict(STOPPED_MARKER)]})
        out.append(message)
    return out


def merge_leaves(leaves: list[tuple[list[dict], list[TurnMeta]]]) -> Merged:
    """Merge every leaf of one conversation in conflict (§16; CouchDB's conflicting revisions, any
    number): ``leaves`` are ``(messages, turns)``, the first this device's own (or the winning
    revision). Every turn of every leaf is kept once, in time order, as ``merge_conversation`` keeps
    two; a leaf another continues is that one. ``how`` is ``"local"`` when the first leaf continues
    every other (nothing to add to it), else ``"merged"``/``"remote"`` as the pairs said. The leaves
    are merged in pairs, then the pairs' results in pairs (a tournament: each turn is compared
    ``log2(len(leaves))`` times, not once per leaf); raises ``ValueError`` for no leaves.

    >>> a = [{"role": "user", "id": "u1"}]
    >>> merge_leaves([(a, []), (a + [{"role": "assistant", "id": "r1"}], []), (a, [])]).how
    'remote'
    """
    if not leaves:
        raise ValueError("no leaves to merge")
    first_messages, first_turns = leaves[0]
    round_ = [Merged("local", list(first_messages), list(first_turns))]
    round_ += [Merged("remote", list(m), list(t)) for m, t in leaves[1:]]
    while len(round_) > 1:
        paired = []
        for at in range(0, len(round_), 2):
            if at + 1 == len(round_):
                paired.append(round_[at])
                continue
            left, right = round_[at], round_[at + 1]
            both = merge_conversation((left.messages, left.turns), (right.messages, right.turns))
            how = left.how if both.how == "local" else "merged" if left.how == "merged" else both.how
            paired.append(Merged(how if at == 0 else "merged", both.messages, both.turns))
        round_ = paired
    result = round_[0]
    if continues(result.messages, first_messages) and continues(first_messages, result.messages):
        return Merged("local", list(first_messages), list(first_turns))
    return result if result.how != "local" else Merged("merged", result.messages, result.turns)


def merged_meta(local: TaskMeta, remote: TaskMeta, merged: Merged) -> TaskMeta:
    """The meta kept for ``merged`` (§16): ``local``'s for ``how == "local"``, ``remote``'s for
    ``"remote"``, each with its name and pin taken from whichever changed it later
    (``app.history.names.merged_names``, §18); for ``"merged"`` the local meta (course) spanning both: the earlier
    ``createdAt``, the later ``updatedAt``, token stats and turn count from the kept turns (turns whose
    usage was not reported count zero), ``durationMs`` their durations' sum, the larger credits.

    >>> a = TaskMeta(taskId="task_20260101_abcdef", taskName="a", stageId="s", createdAt=5, updatedAt=9)
    >>> b = a.model_copy(update={"createdAt": 3, "updatedAt": 7})
    >>> m = merged_meta(a, b, Merged("merged", [], []))
    >>> m.createdAt, m.updatedAt, m.taskName
    (3, 9, 'a')
    """
    if merged.how == "local":
        return merged_names(local, remote)
    if merged.how == "remote":
        return merged_names(remote, local)
    reported = [t.usage for t in merged.turns if t.usage is not None]
    stats = Stats(credits=max(local.stats.credits, remote.stats.credits),
                  inputTokens=sum(u.inputTokens for u in reported), outputTokens=sum(u.outputTokens for u in reported),
                  totalTokens=sum(u.totalTokens for u in reported))
    spanning = local.model_copy(update={"createdAt": min(local.createdAt, remote.createdAt),
                                        "updatedAt": max(local.updatedAt, remote.updatedAt), "stats": stats,
                                        "turnCount": len(merged.turns),
                                        "durationMs": sum(t.duration for t in merged.turns)})
    return merged_names(spanning, remote)


def _safe_time(turn: TurnMeta) -> int:
    try:
        return parse_iso(turn.timestamp)
    except ValueError:
        return 0
