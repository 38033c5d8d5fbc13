"""What the thread store tells its callers: its ``Mode``, the ``Notice`` s it queues and a
``SaveResult`` per save (DESIGN.md §5: nothing is lost silently).

Notices (``Notice.code``, ``params``):

- ``storage-unavailable`` ``{}``: running in memory (said once).
- ``storage-corrupt`` ``{"backup_key": str}``: something stored was dropped or
  unparseable; the raw value was copied to ``backup_key`` first.
- ``storage-read-only`` ``{"reason": "backup-failed"}``: a damaged value could
  not be backed up, so it is never overwritten; saves stay in memory. Holds while
  the store is read-only; its way out is ``ThreadStore.download_damaged`` (the user's choice).
- ``storage-exported`` ``{"file_name": str}``: the user downloaded the damaged
  value as that file, its backup; the value was repaired and saving resumed.
- ``storage-pruned-elsewhere`` ``{"stage_id": str}``: another tab's save pruned
  this course for quota; this tab keeps its thread in memory (``memory_only``)
  and its next save writes it back under the usual rules. Holds while so kept.
- ``storage-newer-version`` ``{"version": int}``: written by a newer app; never
  overwritten; saves stay in memory.
- ``storage-full`` ``{"stage_id": str}``: even this thread alone does not fit;
  it is kept in memory (``memory_only``) and its next save retries. It holds
  while ``stage_id`` is in ``memory_only()``: a later successful save of that
  course or ``clear`` of it ends it (said again when it happens again).
- ``storage-pruned`` ``{"count": int, "stage_ids": [str]}``: least recently
  updated other threads were removed so the save fits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Mode", "Notice", "NoticeQueue", "SaveResult"]

Mode = Literal["persistent", "memory", "read-only"]
"""``"persistent"``; ``"memory"`` (storage unavailable: everything goes to a ``MemoryStorage``);
``"read-only"`` (a newer stored version, or the backup of a damaged value failed: storage is
read, never written). DESIGN.md §5."""


@dataclass(frozen=True)
class Notice:
    """Something the user is told about storage (codes in the module docstring)."""

    code: str
    params: dict[str, Any] = field(default_factory=dict)


class NoticeQueue:
    """The notices a store queued, oldest first, and how far its reader has taken them."""

    def __init__(self) -> None:
        self._notices: list[Notice] = []
        self._taken = 0

    def add(self, code: str, **params: Any) -> None:
        """Queue ``Notice(code, params)``."""
        self._notices.append(Notice(code, params))

    def all(self) -> list[Notice]:
        """Every notice so far, oldest first."""
        return list(self._notices)

    def take(self) -> list[Notice]:
        """The notices added since the last call."""
        new = self._notices[self._taken :]
        self._taken = len(self._notices)
        return new


@dataclass(frozen=True)
class SaveResult:
    """What ``ThreadStore.save`` did.

    ``written``: the value is in the browser's storage. ``pruned``: stage ids
    removed to make room (least recently updated first). ``kept_in_memory``: the
    thread lives only in this tab for now (storage full, unavailable, or
    read-only). ``read_only``: the store never writes storage in this session.
    ``merged``: another tab had changed this course since ``base``; this tab's
    new messages were appended to what it stored (``load`` shows the result).
    """

    written: bool
    pruned: tuple[str, ...] = ()
    kept_in_memory: bool = False
    read_only: bool = False
    merged: bool = False
