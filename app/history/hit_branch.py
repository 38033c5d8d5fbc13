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

A keyword found in the title alone points at no message: nothing changes.
"""

from __future__ import annotations

from app.history.terms import SearchQuery, parse_query, text_terms
from app.history.text import fold, plain_text
from app.history.tree import Tree

__all__ = ["hit_message"]


def _holds(query: SearchQuery, folded: str) -> tuple[bool, bool]:
    """``(every term, any term)`` of ``query`` held by the folded text of one message."""
    if not query.terms:
        found = query.needle in folded
        return found, found
    terms = text_terms(folded)
    held = [term in terms for term in query.terms]
    return all(held) and query.matches(folded), any(held)


def hit_message(tree: Tree, keyword: str) -> str | None:
    """The id of the message to show when a search hit for ``keyword`` on conversation ``tree`` is
    opened (module docstring's rule), or ``None`` when the shown path stays as it is: a message on
    it holds the keyword, no message does (a title hit), or the keyword is blank.

    >>> def m(i, p, text): return {"id": i, "parentId": p, "role": "user", "content": [{"type": "text", "text": text}]}
    >>> tree = Tree.from_export([m("a", None, "Rot"), m("b", None, "Grün")], {"": "a"})
    >>> hit_message(tree, "grun"), hit_message(tree, "ROT")
    ('b', None)
    """
    if not tree.forks():  # a chain: every message is on the shown path
        return None
    query = parse_query(keyword, fold)
    if not query.needle:
        return None
    every: list[str] = []
    some: list[str] = []
    for message in tree.texts():
        all_held, any_held = _holds(query, fold(plain_text([message])))
        if all_held:
            every.append(message["id"])
        if any_held:
            some.append(message["id"])
    found = every or some
    shown = set(tree.path_ids())
    if not found or any(ident in shown for ident in found):
        return None
    return found[0]
