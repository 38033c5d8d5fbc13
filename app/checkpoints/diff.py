"""The diff of two scene documents (DESIGN.md §10, read model's diff).

A unified diff (standard library ``difflib``) of the two documents'
``canonical_json`` — sorted keys, one value per line, long base64 shown by size
and hash — plus an element-level summary: the ids of elements ``added``,
``removed`` and ``changed`` (same id, different fields), in document order.

Example::

    >>> from app.checkpoints.documents import Background, Box, SceneDocument, SceneElement
    >>> box = Box(x=0, y=0, w=10, h=10)
    >>> a = SceneDocument(title="A", background=Background(kind="color", value="#fff"),
    ...                   elements=(SceneElement(id="e1", kind="text", box=box, text="old"),))
    >>> b = a.model_copy(update={"elements": (SceneElement(id="e1", kind="text", box=box, text="new"),
    ...                                       SceneElement(id="e2", kind="shape", box=box))})
    >>> d = document_diff(a, b, before_label="v0", after_label="v1")
    >>> d["elements"]
    {'added': ['e2'], 'removed': [], 'changed': ['e1']}
    >>> [line for line in d["lines"] if line.startswith(("-", "+")) and "text" in line]
    ['-   "text": "old"', '+   "text": "new"']
"""

from __future__ import annotations

from typing import Any

from app.checkpoints.documents import SceneDocument, canonical_json

__all__ = ["document_diff", "line_kind"]


def document_diff(before: SceneDocument, after: SceneDocument, *, before_label: str, after_label: str,
                  context: int = 3) -> dict[str, Any]:
    """``{"unified": str, "lines": [str], "elements": {"added", "removed", "changed"},
    "title_changed": bool, "background_changed": bool, "stats": {"added_lines", "removed_lines"}}``."""
    import difflib  # here: a diff is drawn on request, its import (~12 ms) is no start-up cost (§13)

    lines = list(difflib.unified_diff(canonical_json(before).splitlines(), canonical_json(after).splitlines(),
                                      fromfile=before_label, tofile=after_label, lineterm="", n=context))
    old = {e.id: e for e in before.elements}
    new = {e.id: e for e in after.elements}
    elements = {
        "added": [i for i in new if i not in old],
        "removed": [i for i in old if i not in new],
        "changed": [i for i in new if i in old and new[i] != old[i]],
    }
    kinds = [line_kind(line) for line in lines]
    return {
        "unified": "\n".join(lines),
        "lines": lines,
        "elements": elements,
        "title_changed": before.title != after.title,
        "background_changed": before.background != after.background,
        "stats": {"added_lines": kinds.count("ins"), "removed_lines": kinds.count("del")},
    }


def line_kind(line: str) -> str:
    """How the diff view draws a unified-diff line: ``file`` (the ``---``/``+++`` header),
    ``hunk`` (``@@``), ``ins`` (added, an ``<ins>``), ``del`` (removed, a ``<del>``), ``same``."""
    if line.startswith(("---", "+++")):
        return "file"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "ins"
    if line.startswith("-"):
        return "del"
    return "same"
