"""``SceneCheckpoints``: the runtime's checkpoint collaborator (DESIGN.md §10).

It receives the runtime's ``ArtifactSnapshot`` events (``submit``) and records
each as a version, one at a time and in order; it knows each shown scene's
current document and version number (``current``) for the stage view and for
the ``regenerate_scene`` tool; and it exposes the one read model
(``read_model``) that the checkpoint list, the diff view, restores and the
exports consume.

A submitted document is current at once (the stage view redraws it and the
next regenerate reads it); its version number follows when the write is done.
Listeners (``subscribe``) are called after every change.

Example::

    >>> import asyncio
    >>> from app.checkpoints.events import ArtifactSnapshot
    >>> async def demo():
    ...     checkpoints = SceneCheckpoints()
    ...     await checkpoints.load_stage("intro-ml")
    ...     before = checkpoints.current("intro-ml", "scene-1")
    ...     doc = before.document.model_copy(update={"title": "New"})
    ...     await checkpoints.submit(ArtifactSnapshot("intro-ml", "scene-1", doc, "regenerate_scene",
    ...                                               "conv", "turn", "call", 1))
    ...     after = checkpoints.current("intro-ml", "scene-1")
    ...     return before.version_no, after.version_no, after.document.title
    >>> asyncio.run(demo())
    (0, 1, 'New')
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from app.checkpoints.documents import SceneDocument, base_document
from app.checkpoints.events import ArtifactSnapshot
from app.checkpoints.paths import artifact_id
from app.checkpoints.read_model import CheckpointReadModel
from app.checkpoints.timeline import FileArtifact
from app.checkpoints.versions import MemoryVersionBackend, VersionStore, _random_id

__all__ = ["SceneCheckpoints", "SceneState"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SceneState:
    """What the stage view draws for a scene: its current ``document`` (``None`` when the course
    has no such scene), ``version_no`` (0 = the course's own) and ``pending`` (a write is running)."""

    document: SceneDocument | None
    version_no: int
    pending: bool = False


class SceneCheckpoints:
    """Versions of scene documents over a ``VersionBackend`` (in memory when none is given).

    ``base(stage_id, scene_id)``: version 0 (the demo course's own scene by default).
    ``kept=False``: the page has no lasting backend (IndexedDB unavailable): versions live in
    memory and a ``checkpoint-unavailable`` notice says so once. ``pause()``: awaited before each
    write, so that drawing the pending document and writing it are separate browser tasks (the page
    passes ``app.browser.tasks.next_task``; ``asyncio.sleep(0)`` by default).
    """

    def __init__(self, backend: Any = None, *, new_id: Callable[[], str] = _random_id,
                 base: Callable[[str, str], SceneDocument | None] | None = None, kept: bool = True,
                 pause: Callable[[], Awaitable[None]] | None = None) -> None:
        self._base = base or base_document
        self._pause = pause or (lambda: asyncio.sleep(0))
        self.store = VersionStore(backend if backend is not None else MemoryVersionBackend(), new_id=new_id)
        self.read_model = CheckpointReadModel(self.store, self._base)
        """The one read model (summary, list, get, diff)."""
        self._pending: dict[str, SceneDocument] = {}
        self._writing = 0
        self._lock = asyncio.Lock()
        self._listeners: list[Callable[[], None]] = []
        self._recorded: list[Callable[[FileArtifact], None]] = []
        self._adopted: list[Callable[[str], None]] = []
        self.generation = 0
        """Counts the versions kept from another device (``adopt``): a list drawn for an older
        generation is out of date even when the scene's current version is the same."""
        if not kept:
            self.store.notices.append("checkpoint-unavailable")

    @property
    def kept(self) -> bool:
        """False when versions are not kept beyond this page (the backend failed or is missing)."""
        return self.store.kept

    @property
    def notices(self) -> tuple[str, ...]:
        """Notice codes to show, each once (``checkpoint-damaged``, ``checkpoint-unavailable``)."""
        return tuple(self.store.notices)

    @property
    def busy(self) -> bool:
        """True while a version is being written."""
        return self._writing > 0

    def subscribe(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` after every change; returns the unsubscribe function."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def on_recorded(self, callback: Callable[[FileArtifact], None]) -> None:
        """Call ``callback(item)`` after each version is written (e.g. to tell other tabs)."""
        self._recorded.append(callback)

    def on_adopted(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(stage_id)`` after each version kept from another device (``adopt``), e.g.
        to tell this browser's other tabs, which redraw that course as for a version made here
        (DESIGN.md §10 several tabs, §16). Not called for a version that was here already."""
        self._adopted.append(callback)

    async def load_stage(self, stage_id: str) -> None:
        """Read course ``stage_id``'s current documents (not its versions) and notify."""
        await self.store.load_stage(stage_id)
        self._notify()

    def current(self, stage_id: str, scene_id: str) -> SceneState:
        """The scene's current document and version number (never reads the backend)."""
        key = artifact_id(stage_id, scene_id)
        stored = self.store.cached(key)
        pending = self._pending.get(key)
        if pending is not None:
            return SceneState(pending, stored.version_no if stored else 0, pending=True)
        if stored is not None:
            return SceneState(stored.document, stored.version_no)
        return SceneState(self._base(stage_id, scene_id), 0)

    def original(self, stage_id: str, scene_id: str) -> SceneDocument | None:
        """Version 0 of the scene: the course's own document (never stored; ``None`` when the
        course has no such scene)."""
        return self._base(stage_id, scene_id)

    def document(self, stage_id: str, scene_id: str) -> SceneDocument | None:
        """The scene's current document (what ``regenerate_scene`` reads), or ``None``."""
        return self.current(stage_id, scene_id).document

    def submit(self, event: ArtifactSnapshot) -> asyncio.Task[FileArtifact]:
        """Record ``event`` as the next version of its scene (the only way a version is written).

        Its document is current at once; the write runs in a task, after the
        writes submitted before it. The task's result is the timeline item.
        """
        key = event.artifact_id
        self._pending[key] = event.document
        self._writing += 1
        self._notify()
        return asyncio.ensure_future(self._write(key, event))

    async def adopt(self, version: dict[str, Any], document: dict[str, Any]) -> int | None:
        """Keep a version made on another device (``VersionStore.adopt``: distinct numbers, DESIGN.md
        §16) and notify; returns its number here, ``None`` when it was here already. It is not
        announced to ``on_recorded`` (that is for versions made on this device), but to
        ``on_adopted``."""
        async with self._lock:
            number = await self.store.adopt(version, document)
        if number is not None:
            self.generation += 1
            self._notify()
            for callback in list(self._adopted):
                callback(version["stageId"])
        return number

    async def _write(self, key: str, event: ArtifactSnapshot) -> FileArtifact:
        try:
            async with self._lock:
                await self._pause()  # let the page draw the pending document first
                item = await self.store.record(event)
            for callback in list(self._recorded):
                callback(item)
            return item
        except Exception:
            _log.exception("recording a version of %r failed", key)
            raise
        finally:
            self._writing -= 1
            if self._pending.get(key) is event.document:
                del self._pending[key]
            self._notify()

    def _notify(self) -> None:
        for listener in list(self._listeners):
            listener()
