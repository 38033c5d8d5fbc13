"""Which branch opening a search hit shows (DESIGN.md §17: "Search finds text on every branch;
opening a hit that lies on another branch shows that branch").

Pure and browser-free. Search finds a conversation when the folded text of all its messages, on
every branch, holds every term of the keyword (``app.history.terms.parse_query``, folded by
``app.history.text.fold``, §14). Opening the hit asks which message the keyword points at, under the
same folding and the same matching (whole words; a keyword inside an unspaced CJK sentence; a
keyword of punctuation only looked for as it is):

1. the messages that hold every term of the keyword on their own; when no message does, the
   messages that hold any of them;
2. when one of those lies on the shown path, nothing changes (the hit is already shown);
3. otherwise the first of them in the order made is shown (``Tree.show``: it and its ancestors are
   chosen at their forks, and below it the path last shown there).

A keyword found in the title alone points at no message: nothing changes. ``hit_message_steps``
looks through a long conversation a slice at a time (DESIGN.md §13: no long task); ``hit_message``
runs it at once.
"""

from __future__ import annotations

from app.history.terms import SearchQuery, parse_query, text_terms_steps
from app.history.text import fold, fold_map_steps, plain_text_steps
from app.history.tree import Tree
from app.json_steps import run_steps

__all__ = ["HIT_SLICE_CHARS", "hit_message", "hit_message_steps"]

HIT_SLICE_CHARS = 64_000
"""Characters of messages ``hit_message_steps`` looks through between two of its yields (a longer
message is also sliced within: ``plain_text_steps``, ``fold_map_steps``, ``text_terms_steps``)."""


def _holds_steps(query: SearchQuery, message: dict):
    """``(every term, any term, characters looked through)`` of ``query`` in the folded text of
    ``message``, as steps."""
    text = yield from plain_text_steps([message])
    folded = (yield from fold_map_steps(text))[0]
    if not query.terms:
        found = query.needle in folded
        return found, found, len(text)
    terms = yield from text_terms_steps(folded)
    held = [term in terms for term in query.terms]
    return all(held) and query.matches(folded), any(held), len(text)


def hit_message(tree: Tree, keyword: str) -> str | None:
    """The id of the message to show when a search hit for ``keyword`` on conversation ``tree`` is
    opened (module docstring's rule), or ``None`` when the shown path stays as it is: a message on
    it holds the keyword, no message does (a title hit), or the keyword is blank.

    >>> def m(i, p, text): return {"id": i, "parentId": p, "role": "user", "content": [{"type": "text", "text": text}]}
    >>> tree = Tree.from_export([m("a", None, "Rot"), m("b", None, "Grün")], {"": "a"})
    >>> hit_message(tree, "grun"), hit_message(tree, "ROT")
    ('b', None)
    """
    return run_steps(hit_message_steps(tree, keyword))


def hit_message_steps(tree: Tree, keyword: str):
    """``hit_message`` as a generator that yields (``None``) between slices of about
    ``HIT_SLICE_CHARS`` characters of messages; its return value is ``hit_message(tree, keyword)``."""
    if not tree.forks():  # a chain: every message is on the shown path
        return None
    query = parse_query(keyword, fold)
    if not query.needle:
        return None
    shown = set(tree.path_ids())
    every: list[str] = []
    some: list[str] = []
    chars = 0
    for message in tree.texts():
        all_held, any_held, size = yield from _holds_steps(query, message)
        if all_held and message["id"] in shown:
            return None  # the shown path holds the keyword whole: nothing to look for further
        if all_held:
            every.append(message["id"])
        if any_held:
            some.append(message["id"])
        chars += size
        if chars >= HIT_SLICE_CHARS:
            yield
            chars = 0
    found = every or some
    if not found or any(ident in shown for ident in found):
        return None
    return found[0]
