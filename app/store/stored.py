"""The value under the store's key as this tab last read or wrote it (DESIGN.md §3): its
threads and, when known, its layout, with the reads and writes that keep them in step.

``StoredValue`` returns what happened and raises ``StorageUnavailable`` from every method
that touches storage; it never changes the store's mode or says anything (the facade,
``app.store.facade``, does both).

Example::

    >>> from app.storage import MemoryStorage
    >>> from app.store.envelope import Thread
    >>> value = StoredValue(MemoryStorage(), "k")
    >>> value.write({"a": Thread([], 1)})
    >>> value.splice({"a": Thread([], 2)}, "a"), value.threads["a"].updated_at
    (True, 2)
"""

from __future__ import annotations


from app.storage import MemoryStorage, QuotaExceeded, StringStorage, UnparseableValue
from app.store.backups import back_up
from app.store.envelope import Entries, Thread, entry_spans, envelope, merge_changes, splice_for
from app.store.pruned import PruneNotes, forget_pruned, read_pruned
from app.store.quota import Pruned, write_pruning

__all__ = ["StoredValue"]


class StoredValue:
    """``threads``: what the stored value holds (or will hold after the next write).
    ``written``: the same when the stored value is exactly ``envelope(written)`` as this tab
    wrote or read it (a save can then splice its own entry), else ``None``."""

    def __init__(self, storage: StringStorage, key: str) -> None:
        self.storage = storage
        self.key = key
        self.threads: dict[str, Thread] = {}
        self.written: dict[str, Thread] | None = None
        self._spliced_over_quota = False  # the last splice's value did not fit

    def take(self, threads: dict[str, Thread], *, layout_known: bool) -> None:
        """Hold ``threads`` as what is stored; ``layout_known``: the value is ``envelope(threads)``."""
        self.threads, self.written = threads, (dict(threads) if layout_known else None)

    def unchanged(self) -> bool:
        """True while the stored value is what this tab last read or wrote."""
        return self.storage.unchanged(self.key)

    def get(self) -> tuple[str | None, bool]:
        """``(raw, unparseable)``: the stored value (``None``: no key) and whether storage found
        it unparseable (``UnparseableValue``)."""
        try:
            return self.storage.get_item(self.key), False
        except UnparseableValue as error:
            return error.raw, True

    def read_changes(self) -> tuple[Entries, bool] | None:
        """The stored entries after another tab wrote, reading only those it changed
        (``StringStorage.read_changes``): ``(entries, canonical)`` as ``app.store.envelope.scan``
        gives them, or ``None`` when that cannot be said (the caller reads the whole value)."""
        if not self.written:
            return None
        change = self.storage.read_changes(self.key, *entry_spans(self.written))
        return None if change is None else merge_changes(self.written, change)

    def write(self, threads: dict[str, Thread]) -> None:
        """Write ``envelope(threads)`` whole. Raises ``QuotaExceeded`` (nothing written)."""
        self.storage.set_item(self.key, envelope(threads))
        self.take(threads, layout_known=True)

    def save(self, stage_id: str, thread: Thread) -> Pruned | None:
        """Write ``thread`` as ``stage_id``'s in one write: only its entry when the layout is known
        (``splice``), else whole with quota pruning (``write_pruning``). ``None`` when another
        tab wrote during the splice (nothing written)."""
        candidate = {**self.threads, stage_id: thread}
        spliced = self.splice(candidate, stage_id)
        if spliced is None:
            return None
        if spliced:
            return Pruned(candidate)
        # a splice that did not fit was this very value: it is not tried whole again (megabytes copied for nothing)
        return self.write_pruning(candidate, stage_id, tried=self._spliced_over_quota)

    def rewrite(self) -> bool:
        """Write what is held whole (a migrated or repaired value); False when it does not fit."""
        try:
            self.write(self.threads)
            return True
        except QuotaExceeded:
            return False

    def remove(self, stage_id: str) -> None:
        """Write the value without ``stage_id``'s thread, taking it off the pruning record first
        (a deliberate removal: other tabs follow it). Raises ``QuotaExceeded``."""
        forget_pruned(self.storage, self.key, stage_id)
        self.write({k: v for k, v in self.threads.items() if k != stage_id})

    def splice(self, threads: dict[str, Thread], stage_id: str) -> bool | None:
        """Write only ``stage_id``'s entry of ``threads``: True when done; False when that is not
        possible (layout unknown, other changes, no room: write whole); ``None`` when another
        tab wrote in between (nothing written, the layout is no longer known)."""
        self._spliced_over_quota = False
        edit = None if self.written is None else splice_for(self.written, threads, stage_id)
        if edit is None:
            return False
        try:
            if self.storage.splice_item(self.key, *edit):
                self.take(threads, layout_known=True)
                return True
        except QuotaExceeded:
            self._spliced_over_quota = True  # envelope(threads) does not fit
            return False
        self.written = None
        return None

    def write_pruning(self, threads: dict[str, Thread], stage_id: str, *, tried: bool = False) -> Pruned:
        """Write ``threads`` whole, pruning for quota (``app.store.quota.write_pruning``) and saying
        what it pruned (``app.store.pruned``). ``tried``: ``envelope(threads)`` was just found not to
        fit (it is not written again)."""
        notes = PruneNotes(self.storage, self.key, threads)
        outcome = write_pruning(self.storage, self.key, threads, stage_id, notes, tried=tried)
        if outcome.threads is not None:
            self.take(outcome.threads, layout_known=True)
        return outcome

    def pruned(self) -> frozenset[str]:
        """The stage ids another tab's save said it pruned (``app.store.pruned.read_pruned``)."""
        return read_pruned(self.storage, self.key)

    def back_up(self, stamp_ms: int) -> str | None:
        """Back the stored value up (``app.store.backups.back_up``): its backup key, or ``None``."""
        return back_up(self.storage, self.key, stamp_ms)

    def export(self, file_name: str) -> bool:
        """Hand the stored value to the user as ``file_name`` (``StringStorage.export_item``)."""
        return self.storage.export_item(self.key, file_name)

    def move_to_memory(self, threads: dict[str, Thread]) -> None:
        """Go on over a fresh ``MemoryStorage`` holding ``threads`` (storage was lost)."""
        self.storage = MemoryStorage()
        self.storage.set_item(self.key, envelope(threads))
        self.storage.get_item(self.key)  # seen: later saves splice
        self.take(threads, layout_known=True)
