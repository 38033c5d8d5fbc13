"""Telling the view that the runtime changed, once per batch of changes (DESIGN.md §6, §12).

The runtime tells its listeners (the browser's drawing) after every change. At the end of a turn
several parts change in one go: the reply gets its final status, the thread store's save may add a
notice (``storage-full``), history's write starts. Each told the view on its own, and the view
drew the whole panel each time, in one task (the end of a turn of a reply of 10 MB drew it twice).
``Notifier.held()`` gathers the changes made inside it into one notification at its end.

Example::

    >>> told = []
    >>> notify = Notifier(lambda: told.append("draw"))
    >>> with notify.held():
    ...     notify()
    ...     notify()
    >>> told
    ['draw']
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

__all__ = ["Notifier"]


class Notifier:
    """``notify()`` calls ``tell()`` at once, or, inside ``held()``, once when the outermost
    ``held()`` ends (not at all if nothing was notified inside it). An error raised inside
    ``held()`` still tells what was notified before it, then propagates."""

    def __init__(self, tell: Callable[[], None]) -> None:
        self._tell = tell
        self._depth = 0
        self._missed = False

    def __call__(self) -> None:
        if self._depth:
            self._missed = True
        else:
            self._tell()

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Gather the notifications made inside into one at the end (nested: the outermost's end)."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if not self._depth and self._missed:
                self._missed = False
                self._tell()
