"""The runtime's collaborators as typed ports (DESIGN.md §15): what ``app.runtime.AgentRuntime``
calls on the thread store, on history and on the scene checkpoints, and nothing more.

Pure and browser-free; structural (``typing.Protocol``), so ``app.store.ThreadStore``,
``app.history.recorder.HistoryRecorder`` and ``app.checkpoints.SceneCheckpoints`` fit as they are,
and a test passes any object with these methods. The runtime never asks at run time which of them
a collaborator has.

Example::

    >>> from app.storage import MemoryStorage
    >>> from app.store import ThreadStore
    >>> store: ThreadStorePort = ThreadStore(MemoryStorage())
    >>> store.load("intro-ml") is None
    True
"""

from __future__ import annotations

from collections.abc import Awaitable, Collection, Hashable
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["CheckpointsPort", "HistoryPort", "NoticeLike", "SaveOutcome", "ThreadStorePort", "TurnEnded"]

Slim = list[dict[str, Any]]
"""A thread as the slim projection stores it (``app.projection.serialize_thread``, DESIGN.md §3)."""


@dataclass(frozen=True)
class TurnEnded:
    """One turn's end, on course ``stage_id`` (DESIGN.md §15).

    ``messages``: the course's live thread after the turn, as the slim projection (serialized once,
    ``app.projection.serialize_thread``; do not mutate); ``base``: the stored thread it was built
    on; ``usage``: ``{"inputTokens", "outputTokens", "totalTokens"}`` or ``None`` when not reported;
    ``model``: the model's name (``""`` unknown); ``duration_ms``: from send to the end, ms;
    ``conversation_id``: the conversation the turn continued (``None`` while not known);
    ``message_id``: the reply's id; ``at``: epoch ms of the end (the save's ``updatedAt``);
    ``dropped_turns``: earlier turns left out for the server's context (§12).

    Made by the runtime (``app.runtime.turns``); each floor that records it (``HistoryPort``,
    ``HistoryRecorder``, ``HistoryService``, ``HistoryWrites``) takes it whole.
    """

    stage_id: str
    messages: list[dict[str, Any]] = field(repr=False)
    base: list[dict[str, Any]] = field(repr=False)
    usage: dict[str, int] | None
    model: str
    duration_ms: int
    conversation_id: str | None
    message_id: str
    at: int
    dropped_turns: int = 0


class NoticeLike(Hashable, Protocol):
    """A notice to show once (``app.store.Notice``): ``code`` and its ``params`` (DESIGN.md §5)."""

    @property
    def code(self) -> str: ...

    @property
    def params(self) -> dict[str, Any]: ...


class SaveOutcome(Protocol):
    """What a thread save did (``app.store.SaveResult``): ``written`` to the browser's storage;
    ``merged``: another tab's turns on the course were kept and this tab's appended (DESIGN.md §5)."""

    @property
    def written(self) -> bool: ...

    @property
    def merged(self) -> bool: ...


class ThreadStorePort(Protocol):
    """The thread store (``maic-agent-threads``, DESIGN.md §4, §5), as the runtime uses it.

    Stage ids are course ids; times are epoch milliseconds; threads are slim projections (``Slim``).
    None of these raises for a storage failure: failures become notices (``take_notices``).
    """

    def hydrate(self, now_ms: int) -> None:
        """Read (migrate, back up) the stored value once at start-up."""

    def load(self, stage_id: str) -> Slim | None:
        """This tab's thread of ``stage_id`` (do not mutate), or ``None``."""

    def save(self, stage_id: str, messages: Slim, updated_at: int, *, base: Slim | None = None,
             firsts: Collection[str] = (), tree_kept: bool = False) -> SaveOutcome:
        """Store ``messages`` as ``stage_id``'s thread; turns another tab saved since ``base`` are kept
        (``firsts``: the first messages of the conversation's tree; ``tree_kept``: history keeps it, so
        another tab's turn on the same message is a sibling there; ``app.store.tabs.rebase``)."""

    def clear(self, stage_id: str) -> None:
        """Remove ``stage_id``'s thread (New conversation)."""

    def reload(self) -> set[str]:
        """Re-read after another tab wrote; the stage ids whose thread changed."""

    def updated_at(self, stage_id: str) -> int | None:
        """``updatedAt`` of ``stage_id``'s thread, or ``None``."""

    def replaced_elsewhere(self, stage_id: str, base: Slim, firsts: Collection[str] = ()) -> bool:
        """True when another tab replaced ``stage_id``'s thread with one that does not go on from ``base``."""

    def take_notices(self) -> list[Any]:
        """The notices raised since the last call (``NoticeLike``), oldest first."""

    def memory_only(self) -> frozenset[str]:
        """Stage ids whose latest thread lives only in this tab (a ``storage-full`` notice holds)."""

    def notice_holds(self, notice: Any) -> bool:
        """False once ``notice`` (``NoticeLike``) no longer describes the store (read-only ended, …)."""

    def download_damaged(self, now_ms: int) -> str | None:
        """Download the damaged stored value as its backup; the file name, or ``None``."""


class HistoryPort(Protocol):
    """History (DESIGN.md §9) as the runtime uses it (``app.history.recorder.HistoryRecorder``).

    Writes are queued and answer with a future; a failure never reaches the runtime.
    """

    @property
    def keeps_conversations(self) -> bool:
        """True while history can record a turn in a conversation of its own (§9)."""

    def turn_completed(self, event: TurnEnded, updated_at: int | None, thread: Slim | None = None) -> Awaitable[Any]:
        """Record the turn ``event`` saved to its course's thread, whose ``updatedAt`` is ``updated_at``:
        ``thread`` the thread as stored (another tab's turns merged in), ``None``: ``event.messages``."""

    def turn_completed_in(self, task_id: str, event: TurnEnded) -> Awaitable[Any]:
        """Record the turn ``event`` in conversation ``task_id`` (another tab moved the course on);
        ``None`` result: history could not."""

    def archived(self, stage_id: str, messages: Slim, updated_at: int | None) -> Awaitable[Any]:
        """New conversation: keep the thread in history and end it as the active one."""

    def head_task_id(self, stage_id: str, *, allocate: bool = True) -> Awaitable[str | None]:
        """The id of ``stage_id``'s active conversation (allocated when ``allocate`` and none)."""

    def branches(self, stage_id: str) -> Awaitable[Any]:
        """The tree of ``stage_id``'s active conversation (``app.history.tree.Tree``, DESIGN.md §17),
        after the writes queued before; ``None`` when the course has none or history is off."""

    def adopted(self, stage_id: str, messages: Slim, updated_at: int) -> Awaitable[Any]:
        """``messages`` (``updated_at`` ms) is ``stage_id``'s thread as stored just before an edit or a
        regenerate replaces its path: history adopts it, or brings the course's active conversation
        in line with it (start-up's reconciliation for that course), queued before the branch's turn,
        so a message only the stored thread held (the TS original's, not adopted yet) stays as a
        branch (DESIGN.md §17)."""

    def show_path(self, stage_id: str, path: Slim) -> Awaitable[Any]:
        """The person showed another branch: ``path`` (a shown path of the stored tree) becomes the
        shown path of ``stage_id``'s active conversation, stored and announced (a ``branch`` change);
        the future's result is the tree as stored, or ``None`` (no such path, or history off)."""


class CheckpointReads(Protocol):
    """The checkpoints' read model (``app.checkpoints.read_model``), as a restore reads it (§10)."""

    def document(self, checkpoint_id: str) -> Awaitable[tuple[Any, Any]]:
        """``(timeline item, scene document)`` of a checkpoint; raises ``CheckpointNotFound``."""


class CheckpointsPort(Protocol):
    """Scene checkpoints (``app.checkpoints.SceneCheckpoints``, DESIGN.md §10), as the runtime uses them."""

    @property
    def read_model(self) -> CheckpointReads:
        """The read model (summary, list, document of a checkpoint)."""

    def document(self, stage_id: str, scene_id: str) -> Any:
        """The scene's current document (``SceneDocument``), or ``None``."""

    def original(self, stage_id: str, scene_id: str) -> Any:
        """The course's own document of the scene (version 0), or ``None``."""

    def submit(self, event: Any) -> Awaitable[Any]:
        """Write one ``ArtifactSnapshot`` as a version; the task answers with its timeline item."""
