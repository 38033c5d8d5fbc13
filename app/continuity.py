"""Which conversation a thread belongs to: the one rule that says thread B continues thread A.

Pure and browser-free. The thread store (merging another tab's turns, DESIGN.md §5), history
(archive, resume and reconciliation, §9) and the runtime (a turn that ends after another tab moved
on, §15) all ask the same question: does this thread go on from that one? A thread continues
another when it starts with every message of it, in order (it is the other, or the other with
turns after it). Anything else, a shorter thread, one that differs in any message, or a value that
is not a list of messages, is another conversation.
"""

from __future__ import annotations

from typing import Any

__all__ = ["continues"]


def continues(thread: Any, base: Any) -> bool:
    """True when ``thread`` (a list of message dicts) goes on from ``base`` (another such list):
    its first ``len(base)`` messages equal ``base``'s (DESIGN.md §15: one rule, every caller).

    >>> continues([{"id": "a"}, {"id": "b"}], [{"id": "a"}])
    True
    >>> continues([{"id": "a"}], [{"id": "a"}])
    True
    >>> continues([{"id": "a"}], [{"id": "a"}, {"id": "b"}])
    False
    >>> continues([{"id": "x"}, {"id": "b"}], [{"id": "a"}])
    False
    >>> continues(None, []) or continues([], None)
    False
    """
    return isinstance(thread, list) and isinstance(base, list) and thread[: len(base)] == base
