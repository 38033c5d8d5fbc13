"""The version store: each scene's current document and every version, never rewritten
(DESIGN.md §10; seed ``runtime-persistence-map.md``, artifact_document_service's sidecar).

Three record kinds, plain JSON-able dicts, over an async ``VersionBackend``
(``MemoryVersionBackend`` here; the IndexedDB one in ``app.browser``):

- *artifact*: one per scene of a course, ``{schema, artifactId, stageId,
  sceneId, path, versionNo, versionId, updatedAt, latest}`` — ``versionId``
  names the current version, ``latest`` its timeline item. Only these, and the
  snapshots they name, are read at start-up (current documents only). Records
  written before also carry the current document itself (``current``), read as
  it is; new ones do not, so a document is written once, not twice.
- *version*: one per version, light, ``{schema, versionId, artifactId,
  stageId, sceneId, versionNo, conversationId, checkpointId, updatedAt, item}``
  (``item``: the ``FileArtifact`` timeline item). Lists read only these.
- *snapshot*: ``{versionId, document}``, the version's whole document (base64
  images and all; handed to the backend as an ``app.records.BulkValue``), read one at a time (get, diff, restore) or, for
  start-up, the current ones of a course together.

Rules, each in one place:

- version ids are ``<artifactId>:v<n>``, ``n`` counting from 1 per artifact
  (0 is the course's own document, never stored); a version is only ever
  *added*: ``commit`` writes it only if the highest stored version number is
  still the one this tab read (a compare-and-set done inside one backend
  transaction), else ``record`` re-numbers past it and retries, so two tabs
  never overwrite each other's versions (``record``);
- a restore is a new version with source ``restore`` (``ArtifactSnapshot``);
- a version made on another device (DESIGN.md §16, ``app.sync``) is added by ``adopt``: kept once
  per checkpoint id, under the number ``place_versions`` gives it here (a number
  already taken goes past the highest: both devices' versions survive with distinct numbers), with
  the same compare-and-set as ``record``; it becomes the scene's current one when it is the
  highest number and was made no earlier than the current one (both devices then show the
  version made last); ``renumbered`` rewrites a record's number, id and timeline item;
- a record that fails validation or carries an unknown ``schema`` is skipped,
  with one ``checkpoint-damaged`` notice for the session (``_valid``);
- a backend that fails (``BackendUnavailable``) is replaced by an in-memory one
  for the rest of the session, with one ``checkpoint-unavailable`` notice:
  regenerate and restore still work, versions are not kept (``_guard``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.checkpoints.documents import SceneDocument, parse_document
from app.checkpoints.events import ArtifactSnapshot
from app.checkpoints.paths import snapshot_path, version_id
from app.checkpoints.timeline import FileArtifact, file_artifact

__all__ = [
    "BackendUnavailable",
    "CurrentVersion",
    "MemoryVersionBackend",
    "SCHEMA",
    "VersionBackend",
    "VersionStore",
    "place_versions",
    "renumbered",
]

SCHEMA = 1
"""The record schema this code writes and reads; a higher one is skipped, never rewritten."""

MAX_RETRIES = 50
"""Times ``record`` re-numbers a version after another tab took its number."""

T = TypeVar("T")
_log = logging.getLogger(__name__)


class BackendUnavailable(Exception):
    """The backend cannot be used (IndexedDB blocked, missing, or failing)."""


class VersionBackend(Protocol):
    """Where records live. All methods are coroutines and may raise ``BackendUnavailable``."""

    async def artifacts(self, stage_id: str) -> list[dict[str, Any]]:
        """Artifact records of course ``stage_id`` (any order)."""

    async def versions(self, artifact_id: str) -> list[dict[str, Any]]:
        """Version records of one artifact (any order)."""

    async def conversation_versions(self, conversation_id: str) -> list[dict[str, Any]]:
        """Version records made in one conversation (any order)."""

    async def version_by_checkpoint(self, checkpoint_id: str) -> dict[str, Any] | None:
        """The version record whose ``checkpointId`` is ``checkpoint_id``."""

    async def document(self, version_id: str) -> dict[str, Any] | str | None:
        """The stored document of version ``version_id``: a JSON object, or its JSON text."""

    async def documents_of(self, version_ids: list[str]) -> list[dict[str, Any] | str | None]:
        """``document`` of each of ``version_ids``, in order (one read)."""

    async def commit(self, artifact: dict[str, Any] | None, version: dict[str, Any], document: dict[str, Any],
                     expected_version_no: int) -> int | None:
        """``document``: the version's document (an ``app.records.BulkValue``).
        In one transaction: if the highest stored ``versionNo`` of the version's artifact
        (0 when none) equals ``expected_version_no`` and its id is free, add the version and its
        document and put ``artifact`` (unless ``None``: the scene's current version stays); return
        ``None``. Otherwise write nothing and return that highest number."""


class MemoryVersionBackend:
    """The in-memory twin of the IndexedDB backend (tests, and when IndexedDB is unavailable).

    Two ``VersionStore``s over one instance behave like two tabs over one database.
    """

    def __init__(self) -> None:
        self.artifact_records: dict[str, dict[str, Any]] = {}
        self.version_records: dict[str, dict[str, Any]] = {}
        self.documents: dict[str, dict[str, Any] | str] = {}  # version id → its document's JSON text

    async def artifacts(self, stage_id: str) -> list[dict[str, Any]]:
        return [r for r in self.artifact_records.values() if r.get("stageId") == stage_id]

    async def versions(self, artifact_id: str) -> list[dict[str, Any]]:
        return [r for r in self.version_records.values() if r.get("artifactId") == artifact_id]

    async def conversation_versions(self, conversation_id: str) -> list[dict[str, Any]]:
        return [r for r in self.version_records.values() if r.get("conversationId") == conversation_id]

    async def version_by_checkpoint(self, checkpoint_id: str) -> dict[str, Any] | None:
        return next((r for r in self.version_records.values() if r.get("checkpointId") == checkpoint_id), None)

    async def document(self, version_id: str) -> dict[str, Any] | str | None:
        return self.documents.get(version_id)

    async def documents_of(self, version_ids: list[str]) -> list[dict[str, Any] | str | None]:
        return [self.documents.get(v) for v in version_ids]

    async def commit(self, artifact, version, document, expected_version_no):
        numbers = [r.get("versionNo") for r in self.version_records.values()
                   if r.get("artifactId") == version["artifactId"]]
        highest = max([n for n in numbers if isinstance(n, int)], default=0)
        if highest != expected_version_no or version["versionId"] in self.version_records:
            return highest
        self.version_records[version["versionId"]] = version
        self.documents[version["versionId"]] = document
        if artifact is not None:
            self.artifact_records[artifact["artifactId"]] = artifact
        return None


class _ArtifactRecord(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore", defer_build=True)  # built when first read (§13)
    schema_: int = Field(alias="schema")
    artifact_id: str = Field(alias="artifactId")
    stage_id: str = Field(alias="stageId")
    scene_id: str = Field(alias="sceneId")
    version_no: int = Field(alias="versionNo", ge=1)
    version_id: str = Field(alias="versionId")
    updated_at: int = Field(alias="updatedAt")
    current: dict[str, Any] | None = None  # records written before carry their current document
    latest: FileArtifact


class _VersionRecord(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore", defer_build=True)  # built when first read (§13)
    schema_: int = Field(alias="schema")
    version_id: str = Field(alias="versionId")
    artifact_id: str = Field(alias="artifactId")
    version_no: int = Field(alias="versionNo", ge=1)
    checkpoint_id: str = Field(alias="checkpointId")
    item: FileArtifact


@dataclass(frozen=True)
class CurrentVersion:
    """A scene's current stored version: ``version_no`` (≥ 1), ``version_id``, its ``document``
    and timeline ``item``."""

    version_no: int
    version_id: str
    document: SceneDocument
    item: FileArtifact


def _document(raw: Any) -> SceneDocument:
    """A stored document (a JSON object, or its JSON text). Raises ``pydantic.ValidationError``."""
    return parse_document(raw) if isinstance(raw, str) else SceneDocument.model_validate(raw)


def renumbered(version: dict[str, Any], number: int) -> dict[str, Any]:
    """A copy of version record ``version`` as number ``number`` of its artifact: ``versionNo``,
    ``versionId`` (``<artifactId>:v<n>``) and its timeline item's metadata (``artifactVersionNo``,
    ``artifactVersionId``, ``artifactVersion``'s ``id``, ``versionNo`` and ``snapshotPath``).

    >>> v = {"versionId": "a:v2", "artifactId": "a", "sceneId": "s", "versionNo": 2,
    ...      "item": {"metadata": {"artifactVersionNo": 2, "artifactVersionId": "a:v2"}}}
    >>> r = renumbered(v, 5)
    >>> r["versionId"], r["item"]["metadata"]["artifactVersionId"], r["item"]["metadata"]["artifactVersion"]["id"]
    ('a:v5', 'a:v5', 'a:v5')
    """
    vid = version_id(version["artifactId"], number)
    item = dict(version.get("item") or {})
    metadata = dict(item.get("metadata") or {})
    metadata.update({"artifactVersionNo": number, "artifactVersionId": vid,
                     "artifactVersion": {**(metadata.get("artifactVersion") or {}), "id": vid, "versionNo": number,
                                         "snapshotPath": snapshot_path(str(version.get("sceneId", "")), number)}})
    item["metadata"] = metadata
    return {**version, "versionNo": number, "versionId": vid, "item": item}


def _random_id() -> str:
    return "fc_" + os.urandom(8).hex()


class VersionStore:
    """Current documents and versions over a ``VersionBackend`` (see the module docstring).

    ``new_id``: makes checkpoint ids (unique across tabs: random). The store
    caches the current version of the artifacts it has read or written.
    """

    def __init__(self, backend: Any, *, new_id: Callable[[], str] = _random_id) -> None:
        self._backend = backend
        self._new_id = new_id
        self._current: dict[str, CurrentVersion] = {}
        self.notices: list[str] = []
        """Codes of notices to show, each once: ``checkpoint-damaged``, ``checkpoint-unavailable``."""

    @property
    def kept(self) -> bool:
        """False once versions live in memory only (the backend failed)."""
        return "checkpoint-unavailable" not in self.notices

    # -- reading ---------------------------------------------------------

    async def load_stage(self, stage_id: str) -> dict[str, CurrentVersion]:
        """Read course ``stage_id``'s artifact records (current documents only); returns them by
        scene id, and caches them."""
        found: dict[str, CurrentVersion] = {}
        records = [r for r in map(lambda raw: self._valid(_ArtifactRecord, raw),
                                  await self._guard(lambda b: b.artifacts(stage_id), []))
                   if r is not None and r.stage_id == stage_id]
        named = [r.version_id for r in records if r.current is None]  # their current document: its snapshot
        stored = dict(zip(named, await self._guard(lambda b: b.documents_of(named), []) if named else []))
        for record in records:
            try:
                raw = record.current if record.current is not None else stored.get(record.version_id)
                if raw is None:
                    raise ValueError(f"no snapshot {record.version_id}")
                document = _document(raw)
            except (ValidationError, ValueError):
                self._notice("checkpoint-damaged")
                continue
            current = CurrentVersion(record.version_no, record.version_id, document, record.latest)
            self._keep(record.artifact_id, current)
            found[record.scene_id] = self._current[record.artifact_id]
        return found

    def cached(self, artifact_id: str) -> CurrentVersion | None:
        """The current version of ``artifact_id`` this store knows, without reading anything."""
        return self._current.get(artifact_id)

    async def items(self, artifact_id: str) -> list[FileArtifact]:
        """Timeline items of every stored version of ``artifact_id``, any order (damaged ones skipped)."""
        return self._items(await self._guard(lambda b: b.versions(artifact_id), []))

    async def conversation_items(self, conversation_id: str) -> list[FileArtifact]:
        """Timeline items of the versions made in ``conversation_id``, any order."""
        return self._items(await self._guard(lambda b: b.conversation_versions(conversation_id), []))

    async def item(self, checkpoint_id: str) -> FileArtifact | None:
        """The timeline item ``checkpoint_id``, or ``None``."""
        raw = await self._guard(lambda b: b.version_by_checkpoint(checkpoint_id), None)
        found = self._items([raw] if raw is not None else [])
        return found[0] if found else None

    async def document(self, version: str) -> SceneDocument | None:
        """The document of stored version ``version`` (``<artifactId>:v<n>``), or ``None``."""
        raw = await self._guard(lambda b: b.document(version), None)
        if raw is None:
            return None
        try:
            return _document(raw)
        except ValidationError:
            self._notice("checkpoint-damaged")
            return None

    async def documents(self, versions: list[str]) -> list[SceneDocument | None]:
        """``document`` of each of ``versions``, in order, in one read (``None`` for one that is
        missing or damaged; a damaged one gives the ``checkpoint-damaged`` notice)."""
        raws = await self._guard(lambda b: b.documents_of(list(versions)), [None] * len(versions)) if versions else []
        found: list[SceneDocument | None] = []
        for raw in raws:
            try:
                found.append(None if raw is None else _document(raw))
            except ValidationError:
                self._notice("checkpoint-damaged")
                found.append(None)
        return found

    # -- writing ---------------------------------------------------------

    async def record(self, event: ArtifactSnapshot) -> FileArtifact:
        """Write ``event``'s document as the next version of its artifact; returns its item.

        The number is the stored ``versionNo`` + 1, checked and written in one
        backend transaction; when another tab took it meanwhile, the next free
        number is used (up to ``MAX_RETRIES`` times, then ``RuntimeError``).
        """
        from app.records import BulkValue

        # handed over as an object, never encoded as text: a document may be megabytes of base64
        # (DESIGN.md §10: a document larger than 5 MB is stored without freezing the page)
        document = BulkValue(event.document.model_dump(mode="json", exclude_none=True))
        known = self._current.get(event.artifact_id)
        expected = known.version_no if known else await self._stored_version_no(event)
        checkpoint_id = self._new_id()
        for _ in range(MAX_RETRIES):
            number = expected + 1
            item = file_artifact(event, number, checkpoint_id)
            vid = version_id(event.artifact_id, number)
            artifact = {"schema": SCHEMA, "artifactId": event.artifact_id, "stageId": event.stage_id,
                        "sceneId": event.scene_id, "path": event.path, "versionNo": number, "versionId": vid,
                        "updatedAt": event.at, "latest": item.wire()}
            version = {"schema": SCHEMA, "versionId": vid, "artifactId": event.artifact_id,
                       "stageId": event.stage_id, "sceneId": event.scene_id, "versionNo": number,
                       "conversationId": event.conversation_id, "checkpointId": checkpoint_id,
                       "updatedAt": event.at, "item": item.wire()}
            taken = await self._guard(lambda b: b.commit(artifact, version, document, expected), None,
                                      retry=True)
            if taken is None:
                self._keep(event.artifact_id, CurrentVersion(number, vid, event.document, item))
                return item
            expected = int(taken)  # another tab wrote meanwhile: number past its version
        raise RuntimeError(f"no free version number for {event.artifact_id!r}")

    async def adopt(self, version: dict[str, Any], document: dict[str, Any]) -> int | None:
        """Add a version made on another device (a version record, ``document`` its whole
        document; current when it is the highest number and made no earlier than the current one);
        returns the number it has here, ``None`` when its checkpoint is here already.
        Raises ``ValueError`` for a record or document that does not validate (nothing written),
        ``RuntimeError`` when no number could be taken in ``MAX_RETRIES`` tries."""
        from app.records import BulkValue

        try:  # another device's damage is refused here, not noticed as this device's (no notice)
            record = _VersionRecord.model_validate(version)
            parsed = _document(document)
        except ValidationError as error:
            raise ValueError("not a scene version") from error
        if not isinstance(version.get("stageId"), str) or not isinstance(version.get("sceneId"), str):
            raise ValueError("not a scene version")
        if await self._guard(lambda b: b.version_by_checkpoint(record.checkpoint_id), None) is not None:
            return None
        bulk = BulkValue(parsed.model_dump(mode="json", exclude_none=True))
        for _ in range(MAX_RETRIES):
            rows = [r for r in await self._guard(lambda b: b.versions(record.artifact_id), [])
                    if isinstance(r, dict) and isinstance(r.get("versionNo"), int)]
            numbers = [r["versionNo"] for r in rows]
            highest = max(numbers, default=0)
            top = max(rows, key=lambda r: r["versionNo"], default=None)
            placed = place_versions(numbers, [{"versionId": record.version_id, "versionNo": record.version_no,
                                               "createdAt": int(version.get("updatedAt") or 0)}])[0]["versionNo"]
            row = renumbered({**version, "schema": SCHEMA}, placed)
            item = FileArtifact.model_validate(row["item"])
            artifact = None
            made_later = top is None or item.updated_at >= int(top.get("updatedAt") or 0)
            if placed > highest and made_later:
                artifact = {"schema": SCHEMA, "artifactId": record.artifact_id, "stageId": version["stageId"],
                            "sceneId": version["sceneId"], "path": item.path, "versionNo": placed,
                            "versionId": row["versionId"], "updatedAt": item.updated_at, "latest": item.wire()}
            taken = await self._guard(lambda b: b.commit(artifact, row, bulk, highest), None, retry=True)
            if taken is None:
                if artifact is not None:
                    self._keep(record.artifact_id, CurrentVersion(placed, row["versionId"], parsed, item))
                return placed
        raise RuntimeError(f"no free version number for {record.artifact_id!r}")

    async def _stored_version_no(self, event: ArtifactSnapshot) -> int:
        await self.load_stage(event.stage_id)
        known = self._current.get(event.artifact_id)
        return known.version_no if known else 0

    # -- helpers ---------------------------------------------------------

    def _keep(self, artifact_id: str, current: CurrentVersion) -> None:
        known = self._current.get(artifact_id)
        if known is None or current.version_no >= known.version_no:
            self._current[artifact_id] = current

    def _items(self, raws: list[Any]) -> list[FileArtifact]:
        items = []
        for raw in raws:
            record = self._valid(_VersionRecord, raw)
            if record is not None:
                items.append(record.item)
        return items

    def _valid(self, model: type[BaseModel], raw: Any) -> Any:
        """``raw`` validated as ``model``, or ``None`` (damaged or unknown schema: one notice)."""
        try:
            record = model.model_validate(raw)
        except ValidationError:
            self._notice("checkpoint-damaged")
            return None
        if record.schema_ != SCHEMA:
            self._notice("checkpoint-damaged")
            return None
        return record

    def _notice(self, code: str) -> None:
        if code not in self.notices:
            self.notices.append(code)

    async def _guard(self, call: Callable[[Any], Awaitable[T]], fallback: T, *, retry: bool = False) -> T:
        """Run ``call(backend)``; on ``BackendUnavailable`` switch to memory (one notice) and, for a
        write (``retry``), run it again there."""
        try:
            return await call(self._backend)
        except BackendUnavailable as error:
            if not self.kept:
                raise  # the in-memory twin itself failed: nothing left to fall back on
            _log.info("scene versions are kept in memory from now on: %s", error)
            self._backend = MemoryVersionBackend()
            self._notice("checkpoint-unavailable")
            return await call(self._backend) if retry else fallback


def place_versions(local_numbers: Iterable[int], incoming: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``incoming`` versions of one scene (dicts with ``versionId``, ``versionNo``,
    ``createdAt``) with the numbers they get here (§16: append-only, distinct numbers): a number not
    taken keeps; a taken one goes past the highest, in ``createdAt`` order. Nothing is dropped.

    >>> [v["versionNo"] for v in place_versions([1, 2], [{"versionId": "b", "versionNo": 2, "createdAt": 9},
    ...                                                  {"versionId": "c", "versionNo": 4, "createdAt": 3}])]
    [5, 4]
    """
    taken = set(local_numbers)
    placed: dict[str, dict[str, Any]] = {}
    clashing = []
    for version in sorted(incoming, key=lambda v: (v["createdAt"], v["versionId"])):
        if version["versionNo"] in taken:
            clashing.append(version)
        else:
            taken.add(version["versionNo"])
            placed[version["versionId"]] = dict(version)
    for version in clashing:
        number = max(taken, default=0) + 1
        taken.add(number)
        placed[version["versionId"]] = {**version, "versionNo": number}
    return [placed[v["versionId"]] for v in incoming]
