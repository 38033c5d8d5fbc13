"""Files crossing between the page and Python: chosen files read a slice per task, downloads
through a temporary object URL. One home for the history drawer, the backup hooks and the
checkpoint panel's evidence pack (DESIGN.md §9, §10, §14: no long task while a big file crosses).
"""

from __future__ import annotations

import asyncio
import codecs
from collections.abc import AsyncIterator, Callable

import js
from pyodide.ffi import create_once_callable, to_js
from pyscript import document

from app.browser.dom import element

__all__ = ["download", "read_bytes", "read_text"]

SLICE_BYTES = 1 << 20


async def _slices(file, slice_bytes: int) -> AsyncIterator[bytes]:
    """The bytes of a ``File``/``Blob``, ``slice_bytes`` per step, each step awaited (its own task)."""
    size = int(file.size)
    for start in range(0, size, slice_bytes):
        buffer = await file.slice(start, min(size, start + slice_bytes)).arrayBuffer()
        yield buffer.to_bytes()


async def read_bytes(file, slice_bytes: int = SLICE_BYTES) -> bytes:
    """A ``File``'s bytes, read ``slice_bytes`` at a time."""
    return b"".join([part async for part in _slices(file, slice_bytes)])


async def read_text(file, slice_bytes: int = SLICE_BYTES, *,
                    each: Callable[[str, bool], None] | None = None) -> str:
    """A ``File``'s UTF-8 text, read ``slice_bytes`` at a time, each slice decoded in its own task.
    Decoded as ``Blob.text()`` does: a leading BOM dropped, invalid bytes as U+FFFD. ``each(piece,
    last)`` is given each decoded piece as it is decoded (``last`` True for the final one): what it
    raises stops the reading before the pieces are joined. The pieces are joined in a task of their
    own, and the page gets its turn again before the caller goes on (the join of a 40 MB file's
    pieces is the copy of 80 MB)."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
    parts = []
    async for part in _slices(file, slice_bytes):
        parts.append(decoder.decode(part))
        if each is not None:
            each(parts[-1], False)
    parts.append(decoder.decode(b"", final=True))
    if each is not None:
        each(parts[-1], True)
    if len(parts) > 2:
        await asyncio.sleep(0)
    text = "".join(parts)
    del parts
    if len(text) > slice_bytes:
        await asyncio.sleep(0)
    return text


def download(data: str | bytes, mime: str, filename: str) -> None:
    """Save ``data`` as ``filename`` (text as UTF-8 with ``charset`` in its type) through a
    temporary object URL, revoked 10 s later."""
    if isinstance(data, str):
        part, kind = data, f"{mime};charset=utf-8"
    else:
        part, kind = memoryview(data), mime
    blob = js.Blob.new(to_js([part]), to_js({"type": kind}, dict_converter=js.Object.fromEntries))
    url = js.URL.createObjectURL(blob)
    link = element("a", attrs={"href": url, "download": filename, "hidden": ""})
    document.body.append(link)
    link.click()
    link.remove()
    js.setTimeout(create_once_callable(lambda: js.URL.revokeObjectURL(url)), 10_000)
