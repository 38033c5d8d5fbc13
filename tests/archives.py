"""Zip archives made in memory for tests: exports, backups, wheels and refused files alike."""

from __future__ import annotations

import io
import zipfile


def zip_bytes(members: dict[str, str | bytes]) -> bytes:
    """The bytes of a deflated zip holding ``members`` (name → text, written as UTF-8, or bytes), in order.

    >>> zipfile.ZipFile(io.BytesIO(zip_bytes({"a.txt": "é"}))).read("a.txt").decode()
    'é'
    """
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()
