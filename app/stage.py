"""Scene versions made by ``regenerate_scene`` calls, with in-memory restore snapshots.

A regenerate call that succeeds in this tab gives its scene a new version and
keeps a snapshot of the version before it, keyed by the tool call's id. The
card's "restore previous version" button exists only while that snapshot exists
(DESIGN.md §4, last rule): snapshots live in memory only, so cards restored from
storage after a refresh never show the button. Restoring puts the scene back
and drops the snapshot.

Example::

    >>> edits = StageEdits()
    >>> edits.record("intro-ml", "scene-1", "call-1", element_count=30)
    >>> edits.version("intro-ml", "scene-1"), edits.has_snapshot("call-1")
    (SceneVersion(tool_call_id='call-1', element_count=30), True)
    >>> edits.restore("call-1"), edits.version("intro-ml", "scene-1")
    (True, None)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["SceneVersion", "StageEdits"]


@dataclass(frozen=True)
class SceneVersion:
    """A scene as a regenerate call left it: the call's id and the number of elements it produced;
    ``before``: the scene's document before the call (what restoring writes back), when known."""

    tool_call_id: str
    element_count: int
    before: Any = field(default=None, compare=False, repr=False)


class StageEdits:
    """Per ``(stage_id, scene_id)``, the stack of versions regenerate calls made in this tab.

    A call's snapshot exists while its version is on its scene's stack: the
    version below it (or the course's own scene) is what restoring gives back.
    """

    def __init__(self) -> None:
        self._stacks: dict[tuple[str, str], list[SceneVersion]] = {}
        self._scene_of: dict[str, tuple[str, str]] = {}
        self.revision = 0
        """Counts the changes (``record``, a successful ``restore``): what the page shows of the
        scenes' versions is redrawn only when it moved."""

    def record(self, stage_id: str, scene_id: str, tool_call_id: str, *, element_count: int,
               before: Any = None) -> None:
        """A regenerate call ``tool_call_id`` succeeded: push its version on the scene's stack
        (``before``: the scene's document before it, kept in memory for the restore)."""
        key = (stage_id, scene_id)
        self._stacks.setdefault(key, []).append(SceneVersion(tool_call_id, element_count, before))
        self._scene_of[tool_call_id] = key
        self.revision += 1

    def snapshot(self, tool_call_id: str) -> tuple[str, str, SceneVersion] | None:
        """``(stage_id, scene_id, version)`` of call ``tool_call_id`` while its snapshot exists."""
        key = self._scene_of.get(tool_call_id)
        if key is None:
            return None
        version = next(v for v in self._stacks[key] if v.tool_call_id == tool_call_id)
        return key[0], key[1], version

    def version(self, stage_id: str, scene_id: str) -> SceneVersion | None:
        """The scene's current regenerated version, or ``None`` for the course's own scene."""
        stack = self._stacks.get((stage_id, scene_id))
        return stack[-1] if stack else None

    def has_snapshot(self, tool_call_id: str) -> bool:
        """True while the version before ``tool_call_id`` can still be restored."""
        return tool_call_id in self._scene_of

    def restore(self, tool_call_id: str) -> bool:
        """Put the scene back as it was before ``tool_call_id``; False when there is no snapshot.

        Later calls on the same scene lose their snapshots too: they sat on top
        of the version that is undone.
        """
        key = self._scene_of.get(tool_call_id)
        if key is None:
            return False
        stack = self._stacks[key]
        index = next(i for i, v in enumerate(stack) if v.tool_call_id == tool_call_id)
        for undone in stack[index:]:
            del self._scene_of[undone.tool_call_id]
        del stack[index:]
        self.revision += 1
        return True
