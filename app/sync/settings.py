"""Sync settings, where the password is kept, and the panel's sync status (DESIGN.md §16, §12).

Storage rules (the model key's, §12):

- the settings (never the password) as JSON under ``agentbar-sync-settings`` in ``localStorage``;
- the password under ``agentbar-sync-password``: in ``sessionStorage`` unless ``remember`` is
  ticked, then in ``localStorage``; saving removes it from the other place, an empty one from both;
- the password is nowhere else: ``SyncSettings`` has no password field and ``SyncCredentials``'s
  repr masks it, so it cannot reach ``maic-agent-threads``, history, exports, evidence packs or logs.

Storages are ``app.storage.StringStorage``-shaped (``get_item``, ``set_item``, ``remove_item``);
one that throws counts as empty, a failed write is reported as ``False``.

    >>> from app.storage import MemoryStorage
    >>> local, session = MemoryStorage(), MemoryStorage()
    >>> s = SyncSettings(enabled=True, url="http://127.0.0.1:5984/", database="agentbar", user="ann")
    >>> save_sync_settings(local, session, s, "pw")
    True
    >>> load_sync_settings(local, session)[0].url, session.get_item(PASSWORD_STORAGE_KEY)
    ('http://127.0.0.1:5984', 'pw')
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from app.agents.settings import validate_base_url

__all__ = ["PASSWORD_STORAGE_KEY", "REASONS", "SETTINGS_STORAGE_KEY", "STATES", "SyncCredentials", "SyncSettings",
           "SyncStatus", "failure_reason", "is_couchdb", "load_sync_settings", "save_sync_settings", "validate_database",
           "validate_sync_url"]

SETTINGS_STORAGE_KEY = "agentbar-sync-settings"
PASSWORD_STORAGE_KEY = "agentbar-sync-password"

STATES = ("off", "syncing", "synced", "offline", "error")
"""``[data-testid=sync-status]``'s ``data-state`` values (DESIGN.md §16)."""
REASONS = ("unauthorized", "forbidden", "notCouchdb", "unreachable", "stalled", "blocked", "storageUnsupported")
"""Why a sync is in ``error`` (``offline`` for ``unreachable`` and ``stalled``): the locale keys
``sync.reason.<reason>``. ``stalled``: the server stopped answering mid-sync (``app.sync.watchdog``);
``blocked``: the page's Content-Security-Policy (``connect-src``) refuses the server, which only
whoever deploys the page can change (the build's ``--connect-src``); its text names the server's
origin (``{origin}``); ``storageUnsupported``: this browser window's IndexedDB cannot keep what the
local database needs (a Blob: WebKit's private windows), so sync is off in it (the sync worker checks
before replicating); waiting or restarting does not change that, and the server is not at fault."""

_DATABASE = re.compile(r"[a-z][a-z0-9_$()+/-]*\Z")  # CouchDB's rule for a database name


def validate_sync_url(value: str) -> str:
    """The server URL stripped of spaces and trailing slashes (``""`` stays ``""``); raises
    ``ValueError`` unless it is an absolute ``http://`` or ``https://`` URL (§16, same rule as §12's).

    >>> validate_sync_url(" https://couch.example/ ")
    'https://couch.example'
    """
    return validate_base_url(value)


def validate_database(value: str) -> str:
    """The database name stripped; raises ``ValueError`` unless CouchDB accepts it (a lowercase
    letter, then lowercase letters, digits or ``_$()+-/``), §16.

    >>> validate_database(" agentbar ")
    'agentbar'
    """
    value = value.strip()
    if value and not _DATABASE.match(value):
        raise ValueError(f"not a CouchDB database name: {value!r}")
    return value


class SyncSettings(BaseModel):
    """The sync settings as stored (camelCase JSON: ``enabled``, ``url``, ``database``, ``user``,
    ``remember``); raises ``pydantic.ValidationError`` for a bad URL or database name, or when
    ``enabled`` without a URL or database (§16)."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    enabled: bool = False
    url: str = ""
    database: str = "agentbar"
    user: str = ""
    remember: bool = False

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        return validate_sync_url(value)

    @field_validator("database")
    @classmethod
    def _database(cls, value: str) -> str:
        return validate_database(value)

    @field_validator("user")
    @classmethod
    def _user(cls, value: str) -> str:
        return value.strip()

    @model_validator(mode="after")
    def _complete(self) -> "SyncSettings":
        if self.enabled and not (self.url and self.database):
            raise ValueError("sync needs a server URL and a database")
        return self

    def to_json(self) -> str:
        """The stored JSON (compact); it has no password."""
        return json.dumps(self.model_dump(), separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class SyncCredentials:
    """What the browser adapter gives PouchDB: ``remote`` (``url/database``), ``user``, ``password``.
    Its repr masks the password (§12: not in logs).

    >>> SyncCredentials("http://h/db", "ann", "secret")
    SyncCredentials(remote='http://h/db', user='ann', password='***')
    """

    remote: str
    user: str
    password: str = field(repr=False)

    def __repr__(self) -> str:
        return f"SyncCredentials(remote={self.remote!r}, user={self.user!r}, password='***')"

    @classmethod
    def of(cls, settings: SyncSettings, password: str) -> "SyncCredentials":
        """The credentials for ``settings`` (URL and database joined by one ``/``)."""
        return cls(f"{settings.url}/{settings.database}", settings.user, password)


def _get(storage: Any, key: str) -> str | None:
    try:
        value = storage.get_item(key) if storage is not None else None
    except Exception:  # noqa: BLE001 - blocked storage reads as empty
        return None
    return value if isinstance(value, str) else None


def _set(storage: Any, key: str, value: str | None) -> bool:
    if storage is None:
        return value is None
    try:
        storage.remove_item(key) if value is None else storage.set_item(key, value)
    except Exception:  # noqa: BLE001 - quota or blocked storage: the caller says so
        return False
    return True


def load_sync_settings(local: Any, session: Any) -> tuple[SyncSettings, str]:
    """``(settings, password)`` as stored; damaged or missing settings give sync off."""
    raw = _get(local, SETTINGS_STORAGE_KEY)
    settings = SyncSettings()
    if raw:
        try:
            settings = SyncSettings.model_validate(json.loads(raw))
        except (ValueError, ValidationError):
            settings = SyncSettings()
    password = _get(local, PASSWORD_STORAGE_KEY) if settings.remember else _get(session, PASSWORD_STORAGE_KEY)
    return settings, password or ""


def save_sync_settings(local: Any, session: Any, settings: SyncSettings, password: str) -> bool:
    """Store ``settings`` and ``password`` by the rules above; ``False`` when a write failed."""
    ok = _set(local, SETTINGS_STORAGE_KEY, settings.to_json())
    ok = _set(local, PASSWORD_STORAGE_KEY, password if (password and settings.remember) else None) and ok
    ok = _set(session, PASSWORD_STORAGE_KEY, password if (password and not settings.remember) else None) and ok
    return ok


def failure_reason(status: int | None, body: Any = None) -> str:
    """Why a request to the sync server failed, one of ``REASONS`` (§16): ``status`` the HTTP status
    (``None`` or 0: no answer), ``body`` the parsed JSON answer of ``GET /`` or the failing request.

    >>> failure_reason(401), failure_reason(403), failure_reason(None), failure_reason(200, "<html>")
    ('unauthorized', 'forbidden', 'unreachable', 'notCouchdb')
    """
    if not status:
        return "unreachable"
    if status == 401:
        return "unauthorized"
    if status == 403:
        return "forbidden"
    return "notCouchdb"


def is_couchdb(body: Any) -> bool:
    """True when ``body`` (the parsed JSON of the server's ``GET /``) is a CouchDB welcome
    (``{"couchdb": "Welcome", ...}``; pouchdb-server answers ``{"express-pouchdb": "Welcome!", ...}``), §16.

    >>> is_couchdb({"couchdb": "Welcome", "version": "3.3.3"}), is_couchdb({"express-pouchdb": "Welcome!"})
    (True, True)
    >>> is_couchdb({"ok": True})
    False
    """
    return isinstance(body, dict) and ("couchdb" in body or "express-pouchdb" in body)


@dataclass(frozen=True)
class SyncStatus:
    """What ``[data-testid=sync-status]`` shows: ``state`` one of ``STATES``, ``reason`` one of
    ``REASONS`` for ``error``/``offline`` (else ``None``); ``key`` the locale key of its text."""

    state: Literal["off", "syncing", "synced", "offline", "error"]
    reason: str | None = None

    @property
    def key(self) -> str:
        """``sync.reason.<reason>`` when there is a reason, else ``sync.state.<state>``.

        >>> SyncStatus("error", "forbidden").key, SyncStatus("synced").key
        ('sync.reason.forbidden', 'sync.state.synced')
        """
        return f"sync.reason.{self.reason}" if self.reason else f"sync.state.{self.state}"

    @classmethod
    def failed(cls, reason: str) -> "SyncStatus":
        """``offline`` for a server that cannot be reached or stopped answering (changes queue,
        §16), ``error`` for any other reason (a CSP that blocks the server included: it does not
        come back by waiting).

        >>> [SyncStatus.failed(r).state for r in ("unreachable", "stalled", "blocked")]
        ['offline', 'offline', 'error']
        """
        return cls("offline" if reason in ("unreachable", "stalled") else "error", reason)

    @classmethod
    def of_event(cls, event: str, http_status: int | None = None, body: Any = None, *,
                 welcomed: bool = False) -> "SyncStatus":
        """The panel's status for a replication ``event``: ``active`` (documents moving) →
        ``syncing``; ``paused`` with no error (caught up) → ``synced``; ``denied``/``error`` with the
        failing request's ``http_status`` (0/None: no answer) → ``failed`` by ``failure_reason``, but
        a 401 from the database once the server's welcome accepted the same credentials
        (``welcomed``: a wrong password is refused there already) is ``forbidden``: that user (or no
        user) may not read the database, as pouchdb-server answers where CouchDB says 403, and a 404
        or a 5xx once welcomed is ``unreachable`` (``offline``: the server that welcomed us is
        restarting, or lost the database, which the adapter's next start makes again; it was read as
        "not CouchDB");
        ``welcome`` (the answer of ``GET /`` before replicating, ``body`` parsed or None) →
        ``syncing`` when it is a CouchDB welcome, else ``notCouchdb`` (or ``unreachable`` with no
        answer, or the HTTP reason); ``blocked`` (the page's Content-Security-Policy refused the
        server) → ``error``/``blocked``; ``storage`` (the worker found that this window's IndexedDB
        keeps no Blob, which the local database needs: a private window) → ``error``/``storageUnsupported``
        (never ``offline``: the server is not at fault, and the watchdog watches only ``syncing``, so it
        is not restarted); ``off``.

        >>> SyncStatus.of_event("error", 401).key, SyncStatus.of_event("paused").state
        ('sync.reason.unauthorized', 'synced')
        >>> SyncStatus.of_event("welcome", 200, {"ok": True}).reason
        'notCouchdb'
        >>> [SyncStatus.of_event("error", s, welcomed=True).state for s in (404, 503)], SyncStatus.of_event("error", 404).reason
        (['offline', 'offline'], 'notCouchdb')
        """
        if event == "off":
            return SyncStatus("off")
        if event == "active":
            return SyncStatus("syncing")
        if event == "paused":
            return SyncStatus("synced")
        if event == "blocked":  # the worker's Content-Security-Policy refused the server (connect-src)
            return SyncStatus.failed("blocked")
        if event == "storage":  # this window's IndexedDB cannot keep the local database (no Blob)
            return SyncStatus.failed("storageUnsupported")
        if event == "welcome":
            if http_status == 200 and is_couchdb(body):
                return SyncStatus("syncing")
            if http_status in (401, 403) or not http_status:
                return SyncStatus.failed(failure_reason(http_status))
            return SyncStatus.failed("notCouchdb")
        if welcomed and http_status == 401:
            return SyncStatus.failed("forbidden")
        if welcomed and http_status is not None and (http_status == 404 or http_status >= 500):
            return SyncStatus.failed("unreachable")  # the server that welcomed us is restarting, or lost the database
        return SyncStatus.failed(failure_reason(http_status, body))

    def shown(self, applying: bool) -> "SyncStatus":
        """What the panel shows for this replication status while history is (``applying``) or is
        not still taking in changes the replication brought: ``synced`` says both devices hold the same
        conversations, so a replication that caught up reads ``syncing`` until history holds every
        change it brought (DESIGN.md §16; in a first sync of 500 conversations the replication caught up
        a second before history held them all). Any other status is shown as it is.

        >>> [SyncStatus("synced").shown(applying=a).state for a in (True, False)]
        ['syncing', 'synced']
        >>> SyncStatus("offline", "unreachable").shown(applying=True).reason
        'unreachable'
        """
        return SyncStatus("syncing") if applying and self.state == "synced" else self
