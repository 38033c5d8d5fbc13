"""The file-checkpoint read model: ONE service for summary, list, get and diff
(DESIGN.md §10; anchor: Lime's ``runtime_file_checkpoint_service.rs``).

Everything that shows or exports checkpoints — the panel's summary, the
scene's checkpoint list, the diff view, restore, the evidence pack and the
replay case — calls ``CheckpointReadModel``; nothing else reads version
records or parses documents on its own.

Shapes (Lime's snake_case names inside camelCase envelopes):

- list item (``checkpoint_item``): ``checkpoint_id``, ``turn_id``, ``path``,
  ``source``, ``updated_at`` (ISO 8601 UTC, ms), ``validation_issue_count``,
  and when known ``version_no``, ``version_id``, ``request_id`` (the tool
  call), ``title``, ``kind``, ``status``, ``preview_text`` (≤ 240 characters),
  ``snapshot_path``. All derived from the timeline item alone.
- ``summary`` → ``{count, latest_checkpoint}`` (``latest_checkpoint`` ``None``
  when there is none).
- ``list_scene`` / ``list_conversation`` → ``{checkpoints, checkpoint_count}``,
  newest first (scene: highest version first; conversation: newest
  ``updated_at``, then path, then highest version).
- ``get`` → ``{checkpoint, live_path, snapshot_path, checkpoint_document,
  live_document, validation_issues, metadata, content}`` (documents as dicts).
- ``files`` → ``{path: (version_id, document)}``: the snapshots and current scene
  documents a set of timeline items names (what exports carry).
- ``diff`` → ``{checkpoint, current_version_id, previous_version_id, diff}``
  where ``diff`` is ``app.checkpoints.diff.document_diff`` of the version
  before (version 0: the course's own document) against this one.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable, Collection

from app.checkpoints.diff import document_diff
from app.checkpoints.documents import SceneDocument, base_document
from app.checkpoints.paths import artifact_id, version_id
from app.checkpoints.timeline import FileArtifact, as_saved
from app.checkpoints.versions import VersionStore

__all__ = ["CheckpointNotFound", "CheckpointReadModel", "checkpoint_item", "iso_time"]


class CheckpointNotFound(LookupError):
    """No checkpoint (or no stored document) with that id."""


def iso_time(ms: int) -> str:
    """Epoch milliseconds as ISO 8601 UTC with milliseconds (``2026-12-01T08:00:00.000Z``)."""
    stamp = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _text(metadata: dict[str, Any], key: str, parent: str | None = None) -> str | None:
    source = metadata.get(parent) if parent else metadata
    value = source.get(key) if isinstance(source, dict) else None
    return value.strip() or None if isinstance(value, str) else None


def _number(metadata: dict[str, Any], key: str, parent: str | None = None) -> int | None:
    source = metadata.get(parent) if parent else metadata
    value = source.get(key) if isinstance(source, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def checkpoint_item(item: FileArtifact) -> dict[str, Any]:
    """The list item of timeline ``item`` (field names as in Lime's read model)."""
    meta = item.metadata
    issues = meta.get("artifactValidationIssues")
    preview = _text(meta, "previewText") or (" ".join(item.content.split())[:240] if item.content else None)
    return {
        "checkpoint_id": item.id,
        "turn_id": item.turn_id,
        "path": item.path,
        "source": item.source or "runtime",
        "updated_at": iso_time(item.updated_at),
        "version_no": _number(meta, "artifactVersionNo") if _number(meta, "artifactVersionNo") is not None
        else _number(meta, "versionNo", "artifactVersion"),
        "version_id": _text(meta, "artifactVersionId") or _text(meta, "id", "artifactVersion"),
        "request_id": _text(meta, "artifactRequestId"),
        "title": _text(meta, "artifactTitle"),
        "kind": _text(meta, "artifactKind"),
        "status": _text(meta, "artifactStatus"),
        "preview_text": preview[:240] if preview else None,
        "snapshot_path": _text(meta, "snapshotPath", "artifactVersion") or item.path,
        "validation_issue_count": len([i for i in issues if isinstance(i, str) and i.strip()])
        if isinstance(issues, list) else 0,
    }


class CheckpointReadModel:
    """Summary, list, get and diff over a ``VersionStore`` (see the module docstring).

    ``base(stage_id, scene_id)``: version 0 of a scene (defaults to
    the demo course's own document, ``course_document``).
    """

    def __init__(self, store: VersionStore,
                 base: Callable[[str, str], SceneDocument | None] | None = None) -> None:
        self._store = store
        self._base = base or base_document
        self._summary: tuple[str, Any, dict[str, Any]] | None = None  # (conversation, seen, summary) last read

    # -- list ------------------------------------------------------------

    async def list_scene(self, stage_id: str, scene_id: str) -> dict[str, Any]:
        """Every checkpoint of one scene, highest version first."""
        items = await self._store.items(artifact_id(stage_id, scene_id))
        checkpoints = _unique([checkpoint_item(i) for i in items])
        checkpoints.sort(key=lambda c: (c["version_no"] or 0, c["updated_at"]), reverse=True)
        return {"checkpoints": checkpoints, "checkpoint_count": len(checkpoints)}

    async def list_conversation(self, conversation_id: str,
                                saved_turns: Collection[str] | None = None) -> dict[str, Any]:
        """Every checkpoint made in one conversation, newest first; ``saved_turns`` as for ``timeline``."""
        checkpoints = _unique([checkpoint_item(i) for i in await self.timeline(conversation_id, saved_turns)])
        checkpoints.sort(key=lambda c: c["path"])
        checkpoints.sort(key=lambda c: (c["updated_at"], c["version_no"] or 0), reverse=True)
        return {"checkpoints": checkpoints, "checkpoint_count": len(checkpoints)}

    async def timeline(self, conversation_id: str, saved_turns: Collection[str] | None = None) -> list[FileArtifact]:
        """The conversation's ``FileArtifact`` timeline items, oldest first (what exports list).
        ``saved_turns``: the ids of the conversation's saved messages; an item of a turn not among
        them names no turn (``app.checkpoints.timeline.as_saved``); ``None``: items as stored."""
        items = as_saved(await self._store.conversation_items(conversation_id), saved_turns)
        return sorted(items, key=lambda i: (i.updated_at, i.path, i.metadata.get("artifactVersionNo", 0)))

    async def summary(self, conversation_id: str, saved_turns: Collection[str] | None = None, *,
                      seen: Any = None) -> dict[str, Any]:
        """``{count, latest_checkpoint}`` of one conversation (what the panel shows); ``saved_turns``
        as for ``timeline``. ``seen``: what the caller saw of the course's versions (any value that
        changes whenever a version is made or kept: the panel passes its scenes' drawn versions and
        the versions kept from another device); when it and the conversation are those of the last
        summary read (with no ``saved_turns``), that summary is given back with no read: a turn that
        recorded no scene version costs none (issue #33). ``None``: always read."""
        if seen is not None and saved_turns is None and self._summary is not None \
                and self._summary[:2] == (conversation_id, seen):
            return self._summary[2]
        listed = await self.list_conversation(conversation_id, saved_turns)
        checkpoints = listed["checkpoints"]
        summary = {"count": len(checkpoints), "latest_checkpoint": checkpoints[0] if checkpoints else None}
        if seen is not None and saved_turns is None:
            self._summary = (conversation_id, seen, summary)
        return summary

    # -- one checkpoint --------------------------------------------------

    async def get(self, checkpoint_id: str) -> dict[str, Any]:
        """One checkpoint with its document and the scene's current one. Raises ``CheckpointNotFound``."""
        item, document = await self._item_and_document(checkpoint_id)
        meta = item.metadata
        stage_id, scene_id = str(meta.get("stageId")), str(meta.get("sceneId"))
        current = await self.current_document(stage_id, scene_id)
        listed = checkpoint_item(item)
        return {
            "checkpoint": listed,
            "live_path": item.path,
            "snapshot_path": listed["snapshot_path"],
            "checkpoint_document": document.model_dump(mode="json", exclude_none=True),
            "live_document": current.model_dump(mode="json", exclude_none=True) if current else None,
            "validation_issues": list(meta.get("artifactValidationIssues") or []),
            "metadata": dict(meta),
            "content": item.content,
        }

    async def document(self, checkpoint_id: str) -> tuple[FileArtifact, SceneDocument]:
        """The timeline item and whole document of one checkpoint (what a restore writes again).
        Raises ``CheckpointNotFound``."""
        return await self._item_and_document(checkpoint_id)

    async def diff(self, checkpoint_id: str) -> dict[str, Any]:
        """This checkpoint against the version before it. Raises ``CheckpointNotFound``."""
        item, after = await self._item_and_document(checkpoint_id)
        meta = item.metadata
        listed = checkpoint_item(item)
        number = listed["version_no"] or 0
        stage_id, scene_id, artifact = str(meta.get("stageId")), str(meta.get("sceneId")), str(meta.get("artifactId"))
        previous_id = version_id(artifact, number - 1)
        before = (self._base(stage_id, scene_id) if number <= 1 else await self._store.document(previous_id))
        if before is None:
            raise CheckpointNotFound(previous_id)
        return {
            "checkpoint": listed,
            "current_version_id": listed["version_id"],
            "previous_version_id": previous_id,
            "diff": document_diff(before, after, before_label=previous_id, after_label=listed["version_id"] or ""),
        }

    async def files(self, items: list[FileArtifact]) -> dict[str, tuple[str, SceneDocument | None]]:
        """The documents timeline ``items`` name, by path (what an export puts beside its JSON):
        each item's ``snapshot_path`` (``versions/<sceneId>/v0003.artifact.json``) → its version id
        and document, read in one go (``None`` when it cannot be read), and each ``path``
        (``scenes/<sceneId>.json``) → the scene's current version id (``…:v0``: the course's own)
        and document."""
        files: dict[str, tuple[str, SceneDocument | None]] = {}
        snapshots = [(listed["snapshot_path"], listed["version_id"]) for listed in map(checkpoint_item, items)
                     if listed["version_id"]]
        for (path, version), document in zip(snapshots, await self._store.documents([v for _, v in snapshots])):
            files[path] = (version, document)
        for item in items:
            meta = item.metadata
            if item.path in files or not isinstance(meta.get("stageId"), str) or not isinstance(meta.get("sceneId"), str):
                continue
            known = self._store.cached(artifact_id(meta["stageId"], meta["sceneId"]))
            current = (known.version_id, known.document) if known else (
                version_id(artifact_id(meta["stageId"], meta["sceneId"]), 0), self._base(meta["stageId"], meta["sceneId"]))
            files[item.path] = current
        return files

    async def current_document(self, stage_id: str, scene_id: str) -> SceneDocument | None:
        """The scene's current document: its newest stored version, else version 0."""
        known = self._store.cached(artifact_id(stage_id, scene_id))
        return known.document if known else self._base(stage_id, scene_id)

    async def _item_and_document(self, checkpoint_id: str) -> tuple[FileArtifact, SceneDocument]:
        item = await self._store.item(checkpoint_id.strip())
        version = checkpoint_item(item)["version_id"] if item else None
        document = await self._store.document(version) if version else None
        if item is None or document is None:
            raise CheckpointNotFound(checkpoint_id)
        return item, document


def _unique(checkpoints: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    out = []
    for checkpoint in checkpoints:
        if checkpoint["checkpoint_id"] not in seen:
            seen.add(checkpoint["checkpoint_id"])
            out.append(checkpoint)
    return out
