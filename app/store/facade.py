"""``ThreadStore``: the facade over the store's parts, and the only place that changes the
store's mode and queues its notices (DESIGN.md §5; codes in ``app.store.results``).

The parts return what happened: ``StoredValue`` (what the stored value holds and its layout,
its reads and writes), ``KeptInMemory`` (this tab's versions not stored: they never cost
anything stored, and pruning ranks only stored threads), ``decode`` (read, migrate,
validate), ``reading`` (what a read takes in), ``backups``, ``quota``, ``pruned`` (the
pruning tab's word) and ``tabs`` (other tabs' writes). The store never reads the clock:
callers pass ``now_ms`` / ``updated_at``.

Modes: ``"persistent"``; ``"memory"`` when storage throws (``_to_memory``, for good);
``"read-only"`` for a newer stored version or a damaged value no backup fits
(``_to_read_only``), left by ``download_damaged`` or another tab's sound value.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import replace
from typing import Any, TypeVar

from app.storage import MemoryStorage, QuotaExceeded, StorageUnavailable, StringStorage
from app.store import envelope as stored_envelope
from app.store.decode import ReadValue, read_value
from app.store.envelope import STORAGE_KEY, Thread
from app.store.kept import KeptInMemory
from app.store.reading import Taken, take_in
from app.store.results import Mode, Notice, NoticeQueue, SaveResult
from app.store.stored import StoredValue
from app.store.tabs import rebase, replaced

__all__ = ["ThreadStore"]

Json = Any
Messages = list[dict[str, Json]]
T = TypeVar("T")


class ThreadStore:
    """Per-course slim threads under ``key`` in ``storage`` (``None``: in memory), DESIGN.md §3–§5:
    ``hydrate`` once, then ``load`` / ``save`` / ``clear``, ``reload`` on another tab's ``storage``
    event. Storage problems never raise: they change ``mode`` and queue ``notices``."""

    def __init__(self, storage: StringStorage | None, *, key: str = STORAGE_KEY) -> None:
        self._stored = StoredValue(MemoryStorage() if storage is None else storage, key)
        self._kept = KeptInMemory()
        self._repaired: list[str] = []  # courses read with something of their thread dropped (``take_repaired``)
        self._notices = NoticeQueue()
        self._clock = 0  # latest time a caller passed; names backup keys
        self._mode: Mode = "persistent"
        self._reason: str | None = None  # why read-only: the notice code that said so
        self._hydrated = False  # hydrate ran: later reads are another tab's writes
        self._exported: str | None = None  # file the user downloaded the stored value to (download_damaged)
        if storage is None:
            self._to_memory()

    @property
    def mode(self) -> Mode:
        """``"persistent"`` | ``"memory"`` | ``"read-only"`` (``app.store.results.Mode``)."""
        return self._mode

    @property
    def storage(self) -> StringStorage:
        """The storage read and written now (a ``MemoryStorage`` once storage was lost)."""
        return self._stored.storage

    @property
    def notices(self) -> list[Notice]:
        """Every notice so far, oldest first."""
        return self._notices.all()

    def take_notices(self) -> list[Notice]:
        """The notices added since the last call."""
        return self._notices.take()

    def take_repaired(self) -> list[str]:
        """The courses whose stored thread was read with a message or part of it dropped or repaired
        (a damaged value, DESIGN.md §5) since the last call, in the order read: history may hold
        what was lost (``app.history.active_thread.ActiveThread.mend``)."""
        repaired, self._repaired = self._repaired, []
        return repaired

    def hydrate(self, now_ms: int) -> None:
        """Read, validate and migrate the stored value (DESIGN.md §5): a damaged value is backed up
        first (``<key>.backup.<now_ms>``), a migrated or repaired one written back once."""
        self._clock = max(self._clock, now_ms)
        if self._read() and self._mode == "persistent":
            self._try(self._stored.rewrite, False)
        self._hydrated = True

    def download_damaged(self, now_ms: int) -> str | None:
        """The way out of ``storage-read-only`` (DESIGN.md §5), after the user chose it: the stored
        value becomes the file ``<key>.backup.<now_ms>.txt``, its backup; then it is repaired and
        written back with the threads kept in memory meanwhile (``storage-exported``). Returns
        the file name; ``None`` outside that state or when the key held nothing any more."""
        if self._mode != "read-only" or self._reason != "storage-read-only":
            return None
        self._clock = max(self._clock, now_ms)
        name = f"{self._stored.key}.backup.{self._clock}.txt"
        exported = self._try(lambda: self._stored.export(name), None)
        if exported is None:
            return None
        self._mode, self._reason = "persistent", None
        # The file is the backup only of the value downloaded; a later write of another tab is read as usual.
        self._exported = name if exported and self._try(self._stored.unchanged, True) else None
        self._stored.written = None
        if self._read() and self._mode == "persistent":
            self._try(self._stored.rewrite, False)
        self._exported = None
        self._write_memory()
        return name if exported else None

    def notice_holds(self, notice: Notice) -> bool:
        """Whether ``notice`` still says something true: ``storage-read-only`` while read-only,
        ``storage-pruned-elsewhere`` while its course is kept in memory; others: True."""
        if notice.code == "storage-read-only":
            return self._mode == "read-only"
        if notice.code == "storage-pruned-elsewhere":
            return notice.params.get("stage_id") in self._kept.elsewhere
        return True

    def load(self, stage_id: str) -> Messages | None:
        """This tab's slim messages of ``stage_id`` (kept in memory, else stored; do not mutate), or ``None``."""
        thread = self._kept.view(stage_id, self._stored.threads)
        return thread.messages if thread else None

    def stage_ids(self) -> list[str]:
        """Ids of the courses with a stored thread, in stored order (no thread is copied or decoded)."""
        return list(self._stored.threads)

    def updated_at(self, stage_id: str) -> int | None:
        """The ``updatedAt`` (ms) of ``stage_id``'s thread as ``load`` sees it, or ``None``."""
        thread = self._kept.view(stage_id, self._stored.threads)
        return thread.updated_at if thread else None

    def memory_only(self) -> frozenset[str]:
        """Stage ids whose latest version lives only in this tab; ``storage-full`` holds while in here."""
        return self._kept.ids()

    def save(self, stage_id: str, messages: Messages, updated_at: int, *, base: Messages | None = None,
             firsts: Collection[str] = (), tree_kept: bool = False) -> SaveResult:
        """Store ``stage_id``'s thread (``serialize_thread`` output, kept as given) stamped
        ``updated_at`` ms over other tabs' courses (DESIGN.md §5): onto what another tab saved
        since ``base`` (what ``load`` returned; ``app.store.tabs.rebase``), spliced when the
        layout is known, else whole with quota pruning (``app.store.quota``), kept in memory
        when it alone does not fit. ``firsts``: the first messages of the conversation's tree
        (``rebase``'s); ``tree_kept``: history keeps that tree, so another tab's turn sent on the same
        message is a sibling, not merged (``rebase``'s). Raises ``TypeError`` for a non-int ``updated_at``."""
        if type(updated_at) is not int:
            raise TypeError(f"updated_at must be int milliseconds, got {updated_at!r}")
        self._clock = max(self._clock, updated_at)
        merged = False

        def rebased() -> Thread:
            nonlocal merged
            current = self._kept.view(stage_id, self._stored.threads)
            thread, merged = rebase(messages, base, current.messages if current is not None else [], firsts,
                                    tree_kept=tree_kept)
            return Thread(thread, updated_at, like=current)  # the messages it held are not encoded again
        result = self._write_on_fresh(stage_id, rebased)
        return replace(result, merged=True) if merged else result

    def replaced_elsewhere(self, stage_id: str, base: Messages, firsts: Collection[str] = ()) -> bool:
        """True when another tab replaced ``stage_id``'s thread since ``base`` (``load``'s) with one not
        going on from it (``app.store.tabs.replaced``, ``firsts`` as there); False for an empty base or
        ``memory_only``."""
        if not base or stage_id in self._kept:
            return False
        self._sync()
        current = self._stored.threads.get(stage_id)
        return replaced(current.messages if current is not None else [], base, firsts)

    def clear(self, stage_id: str) -> None:
        """Remove ``stage_id``'s thread, and any version kept in memory; other courses stay as stored
        (DESIGN.md §4). Other tabs follow the removal (``StoredValue.remove``)."""
        self._sync()
        self._kept.drop(stage_id)
        if stage_id not in self._stored.threads:
            return
        if self._mode == "read-only":
            self._kept.keep(stage_id, None)
            return
        mode = self._mode
        try:
            self._try(lambda: self._stored.remove(stage_id), None)
        except QuotaExceeded:  # smaller than what is stored: only when another writer filled the rest
            self._kept.keep(stage_id, None)
            return
        if self._mode != mode:  # storage was lost: clear what the in-memory storage now holds
            self.clear(stage_id)

    def reload(self) -> set[str]:
        """Re-read storage after another tab wrote it (``_read``); return the stage ids whose thread,
        as ``load`` sees it, changed."""
        if self._mode == "memory" or self._try(self._stored.unchanged, True):
            return set()
        before = self._kept.views(self._stored.threads)
        self._read()
        after = self._kept.views(self._stored.threads)
        return {k for k in before.keys() | after.keys() if before.get(k) is not after.get(k)}

    # --- internals: the one place the mode changes and notices are queued -------------

    def _try(self, action: Callable[[], T], fallback: T) -> T:
        """``action()``; when storage throws, go on in memory (``_to_memory``) and return ``fallback``."""
        try:
            return action()
        except StorageUnavailable:
            self._to_memory()
            return fallback

    def _to_memory(self) -> None:
        """Storage threw: continue on a ``MemoryStorage`` holding what this tab has (said once)."""
        if self._mode == "memory":
            return
        self._mode = "memory"
        held = {**self._stored.threads, **self._kept.threads}
        self._stored.move_to_memory({k: v for k, v in held.items() if v is not None})
        self._kept.drop_all()
        self._notices.add("storage-unavailable")

    def _to_read_only(self, code: str, **params: Json) -> None:
        if self._mode == "persistent":
            self._mode, self._reason = "read-only", code
            self._notices.add(code, **params)

    def _sync(self) -> None:
        """Before a write: re-read only if another tab wrote since this one read or wrote."""
        if not self._try(self._stored.unchanged, True):
            self._read()

    def _read(self) -> bool:
        """Take in the stored value (DESIGN.md §5, ``app.store.reading``), only the entries another tab
        changed when the layout is known; True when it should be rewritten (migrated, repaired)."""
        if self._stored.written is not None and self._mode != "memory" and self._read_changes():
            return False
        got = self._try(self._stored.get, None)
        if got is None:
            return False
        (raw, unparseable), held, current = got, self._stored.threads, stored_envelope.STORE_VERSION
        self._stored.take(held if raw is not None else {}, layout_known=False)
        if raw is None:
            return False
        found = read_value(raw, held, unparseable=unparseable)
        if found.version > current:  # never written, no backup
            self._to_read_only("storage-newer-version", version=found.version)
            if self._hydrated:  # another tab's newer app wrote it: keep what this tab holds, never show
                return False  # data of a format this app does not know (at start-up: read what validates)
        taken = self._take_in(found, held)
        rewrite = found.version <= current and (self._backup() if taken.damaged else found.version < current)
        self._stored.take(taken.threads, layout_known=taken.layout_known)
        if not taken.damaged and found.version == current and self._reason == "storage-read-only" and self._hydrated:
            self._mode, self._reason = "persistent", None  # another tab replaced the damaged value with a sound one
            self._write_memory()
        return rewrite

    def _read_changes(self) -> bool:
        """Take in another tab's changes entry by entry; False when the whole value must be read."""
        partial = self._try(self._stored.read_changes, None)
        if partial is None:
            return False
        taken = self._take_in(ReadValue(stored_envelope.STORE_VERSION, *partial), self._stored.threads)
        if not taken.damaged:
            self._stored.take(taken.threads, layout_known=taken.layout_known)
        return not taken.damaged

    def _take_in(self, found: ReadValue, held: dict[str, Thread]) -> Taken:
        """``app.store.reading.take_in``, then keep in memory each course another tab's save said it
        pruned (``storage-pruned-elsewhere``); a kept course another tab wrote again is followed."""
        taken = take_in(found, held, self._kept, lambda: self._try(self._stored.pruned, frozenset()))
        self._repaired += [stage_id for stage_id in taken.repaired if stage_id not in self._repaired]
        if not taken.damaged:
            self._kept.follow(taken.threads)
            self._kept.keep_pruned(held, taken.pruned)
            for stage_id in taken.pruned:
                self._notices.add("storage-pruned-elsewhere", stage_id=stage_id)
        return taken

    def _backup(self) -> bool:
        """Back the damaged value up (``storage-corrupt``; read-only when no backup fits), or name the
        file the user just downloaded (``storage-exported``); True when the value is kept somewhere."""
        if self._mode != "persistent":
            return False
        if self._exported is not None:
            self._notices.add("storage-exported", file_name=self._exported)
            return True
        key = self._try(lambda: self._stored.back_up(self._clock), False)  # False: storage was lost
        if key is None:  # no backup fits
            self._to_read_only("storage-read-only", reason="backup-failed")
        elif key:
            self._notices.add("storage-corrupt", backup_key=key)
        return bool(key)

    def _write_on_fresh(self, stage_id: str, build: Callable[[], Thread | None]) -> SaveResult | None:
        """Write ``build()``'s thread (``None``: nothing) onto what is stored now, re-read first; again
        when another tab wrote during the splice (the third try writes whole, never starting over)."""
        for attempt in range(3):
            self._sync()
            thread = build()
            if thread is None:
                return None
            if attempt == 2:
                self._stored.written = None  # last try: write whole
            result = self._write(stage_id, thread)
            if result is not None:
                return result
        raise AssertionError("unreachable: a whole write never asks to start over")  # pragma: no cover

    def _write(self, stage_id: str, thread: Thread) -> SaveResult | None:
        """Store ``thread`` in one write (``StoredValue.save``), or keep it in memory (read-only, or it
        alone does not fit); ``None`` when another tab wrote during the splice (start over)."""
        if self._mode == "read-only":
            self._kept.keep(stage_id, thread)
            return SaveResult(written=False, kept_in_memory=True, read_only=True)
        outcome = self._try(lambda: self._stored.save(stage_id, thread), False)
        if outcome is False:  # storage was lost: write again what this tab holds now, in memory
            return self._write(stage_id, thread)
        if outcome is None:
            return None
        if outcome.threads is None:
            if self._kept.keep_full(stage_id, thread):
                self._notices.add("storage-full", stage_id=stage_id)
            return SaveResult(written=False, kept_in_memory=True)
        if outcome.pruned:
            self._notices.add("storage-pruned", count=len(outcome.pruned), stage_ids=list(outcome.pruned))
        self._kept.drop(stage_id)
        memory = self._mode == "memory"
        return SaveResult(written=not memory, pruned=outcome.pruned, kept_in_memory=memory)

    def _write_memory(self) -> None:
        """After read-only ends: write each thread kept meanwhile, one by one, onto what is stored now."""
        for stage_id, thread in list(self._kept.threads.items()):
            if self._mode != "persistent":
                break
            if thread is None:
                self.clear(stage_id)
            elif stage_id not in self._kept.elsewhere:
                self._write_on_fresh(stage_id, lambda: thread if (
                    self._mode == "persistent" and self._kept.threads.get(stage_id) is thread) else None)
