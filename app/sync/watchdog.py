"""A replication that makes no progress is noticed, restarted with backoff, and reported (DESIGN.md §16).

Pure and browser-free: the browser adapter (``app.browser.sync_setup``) tells ``ProgressWatchdog``
what the panel would show and every sign that something moved, and polls it about once a second
with the time of an injected clock; the watchdog answers when the replication is stalled (cancel
it, show ``offline`` with the reason ``stalled``) and when to start it again.

- Watching: only while the status the replication reports is ``syncing`` (``observe``); any other
  state (``synced``, ``offline``, ``error``, ``off``) is the replication's own word and is not
  second-guessed.
- Progress (``moved``): documents read or written by the replication (a batch and its
  checkpoint). ``worked``: other work of the sync (the server answered the probe, history took in a
  slice of what was replicated) restarts the count but is not the replication moving: a stall and
  its scheduled restart stay.
- Stalled: watching, and neither progress nor other work for ``stall_after`` seconds. From then on the
  panel shows ``offline``/``stalled`` (``stalled`` is true) even when a restart reports ``syncing``,
  until documents move again or the replication reports another state: it never says ``syncing``
  while nothing moves.
- Restarts follow ``Backoff``: 1 s after the first stall, doubling up to a cap; documents moving,
  or the replication catching up, start the schedule again from the first delay. "Sync now" is a
  restart at once (``restarted``), whatever the schedule said.
- Patience grows too: each stall in a row doubles the time the next attempt is given
  (``stall_after``, then twice, four times it…, at most ``max_stall_after``), so a link too slow to
  move one batch in ``stall_after`` still gets through rather than being cut off for good.

    >>> now = [0.0]
    >>> dog = ProgressWatchdog(lambda: now[0], stall_after=20)
    >>> dog.observe("syncing"); now[0] = 19.0; dog.poll()
    >>> now[0] = 20.0; dog.poll(), dog.stalled
    ('stalled', True)
    >>> now[0] = 21.0; dog.poll()
    'restart'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

__all__ = ["Backoff", "MAX_STALL_AFTER_S", "ProgressWatchdog", "STALL_AFTER_S"]

STALL_AFTER_S = 20.0
"""Seconds without progress after which a replication that says ``syncing`` is stalled: a batch of
25 documents takes well under a second (first sync of 10,000 conversations, README "Performance"),
so this is many batches' time, even on a loaded machine."""
MAX_STALL_AFTER_S = 300.0
"""The most patience an attempt gets after stalls in a row (seconds)."""


class Backoff:
    """Delays (seconds) between restarts: ``first``, then times ``factor`` each, never over ``cap``.

    >>> b = Backoff(first=1, factor=2, cap=5)
    >>> [b.next() for _ in range(5)]
    [1, 2, 4, 5, 5]
    >>> b.reset(); b.next()
    1
    """

    def __init__(self, first: float = 1.0, factor: float = 2.0, cap: float = 60.0) -> None:
        if not 0 < first <= cap or factor < 1:
            raise ValueError("backoff needs 0 < first <= cap and factor >= 1")
        self.first, self.factor, self.cap = first, factor, cap
        self._delay: float | None = None

    def next(self) -> float:
        """The delay before the next restart (and moves the schedule on)."""
        self._delay = self.first if self._delay is None else min(self._delay * self.factor, self.cap)
        return self._delay

    def reset(self) -> None:
        """The next delay is ``first`` again (progress was made)."""
        self._delay = None


class ProgressWatchdog:
    """Decides when a replication is stalled and when to restart it (module docstring).

    ``clock``: seconds, monotonic (``time.monotonic`` in the page; a fake in tests);
    ``stall_after``: seconds without progress while ``syncing`` (doubled after each stall in a row, up
    to ``max_stall_after``); ``backoff``: the restart schedule."""

    def __init__(self, clock: Callable[[], float], stall_after: float = STALL_AFTER_S,
                 backoff: Backoff | None = None, max_stall_after: float = MAX_STALL_AFTER_S) -> None:
        if not 0 < stall_after <= max_stall_after:
            raise ValueError("stall_after must be positive and at most max_stall_after")
        self.clock = clock
        self.stall_after = stall_after
        self.max_stall_after = max_stall_after
        self.backoff = backoff or Backoff()
        self.stalled = False
        self._stalls = 0  # stalls in a row (no progress between them)
        self._watching = False
        self._last = 0.0
        self._restart_at: float | None = None

    def observe(self, state: str) -> None:
        """The state the replication reports now (``SyncStatus.state``). ``syncing`` starts watching
        (the count begins now unless it was already watching); any other state stops it, and ends a
        stall (the replication said what it is doing: caught up, offline or failed)."""
        if state == "syncing":
            if not self._watching:
                self._watching = True
                self._last = self.clock()
            return
        self._watching = False
        if self.stalled:
            self.stalled = False
        if state == "synced":  # caught up: as good as progress
            self._stalls = 0
            self.backoff.reset()

    def worked(self) -> None:
        """Other work of the sync went on (the server answered, history took changes in): the count
        starts again; not the replication's progress, so a stall and its scheduled restart stay."""
        self._last = self.clock()

    def moved(self) -> None:
        """Documents moved (read, written, checkpointed or taken into history): the count starts
        again, a stall is over and the restart schedule starts again from its first delay."""
        self._last = self.clock()
        self.stalled = False
        self._stalls = 0
        self._restart_at = None
        self.backoff.reset()

    def restarted(self) -> None:
        """A start of the replication (the scheduled one, or "Sync now" at once): nothing is due
        any more, and the count starts from now."""
        self._restart_at = None
        self._last = self.clock()

    def stop(self) -> None:
        """Sync is off: nothing is watched, due or stalled."""
        self._watching = False
        self._restart_at = None
        self.stalled = False
        self._stalls = 0
        self.backoff.reset()

    @property
    def patience(self) -> float:
        """Seconds without progress the current attempt is given: ``stall_after`` doubled for each
        stall in a row, at most ``max_stall_after``.

        >>> dog = ProgressWatchdog(lambda: 0.0, stall_after=20, max_stall_after=60)
        >>> dog.patience
        20
        """
        return min(self.stall_after * 2 ** self._stalls, self.max_stall_after)

    def poll(self) -> Literal["stalled", "restart"] | None:
        """Call about once a second. ``"stalled"``: the replication is stalled now (cancel it and
        show the stall; the restart is scheduled by the backoff); ``"restart"``: the scheduled
        restart is due (start it and call ``restarted``); ``None``: nothing to do."""
        now = self.clock()
        if self._restart_at is not None:
            if now < self._restart_at:
                return None
            self._restart_at = None
            return "restart"
        if self._watching and now - self._last >= self.patience:
            self._watching = False
            self.stalled = True
            self._stalls += 1
            self._restart_at = now + self.backoff.next()
            return "stalled"
        return None
