"""A conversation's branches as the panel reads and switches them (DESIGN.md §17). Pure Python, over
``HistoryRepository``; the tree is ``app.history.tree``'s, its stored form ``app.history.branches``'.

- ``tree``: a conversation's whole tree as stored (a record stored before branches reads as a chain);
- ``show_path_in``: the person showed another branch (the picker ‹ n / m ›): the shown path is
  written (``messages``; the old one goes to ``branches``, its choice kept in ``shown``), so a reload,
  another tab and another device show the same branch at every fork. One transaction, announced on
  the hub as a change of kind ``branch`` carrying the conversation as written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from app.history.access import HistoryAccess, guarded
from app.history.active import ActiveConversations, Changed
from app.history.branches import StoredForm
from app.history.changes import HistoryChange
from app.history.records import TaskMeta
from app.history.repository import HistoryRepository, Writes, unless_stale
from app.history.tree import ROOT, Tree

__all__ = ["BranchWrites", "path_in"]


def path_in(tree: Tree, path: list[dict]) -> str | None:
    """The id of the last message of ``path`` when ``path`` runs in ``tree`` from a first message,
    each message a child of the one before it (a shown path of ``tree``, or the start of one); None
    otherwise (an empty path, a message without an id or not in the tree, a parent skipped).

    >>> tree = Tree.from_export([{"id": "u"}, {"id": "a", "parentId": "u"}, {"id": "b", "parentId": "u"}])
    >>> path_in(tree, [{"id": "u"}, {"id": "b"}]), path_in(tree, [{"id": "a"}]), path_in(tree, [])
    ('b', None, None)
    """
    parent = ROOT
    for message in path:
        ident = message.get("id") if isinstance(message, dict) else None
        if not isinstance(ident, str) or ident not in tree or tree.parents[ident] != parent:
            return None
        parent = ident
    return parent or None


class BranchWrites:
    """Reading a conversation's tree and switching its shown branch (module docstring). ``lock``: the
    history writes' lock (``HistoryWrites.lock``); ``active``: this tab's active conversations, kept
    in step; ``clock``: epoch ms; ``changed``: told each branch shown (kind ``branch``); ``pause``:
    awaited between the slices of the search record written again (DESIGN.md §13)."""

    def __init__(self, repository: HistoryRepository, access: HistoryAccess, active: ActiveConversations,
                 lock: asyncio.Lock, *, clock: Callable[[], int], changed: Changed,
                 pause: Callable[[], Awaitable[None]]) -> None:
        self._repository, self._access, self._active, self._lock = repository, access, active, lock
        self._clock, self._changed, self._pause = clock, changed, pause

    @guarded()
    async def tree(self, task_id: str) -> Tree | None:
        """The tree of conversation ``task_id`` as stored; None when it has none (or history failed)."""
        form = await self._repository.form(task_id)
        return form.tree() if isinstance(form.messages, list) else None

    @guarded(writes=True)
    async def show_path_in(self, task_id: str, path: list[dict]) -> Tree | None:
        """Show ``path`` (a shown path of the stored tree of ``task_id``, or its start: below its last
        message the path last shown there follows, ``Tree.show``) and store it: the conversation's
        messages, branches and choices and its ``updatedAt`` (its search record follows it), in one
        transaction, announced as a ``branch`` change. Returns the tree as stored after; the stored
        tree as it is when ``path`` is already shown; None when the conversation is not kept, ``path``
        is not a path of its tree (``path_in``: nothing written), or history failed."""
        async def attempt(expect: bool) -> tuple[Tree | None, tuple[TaskMeta, Writes] | None]:
            """The tree shown, and the meta read and writes committed (None: nothing to write)."""
            meta = await self._repository.meta(task_id)
            form = await self._repository.form(task_id)
            if meta is None or not isinstance(form.messages, list):
                return None, None
            tree = form.tree()
            last = path_in(tree, path)
            if last is None:
                return None, None
            shown = tree.show(last)
            if shown.path_ids() == tree.path_ids() and shown.record() == tree.record():
                return tree, None
            # unplaced entries carried over (§5)
            return shown, (meta, await self._shown_writes(meta, form.rewritten(shown, tree), expect=expect))

        async with self._lock:
            shown, wrote = await unless_stale(attempt)
            if wrote is None:
                return shown
            meta, writes = wrote
            if self._active.task_id(meta.stageId) == task_id:
                self._active.forget(meta.stageId)  # read again at its next turn
        self._changed(HistoryChange("branch", task_id, meta.stageId, written=writes.kept(task_id),
                                    form=writes.kept_form(task_id)))
        return shown

    async def _shown_writes(self, meta: TaskMeta, record: StoredForm, *,
                            expect: bool) -> Writes:
        """Store ``record`` (``StoredForm.rewritten``: the tree read with ``meta``, another path shown,
        with the entries it could not place) as conversation ``meta.taskId``, its ``updatedAt`` now, and
        return the writes committed. ``expect``: only while the conversation is still as read
        (``Writes.expect``), else ``RecordStoreError`` kind ``stale`` and nothing is written (lock held
        by the caller)."""
        messages, branches, choices = record
        writes = Writes()
        if expect:
            writes.expect(meta)
        meta = meta.model_copy(update={"updatedAt": max(self._clock(), meta.updatedAt)})
        await writes.keep_in_steps(meta, messages, await self._repository.turns(meta.taskId), pause=self._pause,
                                   branches=branches, shown=choices)
        await self._repository.commit(writes)
        return writes
