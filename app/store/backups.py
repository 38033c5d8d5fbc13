"""Backups of a damaged stored value (DESIGN.md §5: the raw value is copied aside before
anything overwrites it).

A backup is the key ``<key>.backup.<ms>`` (``.1``, ``.2``… when that name is
taken), copied where the value lives (``StringStorage.copy_item``): no backup is
read into Python. A value equal to an existing backup is never copied again
(``StringStorage.same_value``); exact duplicate backups are removed only when a
new backup does not fit, and distinct backups never.

``back_up`` returns what happened; the facade (``app.store.facade``) turns it
into a mode and a notice.

Example::

    >>> from app.storage import MemoryStorage
    >>> storage = MemoryStorage()
    >>> storage.set_item("k", "{broken")
    >>> back_up(storage, "k", 5), back_up(storage, "k", 6)
    ('k.backup.5', 'k.backup.5')
"""

from __future__ import annotations

from app.storage import QuotaExceeded, StringStorage

__all__ = ["back_up", "backup_order"]


def backup_order(key: str) -> tuple:
    """Sort key of ``<key>.backup.<ms>[.<n>]`` names: oldest first, numbers compared as numbers."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in key.rsplit(".backup.", 1)[-1].split("."))


def back_up(storage: StringStorage, key: str, stamp_ms: int) -> str | None:
    """Keep the value now at ``key`` under a backup key; returns that key: an existing backup
    holding the same value, or a new ``<key>.backup.<stamp_ms>[.<n>]`` (never overwriting one).

    When the copy does not fit, exact duplicates among the backups are removed (nothing is
    lost: one copy of each stays) and the copy tried once more; returns ``None`` when it
    still does not fit. Raises ``StorageUnavailable``.
    """
    prefix = f"{key}.backup."
    backups = sorted(storage.keys(prefix), key=backup_order)
    same = next((k for k in backups if storage.same_value(key, k)), None)
    if same is not None:
        return same
    name = base = f"{prefix}{stamp_ms}"
    n = 0
    while name in backups:
        n += 1
        name = f"{base}.{n}"
    try:
        try:
            storage.copy_item(key, name)
        except QuotaExceeded:
            if not _drop_duplicates(storage, backups):
                raise
            storage.copy_item(key, name)
    except QuotaExceeded:
        return None
    return name


def _drop_duplicates(storage: StringStorage, backups: list[str]) -> bool:
    """Remove each backup equal to an earlier one (``backups`` oldest first); True when any went.
    Lossless: one copy of every distinct value stays."""
    kept: list[str] = []
    dropped = False
    for key in backups:
        if any(storage.same_value(key, other) for other in kept):
            storage.remove_item(key)
            dropped = True
        else:
            kept.append(key)
    return dropped
