"""Between history and the replicated database (DESIGN.md §16, §15), pure and browser-free.

``SyncEngine`` is what the browser adapter (``app.browser.sync_setup`` over ``static/sync.js``)
calls, both ways:

- out: ``local_changed(change)`` for each change history's hub announces that ``sends`` admits
  (this tab's and an import's, ``app.history.changes``; never sync's own, never another tab's,
  which that tab sends): a delete is held while Undo can take it back (``app.sync.held.HeldDeletes``,
  kept in ``deleted``'s storage; another device's version of that id is kept aside meanwhile), then
  ``release`` removes the conversation's document (and keeps its id as deleted, ``Tombstones``), the
  deletion naming the turns this device had (``app.sync.documents.deletion_doc``); an undo (or an
  import) before that cancels the hold, nothing of the delete goes out, and what was kept aside is
  taken in; anything else writes the conversation's document
  (``app.sync.documents.conversation_doc``) of what the change carries as written, or as history
  now holds it when it carries none, never over an id deleted before: an undo of a delete that
  went out, or an import of its file, brings the conversation back here under a new id (``HistoryService.renew_synced``),
  which goes out as any other, while the deleted id stays deleted everywhere; a restored backup's
  change of a whole course goes out as one change of each conversation it wrote (``send_each``);
- in: ``remote_changed_many(docs)`` for the documents the replication brought, in arrival order
  (``remote_changed(doc)`` for one; ``read_ahead(docs)`` checks them beforehand, while the slice
  before them is written). A document in conflict carries every leaf revision under
  ``LEAVES`` (the adapter reads them, CouchDB's ``open_revs``), and ``app.sync.tombstones.decide``
  says what it comes to: a deletion wins over every other leaf (CouchDB itself picks a live one):
  the conversation is removed here (``HistoryService.remove_synced``, which keeps apart, with a
  notice, the turns made here that the deleting device never had) and every live leaf deleted,
  so the id never comes back, here or anywhere; a document of an id deleted before is deleted
  again the same way. Several live leaves are merged (``app.history.merge.merge_leaves``: the
  union of every leaf's tree, DESIGN.md §17), the result kept in history and written over the winner while the losing leaves
  are deleted, in one bulk write (``Replica.resolve``), as CouchDB's guide resolves conflicts; no
  ``_conflicts`` stay. Any other conversation goes through ``HistoryService.apply_synced_many``
  (those new here written together; the others merged with what is held here by
  ``app.history.merge``, the union of both trees), and when this device's version continues it or both were merged, the
  result is written back out. What comes in is held to the import's limits
  (``app.sync.documents``); what cannot be read is counted (``unreadable``) and ``notify`` hears
  one ``sync-unreadable`` notice with the count so far;
- scene versions, out: ``local_version(item)`` after this device wrote a version; in: a version
  document; both handed to ``versions``, an ``app.sync.versions.VersionSync``;
- ``send_all(target)``: at the first sync with ``target`` (the remote ``url/database``), every
  conversation and version stored here goes out, those made before sync was turned on included
  (``SENT_KEY`` remembers the target: later starts send only what changes);
- what the replication reports becomes the panel's status in ``app.sync.settings.SyncStatus``
  (``of_event``, ``shown``): ``synced`` only once history holds what was replicated.

Ports: ``replica`` has ``async put(doc) -> None`` (stores the document over its current revision,
nothing when its content is the same), ``async remove(doc_id, body) -> None`` (deletes it, the
deletion carrying ``body``) and ``async resolve(docs) -> None`` (one bulk write of ``docs``, each
over the leaf revision its ``_rev`` names); ``history`` is the
``HistoryService``; ``deleted`` a ``StringStorage`` holding the deleted ids as a JSON list under
``DELETED_KEY`` (ids only: never credentials), ``SENT_KEY`` and the held deletions
(``app.sync.held.HELD_KEY``); ``checkpoints`` the
``SceneCheckpoints`` (None: versions are not synced); ``records`` the ``app.records.RecordBackend``
the versions live in (``send_all`` reads them through ``app.history.repository.version_pages``, the
conversations through ``HistoryService.conversation_pages``: no table is named here), ``pause``
awaited between their pages; ``clock``: epoch ms
(the intake's "not ahead of now"); ``notify(Notice)``: the ``sync-unreadable`` notice. Failures of the replica raise; the browser layer logs
them (without credentials) and the next change or "sync now" tries again.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import time

from app.history.changes import HistoryChange
from app.history.merge import Merged, merge_leaves, merged_meta
from app.history.repository import Conversation, version_pages
from app.store import Notice
from app.sync.documents import (DELETION, conversation_steps, deletion_doc, doc_id_of_task, document_of, kind_of,
                                turn_digests)
from app.sync.held import HeldDeletes
from app.sync.tombstones import Decision, Tombstones, decide
from app.sync.versions import VersionSync

__all__ = ["BUDGET_S", "DELETED_KEY", "LEAVES", "ReadAhead", "Replica", "SENT_KEY", "SLICE", "SyncEngine"]

LEAVES = "_leaves"
"""Key the adapter puts every leaf revision of a document in conflict under (winner included)."""

DELETED_KEY = "agentbar-sync-deleted"
"""``localStorage`` key of the ids deleted on any device (a JSON list of document ids)."""
SENT_KEY = "agentbar-sync-sent"
"""``localStorage`` key of the remote (``url/database``, never credentials) everything was sent to."""
SLICE = 50
"""Records read per slice by ``send_all``."""
BUDGET_S = 0.008
"""A replicated document's checks give the page its turn after this many seconds of work."""


class Replica(Protocol):
    """The local replicated database (PouchDB in the page)."""

    async def put(self, doc: dict[str, Any]) -> None: ...

    async def remove(self, doc_id: str, body: dict[str, Any] | None = None) -> None: ...

    async def resolve(self, docs: list[dict[str, Any]]) -> None: ...


@dataclass
class Unsent:
    """What a replication that ended refused to write (Sync now, the watchdog or new settings came
    while the write was under way), kept by the page across its starts for the next one's
    ``SyncEngine.resend``: ``changes`` the latest history change per task id, ``versions`` the
    timeline items of scene versions by checkpoint id (a version never changes again, so one not
    sent then would never go out). DESIGN.md §5: nothing is lost silently; §16."""

    changes: dict[str, HistoryChange] = field(default_factory=dict)
    versions: dict[str, Any] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.changes or self.versions)


class ReadAhead:
    """What ``SyncEngine.read_ahead`` made of documents, by the document (the object itself, not its
    id: a later revision of the same id is another object, checked when it comes)."""

    def __init__(self) -> None:
        self._read: dict[int, tuple[dict[str, Any], Any]] = {}

    def keep(self, doc: dict[str, Any], read: Any) -> None:
        """``read``: the ``Conversation`` of ``doc``, or the ``ValueError`` its checks raised."""
        self._read[id(doc)] = (doc, read)

    def of(self, doc: dict[str, Any]) -> Any:
        """The ``Conversation`` read ahead for ``doc`` (None: it was not); raises the ``ValueError`` its
        checks raised."""
        held = self._read.get(id(doc))
        if held is None or held[0] is not doc:
            return None
        if isinstance(held[1], ValueError):
            raise held[1]
        return held[1]


class SyncEngine:
    """History ↔ replica (module docstring). ``unreadable``: how many replicated documents (or leaf
    revisions) could not be read since this engine began."""

    def __init__(self, history: Any, replica: Replica, deleted: Any, *, checkpoints: Any = None, records: Any = None,
                 pause: Callable[[], Awaitable[None]] | None = None, clock: Callable[[], int] | None = None,
                 notify: Callable[[Notice], None] | None = None,
                 unsent: Unsent | None = None) -> None:
        self.history = history
        self.unsent = Unsent() if unsent is None else unsent
        self.replica = replica
        self.unreadable = 0
        self._clock = clock or (lambda: int(time.time() * 1000))
        self._notify = notify
        self.checkpoints = checkpoints
        self.versions = VersionSync(replica, checkpoints, self.unsent, self._clock)
        self.records = records
        self._pause = pause or (lambda: asyncio.sleep(0))
        self._deleted_store = deleted
        self.tombstones = Tombstones.kept_in(deleted, DELETED_KEY)
        self.held = HeldDeletes(deleted, self._clock)

    # -- out -------------------------------------------------------------------
    @staticmethod
    def sends(change: HistoryChange) -> bool:
        """True when ``change`` goes out: made in this tab or imported here. A change sync itself
        applied (another device's) is not sent back; another tab's is that tab's to send.

        >>> sources = ("this-tab", "import", "sync", "other-tab")
        >>> [SyncEngine.sends(HistoryChange("record", "t", "s", source)) for source in sources]
        [True, True, False, False]
        """
        return change.source in ("this-tab", "import")

    async def local_changed(self, change: HistoryChange) -> None:
        """History changed conversation ``change.task_id`` here (``sends``; a change of a whole course,
        a restored backup's, sends each conversation it names, ``send_each``). A delete removes its document; a change
        that carries what it wrote (``change.written``) writes the document of that, reading
        nothing back; any other writes it as history holds it (``push``). A write the replica
        refuses (a replication that ended meanwhile: Sync now, the watchdog, new settings) raises,
        and the change is kept in ``unsent`` for the next start's ``resend`` (§5: nothing is lost
        silently; before, it went out only with that conversation's next change)."""
        task_id = change.task_id
        if not self.sends(change):
            return
        if not task_id:
            await self.send_each(change)
            return
        try:
            await self._send(change)
        except Exception:
            self.unsent.changes[task_id] = change
            raise
        self.unsent.changes.pop(task_id, None)  # what went out is what history holds now

    async def send_each(self, change: HistoryChange) -> None:
        """A change of a whole course (a restored backup's import) goes out as one change of each
        conversation it names (``HistoryChange.tasks``: one under an id deleted before comes back under
        a new one, ``_send``), ``pause`` awaited every ``SLICE``. Each refused write stays in
        ``unsent``; the others still go and the first refusal is raised once all were tried
        (DESIGN.md §14, §16: what a restore wrote syncs like any other conversation)."""
        failed = None
        for count, task_id in enumerate(change.tasks, 1):
            try:
                await self.local_changed(replace(change, task_id=task_id, tasks=()))
            except Exception as error:  # noqa: BLE001 - kept in unsent; the others still go
                failed = failed or error
            if count % SLICE == 0:
                await self._pause()
        if failed is not None:
            raise failed

    async def resend(self) -> int:
        """Send again what ``unsent`` keeps, in the order it was kept: each conversation's change (a
        delete as it was, any other as history holds that conversation now, never the copy the refused
        write carried: a later change may have come since), then each scene version. Returns how many
        were sent again; each one refused again stays kept for the next start, the others still go, and
        the first refusal is raised once all were tried. A delete sent again names the turns history still knows it had (``deleted_paths``; none
        once history forgot them, so another device keeps its turns of it apart, as unseen ones)."""
        sent, failed = 0, None
        sends = [lambda c=change: self.local_changed(c if c.kind == "delete" else replace(c, written=None))
                 for change in self.unsent.changes.values()]
        sends += [lambda i=item: self.local_version(i) for item in self.unsent.versions.values()]
        for send in sends:
            try:
                await send()
            except Exception as error:  # noqa: BLE001 - kept again; the others still go (one bad version holds none)
                failed = failed or error
                continue
            sent += 1
        if failed is not None:
            raise failed
        return sent

    async def _send(self, change: HistoryChange) -> None:
        task_id = change.task_id
        doc_id = doc_id_of_task(task_id)
        if change.kind == "delete":  # held while Undo can take it back (release), naming the turns this device had
            had = self.history.deleted_paths(task_id) or []  # every branch's turns (DESIGN.md §17), never their text
            seen = sorted({d for path in had for d in turn_digests(path)})
            if not self.held.hold(doc_id, seen):  # a hold the storage cannot keep would die with the tab: out now
                await self._delete_out(doc_id, seen)
            return
        aside = self.held.cancel(doc_id)  # back before its deletion went out: it never will
        if aside:  # another device's version that came meanwhile is taken in now
            await self.remote_changed_many(aside)
        if not self.tombstones.admits(doc_id):  # a write over the deletion would bring the id back (§16)
            # undone, or imported from a file, after the delete went out: back here under a new id, sent as any other
            if change.kind in ("undo", "import"):
                renewed = await self.history.renew_synced(task_id)
                if renewed:
                    await self.push(renewed)
            return
        if change.written is not None:  # what history just wrote: sent as it is, nothing read back (§15)
            await self.replica.put(document_of(change.written))
        else:  # a change that carries no records (a resume, an undo): history holds what goes out
            await self.push(task_id)

    async def release(self) -> int:
        """Each held deletion Undo can no longer take back (``HeldDeletes.due``) goes out: its id kept
        as deleted, its document removed, the deletion naming the turns this device had; returns how
        many. A removal the replica refuses raises, and that one stays held for the next release (the
        page's timer after each delete, and every start: a tab closed meanwhile sends it then)."""
        released = 0
        for doc_id, seen in self.held.due():
            await self._delete_out(doc_id, seen)
            self.held.done(doc_id)
            released += 1
        return released

    async def _delete_out(self, doc_id: str, seen: list[str]) -> None:
        """The deletion of ``doc_id`` goes out: its id kept as deleted, its document removed, naming the
        turns this device had (``seen``, digests)."""
        self.tombstones.delete(doc_id)
        await self.replica.remove(doc_id, {"type": DELETION, "seen": seen})

    async def push(self, task_id: str) -> bool:
        """Write ``task_id``'s document as history holds it; False when history has none, or when its
        id was deleted (a write over the deletion would bring it back, §16)."""
        if not self.tombstones.admits(doc_id_of_task(task_id)):
            return False
        bundle = await self.history.bundle(task_id)
        if bundle is None:
            return False
        await self.replica.put(document_of(bundle))
        return True

    async def local_version(self, item: Any) -> bool:
        """This device wrote the version of timeline ``item``: it goes out (``VersionSync.local``)."""
        return await self.versions.local(item)

    async def send_all(self, target: str) -> int:
        """The first sync with ``target``: write the document of every conversation and version stored
        here (nothing deleted); returns how many. Nothing when ``SENT_KEY`` already names ``target``."""
        if self.records is None or self._get(SENT_KEY) == target:
            return 0
        sent = 0
        async for page in self.history.conversation_pages(SLICE):
            for conversation in page:
                if self.tombstones.admits(doc_id_of_task(conversation.meta.taskId)):
                    await self.replica.put(document_of(conversation))
                    sent += 1
            await self._pause()
        if self.checkpoints is not None:
            async for page in version_pages(self.records, SLICE):
                for row, snapshot in page:
                    document = snapshot.get("document") if isinstance(snapshot, dict) else None
                    try:
                        sent += await self.versions.push(row, document) if document is not None else 0
                    except (KeyError, ValueError):  # a damaged record stays here, unsent
                        continue
                await self._pause()
        try:
            self._deleted_store.set_item(SENT_KEY, target)
        except Exception:  # noqa: BLE001 - the next start sends again (puts of the same content are no-ops)
            pass
        return sent

    def _get(self, key: str) -> str | None:
        try:
            return self._deleted_store.get_item(key)
        except Exception:  # noqa: BLE001 - blocked storage reads as empty
            return None

    # -- in --------------------------------------------------------------------
    async def remote_changed(self, doc: dict[str, Any]) -> str:
        """Apply one replicated document; returns what happened (``deleted``, ``redeleted``,
        ``ignored`` for a document that is not a conversation, ``damaged``, ``held``: kept aside, its
        id deleted here while Undo may take that back, ``HeldDeletes``, or the outcome of
        ``HistoryService.apply_synced``)."""
        return (await self.remote_changed_many([doc]))[0]

    async def read_ahead(self, docs: list[dict[str, Any]]) -> "ReadAhead":
        """Check now (``_read``: the import's rules, the costly part of taking a document in) each of
        ``docs`` that is a conversation going to history as it is, by what is known now (neither in
        conflict nor deleted), and keep what came of it for ``remote_changed_many(docs, ahead)``: a
        caller taking documents in slices checks the next slice while history writes this one (its
        transaction waits on IndexedDB, DESIGN.md §16). Nothing is applied or counted here;
        ``remote_changed_many`` decides each document again itself (a deletion applied meanwhile
        still wins) and only takes what was read of the same document. The page gets its turn
        whenever ``BUDGET_S`` went by since it last had it, between documents too."""
        ahead, began = ReadAhead(), time.perf_counter()
        for doc in docs:
            doc_id = str(doc.get("_id", ""))
            if kind_of(doc_id) == "conversation":
                decision = decide(doc, doc.get(LEAVES), self.tombstones.admits(doc_id))
                if decision.what == "one":
                    try:
                        ahead.keep(decision.live[0], await self._read(decision.live[0]))
                    except ValueError as error:
                        ahead.keep(decision.live[0], error)
            if time.perf_counter() - began >= BUDGET_S:  # each read pauses within, never across documents
                await self._pause()
                began = time.perf_counter()
        return ahead

    async def remote_changed_many(self, docs: list[dict[str, Any]], ahead: "ReadAhead | None" = None) -> list[str]:
        """Apply replicated documents in arrival order; one outcome each (``remote_changed``'s, and
        ``merged``/``local``/… of a conflict resolved). Each run of conversations in a row that are
        neither in conflict nor deleted goes to history together
        (``HistoryService.apply_synced_many``: those new here in one transaction); a deletion, a
        conflict, a version or any other document ends the run and is applied on its own, so what one
        id went through stays in order. Documents that cannot be read end in one notice. ``ahead``:
        what ``read_ahead(docs)`` checked already (not checked again)."""
        before = self.unreadable
        self.held.read()  # another tab's held deletions too
        outcomes: list[str | None] = [None] * len(docs)
        run: list[tuple[int, str, Any]] = []  # (index, task id, Conversation)
        for index, doc in enumerate(docs):
            doc_id = str(doc.get("_id", ""))
            kind = kind_of(doc_id)
            if kind == "conversation":
                if self.held.keeps_aside(doc_id, doc):  # deleted here, and Undo may still take it back
                    outcomes[index] = "held"
                    continue
                decision = decide(doc, doc.get(LEAVES), self.tombstones.admits(doc_id))
                if decision.what == "one":
                    try:
                        read = ahead.of(decision.live[0]) if ahead is not None else None
                        if read is None:
                            read = await self._read(decision.live[0])
                        run.append((index, doc_id.split(":", 1)[1], read))
                    except ValueError:
                        outcomes[index] = self._damaged()
                    continue
                await self._apply_run(run, outcomes)
                if decision.what == "delete":
                    outcomes[index] = await self._delete(doc_id, decision)
                else:
                    outcomes[index] = await self._merge(doc_id, decision)
                continue
            await self._apply_run(run, outcomes)
            outcomes[index] = await self._apply_one(doc_id, kind, doc)
        await self._apply_run(run, outcomes)
        if self.unreadable > before and self._notify is not None:
            self._notify(Notice("sync-unreadable", {"count": self.unreadable}))
        return [outcome or "unavailable" for outcome in outcomes]

    async def _read(self, doc: dict[str, Any]) -> Conversation:
        """``conversation_of(doc)`` with the page given its turn (``pause``) whenever a slice of its
        checks (an import's, ``conversation_steps``) took ``BUDGET_S``: no long task at intake."""
        steps = conversation_steps(doc, self._clock())
        began = time.perf_counter()
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value
            if time.perf_counter() - began >= BUDGET_S:
                await self._pause()
                began = time.perf_counter()

    def _damaged(self) -> str:
        self.unreadable += 1
        return "damaged"

    async def _apply_run(self, run: list[tuple[int, str, Any]], outcomes: list[str | None]) -> None:
        """Conversations in a row into history; each that this device continues, or that was
        merged, is written back out. Empties ``run``."""
        if not run:
            return
        results = await self.history.apply_synced_many([conversation for _, _, conversation in run])
        for (index, task_id, _), outcome in zip(run, results):
            outcomes[index] = outcome
            if outcome in ("local", "merged"):
                await self.push(task_id)
        run.clear()

    async def _delete(self, doc_id: str, decision: Decision) -> str:
        """The delete wins (``decide``): removed here, what this device made that the deleting one
        never had kept apart (``HistoryService.remove_synced``; that one is written out), and every live leaf deleted, the
        deletions saying what the deleting devices had. ``deleted``, or ``redeleted`` for an id
        deleted here before that another device wrote again."""
        again = not self.tombstones.admits(doc_id)
        self.tombstones.delete(doc_id)
        seen = decision.seen
        had = None if seen is None else (lambda messages: [d in seen for d in turn_digests(messages)])
        apart = await self.history.remove_synced(doc_id.split(":", 1)[1], had)
        if apart:  # a conversation of its own now: it goes out like any other
            await self.push(apart)
        said = sorted(seen or ())
        by_rev = [deletion_doc(doc_id, said, leaf["_rev"]) for leaf in decision.live if leaf.get("_rev")]
        if by_rev:
            await self.replica.resolve(by_rev)
        elif decision.live:  # a live copy known only by its id: deleted over its current revision
            await self.replica.remove(doc_id, {"type": DELETION, "seen": said})
        return "redeleted" if again else "deleted"

    async def _merge(self, doc_id: str, decision: Decision) -> str:
        """Several live leaves (``decide``): every leaf's messages kept as one tree (``merge_leaves``,
        the winner first, each leaf's choices dated by its ``shownAt`` or ``updatedAt``), kept in history, then written over the winner with the losers deleted in one bulk
        write, so no ``_conflicts`` stay. Leaves that cannot be read count as unreadable (and are
        deleted with the losers). Returns ``apply_synced``'s outcome, or ``damaged``."""
        read = []
        for leaf in decision.live:
            try:
                read.append(await self._read(leaf))
            except ValueError:
                self._damaged()
        if not read:
            return "damaged"
        merged = merge_leaves([(c.messages, c.turns, c.branching) for c in read], [c.meta.updatedAt for c in read])
        whole = Merged("merged", merged.messages, merged.turns)
        meta = read[0].meta
        for other in read[1:]:
            meta = merged_meta(meta, other.meta, whole)
        outcome = await self.history.apply_synced(meta, merged.messages, merged.turns, merged.branching)
        bundle = await self.history.bundle(doc_id.split(":", 1)[1])
        if bundle is None:
            return outcome
        winner = {**document_of(bundle), "_rev": decision.live[0]["_rev"]}
        losers = [{"_id": doc_id, "_rev": leaf["_rev"], "_deleted": True} for leaf in decision.losers]
        await self.replica.resolve([winner, *losers])
        return outcome

    async def _apply_one(self, doc_id: str, kind: str | None, doc: dict[str, Any]) -> str:
        """A document that is not a conversation: a version, or another kind (``kind``:
        ``kind_of(doc_id)``)."""
        if kind == "version":
            outcome = await self.versions.apply(doc)
            return self._damaged() if outcome == "damaged" else outcome
        return "ignored"  # design documents, other apps' documents
