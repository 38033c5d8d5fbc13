"""The thread-side truth: ``FileArtifact`` timeline items (DESIGN.md §10; seed
``runtime-persistence-map.md`` "AgentThreadItemPayload::FileArtifact 是线程侧唯一事实源").

Each version written from an ``ArtifactSnapshot`` gets one item
``{path: "scenes/<sceneId>.json", source, content, metadata}`` with the
conversation, turn and tool call that made it. ``metadata`` carries the
version facts under the names Lime's sidecar uses (``artifactVersionNo``,
``artifactVersionId``, ``artifactRequestId``, ``artifactTitle``,
``artifactKind``, ``artifactStatus``, ``previewText``, ``artifactVersion:
{id, versionNo, snapshotPath}``, ``artifactValidationIssues``), so the read
model (``app.checkpoints.read_model``) derives every list field from the item
alone. ``content`` is the document's text (title and text elements, at most
``CONTENT_LIMIT`` characters); the whole document lives in the version store.

Items are stored with their version (``app.checkpoints.versions``) and never
rewritten; ``maic-agent-threads`` is unchanged by them.
"""

from __future__ import annotations

from typing import Any, Collection, Iterable

from pydantic import BaseModel, ConfigDict, Field

from app.checkpoints.documents import preview_text, validation_issues
from app.checkpoints.events import ArtifactSnapshot
from app.checkpoints.paths import snapshot_path, version_id

__all__ = ["CONTENT_LIMIT", "UNSAVED_TURN", "FileArtifact", "as_saved", "file_artifact", "saved_turn_ids", "timeline_turns"]

CONTENT_LIMIT = 2000
"""Characters of document text an item's ``content`` keeps at most."""


class FileArtifact(BaseModel):
    """One timeline item (camelCase on the wire): ``id`` (the checkpoint id),
    ``conversationId``, ``turnId``, ``toolCallId``, ``updatedAt`` (epoch ms),
    ``path``, ``source``, ``content``, ``metadata``."""

    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="ignore", defer_build=True)  # built at first use (§13)

    id: str
    conversation_id: str = Field(alias="conversationId")
    turn_id: str | None = Field(default=None, alias="turnId")
    tool_call_id: str | None = Field(default=None, alias="toolCallId")
    updated_at: int = Field(alias="updatedAt")
    path: str
    source: str
    content: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    def wire(self) -> dict[str, Any]:
        """The item as stored and exported (camelCase keys)."""
        return self.model_dump(by_alias=True)


def file_artifact(event: ArtifactSnapshot, version_no: int, checkpoint_id: str) -> FileArtifact:
    """The timeline item of version ``version_no`` written from ``event``."""
    document = event.document
    vid = version_id(event.artifact_id, version_no)
    texts = [document.title] + [e.text for e in document.elements if e.kind == "text" and e.text]
    metadata: dict[str, Any] = {
        "artifactId": event.artifact_id,
        "stageId": event.stage_id,
        "sceneId": event.scene_id,
        "artifactVersionNo": version_no,
        "artifactVersionId": vid,
        "artifactTitle": document.title,
        "artifactKind": "scene",
        "artifactStatus": "ready",
        "artifactElementCount": len(document.elements),
        "previewText": preview_text(document),
        "artifactVersion": {"id": vid, "versionNo": version_no,
                            "snapshotPath": snapshot_path(event.scene_id, version_no)},
        "artifactValidationIssues": validation_issues(document),
    }
    if event.tool_call_id:
        metadata["artifactRequestId"] = event.tool_call_id
    if event.restored_from:
        metadata["artifactRestoredFrom"] = event.restored_from
    return FileArtifact(id=checkpoint_id, conversation_id=event.conversation_id, turn_id=event.turn_id,
                        tool_call_id=event.tool_call_id, updated_at=event.at, path=event.path,
                        source=event.source, content="\n".join(texts)[:CONTENT_LIMIT], metadata=metadata)


UNSAVED_TURN = "unsavedTurnId"
"""The ``metadata`` key that keeps the turn id a version was made under when that turn was never
saved (``as_saved``)."""


def saved_turn_ids(messages: Iterable[Any]) -> set[str]:
    """The ids of the saved ones among a thread's ``messages`` (``app.model.Message``: ``id``,
    ``status``): a reply still running is not saved yet (DESIGN.md §4), so a version it made names
    no turn in an export taken meanwhile (``as_saved``)."""
    return {m.id for m in messages if m.id and (m.status is None or m.status.type != "running")}


def as_saved(items: list[FileArtifact], saved_turns: Collection[str] | None) -> list[FileArtifact]:
    """``items`` as the conversation holds them, in the same order. A version is recorded when its
    tool call's result arrives, before the turn is saved (DESIGN.md §4: nothing is written to the
    thread mid-stream), so a reload while ``/regenerate`` streams leaves a version whose ``turn_id``
    names a reply that was never saved. Such an item (``turn_id`` not in ``saved_turns``, the ids of
    the conversation's saved messages) stays, since the slide did change (§10: the course's one
    timeline; §5: nothing lost silently), but names no turn: ``turn_id`` ``None`` (listed with the
    restores, under ``turnId: null``) and ``metadata[UNSAVED_TURN]`` the id it was made under. Items
    with no turn, or of a saved one, are returned as they are; ``saved_turns`` ``None``: all of
    them (as stored). Stored items are never rewritten: this is how they are read and exported."""
    if saved_turns is None:
        return list(items)
    return [item if item.turn_id is None or item.turn_id in saved_turns else item.model_copy(
        update={"turn_id": None, "metadata": {**item.metadata, UNSAVED_TURN: item.turn_id}}) for item in items]


def timeline_turns(items: list[FileArtifact]) -> list[dict[str, Any]]:
    """The turns the ``items`` belong to, oldest first: ``{turnId, conversationId, itemIds, startedAt}``
    (a restore from the checkpoint list has no turn and is listed under ``turnId: null``)."""
    turns: dict[tuple[str, str | None], dict[str, Any]] = {}
    for item in sorted(items, key=lambda i: i.updated_at):
        key = (item.conversation_id, item.turn_id)
        turn = turns.setdefault(key, {"turnId": item.turn_id, "conversationId": item.conversation_id,
                                      "itemIds": [], "startedAt": item.updated_at})
        turn["itemIds"].append(item.id)
    return list(turns.values())
