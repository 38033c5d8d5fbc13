"""``ArtifactSnapshot``: the one event that writes a scene version (DESIGN.md §10, seed
``runtime-persistence-map.md`` "RuntimeAgentEvent::ArtifactSnapshot 是运行时写入文件快照的唯一事件入口").

The runtime emits one for each successful ``regenerate_scene`` tool call and
for each restore; nothing else writes the version store. The event carries the
whole new document and where it came from (turn, tool call, conversation).

Example::

    >>> from app.checkpoints.documents import Background, SceneDocument
    >>> doc = SceneDocument(title="t", background=Background(kind="color", value="#fff"))
    >>> event = ArtifactSnapshot(stage_id="intro-ml", scene_id="scene-1", document=doc,
    ...                          source="regenerate_scene", conversation_id="c1", turn_id="m2",
    ...                          tool_call_id="call-1", at=1_780_000_000_000)
    >>> event.artifact_id, event.path
    ('intro-ml/scene-1', 'scenes/scene-1.json')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from app.checkpoints.documents import SceneDocument
from app.checkpoints.paths import artifact_id, scene_path

__all__ = ["ArtifactSnapshot", "REGENERATE", "RESTORE", "SnapshotSource"]

REGENERATE = "regenerate_scene"
RESTORE = "restore"
SnapshotSource = Literal["regenerate_scene", "restore"]


@dataclass(frozen=True)
class ArtifactSnapshot:
    """A new version of scene ``scene_id`` of course ``stage_id``.

    ``document``: the whole new document. ``source``: ``regenerate_scene`` or
    ``restore``. ``conversation_id``, ``turn_id`` (the assistant message),
    ``tool_call_id`` (``None`` for a restore from the checkpoint list): what
    made it. ``at``: epoch milliseconds. ``restored_from``: for a restore, the
    version id whose document this is.
    """

    stage_id: str
    scene_id: str
    document: SceneDocument
    source: SnapshotSource
    conversation_id: str
    turn_id: str | None
    tool_call_id: str | None
    at: int
    restored_from: str | None = None

    @property
    def artifact_id(self) -> str:
        """The artifact this event adds a version to (``app.checkpoints.paths.artifact_id``)."""
        return artifact_id(self.stage_id, self.scene_id)

    @property
    def path(self) -> str:
        """The timeline path ``scenes/<sceneId>.json``."""
        return scene_path(self.scene_id)
