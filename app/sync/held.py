"""Deletions held until Undo can no longer take them back (DESIGN.md §9, §16, §17), pure and
browser-free.

A delete made here does not go out at once: ``app.sync.engine.SyncEngine`` holds it for
``UNDO_MS`` (``app.history.delete_writes``: how long Undo can take a delete back), and the hold is
kept in the page's storage under ``HELD_KEY`` (a JSON object: document id → ``{"at": epoch ms,
"seen": [turn digests]}``, ids and digests only, never a text or a credential), so a tab closed
meanwhile sends the deletion at the next start. Undo within that time (or anything else that writes
the conversation here again, an import of its file) cancels the hold: nothing of the delete goes
out, the other devices never lose the conversation and no copy of it is made (§17). While a delete
is held, another device's version of that id is kept aside, never written into history here
(where the conversation is deleted): it is taken in when the hold is cancelled, and dropped when
the hold ends (the deletion then goes out over it, saying which turns this device had, so the other
device keeps the turns it made apart, as for any delete, §16).

The storage is read again at each step and before each batch of another device's documents
(``read``), and taken when it changed: another tab's hold counts (one tab replicates, any tab may
delete). A hold the storage cannot keep (blocked, full) is not made: that deletion goes out at once,
as before holds (an undo then brings the conversation back under a new id, docs/sync.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from app.history.delete_writes import UNDO_MS

__all__ = ["HELD_KEY", "HeldDeletes"]

HELD_KEY = "agentbar-sync-held"
"""``localStorage`` key of the deletions held here (module docstring)."""


class HeldDeletes:
    """The deletions held here (module docstring). ``store``: a ``StringStorage``; ``clock``: epoch
    ms; ``hold_ms``: how long a deletion is held (``UNDO_MS``: Undo's time).

    >>> from app.storage import MemoryStorage
    >>> now = [1_000]
    >>> held = HeldDeletes(MemoryStorage(), lambda: now[0])
    >>> held.hold("conversation:t", ["d1"])
    True
    >>> held.keeps_aside("conversation:t", {"_id": "conversation:t"}), held.due()
    (True, [])
    >>> now[0] += UNDO_MS + 1
    >>> held.due()
    [('conversation:t', ['d1'])]
    >>> held.done("conversation:t"); held.cancel("conversation:t") is None
    True
    """

    def __init__(self, store: Any, clock: Callable[[], int], *, hold_ms: int = UNDO_MS) -> None:
        self._store, self._clock, self._hold_ms = store, clock, hold_ms
        self._raw: str | None = None
        self._held: dict[str, dict[str, Any]] = {}
        self._aside: dict[str, dict[str, Any]] = {}
        self.read()

    def read(self) -> None:
        """Take the store's holds when they changed since last read (another tab's; damaged: none):
        what ``keeps_aside`` goes by until the next read."""
        try:
            raw = self._store.get_item(HELD_KEY)
        except Exception:  # noqa: BLE001 - blocked storage: the holds of this page stand
            return
        if raw == self._raw:
            return
        self._raw = raw
        try:
            held = json.loads(raw) if raw else {}
        except ValueError:
            held = {}
        self._held = {doc_id: {"at": hold["at"], "seen": [d for d in hold.get("seen") or [] if isinstance(d, str)]}
                      for doc_id, hold in (held.items() if isinstance(held, dict) else ())
                      if isinstance(hold, dict) and type(hold.get("at")) is int}

    def _write(self) -> bool:
        raw = json.dumps(self._held, sort_keys=True)
        try:
            self._store.set_item(HELD_KEY, raw)
        except Exception:  # noqa: BLE001 - blocked or full: not kept for a later start
            return False
        self._raw = raw
        return True

    def hold(self, doc_id: str, seen: list[str]) -> bool:
        """Hold the deletion of ``doc_id`` from now on; ``seen``: the digests of the turns this device
        had (``app.sync.documents.turn_digests``), which the deletion will name. False, and nothing
        held, when the storage cannot keep the hold (full, blocked): a tab closed before Undo's time
        is over would never send the deletion, so the caller sends it at once (DESIGN.md §5)."""
        self.read()
        self._held[doc_id] = {"at": self._clock(), "seen": list(seen)}
        if self._write():
            return True
        del self._held[doc_id]
        return False

    def keeps_aside(self, doc_id: str, doc: dict[str, Any]) -> bool:
        """True when the deletion of ``doc_id`` is held (as last ``read``): then ``doc`` (another
        device's version of it, the latest one kept) is kept aside instead of going into history."""
        if doc_id not in self._held:
            return False
        self._aside[doc_id] = doc
        return True

    def cancel(self, doc_id: str) -> list[dict[str, Any]] | None:
        """The conversation ``doc_id`` is written here again (an undo, an import): its deletion will never
        go out. Returns what was kept aside of it (``[]``: nothing), or None when none was held."""
        self.read()
        aside = self._aside.pop(doc_id, None)
        if self._held.pop(doc_id, None) is None:
            return None
        self._write()
        return [aside] if aside is not None else []

    def due(self) -> list[tuple[str, list[str]]]:
        """The deletions Undo can no longer take back (held for more than ``hold_ms``), as
        ``(doc id, seen)``, oldest first."""
        self.read()
        now = self._clock()
        late = sorted((hold["at"], doc_id) for doc_id, hold in self._held.items() if now - hold["at"] > self._hold_ms)
        return [(doc_id, self._held[doc_id]["seen"]) for _, doc_id in late]

    def done(self, doc_id: str) -> None:
        """The deletion of ``doc_id`` went out: no longer held, what was kept aside of it dropped."""
        self.read()
        self._aside.pop(doc_id, None)
        if self._held.pop(doc_id, None) is not None:
            self._write()
