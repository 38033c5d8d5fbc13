"""Scene versions a turn makes and restores (DESIGN.md §4, §10): the runtime's checkpoint glue.

``SceneVersions`` notes each successful regenerate in ``StageEdits`` (this tab's restore snapshots,
memory only) and, with checkpoints, hands one ``ArtifactSnapshot`` per version to them: the only
way a version is written. Restores make an older document current again as a new version with
source ``restore``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from app.agent import REGENERATE_TOOL
from app.model import ToolCallPart
from app.ports import CheckpointsPort
from app.presentation import tool_card_view
from app.runtime.conversations import Conversations
from app.stage import StageEdits

__all__ = ["SceneVersions"]

_log = logging.getLogger("app.runtime")


class SceneVersions:
    """Versions of scene documents. ``checkpoints``: optional (``None``: snapshots in memory only);
    ``conversations``: whose ids the versions carry; ``clock``: epoch ms, each version's ``at``."""

    def __init__(self, checkpoints: CheckpointsPort | None, conversations: Conversations,
                 clock: Callable[[], int]) -> None:
        self.checkpoints = checkpoints
        self.stage_edits = StageEdits()
        """Scene versions from regenerate calls of this tab, with their restore snapshots (memory only)."""
        self._conversations = conversations
        self._clock = clock

    def record(self, stage_id: str, part: ToolCallPart, turn_id: str | None = None,
               conversation_id: str | None = None) -> Awaitable[Any] | None:
        """Note the regenerate in ``stage_edits`` and emit its snapshot; returns the version's write
        (``None`` when the result names no scene or holds no scene document)."""
        card = tool_card_view(part)
        if card.scene_id is None or card.element_count is None:
            return None
        before = document = None
        if self.checkpoints is not None:
            from app.checkpoints.documents import SceneDocument

            before = self.checkpoints.document(stage_id, card.scene_id)
            try:
                document = SceneDocument.model_validate(part.result["details"]["content"])
            except Exception:  # noqa: BLE001 - a result that is no scene document makes no version
                _log.warning("regenerate result of %s is not a scene document", part.tool_call_id)
        self.stage_edits.record(stage_id, card.scene_id, part.tool_call_id, element_count=card.element_count,
                                before=before if document is not None else None)
        if document is None:
            return None
        return self._emit(stage_id, card.scene_id, document, REGENERATE_TOOL, turn_id, part.tool_call_id,
                          conversation_id=conversation_id)

    def restore_snapshot(self, tool_call_id: str) -> bool:
        """Restore the scene version before regenerate call ``tool_call_id`` (its card's button).
        False when no in-memory snapshot exists; with checkpoints, the document before the call
        becomes a new version (source ``restore``, DESIGN.md §10)."""
        snapshot = self.stage_edits.snapshot(tool_call_id)
        restored = self.stage_edits.restore(tool_call_id)
        if restored:
            stage_id, scene_id, version = snapshot
            if self.checkpoints is not None and version.before is not None:
                self._emit(stage_id, scene_id, version.before, "restore", None, None)
        return restored

    async def restore_checkpoint(self, checkpoint_id: str) -> Any:
        """Make checkpoint ``checkpoint_id``'s document current, as a new version (source ``restore``);
        returns its timeline item. Raises ``app.checkpoints.CheckpointNotFound``."""
        item, document = await self.checkpoints.read_model.document(checkpoint_id)
        meta = item.metadata
        return await self._restore_as_version(str(meta["stageId"]), str(meta["sceneId"]), document,
                                              meta.get("artifactVersionId"))

    async def restore_original(self, stage_id: str, scene_id: str) -> Any:
        """Make the course's own document of ``scene_id`` (version 0) current again, as a new version;
        returns its timeline item, ``None`` when the course has no such scene."""
        document = self.checkpoints.original(stage_id, scene_id)
        if document is None:
            return None
        from app.checkpoints.paths import artifact_id

        return await self._restore_as_version(stage_id, scene_id, document, f"{artifact_id(stage_id, scene_id)}:v0")

    async def _restore_as_version(self, stage_id: str, scene_id: str, document: Any, restored_from: str | None) -> Any:
        return await self._emit(stage_id, scene_id, document, "restore", None, None,
                                restored_from=restored_from, conversation_id=await self._conversations.id(stage_id))

    def _emit(self, stage_id: str, scene_id: str, document: Any, source: str, turn_id: str | None,
              tool_call_id: str | None, restored_from: str | None = None, *,
              conversation_id: str | None = None) -> Awaitable[Any]:
        """Hand one ``ArtifactSnapshot`` to the checkpoints. ``conversation_id``: the active
        conversation's (looked up first when not given: the version follows once it is known)."""
        from app.checkpoints.events import ArtifactSnapshot

        conversation_id = conversation_id or self._conversations.known_id(stage_id)
        if conversation_id is None:
            async def later() -> Any:
                found = await self._conversations.id(stage_id)
                return await self._emit(stage_id, scene_id, document, source, turn_id, tool_call_id,
                                        restored_from, conversation_id=found)
            return asyncio.ensure_future(later())
        event = ArtifactSnapshot(stage_id=stage_id, scene_id=scene_id, document=document, source=source,
                                 conversation_id=conversation_id, turn_id=turn_id,
                                 tool_call_id=tool_call_id, at=self._clock(), restored_from=restored_from)
        return self.checkpoints.submit(event)
