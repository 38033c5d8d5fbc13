"""Evidence pack and replay case of one conversation, as zip files (DESIGN.md §10; seed
``runtime-persistence-map.md`` "Export / Replay 消费口径").

Both are built only from ``CheckpointReadModel`` (its list, summary,
timeline and files); neither reads version records or documents itself.

Evidence pack (``evidence_pack``), files:

- ``summary.md`` — the conversation's checkpoints as a readable table;
- ``runtime.json`` — ``{schemaVersion, exportedAt, stageId, conversationId,
  fileCheckpointSummary, fileCheckpoints, fileCheckpointCount}``;
- ``timeline.json`` — ``{schemaVersion, exportedAt, turns, items}`` (the
  ``FileArtifact`` items, camelCase, oldest first);
- ``artifacts.json`` — ``{schemaVersion, exportedAt, fileCheckpoints,
  fileCheckpointCount, recentArtifacts}`` (``recentArtifacts``: one entry per
  path, its newest checkpoint: the path-level quick summary the seed keeps).

Replay case (``replay_case``), files:

- ``input.json`` — ``{replayCaseVersion, exportedAt, stageId, conversationId,
  runtimeContext: {fileCheckpoints, fileCheckpointCount}}``;
- ``expected.json`` — ``{replayCaseVersion, fileCheckpointCount,
  successCriteria}``: per scene path, the newest version's number, source and
  title must be reproduced, with no validation issues;
- ``grader.md`` — how to grade a replay against ``expected.json``;
- ``evidence-links.json`` — ``{replayCaseVersion, links}``: for each
  checkpoint its id, path, snapshot path and version id.

Both zips also hold every document their JSON names (every ``path`` and
``snapshot_path``, so each path a zip's JSON names is a file in it), from the read
model's ``files``:

- ``versions/<sceneId>/v0003.artifact.json`` — ``{versionId, document}``: the
  version's document (``document`` ``null`` when its snapshot cannot be read);
- ``scenes/<sceneId>.json`` — ``{versionId, document}``: the scene's current
  document at export time (``…:v0``: the course's own).

Documents show each base64 image by its size and sha256
(``app.checkpoints.documents.abbreviated``), as the diff does.

JSON files are UTF-8, non-ASCII written as is, two-space indented.
"""

from __future__ import annotations

import asyncio
import io
import json
import zipfile
from typing import Any, Awaitable, Callable, Collection

from app.checkpoints.documents import abbreviated
from app.checkpoints.read_model import CheckpointReadModel, iso_time
from app.checkpoints.timeline import FileArtifact, timeline_turns

__all__ = ["EVIDENCE_FILES", "REPLAY_FILES", "SCHEMA_VERSION", "evidence_pack", "replay_case"]

SCHEMA_VERSION = 1
REPLAY_CASE_VERSION = 1
EVIDENCE_FILES = ("summary.md", "runtime.json", "timeline.json", "artifacts.json")
REPLAY_FILES = ("input.json", "expected.json", "grader.md", "evidence-links.json")
DOCUMENTS_PER_STEP = 8
"""Documents read and encoded (or files compressed) between two ``pause()`` calls (an export of 250 versions is not one long task)."""

Pause = Callable[[], Awaitable[Any]]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2) + "\n"


async def _zip(files: dict[str, str], pause: Pause) -> bytes:
    """The zip of ``files`` (name → text), compressed ``DOCUMENTS_PER_STEP`` files per step."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for n, (name, text) in enumerate(files.items(), start=1):
            archive.writestr(name, text.encode("utf-8"))
            if n % DOCUMENTS_PER_STEP == 0:
                await pause()
    return buffer.getvalue()


async def _documents(model: CheckpointReadModel, items: list[FileArtifact], pause: Pause) -> dict[str, str]:
    """The zip files of the documents ``items`` name (module docstring): read and encoded
    ``DOCUMENTS_PER_STEP`` items at a time, ``pause()`` after each step."""
    files: dict[str, str] = {}
    for start in range(0, len(items), DOCUMENTS_PER_STEP):
        for path, (version, document) in (await model.files(items[start:start + DOCUMENTS_PER_STEP])).items():
            if path not in files:
                files[path] = _json({"versionId": version, "document": abbreviated(document) if document else None})
        await pause()
    return dict(sorted(files.items()))


def _cell(value: Any) -> str:
    text = "" if value is None else " ".join(str(value).split())
    return text.replace("|", "\\|")


async def evidence_pack(model: CheckpointReadModel, *, stage_id: str, conversation_id: str,
                        exported_at: int, pause: Pause | None = None,
                        saved_turns: Collection[str] | None = None) -> bytes:
    """The evidence pack zip of ``conversation_id`` (see the module docstring); ``exported_at`` in epoch ms;
    ``pause()``: awaited between steps of documents (the page passes ``app.browser.tasks.next_task``);
    ``saved_turns``: the ids of the conversation's saved messages, so that a version of a reply never
    saved names no turn (``CheckpointReadModel.timeline``)."""
    listed = await model.list_conversation(conversation_id, saved_turns)
    summary = await model.summary(conversation_id, saved_turns)
    items = await model.timeline(conversation_id, saved_turns)
    checkpoints, count = listed["checkpoints"], listed["checkpoint_count"]
    when = iso_time(exported_at)
    recent: dict[str, dict[str, Any]] = {}
    for checkpoint in checkpoints:  # newest first: the first per path is its newest
        recent.setdefault(checkpoint["path"], {"path": checkpoint["path"], "checkpoint_id": checkpoint["checkpoint_id"],
                                               "version_id": checkpoint["version_id"],
                                               "updated_at": checkpoint["updated_at"]})
    lines = [f"# Evidence pack: {_cell(stage_id)}", "",
             f"- Conversation: `{_cell(conversation_id)}`", f"- Exported at: {when}",
             f"- File checkpoints: {count}",
             f"- Latest checkpoint: `{_cell((summary['latest_checkpoint'] or {}).get('checkpoint_id'))}`", "",
             "| version | path | source | title | updated at | checkpoint |", "| --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {c['version_no']} | {_cell(c['path'])} | {c['source']} | {_cell(c['title'])} | {c['updated_at']} "
              f"| `{c['checkpoint_id']}` |" for c in checkpoints]
    envelope = {"schemaVersion": SCHEMA_VERSION, "exportedAt": when}
    files = {
        "summary.md": "\n".join(lines) + "\n",
        "runtime.json": _json({**envelope, "stageId": stage_id, "conversationId": conversation_id,
                               "fileCheckpointSummary": summary, "fileCheckpoints": checkpoints,
                               "fileCheckpointCount": count}),
        "timeline.json": _json({**envelope, "turns": timeline_turns(items), "items": [i.wire() for i in items]}),
        "artifacts.json": _json({**envelope, "fileCheckpoints": checkpoints, "fileCheckpointCount": count,
                                 "recentArtifacts": list(recent.values())}),
    }
    pause = pause or _no_pause
    return await _zip(files | await _documents(model, items, pause), pause)


async def replay_case(model: CheckpointReadModel, *, stage_id: str, conversation_id: str,
                      exported_at: int, pause: Pause | None = None,
                      saved_turns: Collection[str] | None = None) -> bytes:
    """The replay case zip of ``conversation_id`` (see the module docstring; ``pause`` and
    ``saved_turns`` as for ``evidence_pack``)."""
    items = await model.timeline(conversation_id, saved_turns)
    listed = await model.list_conversation(conversation_id, saved_turns)
    checkpoints, count = listed["checkpoints"], listed["checkpoint_count"]
    when = iso_time(exported_at)
    newest: dict[str, dict[str, Any]] = {}
    for checkpoint in checkpoints:
        newest.setdefault(checkpoint["path"], checkpoint)
    criteria = [{"kind": "file_checkpoint", "path": c["path"], "version_no": c["version_no"], "source": c["source"],
                 "title": c["title"], "validation_issue_count": 0} for c in newest.values()]
    grader = [f"# Grading the replay of {_cell(stage_id)}", "",
              "Replay the turns of `input.json` from the course's own scene documents (version 0).",
              "The replay passes when every criterion of `expected.json` holds:", "",
              "1. the scene at `path` has a checkpoint with `version_no` and `source` as listed;",
              "2. its title equals `title`;",
              "3. it has no validation issues;",
              f"4. the conversation has {count} file checkpoints in all (`fileCheckpointCount`).", "",
              "`evidence-links.json` names the evidence (checkpoint ids and snapshot paths) each criterion rests on."]
    files = {
        "input.json": _json({"replayCaseVersion": REPLAY_CASE_VERSION, "exportedAt": when, "stageId": stage_id,
                             "conversationId": conversation_id,
                             "runtimeContext": {"fileCheckpoints": checkpoints, "fileCheckpointCount": count}}),
        "expected.json": _json({"replayCaseVersion": REPLAY_CASE_VERSION, "fileCheckpointCount": count,
                                "successCriteria": criteria}),
        "grader.md": "\n".join(grader) + "\n",
        "evidence-links.json": _json({"replayCaseVersion": REPLAY_CASE_VERSION, "links": [
            {"checkpoint_id": c["checkpoint_id"], "path": c["path"], "snapshot_path": c["snapshot_path"],
             "version_id": c["version_id"]} for c in checkpoints]}),
    }
    pause = pause or _no_pause
    return await _zip(files | await _documents(model, items, pause), pause)


async def _no_pause() -> None:
    await asyncio.sleep(0)
