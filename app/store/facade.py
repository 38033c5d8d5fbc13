"""``ThreadStore``: the facade over the store's parts, and the only place that changes the
store's mode and queues its notices (DESIGN.md §5; codes in ``app.store.results``).

The parts return what happened: ``StoredValue`` (what the stored value holds and its layout,
its reads and writes), ``KeptInMemory`` (this tab's versions not stored: they never cost
anything stored, and pruning ranks only stored threads), ``decode`` (read, migrate,
validate), ``backups``, ``quota``, ``pruned`` (the pruning tab's word) and ``tabs`` (other
tabs' writes). The store never reads the clock: callers pass ``now_ms`` / ``updated_at``.

Modes: ``"persistent"``; ``"memory"`` when storage throws (``_to_memory``, for good);
``"read-only"`` for a newer stored version or a damaged value no backup fits
(``_to_read_only``), left by ``download_damaged`` or another tab's sound value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from app.storage import MemoryStorage, QuotaExceeded, StorageUnavailable, StringStorage
from app.store import envelope as stored_envelope
from app.store.decode import fresh_threads, read_value
from app.store.envelope import STORAGE_KEY, Thread
from app.store.kept import KeptInMemory
from app.store.results import Mode, Notice, NoticeQueue, SaveResult
from app.store.stored import StoredValue
from app.store.tabs import gone, rebase, replaced
from app.store.trace import SaveTrace

__all__ = ["ThreadStore"]

Json = Any
Messages = list[dict[str, Json]]
T = TypeVar("T")


class ThreadStore:
    """Per-course slim threads persisted under ``key`` in ``storage`` (DESIGN.md §3–§5).

    ``storage=None`` (or one whose access raises ``StorageUnavailable``) runs in memory with
    ``storage-unavailable``. Call ``hydrate`` once at start-up, then ``load`` / ``save`` /
    ``clear``, and ``reload`` on a ``storage`` event from another tab. Storage problems
    never raise: they change ``mode`` and queue ``notices`` (example: ``app.store``).
    """

    def __init__(self, storage: StringStorage | None, *, key: str = STORAGE_KEY) -> None:
        self._stored = StoredValue(MemoryStorage() if storage is None else storage, key)
        self._kept = KeptInMemory()
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
    def notices(self) -> list[Notice]:
        """Every notice so far, oldest first."""
        return self._notices.all()

    def take_notices(self) -> list[Notice]:
        """The notices added since the last call."""
        return self._notices.take()

    def hydrate(self, now_ms: int) -> None:
        """Read, validate and migrate the stored value (DESIGN.md §5). A damaged value is first
        copied whole to ``<key>.backup.<now_ms>`` (``storage-corrupt``); if that copy fails the
        store turns read-only. A migrated or repaired value is then written back once."""
        self._clock = max(self._clock, now_ms)
        if self._read() and self._mode == "persistent":
            self._flush()
        self._hydrated = True

    def download_damaged(self, now_ms: int) -> str | None:
        """The way out of ``storage-read-only`` (DESIGN.md §5), after the user chose it: hand the
        stored value to the user as the file ``<key>.backup.<now_ms>.txt`` (never copied into
        Python), then treat that file as its backup: the value is repaired and written back,
        the threads kept in memory meanwhile each saved under the usual quota rules, and
        ``storage-exported {"file_name"}`` replaces the read-only notice. Returns the file
        name; ``None`` outside that state (a newer version stays untouched) or when the key
        held nothing any more."""
        if self._mode != "read-only" or self._reason != "storage-read-only":
            return None
        self._clock = max(self._clock, now_ms)
        name = f"{self._stored.key}.backup.{self._clock}.txt"
        exported = self._try(lambda: self._stored.export(name), None)
        if exported is None:
            return None
        self._mode, self._reason = "persistent", None
        # The file is the backup only of the value downloaded; a later write of another tab is read as usual.
        self._exported = name if exported and self._unchanged() else None
        self._stored.written = None
        if self._read() and self._mode == "persistent":
            self._flush()
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
        """This tab's slim messages of ``stage_id`` (do not mutate), or ``None``: the version
        kept in memory when there is one (``memory_only``), else the stored one."""
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
        """Stage ids whose latest version lives only in this tab (did not fit, or read-only); a
        ``storage-full`` notice holds exactly while its stage id is in here (DESIGN.md §5)."""
        return self._kept.ids()

    def save(self, stage_id: str, messages: Messages, updated_at: int, *, base: Messages | None = None) -> SaveResult:
        """Store ``stage_id``'s thread (``serialize_thread`` output, kept as given) stamped
        ``updated_at`` ms, merging other tabs' courses (DESIGN.md §5).

        ``base``: the stored messages ``messages`` was built on (what ``load`` returned); when
        another tab saved or cleared this course since, the messages after ``base`` are
        appended to what is stored now (``SaveResult.merged``, ``app.store.tabs.rebase``).
        Only this course's entry is handed to storage when the stored layout is known and no
        other tab wrote since (another tab writing in between: the save starts over); a full
        quota prunes other *stored* threads least recently updated first in the same write
        (``app.store.quota``); a thread that alone does not fit is kept in memory
        (``memory_only``). Raises ``TypeError`` for a non-int ``updated_at``.
        """
        if type(updated_at) is not int:
            raise TypeError(f"updated_at must be int milliseconds, got {updated_at!r}")
        self._clock = max(self._clock, updated_at)
        merged = False

        def rebased() -> Thread:
            nonlocal merged
            current = self._kept.view(stage_id, self._stored.threads)
            thread, merged = rebase(messages, base, current.messages if current is not None else [])
            return Thread(thread, updated_at)
        result = self._write_on_fresh(stage_id, rebased)
        return replace(result, merged=True) if merged else result

    def replaced_elsewhere(self, stage_id: str, base: Messages) -> bool:
        """True when another tab replaced ``stage_id``'s thread since ``base`` (as ``load`` returned
        it) with one that does not go on from it (``app.store.tabs.replaced``). False when
        ``base`` is empty or the course is ``memory_only`` (storage is not this tab's record)."""
        if not base or stage_id in self._kept:
            return False
        self._sync()
        current = self._stored.threads.get(stage_id)
        return replaced(current.messages if current is not None else [], base)

    def clear(self, stage_id: str) -> None:
        """Remove ``stage_id``'s thread; other courses stay as stored (DESIGN.md §4). A version
        kept in memory goes too (its ``storage-full`` no longer holds). The course is taken off
        the pruning record first (``app.store.pruned``): other tabs follow the removal."""
        self._sync()
        self._kept.drop(stage_id)
        if stage_id not in self._stored.threads:
            return
        if self._mode == "read-only":
            self._kept.keep(stage_id, None)
            return
        try:
            if not self._set({k: v for k, v in self._stored.threads.items() if k != stage_id}, forget=stage_id):
                self.clear(stage_id)  # storage was lost: clear what the in-memory storage now holds
        except QuotaExceeded:  # smaller than what is stored: only when another writer filled the rest
            self._kept.keep(stage_id, None)

    def reload(self) -> set[str]:
        """Re-read storage after another tab wrote it; return the stage ids whose thread (as
        ``load`` sees it) changed. Threads kept in memory keep this tab's version; a damaged
        value keeps the threads this tab held (``_read``)."""
        if self._mode == "memory" or self._unchanged():
            return set()
        view = self._kept.view
        before = {k: view(k, self._stored.threads) for k in self._stored.threads.keys() | self._kept.threads.keys()}
        self._read()
        after = self._stored.threads.keys() | self._kept.threads.keys()
        return {k for k in before.keys() | after if before.get(k) is not view(k, self._stored.threads)}

    def trace_save(self, stage_id: str, messages: Messages, updated_at: int, *, clock: Callable[[], float],
                   splice: Callable[[int, int, str], bool] | None = None) -> SaveTrace:
        """One steady save of ``stage_id`` (this tab wrote the stored value last) done step by step
        and timed with ``clock`` (ms): ``app.store.trace.SaveTrace``. The benchmark's profiling
        entry point (DESIGN.md §15): it writes as ``save`` does and keeps the store on the
        splice path. ``splice(start, end, text)`` hands the edit to storage (default
        ``StringStorage.splice_item``). Raises ``LookupError`` (nothing written) when the
        store is not on the splice path or another writer changed the value."""
        if self._mode != "persistent":
            raise LookupError(f"store not on the splice path (mode {self._mode})")
        trace = self._stored.trace_splice(stage_id, Thread(messages, updated_at), clock, splice)
        self._kept.drop(stage_id)
        return trace

    # --- internals: the one place the mode changes and notices are queued -------------

    def _notify(self, code: str, **params: Json) -> None:
        self._notices.add(code, **params)

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
        merged = {**self._stored.threads, **self._kept.threads}
        self._stored.move_to_memory({k: v for k, v in merged.items() if v is not None})
        self._kept.drop_all()
        self._notify("storage-unavailable")

    def _to_read_only(self, code: str, **params: Json) -> None:
        if self._mode == "persistent":
            self._mode, self._reason = "read-only", code
            self._notify(code, **params)

    def _unchanged(self) -> bool:
        return self._try(self._stored.unchanged, True)

    def _sync(self) -> None:
        """Before a write: re-read only if another tab wrote since this one read or wrote."""
        if not self._unchanged():
            self._read()

    def _read(self) -> bool:
        """Take in the stored value (DESIGN.md §5); True when it should be rewritten (migrated, or
        repaired after a successful backup). Only the entries another tab changed are read when
        the layout is known (``StoredValue.read_changes``). A damaged value keeps the threads this
        tab held wherever it lost them (an unreadable one keeps them all, a damaged thread keeps
        this tab's version); a missing key, or a course cleanly absent, is followed."""
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
        fresh = fresh_threads(found.entries, held)
        damaged, kept_held = found.damaged or fresh.damaged, fresh.kept_held
        threads = {**held, **fresh.threads} if found.keep_all else fresh.threads
        if not damaged:
            kept_held |= self._keep_pruned(held, threads)
        rewrite = found.version <= current and (self._backup() if damaged else found.version < current)
        sound = not damaged and found.version == current
        self._stored.take(threads, layout_known=sound and found.canonical and not kept_held)
        if sound and self._reason == "storage-read-only" and self._hydrated:
            self._mode, self._reason = "persistent", None  # another tab replaced the damaged value with a sound one
            self._write_memory()
        return rewrite

    def _read_changes(self) -> bool:
        """Take in another tab's changes entry by entry; False when the whole value must be read."""
        partial = self._try(self._stored.read_changes, None)
        if partial is None or partial[0].damaged:
            return False
        fresh, canonical = partial
        pruned = self._keep_pruned(self._stored.threads, fresh.threads)
        self._stored.take(fresh.threads, layout_known=canonical and not pruned)
        return True

    def _keep_pruned(self, held: dict[str, Thread], fresh: dict[str, Thread]) -> bool:
        """Keep in memory the courses gone from the stored value that another tab's save says it
        pruned (``app.store.pruned``), each with ``storage-pruned-elsewhere``; other courses gone
        are followed, and so is a kept one another tab wrote again. True when any was kept."""
        self._kept.follow(fresh)
        missing = gone(held, fresh, self._kept)
        recorded = self._try(self._stored.pruned, frozenset()) if missing else frozenset()
        pruned = [k for k in missing if k in recorded]
        self._kept.keep_pruned(held, pruned)
        for stage_id in pruned:
            self._notify("storage-pruned-elsewhere", stage_id=stage_id)
        return bool(pruned)

    def _backup(self) -> bool:
        """Back the damaged stored value up before anything overwrites it (``app.store.backups``):
        ``storage-corrupt``, or read-only when no backup fits; a value the user just downloaded
        has that file as its backup (``storage-exported``). True when the value is kept somewhere."""
        if self._mode != "persistent":
            return False
        if self._exported is not None:
            self._notify("storage-exported", file_name=self._exported)
            return True
        key = self._try(lambda: self._stored.back_up(self._clock) or "", None)
        if key:
            self._notify("storage-corrupt", backup_key=key)
        elif key is not None:  # no backup fits
            self._to_read_only("storage-read-only", reason="backup-failed")
        return bool(key)

    def _flush(self) -> None:
        """Write what is stored whole (hydrate's write-back of a migrated or repaired value)."""
        try:
            self._set(self._stored.threads)
        except QuotaExceeded:
            pass

    def _set(self, threads: dict[str, Thread], *, forget: str | None = None) -> bool:
        """Write ``threads`` whole (``forget``: a course removed, taken off the pruning record
        first); False when storage was lost (the store went on in memory). Raises ``QuotaExceeded``."""
        def write() -> bool:
            if forget is not None:
                self._stored.forget_pruned(forget)
            self._stored.write(threads)
            return True
        return self._try(write, False)

    def _write_on_fresh(self, stage_id: str, build: Callable[[], Thread | None]) -> SaveResult | None:
        """Write ``build()``'s thread as ``stage_id``'s onto what is stored now: re-read first when
        another tab wrote, and again when another tab wrote during the splice (the third try
        writes whole, which never starts over). ``build`` returns ``None`` to write nothing."""
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
        """Store ``thread`` as ``stage_id``'s in one write: spliced when the layout is known, else
        whole with quota pruning; kept in memory when read-only or when it alone does not fit.
        ``None`` when another tab wrote during the splice (the caller starts over)."""
        if self._mode == "read-only":
            self._kept.keep(stage_id, thread)
            return SaveResult(written=False, kept_in_memory=True, read_only=True)
        candidate = {**self._stored.threads, stage_id: thread}
        spliced = self._try(lambda: self._stored.splice(candidate, stage_id), None)
        if spliced is None:
            return None
        pruned: tuple[str, ...] = ()
        if not spliced:
            outcome = self._try(lambda: self._stored.write_pruning(candidate, stage_id), None)
            if outcome is None:  # storage was lost: write again what this tab holds now, in memory
                return self._write(stage_id, thread)
            if outcome.threads is None:
                if self._kept.keep_full(stage_id, thread):
                    self._notify("storage-full", stage_id=stage_id)
                return SaveResult(written=False, kept_in_memory=True)
            if outcome.pruned:
                self._notify("storage-pruned", count=len(outcome.pruned), stage_ids=list(outcome.pruned))
            pruned = outcome.pruned
        self._kept.drop(stage_id)
        memory = self._mode == "memory"
        return SaveResult(written=not memory, pruned=pruned, kept_in_memory=memory)

    def _write_memory(self) -> None:
        """After read-only ends: write each thread kept in memory meanwhile, one by one under the
        usual rules, onto what is stored now (another tab may have written since)."""
        for stage_id, thread in list(self._kept.threads.items()):
            if self._mode != "persistent":
                break
            if thread is None:
                self.clear(stage_id)
            elif stage_id not in self._kept.elsewhere:
                self._write_on_fresh(stage_id, lambda: thread if (
                    self._mode == "persistent" and self._kept.threads.get(stage_id) is thread) else None)
