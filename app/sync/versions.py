"""Scene versions between the version store and the replicated database (DESIGN.md §16, §10),
pure and browser-free; ``app.sync.engine.SyncEngine`` holds one ``VersionSync`` and hands it what
concerns versions, both ways:

- out: ``local(item)`` after this device wrote a version (``SceneCheckpoints.on_recorded``: the
  timeline item) writes its document with the whole scene document
  (``app.sync.documents.version_doc_of``); ``push(record, document)`` writes one version's document
  (the first sync's ``send_all`` too);
- in: ``apply(doc)``: a version document goes to ``SceneCheckpoints.adopt`` (kept once per
  checkpoint, numbered past the highest when its number is taken here, §16), never written back (it
  stays as the device that made it numbered it); versions are append-only, a deletion changes
  nothing.

Ports: ``replica`` has ``async put(doc)`` (``app.sync.engine.Replica``); ``checkpoints`` the
``SceneCheckpoints`` (None: versions are not synced); ``unsent`` the engine's ``Unsent`` (its
``versions``: the items whose write was refused, for the next start's ``resend``); ``clock``: epoch ms.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from app.sync.documents import version_doc_of, version_of, version_record_of

__all__ = ["VersionSync"]


class VersionSync:
    """Scene versions out and in (module docstring)."""

    def __init__(self, replica: Any, checkpoints: Any, unsent: Any, clock: Callable[[], int]) -> None:
        self.replica, self.checkpoints, self.unsent, self._clock = replica, checkpoints, unsent, clock

    async def local(self, item: Any) -> bool:
        """This device wrote the version of timeline ``item`` (a ``FileArtifact``): write its
        document; False when the version store does not hold its document. A write the replica
        refuses raises, and the item stays in ``unsent`` for the next start's ``resend``."""
        meta = item.metadata
        record = {"versionId": meta.get("artifactVersionId"), "artifactId": meta.get("artifactId"),
                  "stageId": meta.get("stageId"), "sceneId": meta.get("sceneId"),
                  "versionNo": meta.get("artifactVersionNo"), "checkpointId": item.id,
                  "updatedAt": item.updated_at, "item": item.wire()}
        try:
            written = await self.push(record)
        except Exception:
            self.unsent.versions[item.id] = item
            raise
        self.unsent.versions.pop(item.id, None)  # written, or nothing to write: the store holds no document
        return written

    async def push(self, record: dict[str, Any], document: Any = None) -> bool:
        """Write version ``record``'s document (``document``: its scene document when known, else
        read from the version store); False when there is none."""
        if document is None and self.checkpoints is not None:
            found = await self.checkpoints.store.document(str(record["versionId"]))
            document = found.model_dump(mode="json", exclude_none=True) if found is not None else None
        if isinstance(document, str):
            document = json.loads(document)
        if not isinstance(document, dict):
            return False
        await self.replica.put(version_doc_of(record, dict(document)))
        return True

    async def apply(self, doc: dict[str, Any]) -> str:
        """``added`` (kept here, numbered by ``VersionStore.adopt``), ``same`` (its checkpoint is here),
        ``damaged`` (the caller counts it), or ``ignored`` (versions are not synced here, or a
        deletion: versions are append-only and never deleted, §16)."""
        if self.checkpoints is None or doc.get("_deleted"):
            return "ignored"
        try:
            record, document = version_record_of(version_of(doc, self._clock()))
            number = await self.checkpoints.adopt(record, document)
        except ValueError:
            return "damaged"
        return "same" if number is None else "added"
