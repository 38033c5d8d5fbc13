"""Unpacking a pure-Python wheel in slices the page can pause between (DESIGN.md §13).

Pyodide's ``loadPackage`` unpacks a wheel in ONE browser task: for markdown-it-py
(260 kB, 140 files with their bytecode) that task took 59-298 ms on a cold load,
after ready. ``unpack_in_steps(data, target, pause, clock)`` checks the wheel's
SHA-256 against the lock's, then writes its files into ``target`` (site-packages)
a few at a time, awaiting ``pause()`` each time ``SLICE_MS`` of work went by.
Pure Python (``zipfile``); the browser fetches the bytes and passes
``app.browser.tasks.next_task``.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Awaitable, Callable
from pathlib import Path

__all__ = ["SLICE_MS", "WheelError", "unpack_in_steps"]

SLICE_MS = 8
"""``pause()`` is awaited once a slice of unpacking took this many ms."""


class WheelError(ValueError):
    """The wheel's bytes do not match the lock's SHA-256, or a member would land outside ``target``."""


async def unpack_in_steps(data: bytes, target: Path, *, sha256: str | None, pause: Callable[[], Awaitable[object]],
                          clock: Callable[[], float]) -> list[str]:
    """Write the members of the wheel ``data`` under ``target``; returns their names, in order.
    ``sha256``: the lock's hex digest (checked before anything is written; ``None``: not checked);
    ``clock``: ms. Raises ``WheelError`` (digest, a member outside ``target``) and
    ``zipfile.BadZipFile``; files written before a failure stay (the caller falls back to a
    full install, which writes them again)."""
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256.lower():
        raise WheelError("the wheel does not match the lock's sha256")
    root = target.resolve()
    written = []
    since = clock()
    with zipfile.ZipFile(io.BytesIO(data)) as wheel:
        for member in wheel.infolist():
            path = (root / member.filename).resolve()
            if not path.is_relative_to(root):
                raise WheelError(f"member outside the target: {member.filename}")
            if member.is_dir():
                path.mkdir(parents=True, exist_ok=True)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(wheel.read(member))
            written.append(member.filename)
            if clock() - since >= SLICE_MS:
                await pause()
                since = clock()
    return written
