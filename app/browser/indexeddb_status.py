"""IndexedDB's real status, as ``static/indexeddb-guard.js`` found it before PyScript booted.

PyScript needs IndexedDB to boot; when the browser's is blocked, missing or
failing, the guard installs an in-memory substitute (npm ``fake-indexeddb``) so
the app still starts and works in memory (DESIGN.md §5) and records the *real*
status in ``window.agentbarIndexedDb = {available, reason, substitute}``.
Features that store in IndexedDB (history §9, checkpoints §10) must read
``indexed_db_status`` and degrade instead of writing into the substitute.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["IndexedDbStatus", "indexed_db_status", "NOTICE_CODE"]

NOTICE_CODE = "indexeddb-unavailable"
"""Notice shown once when the real IndexedDB is unusable (locale key ``notice.indexeddb-unavailable``)."""


@dataclass(frozen=True)
class IndexedDbStatus:
    """``available``: the browser's own IndexedDB works. ``reason``: why not (``None`` when it
    does). ``substitute``: ``"fake-indexeddb"`` when the in-memory one stands in, else ``None``."""

    available: bool
    reason: str | None = None
    substitute: str | None = None


def indexed_db_status(window) -> IndexedDbStatus:
    """Read ``window.agentbarIndexedDb``; a page without the guard counts as available.

    ``window``: PyScript's ``window`` (or any object with the attribute). Never raises.
    """
    from pyscript.ffi import is_none

    status = getattr(window, "agentbarIndexedDb", None)
    if status is None or is_none(status):
        return IndexedDbStatus(available=True)
    reason = getattr(status, "reason", None)
    substitute = getattr(status, "substitute", None)
    return IndexedDbStatus(
        available=bool(status.available),
        reason=reason if isinstance(reason, str) else None,
        substitute=substitute if isinstance(substitute, str) else None,
    )
