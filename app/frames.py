"""Drawing at most once per animation frame while a reply streams (DESIGN.md §6, §12).

A model may send a token every few milliseconds, each in its own network read;
the runtime tells its listeners after every one. Drawing each of them makes the
browser lay the panel out several times per frame, for nothing the reader can
see. ``FrameCoalescer`` sits between the runtime and its listeners: while
``defer()`` holds (a turn is streaming: the browser passes "the shown course
runs a turn and the panel already says so", so the start of a turn is drawn at
once), notifications only mark the page dirty and ask for a frame; the frame
runs the latest drawing once. Any other change (the turn ended, a course switch
while idle) is drawn at once, and a frame still pending then draws nothing
more, so no change is ever drawn late or lost.

It knows no browser: ``request_frame(callback)`` is injected (the browser
layer passes ``requestAnimationFrame`` with a timer as a fallback for hidden
tabs, which get no frames; a callback may thus arrive twice, the second time
it is a no-op).

Example::

    >>> frames = []
    >>> drawn = []
    >>> coalescer = FrameCoalescer(frames.append, defer=lambda: True)
    >>> for token in range(5):
    ...     coalescer.schedule(lambda: drawn.append("draw"))
    >>> len(frames), drawn
    (1, [])
    >>> frames[0]()
    >>> drawn
    ['draw']
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["FrameCoalescer"]


class FrameCoalescer:
    """Runs the scheduled drawing at most once per frame while ``defer()`` is true, at once otherwise.

    ``request_frame``: ``callback -> None``, calls ``callback()`` (no arguments) at the next frame;
    ``defer``: ``() -> bool``, read at each ``schedule``. Errors raised by the drawing propagate to
    the caller of ``schedule`` (drawn at once) or of the frame callback.
    """

    def __init__(self, request_frame: Callable[[Callable[[], None]], None], *, defer: Callable[[], bool]) -> None:
        self._request_frame = request_frame
        self._defer = defer
        self._pending: Callable[[], None] | None = None  # the drawing the next frame runs
        self._asked = 0  # number of the frame request not answered yet (0: none)
        self._requests = 0
        self.frames_drawn = 0
        """Drawings run from a frame (not at once): for tests and the benchmark."""

    @property
    def pending(self) -> bool:
        """True while a change waits for its frame."""
        return self._pending is not None

    def schedule(self, draw: Callable[[], None]) -> None:
        """Draw ``draw()`` now, or at the next frame while ``defer()`` holds (the latest ``draw``
        of a frame replaces earlier ones: each draws the whole current state)."""
        if not self._defer():
            self._pending = None  # drawn now: a frame already asked for finds nothing to do
            draw()
            return
        self._pending = draw
        if not self._asked:
            self._requests += 1
            self._asked = number = self._requests
            self._request_frame(lambda: self._on_frame(number))

    def flush(self) -> None:
        """Run a pending drawing now (e.g. before reading what the page shows)."""
        draw, self._pending = self._pending, None
        if draw is not None:
            draw()

    def _on_frame(self, number: int) -> None:
        if number != self._asked:
            return  # a second answer to a request already served (the timer after the frame, or so)
        self._asked = 0
        if self._pending is not None:
            self.frames_drawn += 1
            self.flush()
