"""One tab of a browser replicates at a time (DESIGN.md §15, §16), pure and browser-free.

Every tab of an origin shares one local replicated database. The tab that holds the Web Lock named
``lock_name(settings)`` replicates it with the server and takes what comes into history; the lock
is released when that tab closes (or turns sync off), and a tab that waits for it takes over. The
others follow: their history changes still go into the local database, other tabs' history
changes reach them through history's own cross-tab signals, and they pass ``TabMessage``\\ s on the
``BroadcastChannel`` ``CHANNEL`` (JSON text, ``to_json`` / ``read_message``):

- ``status`` (the replicating tab, each time its ``sync-status`` is drawn, and in answer to
  ``ask``): the state and reason the others show as theirs (``shown``);
- ``ask`` (a tab that starts following): the replicating tab's status, please;
- ``now`` (Sync now pressed in a following tab): the replicating tab starts again at once;
- ``wrote`` (a following tab wrote into the local database): the replicating tab's replication is
  told, as PouchDB tells only the handle that wrote.

The browser side is ``app.browser.sync_setup`` over ``static/sync.js``.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from app.sync.settings import REASONS, STATES, SyncSettings, SyncStatus

__all__ = ["CHANNEL", "LOCK_PREFIX", "TabMessage", "lock_name", "read_message"]

CHANNEL = "agentbar-sync"
"""The ``BroadcastChannel`` the tabs of an origin pass ``TabMessage``\\ s on."""
LOCK_PREFIX = "agentbar-sync "
"""What every sync lock's name starts with."""


def lock_name(settings: SyncSettings) -> str:
    """The Web Lock held by the one tab that replicates ``settings``' server and database:
    ``LOCK_PREFIX`` + the server URL's origin + ``/`` + the database (never a user or password: the
    URL holds none, ``app.sync.settings.validate_sync_url``).

    >>> lock_name(SyncSettings(enabled=True, url="http://127.0.0.1:5984/", database="agentbar"))
    'agentbar-sync http://127.0.0.1:5984/agentbar'
    """
    parts = urlsplit(settings.url)
    return f"{LOCK_PREFIX}{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}" \
           f"/{settings.database}"


class TabMessage(BaseModel):
    """One message between the tabs of an origin (module docstring): ``kind``, and for ``status``
    the ``state`` (one of ``STATES``) and ``reason`` (one of ``REASONS``, only with ``offline`` or
    ``error``). Raises ``pydantic.ValidationError`` for anything else."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    kind: Literal["status", "ask", "now", "wrote"]
    state: Literal[STATES] | None = None  # type: ignore[valid-type]
    reason: Literal[REASONS] | None = None  # type: ignore[valid-type]

    @model_validator(mode="after")
    def _whole(self) -> "TabMessage":
        if self.kind == "status" and self.state is None:
            raise ValueError("a status names its state")
        if self.reason is not None and self.state not in ("offline", "error"):
            raise ValueError("only a failure has a reason")
        return self

    @classmethod
    def of_status(cls, status: SyncStatus) -> "TabMessage":
        """The replicating tab's ``status`` as drawn, for the others."""
        return cls(kind="status", state=status.state, reason=status.reason)

    def shown(self) -> SyncStatus | None:
        """The status a following tab shows for this message; ``None`` for a request, or for ``off``
        (the tab that said it stopped replicating: another takes over and says its own)."""
        if self.kind != "status" or self.state in (None, "off"):
            return None
        return SyncStatus(self.state, self.reason)

    def to_json(self) -> str:
        """The message as posted on ``CHANNEL``."""
        return self.model_dump_json(exclude_none=True)


def read_message(text: str) -> TabMessage | None:
    """The ``TabMessage`` in ``text``; ``None`` for anything else on the channel (ignored)."""
    try:
        return TabMessage.model_validate_json(text)
    except (ValidationError, ValueError):
        return None
