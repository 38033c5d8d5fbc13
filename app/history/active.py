"""Each course's active conversation as this tab last read or wrote it (DESIGN.md §9), shared by
history's writers (``app.history.writes``, ``app.history.turn_writes``, ``app.history.name_writes``,
``app.history.synced_writes``) so that a change one of them makes is what the others start from. Pure Python.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from app.history.changes import HistoryChange
from app.history.records import TaskMeta, TurnMeta

__all__ = ["ActiveConversations", "Changed", "Written"]

Changed = Callable[[HistoryChange], None]
"""``changed(change)``: after this tab changed history (``ChangeHub.publish``)."""


@dataclass(frozen=True)
class Written:
    """A course's active conversation as this tab's last turn wrote it: its ``meta`` record as
    stored (``TaskMeta.model_dump``), ``messages``, ``turns``, ``search`` record and plain ``text``,
    and the rest of its tree (``branches``, ``shown``: DESIGN.md §17, ``app.history.branches``).
    While the stored meta record is still ``meta`` (no other writer: every write of a conversation
    writes its meta), the next turn reads nothing more (``TurnWrites._record_on_own_head``)."""

    task_id: str
    meta: dict
    messages: list[dict]
    turns: list[TurnMeta]
    search: dict
    text: str
    branches: list[dict] = field(default_factory=list)
    shown: dict[str, str] = field(default_factory=dict)


class ActiveConversations:
    """Each course's active conversation (meta and turns) as this tab last read or wrote it, and
    what its last turn written here wrote (``Written``)."""

    def __init__(self) -> None:
        self._metas: dict[str, TaskMeta | None] = {}
        self._turns: dict[str, list[TurnMeta]] = {}
        self._written: dict[str, Written] = {}

    def known(self, stage_id: str) -> tuple[TaskMeta | None, list[TurnMeta]] | None:
        """``(meta, turns)`` when known (``meta`` None: the course has no active conversation)."""
        if stage_id not in self._metas:
            return None
        return self._metas[stage_id], self._turns.get(stage_id, [])

    def task_id(self, stage_id: str) -> str | None:
        """The task id of the active conversation this tab knows, if any."""
        meta = self._metas.get(stage_id)
        return meta.taskId if meta is not None else None

    def set(self, stage_id: str, meta: TaskMeta | None, turns: list[TurnMeta]) -> None:
        self._metas[stage_id], self._turns[stage_id] = meta, turns
        self._written.pop(stage_id, None)

    def wrote(self, stage_id: str, written: Written) -> None:
        """This tab's turn wrote ``written`` as ``stage_id``'s active conversation (after ``set``)."""
        self._written[stage_id] = written

    def written(self, stage_id: str) -> Written | None:
        """What this tab's last turn on ``stage_id`` wrote, while nothing else changed it here."""
        return self._written.get(stage_id)

    def ended(self, stage_id: str) -> None:
        """The course has no active conversation now."""
        self.set(stage_id, None, [])

    def forget(self, stage_id: str) -> None:
        """Read the course's active conversation again next time (another tab changed it)."""
        self._metas.pop(stage_id, None)
        self._turns.pop(stage_id, None)
        self._written.pop(stage_id, None)
