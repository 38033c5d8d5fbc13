"""One conversation changed by two writers that did not see each other (DESIGN.md §16 conflicts,
§17 "Sync", §15 one rule): another device is another writer.

A message whose turn has ended never changes, so two versions of one conversation merge by the
union of their trees (``app.history.tree.Tree.merged``: one message per id): each device's new turns
become siblings where the two diverged; nothing is dropped and no copy conversation is made. The
shown child of each fork follows the later choice: a side's choice time is its ``messages`` record's
``shownAt`` (``app.history.branching``) when it has one, else what the caller gives (its
conversation's ``updatedAt``); equal times are decided by the id of each side's last shown message,
so both devices pick the same side. The side whose choices win is the merge's base: its messages,
their order among siblings and its choices are kept, and the other's messages and choices added
after them, so the union is the same tree whichever device makes it; at a fork only the other side
made, the other's choice (the only one made there) is kept unless the base went on below its own
child there (``app.history.tree.Tree.merged``). Messages without an id (a
thread the TS original wrote) are given one made of their content and their parent's id, the same
on every device. A message read under such a derived id (stored with an id that is no string, ``7``)
beside a sibling with the same role and parts under a real id is that sibling, as the other device
still holds it (``same_as_derived``): kept once, under the real id, its children moved there (§17:
every message has one id; no copy). Turn metas are the union of both by ``messageId`` (each reply keeps its own usage).

``merge_conversation(local, remote)`` says how the two come together (``local``: this device's holds
the other's; ``remote``: the other's holds this one's; ``merged``: a new tree); ``merge_leaves``
does it for every leaf of a document in conflict (CouchDB's conflicting revisions, any number);
``merged_meta`` gives the meta kept; ``settled_meta`` the meta two devices both keep of a conversation
whose messages, tree and turns are the same (so they stop sending it to each other). Used by ``HistoryService.apply_synced`` (``app.sync.engine``
hands it what another device wrote).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from app.continuity import continues, is_derived
from app.history.branching import NO_BRANCHES, Branching
from app.history.names import merged_names
from app.history.records import Stats, TaskMeta, TurnMeta, parse_iso
from app.history.tree import ROOT, Tree, beside_path

__all__ = ["Merged", "answered", "join", "merge_conversation", "merge_leaves", "merged_meta", "same_as_derived",
           "settled_meta", "split_turns"]

Side = tuple[list[dict], list[TurnMeta]] | tuple[list[dict], list[TurnMeta], Branching]
"""One version of a conversation: ``(messages, turns)`` (a chain) or ``(messages, turns, branching)``
(``messages`` the shown path, ``branching`` the tree beside it)."""


@dataclass(frozen=True)
class Merged:
    """The outcome: ``how`` (``local``: nothing to write here, ``remote``: take the other device's,
    ``merged``: a tree of both), ``messages`` (the shown path), ``turns`` (renumbered 1..n when
    merged) and ``branching`` (the tree beside the path, ``app.history.branching``) to keep."""

    how: Literal["local", "remote", "merged"]
    messages: list[dict]
    turns: list[TurnMeta]
    branching: Branching = NO_BRANCHES


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


def _branching(side: Side) -> Branching:
    return side[2] if len(side) > 2 else NO_BRANCHES


def _branches(side: Side) -> bool:
    """True when ``side`` holds a message beside its shown path (a tree, not a chain)."""
    return bool(_branching(side).branches)


@dataclass(frozen=True)
class _Version:
    """One side of a merge: what it was given, its tree and when its choices were made (ms)."""

    messages: list[dict]
    turns: list[TurnMeta]
    branching: Branching
    tree: Tree
    at: int

    @classmethod
    def of(cls, side: Side, fallback_at: int) -> "_Version":
        messages, turns = side[0], side[1]
        branching = _branching(side)
        tree = Tree.from_record(list(messages), branching.branches, branching.shown)
        # a turn or a switch of branch moves updatedAt too: the later of the two dates the choices
        at = max(branching.shown_at or 0, fallback_at or 0)
        return cls(list(messages), list(turns), branching, tree, at)

    @property
    def rank(self) -> tuple[int, str]:
        """Whose choices win: the later, then the greater last shown id (the same on both devices)."""
        path = self.tree.path_ids()
        return self.at, path[-1] if path else ""


def _fuller(turn: TurnMeta) -> tuple:
    """Which of two metas of one reply's turn both devices keep: the one that says more (usage, model,
    duration), then the greater of the two as JSON text (its number aside): the same one whichever
    device merges, so two devices that held different metas end with the same (§16: no echo, no
    difference left for good)."""
    return (turn.usage is not None and turn.usage.totalTokens > 0, bool(turn.model), turn.duration > 0,
            turn.model_dump_json(exclude={"turnId"}))


def _holds(turns: list[TurnMeta], union: list[TurnMeta]) -> bool:
    """True when ``turns`` (one side's) are the ``union`` of every side's but for their numbering:
    that side keeps what it holds as it is."""
    return len(turns) == len(union) and _union_turns(turns) == union


def _union_turns(*sides: list[TurnMeta]) -> list[TurnMeta]:
    """Turn metas of every side, one per ``messageId`` (the ``_fuller`` where the sides differ), those
    without one as many times as the side that holds most of them, by time, renumbered 1..n: the
    same whatever the order of ``sides`` or their numbering."""
    by_message: dict[str, TurnMeta] = {}
    loose: dict[str, tuple[TurnMeta, int]] = {}  # a turn without messageId (older records), by its text
    for turns in sides:
        seen: dict[str, int] = {}
        for turn in turns:
            if turn.messageId is None:
                key = turn.model_dump_json(exclude={"turnId"})
                seen[key] = seen.get(key, 0) + 1
                if seen[key] > loose.get(key, (turn, 0))[1]:
                    loose[key] = (turn, seen[key])
            elif (held := by_message.get(turn.messageId)) is None or (turn != held and _fuller(turn) > _fuller(held)):
                by_message[turn.messageId] = turn
    kept = [*by_message.values(), *(turn for turn, count in loose.values() for _ in range(count))]
    kept.sort(key=lambda t: (_safe_time(t), t.messageId or "", t.model_dump_json(exclude={"turnId"})))
    return [t.model_copy(update={"turnId": n}) for n, t in enumerate(kept, start=1)]


def _union(versions: Sequence[_Version]) -> tuple[Tree, int | None]:
    """The union of ``versions``' trees, the later choices winning (module docstring), and the
    merged choice time (None when no side had one). The versions are merged in pairs, then the
    pairs' results in pairs (each message is copied ``log2(len(versions))`` times, not once per
    version)."""
    ordered = sorted(versions, key=lambda v: v.rank, reverse=True)
    trees = [v.tree for v in ordered]
    while len(trees) > 1:  # ordered latest first: the left of each pair is the later, the base
        trees = [trees[at].merged(trees[at + 1]) if at + 1 < len(trees) else trees[at]
                 for at in range(0, len(trees), 2)]
    known = [v.at for v in versions if v.at or v.branching.shown_at is not None]
    return same_as_derived(trees[0]), max(known) if known else None


def _twin(nodes: dict[str, dict], kids: list[str], kid: str, derived: set[str]) -> str | None:
    """The sibling among ``kids`` under a real id whose role and parts are ``kid``'s, or None."""
    message = nodes[kid]
    return next((other for other in kids if other != kid and other not in derived
                 and nodes[other].get("role") == message.get("role")
                 and nodes[other].get("content") == message.get("content")), None)


def same_as_derived(tree: Tree) -> Tree:
    """``tree`` with each message read under a derived id (``app.continuity.is_derived``: stored with
    an id that is no string) that has a sibling under a real id with the same role and parts folded
    into that sibling: one message, the real id kept, the derived one's children moved under it and a
    choice of it made the sibling's (DESIGN.md §17: one message per id, no copy; module docstring).
    Walks from the first messages down, so children that meet their twins under the kept message are
    folded too. ``tree`` itself when there is none to fold (the usual case).

    >>> real = {"role": "assistant", "id": "r", "content": [{"type": "text", "text": "a"}]}
    >>> from app.continuity import derived_ids
    >>> copy = derived_ids([{**real, "id": 7}])[0]
    >>> same_as_derived(Tree({"r": real, copy["id"]: copy}, {"r": ROOT, copy["id"]: ROOT})).ids
    ('r',)
    """
    derived = {i for i in tree.nodes if is_derived(tree.nodes[i], tree.parents[i])}
    if not derived:
        return tree
    nodes, parents, chosen = dict(tree.nodes), dict(tree.parents), dict(tree.chosen)
    children: dict[str, list[str]] = {}
    for ident in nodes:
        children.setdefault(parents[ident], []).append(ident)
    order = list(nodes)  # the order made, a parent before its children: the kept one takes the earlier place
    queue = deque([ROOT])
    while queue:
        key = queue.popleft()
        kids = children.get(key, [])
        for kid in [k for k in kids if k in derived]:
            twin = _twin(nodes, kids, kid, derived)
            if twin is None:
                continue
            kids.remove(kid)
            del nodes[kid], parents[kid]
            at_kid, at_twin = order.index(kid), order.index(twin)
            order[at_kid:at_kid + 1] = [twin] if at_twin > at_kid else []
            if at_twin > at_kid:
                del order[at_twin]
            for child in children.pop(kid, []):
                parents[child] = twin
                children.setdefault(twin, []).append(child)
            below = chosen.pop(kid, None)
            if chosen.get(key) == kid:  # the choice went through the copy: it goes through the kept one
                chosen[key] = twin
                if below is not None:
                    chosen[twin] = below
        queue.extend(kids)
    if len(nodes) == len(tree.nodes):
        return tree
    return Tree({i: nodes[i] for i in order}, parents, chosen)


def _same(tree: Tree, version: _Version) -> bool:
    return tree.record() == version.tree.record()


def merge_conversation(local: Side, remote: Side, *, local_at: int = 0, remote_at: int = 0) -> Merged:
    """Merge one conversation changed on two devices (§16, §17): the union of both trees (module
    docstring). ``local_at``/``remote_at``: each side's choice time when its ``branching`` has no
    ``shownAt`` (its conversation's ``updatedAt``, epoch ms). ``how`` is ``"local"`` when the union is
    this device's tree (returned as given), ``"remote"`` when it is the other's (returned as given),
    else ``"merged"``: the union's stored form (``Tree.record``), both sides' turn metas
    (``_union_turns``) and ``shownAt`` the later of the two choice times. Two chains of which one goes
    on from the other (``app.continuity.continues``: the ordinary case, a device that continued) are
    told apart without building their trees: the union is the longer one.

    >>> a = [{"role": "user", "id": "u1"}]
    >>> merge_conversation((a, []), (a + [{"role": "assistant", "id": "r1"}], [])).how
    'remote'
    >>> merge_conversation((a, []), (a, [])).how
    'local'
    """
    if not _branches(local) and not _branches(remote):  # two chains: one holds the other when it goes on from it
        holder = local if continues(local[0], remote[0]) else remote if continues(remote[0], local[0]) else None
        if holder is not None:
            other = remote if holder is local else local
            if list(other[1]) == list(holder[1])[:len(other[1])]:  # the ordinary case: its turns go on from the other's
                return Merged("local" if holder is local else "remote", list(holder[0]), list(holder[1]),
                              _branching(holder))
            turns = _union_turns(local[1], remote[1])  # one reply's turn apart: each side's meta weighed
            for side, how in ((local, "local"), (remote, "remote")):
                if list(side[0]) == list(holder[0]) and _holds(side[1], turns):
                    return Merged(how, list(side[0]), list(side[1]), _branching(side))
            return Merged("merged", list(holder[0]), turns, _branching(holder))
    mine, theirs = _Version.of(local, local_at), _Version.of(remote, remote_at)
    tree, at = _union([mine, theirs])
    return _outcome(tree, at, mine, [theirs])


def _carried(tree: Tree, versions: list[_Version]) -> list[dict]:
    """The branch entries of ``versions`` that their trees could not place (``Tree.unplaced``: an
    unknown parent, a cycle, a duplicate id) and ``tree`` does not hold, each once, in order: what the
    union writes as stored beside its own (DESIGN.md §5: a merge drops no message it could not read)."""
    carried: list[dict] = []
    for version in versions:
        beside = beside_path(version.messages, version.branching.branches)
        if beside:
            carried += [e for e in tree.unplaced(version.tree.unplaced(beside)) if e not in carried]
    return carried


def _outcome(tree: Tree, at: int | None, first: _Version, others: list[_Version]) -> Merged:
    turns = _union_turns(first.turns, *(o.turns for o in others))
    carried = _carried(tree, [first, *others])
    for version, how in ((first, "local"), *((o, "remote") for o in others)):
        if _same(tree, version) and _holds(version.turns, turns) and \
                all(entry in version.branching.branches for entry in carried):
            return Merged(how, version.messages, version.turns, version.branching)
    messages, branching = Branching.of_tree(tree, at)
    if carried:
        branching = Branching([*branching.branches, *carried], branching.shown, branching.shown_at)
    return Merged("merged", messages, turns, branching)


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


def merge_leaves(leaves: list[Side], times: list[int] | None = None) -> Merged:
    """Merge every leaf of one conversation in conflict (§16, §17; CouchDB's conflicting revisions,
    any number): the union of all their trees, as ``merge_conversation`` merges two; ``leaves`` are
    ``Side``s, the first this device's own (or the winning revision); ``times``: each leaf's choice
    time when it has no ``shownAt`` (its ``updatedAt``; 0 when None). ``how`` is ``"local"`` when the
    union is the first leaf, ``"remote"`` when it is another leaf, else ``"merged"``. Raises
    ``ValueError`` for no leaves.

    >>> a = [{"role": "user", "id": "u1"}]
    >>> merge_leaves([(a, []), (a + [{"role": "assistant", "id": "r1"}], []), (a, [])]).how
    'remote'
    """
    if not leaves:
        raise ValueError("no leaves to merge")
    versions = [_Version.of(leaf, times[n] if times else 0) for n, leaf in enumerate(leaves)]
    tree, at = _union(versions)
    return _outcome(tree, at, versions[0], versions[1:])


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


def join(here: Any, other: Any) -> tuple[Merged, TaskMeta]:
    """Two versions of one conversation joined by this device's own write (an import of its file, an
    undo that finds it back): ``merge_conversation`` of ``here`` (what is kept here) and ``other``,
    each dated by its meta's ``updatedAt``, and the meta kept (``merged_meta``), dated later than
    ``here``'s as a turn's is, so the conversation stays where the list put it last and what a tab
    remembered of it is stale. ``here`` and ``other`` are ``app.history.repository.Conversation``
    objects (or anything with ``meta``, ``messages``, ``turns`` and ``branching``). Sync merges with
    ``merge_conversation`` itself: both devices must keep the same meta (DESIGN.md §16).

    >>> from types import SimpleNamespace as C
    >>> a = TaskMeta(taskId="task_20260101_abcdef", taskName="a", stageId="s", createdAt=5, updatedAt=9)
    >>> q = [{"role": "user", "id": "q"}]
    >>> here = C(meta=a, messages=q, turns=[], branching=NO_BRANCHES)
    >>> other = C(meta=a.model_copy(update={"updatedAt": 4}), messages=q + [{"role": "assistant", "id": "r"}],
    ...           turns=[], branching=NO_BRANCHES)
    >>> merged, meta = join(here, other)
    >>> merged.how, meta.updatedAt
    ('remote', 10)
    """
    merged = merge_conversation((here.messages, here.turns, here.branching),
                                (other.messages, other.turns, other.branching),
                                local_at=here.meta.updatedAt, remote_at=other.meta.updatedAt)
    meta = merged_meta(here.meta, other.meta, merged)
    if meta.updatedAt <= here.meta.updatedAt:
        meta = meta.model_copy(update={"updatedAt": here.meta.updatedAt + 1})
    return merged, meta


def settled_meta(local: TaskMeta, remote: TaskMeta) -> TaskMeta:
    """The meta both devices keep of one conversation that they hold with the same messages, tree and
    turns but different metas (DESIGN.md §16, §18: the later change of each field wins): the name and
    the pin each from whichever changed it later (``merged_names``), ``updatedAt`` and every other field
    from the one updated later (at the same ``updatedAt``, the one whose fields sort higher), the
    earlier ``createdAt``. The same whichever device settles it (``settled_meta(a, b) ==
    settled_meta(b, a)``), so the device that holds it already writes nothing and sends nothing back:
    two devices trading the conversation agree after one exchange each way, never echo.

    >>> from app.history.records import FieldTimes
    >>> a = TaskMeta(taskId="task_20260101_abcdef", taskName="a", stageId="s", createdAt=3, updatedAt=9,
    ...              changedAt=FieldTimes(taskName=5))
    >>> b = a.model_copy(update={"taskName": "b", "updatedAt": 12, "changedAt": FieldTimes(taskName=4)})
    >>> m = settled_meta(a, b)
    >>> m.taskName, m.updatedAt, m == settled_meta(b, a)
    ('a', 12, True)
    """
    later, earlier = sorted((local, remote), key=lambda m: (m.updatedAt, repr(m.model_dump())), reverse=True)
    kept = merged_names(later, earlier)
    if earlier.createdAt < kept.createdAt:
        kept = kept.model_copy(update={"createdAt": earlier.createdAt})
    return kept


def _safe_time(turn: TurnMeta) -> int:
    try:
        return parse_iso(turn.timestamp)
    except ValueError:
        return 0
