"""The persisted thread store: one slim thread per course over a ``StringStorage``
(DESIGN.md §3–§5), a small package with one module per concern.

- ``jsjson``: JSON exactly as JavaScript's ``JSON.stringify`` writes it.
- ``envelope``: the stored envelope, its cached entries, splicing one entry, scanning it back.
- ``decode``: decode, migrate (``MIGRATIONS``) and validate per thread and per message.
- ``backups``: copying a damaged value aside, never twice, never overwriting one.
- ``quota``: pruning the least recently updated other threads until a save fits.
- ``pruned``: the pruning tab's word that it pruned (``<key>.pruned``, beside the envelope).
- ``reading``: what a tab takes in from a read (validated threads, the courses it keeps).
- ``tabs``: the rules for other tabs' writes (merging on ``base``, replaced elsewhere),
  over ``app.continuity.continues``.
- ``stored`` (``StoredValue``): what the stored value holds and its layout, its reads and writes.
- ``kept`` (``KeptInMemory``): this tab's versions that storage does not hold.
- ``trace``: a steady save timed step by step (the benchmark's entry point).
- ``results``: ``Mode``, ``Notice`` (the notice codes), ``NoticeQueue``, ``SaveResult``.
- ``facade`` (``ThreadStore``): the one place that changes the mode and queues notices.

The parts are pure functions or small classes that return what happened.

Example::

    >>> from app.storage import MemoryStorage
    >>> store = ThreadStore(MemoryStorage())
    >>> store.hydrate(now_ms=0)
    >>> store.save("42", [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], 1).written
    True
"""

from __future__ import annotations

from app.store.decode import MIGRATIONS
from app.store.envelope import STORAGE_KEY, STORE_VERSION
from app.store.facade import ThreadStore
from app.store.results import Mode, Notice, SaveResult

__all__ = [
    "MIGRATIONS",
    "STORAGE_KEY",
    "STORE_VERSION",
    "Mode",
    "Notice",
    "SaveResult",
    "ThreadStore",
]
