"""Between history and the replicated database (DESIGN.md §16, §15), pure and browser-free.

``SyncEngine`` is what the browser adapter (``app.browser.sync_setup`` over ``static/sync.js``)
calls, both ways:

- out: ``local_changed(kind, task_id, stage_id)`` after this tab changed history
  (``HistoryService.on_change``): a delete removes the conversation's document (and keeps its id
  as deleted, ``Tombstones``), anything else writes the conversation's document as history now
  holds it (``app.sync.documents.conversation_doc``);
- in: ``remote_changed(doc)`` for each document the replication brought: a deletion removes the
  conversation here (``HistoryService.remove_synced``); a document of an id deleted before is
  deleted again rather than brought back; any other conversation goes through
  ``HistoryService.apply_synced`` (merged by ``app.sync.merge``, through ``app.continuity``), and when
  this device's version continues it or both were merged, the result is written back out;
- ``status(...)`` turns what the replication reports into the ``SyncStatus`` the panel shows.

Ports: ``replica`` has ``async put(doc) -> None`` (stores the document over its current revision,
nothing when its content is the same) and ``async remove(doc_id) -> None``; ``history`` is the
``HistoryService``; ``deleted`` a ``StringStorage`` holding the deleted ids as a JSON list under
``DELETED_KEY`` (ids only: never credentials). Failures of the replica raise; the browser layer logs
them (without credentials) and the next change or "sync now" tries again.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from app.sync.documents import conversation_doc, conversation_of, doc_id_of_task, kind_of
from app.sync.merge import Tombstones
from app.sync.settings import SyncStatus, failure_reason, is_couchdb

__all__ = ["DELETED_KEY", "Replica", "SyncEngine"]

DELETED_KEY = "agentbar-sync-deleted"
"""``localStorage`` key of the ids deleted on any device (a JSON list of document ids)."""


class Replica(Protocol):
    """The local replicated database (PouchDB in the page)."""

    async def put(self, doc: dict[str, Any]) -> None: ...

    async def remove(self, doc_id: str) -> None: ...


class SyncEngine:
    """History ↔ replica (module docstring)."""

    def __init__(self, history: Any, replica: Replica, deleted: Any) -> None:
        self.history = history
        self.replica = replica
        self._deleted_store = deleted
        self.tombstones = Tombstones(self._read_deleted())
        self.applied: list[tuple[str, str]] = []  # (doc id, outcome) of each remote change, for the trace

    def _read_deleted(self) -> list[str]:
        try:
            raw = self._deleted_store.get_item(DELETED_KEY)
            ids = json.loads(raw) if raw else []
        except Exception:  # noqa: BLE001 - blocked or damaged: no tombstones known here
            return []
        return [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []

    def _forget_for_good(self, doc_id: str) -> None:
        self.tombstones.delete(doc_id)
        try:
            self._deleted_store.set_item(DELETED_KEY, json.dumps(self.tombstones.ids()))
        except Exception:  # noqa: BLE001 - the tombstone holds for this page; PouchDB keeps the deletion
            pass

    # -- out -------------------------------------------------------------------
    async def local_changed(self, kind: str, task_id: str, stage_id: str = "") -> None:
        """This tab changed conversation ``task_id`` (``HistoryService.on_change`` kinds)."""
        doc_id = doc_id_of_task(task_id)
        if kind == "delete":
            self._forget_for_good(doc_id)
            await self.replica.remove(doc_id)
            return
        if not self.tombstones.admits(doc_id):  # an undo after the delete went out: it stays deleted (§16)
            return
        await self.push(task_id)

    async def push(self, task_id: str) -> bool:
        """Write ``task_id``'s document as history holds it; False when history has none."""
        bundle = await self.history.bundle(task_id)
        if bundle is None:
            return False
        meta, messages, turns = bundle
        await self.replica.put(conversation_doc(meta, messages, turns))
        return True

    # -- in --------------------------------------------------------------------
    async def remote_changed(self, doc: dict[str, Any]) -> str:
        """Apply one replicated document; returns what happened (``deleted``, ``redeleted``,
        ``ignored`` for a document that is not a conversation, ``damaged``, or the outcome of
        ``HistoryService.apply_synced``)."""
        doc_id = str(doc.get("_id", ""))
        outcome = await self._apply(doc_id, doc)
        self.applied.append((doc_id, outcome))
        return outcome

    async def _apply(self, doc_id: str, doc: dict[str, Any]) -> str:
        if kind_of(doc_id) != "conversation":
            return "ignored"  # scene versions: a later step; design documents, other apps' documents
        task_id = doc_id.split(":", 1)[1]
        if doc.get("_deleted"):
            self._forget_for_good(doc_id)
            await self.history.remove_synced(task_id)
            return "deleted"
        if not self.tombstones.admits(doc_id):
            await self.replica.remove(doc_id)  # a device that had not seen the delete: deleted again
            return "redeleted"
        try:
            meta, messages, turns = conversation_of(doc)
        except ValueError:
            return "damaged"
        outcome = await self.history.apply_synced(meta, messages, turns)
        if outcome in ("local", "merged"):
            await self.push(task_id)
        return outcome

    # -- status ----------------------------------------------------------------
    @staticmethod
    def status(event: str, http_status: int | None = None, body: Any = None) -> SyncStatus:
        """The panel's status for a replication ``event``: ``active`` (documents moving) →
        ``syncing``; ``paused`` with no error (caught up) → ``synced``; ``denied``/``error`` with the
        failing request's ``http_status`` (0/None: no answer) → ``failed`` by ``failure_reason``;
        ``welcome`` (the answer of ``GET /`` before replicating, ``body`` parsed or None) →
        ``syncing`` when it is a CouchDB welcome, else ``notCouchdb`` (or ``unreachable`` with no
        answer, or the HTTP reason); ``off``.

        >>> SyncEngine.status("error", 401).key, SyncEngine.status("paused").state
        ('sync.reason.unauthorized', 'synced')
        >>> SyncEngine.status("welcome", 200, {"ok": True}).reason
        'notCouchdb'
        """
        if event == "off":
            return SyncStatus("off")
        if event == "active":
            return SyncStatus("syncing")
        if event == "paused":
            return SyncStatus("synced")
        if event == "welcome":
            if http_status == 200 and is_couchdb(body):
                return SyncStatus("syncing")
            if http_status in (401, 403) or not http_status:
                return SyncStatus.failed(failure_reason(http_status))
            return SyncStatus.failed("notCouchdb")
        return SyncStatus.failed(failure_reason(http_status, body))
