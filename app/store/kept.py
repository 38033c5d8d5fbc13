"""What a tab keeps in memory that storage does not hold (DESIGN.md §5: nothing is lost
silently): versions that did not fit, saves and removals made while read-only, and courses
another tab pruned for quota.

``KeptInMemory`` only keeps books; its methods return what changed, and the facade
(``app.store.facade``) says it (``storage-full``, ``storage-pruned-elsewhere``).

Example::

    >>> from app.store.envelope import Thread
    >>> kept = KeptInMemory()
    >>> kept.keep_full("a", Thread([], 1)), kept.keep_full("a", Thread([], 2))
    (True, False)
    >>> kept.ids()
    frozenset({'a'})
"""

from __future__ import annotations

from collections.abc import Iterable

from app.store.envelope import Thread

__all__ = ["KeptInMemory"]


class KeptInMemory:
    """This tab's versions of courses not stored (``None``: a removal not stored yet), with the
    courses kept for lack of room (``full``) and those kept because another tab pruned them
    (``elsewhere``): each notice holds exactly while its course is so kept."""

    def __init__(self) -> None:
        self.threads: dict[str, Thread | None] = {}
        self.full: set[str] = set()
        self.elsewhere: set[str] = set()

    def __contains__(self, stage_id: str) -> bool:
        return stage_id in self.threads

    def ids(self) -> frozenset[str]:
        """The stage ids kept (``ThreadStore.memory_only``)."""
        return frozenset(self.threads)

    def view(self, stage_id: str, stored: dict[str, Thread]) -> Thread | None:
        """This tab's version of ``stage_id``: kept in memory, else ``stored``'s."""
        if stage_id in self.threads:
            return self.threads[stage_id]
        return stored.get(stage_id)

    def views(self, stored: dict[str, Thread]) -> dict[str, Thread | None]:
        """This tab's version of every course it knows (``view`` of each)."""
        return {k: self.view(k, stored) for k in stored.keys() | self.threads.keys()}

    def keep(self, stage_id: str, thread: Thread | None) -> None:
        """Keep ``thread`` (``None``: a removal) until storage can take it."""
        self.threads[stage_id] = thread

    def keep_full(self, stage_id: str, thread: Thread) -> bool:
        """Keep ``thread``, which does not fit even alone; True when this is news (say it)."""
        self.threads[stage_id] = thread
        news = stage_id not in self.full
        self.full.add(stage_id)
        return news

    def keep_pruned(self, held: dict[str, Thread], stage_ids: Iterable[str]) -> None:
        """Keep ``held``'s version of each course another tab pruned."""
        for stage_id in stage_ids:
            self.threads[stage_id] = held[stage_id]
            self.elsewhere.add(stage_id)

    def follow(self, stored: Iterable[str]) -> None:
        """Drop the pruned courses another tab wrote again (``stored``: stage ids stored now):
        the stored version is followed."""
        for stage_id in self.elsewhere & set(stored):
            self.elsewhere.discard(stage_id)
            self.threads.pop(stage_id, None)

    def drop(self, stage_id: str) -> None:
        """Forget ``stage_id``: it was written, or cleared (its notices no longer hold)."""
        self.threads.pop(stage_id, None)
        self.full.discard(stage_id)
        self.elsewhere.discard(stage_id)

    def drop_all(self) -> None:
        """Forget everything (it all went to an in-memory storage)."""
        self.threads.clear()
        self.full.clear()
        self.elsewhere.clear()
