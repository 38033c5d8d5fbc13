"""The version store's backend over the app's record store (``app.records.RecordBackend``:
IndexedDB through Dexie in the page, ``app.records.MemoryBackend`` in tests), DESIGN.md §10.

Tables (declared with the rest of the database in ``app.records.SCHEMA``):

- ``artifacts``: ``artifactId``, index ``stageId`` (start-up reads one course's, then the
  snapshots they name in one ``bulk_get``);
- ``versions``: ``versionId``, indexes ``[artifactId+versionNo]`` (a scene's list,
  its highest number), ``[conversationId+updatedAt]`` (a conversation's
  checkpoints), ``checkpointId`` (get, diff);
- ``snapshots``: ``versionId`` → ``{versionId, document}`` (whole documents,
  read one at a time, so listing 200 versions never reads their images).

``commit`` is one atomic ``write``: ``add`` the version and its snapshot (an
``add`` of an existing key aborts the whole transaction, so a version number
another tab took is never overwritten), ``put`` the artifact (none for a version
from another device that does not become current, ``VersionStore.adopt``). When it aborts,
the highest stored number is read and returned, and the version store numbers
past it. Any other failure is ``BackendUnavailable``.
"""

from __future__ import annotations

import math
from typing import Any, Awaitable

from app.records import RecordBackend, RecordStoreError

from app.checkpoints.versions import BackendUnavailable

__all__ = ["RecordVersionBackend"]


class RecordVersionBackend:
    """``VersionBackend`` over a ``RecordBackend`` (open it before use)."""

    def __init__(self, records: RecordBackend) -> None:
        self._records = records

    @staticmethod
    async def _call(operation: Awaitable[Any]) -> Any:
        """Await one record-store ``operation``; its ``RecordStoreError`` becomes ``BackendUnavailable``."""
        try:
            return await operation
        except RecordStoreError as error:
            raise BackendUnavailable(str(error)) from error

    async def artifacts(self, stage_id: str) -> list[dict[str, Any]]:
        return await self._call(self._records.query("artifacts", "stageId", stage_id, stage_id))

    async def versions(self, artifact_id: str) -> list[dict[str, Any]]:
        return await self._call(self._records.query("versions", "[artifactId+versionNo]",
                                                      [artifact_id, -math.inf], [artifact_id, math.inf]))

    async def conversation_versions(self, conversation_id: str) -> list[dict[str, Any]]:
        return await self._call(self._records.query("versions", "[conversationId+updatedAt]",
                                                      [conversation_id, -math.inf], [conversation_id, math.inf]))

    async def version_by_checkpoint(self, checkpoint_id: str) -> dict[str, Any] | None:
        found = await self._call(self._records.query("versions", "checkpointId", checkpoint_id, checkpoint_id,
                                                       limit=1))
        return found[0] if found else None

    async def document(self, version_id: str) -> dict[str, Any] | None:
        record = await self._call(self._records.get("snapshots", version_id))
        return record.get("document") if isinstance(record, dict) else None

    async def documents_of(self, version_ids: list[str]) -> list[dict[str, Any] | None]:
        records = await self._call(self._records.bulk_get("snapshots", list(version_ids)))
        return [r.get("document") if isinstance(r, dict) else None for r in records]

    async def highest(self, artifact_id: str) -> int:
        """The highest stored version number of ``artifact_id`` (0 when none)."""
        last = await self._call(self._records.query("versions", "[artifactId+versionNo]",
                                                      [artifact_id, -math.inf], [artifact_id, math.inf],
                                                      reverse=True, limit=1))
        number = last[0].get("versionNo") if last and isinstance(last[0], dict) else 0
        return number if isinstance(number, int) else 0

    async def commit(self, artifact: dict[str, Any] | None, version: dict[str, Any], document: dict[str, Any],
                     expected_version_no: int) -> int | None:
        ops = [("add", "versions", version),
               ("add", "snapshots", {"versionId": version["versionId"], "document": document})]
        if artifact is not None:
            ops.append(("put", "artifacts", artifact))
        try:
            await self._records.write(ops)
        except RecordStoreError as error:
            if error.kind != "aborted":
                raise BackendUnavailable(str(error)) from error
            return max(await self.highest(version["artifactId"]), expected_version_no + 1)
        return None
