"""Model settings and where they are kept (DESIGN.md §12).

``ModelSettings``: which agent answers (``demo`` — the default, offline — or
``openai``), the server's base URL, the model, how many recent turns are sent,
and whether the API key is remembered on this device. Storage rules:

- the settings (never the key) as JSON under ``agentbar-model-settings`` in
  ``localStorage``;
- the API key under ``agentbar-model-key``: in ``sessionStorage`` (gone when
  the tab closes) unless ``remember`` is ticked, then in ``localStorage``;
  saving removes it from the other place, an empty key from both;
- the key is nowhere else: not in ``maic-agent-threads``, history, exports,
  evidence packs or logs (``ModelSettings`` has no key field, and
  ``AgentConfig``'s repr masks it).

Both storages are ``app.storage.StringStorage``-shaped (``get_item``,
``set_item``, ``remove_item``); a storage that throws counts as empty and a
failed write is reported to the caller as ``False``.

Example::

    >>> from app.storage import MemoryStorage
    >>> local, session = MemoryStorage(), MemoryStorage()
    >>> save_settings(local, session, ModelSettings(agent="openai", base_url="http://127.0.0.1:11434/v1/"), "k1")
    True
    >>> load_settings(local, session)[0].base_url, session.get_item(KEY_STORAGE_KEY), local.get_item(KEY_STORAGE_KEY)
    ('http://127.0.0.1:11434/v1', 'k1', None)
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from app.agents.chat_completions import DEFAULT_MAX_TURNS

__all__ = ["EXAMPLE_URLS", "KEY_STORAGE_KEY", "MAX_TURNS_LIMIT", "SETTINGS_STORAGE_KEY", "ModelSettings", "load_settings",
           "parse_max_turns", "save_settings", "validate_base_url"]

EXAMPLE_URLS = {"ollamaUrl": "http://127.0.0.1:11434/v1", "lmStudioUrl": "http://127.0.0.1:1234/v1"}
"""Base URLs the settings dialog gives as examples (the values of ``model.settings.baseUrlHint``;
the first is the field's placeholder), DESIGN.md §12."""

MAX_TURNS_LIMIT = 200  # the largest "Max turns" the settings accept

SETTINGS_STORAGE_KEY = "agentbar-model-settings"
KEY_STORAGE_KEY = "agentbar-model-key"


class CredentialsInUrl(ValueError):
    """A URL that carries a user name or password (``http://user:secret@host``): they belong in
    their own fields, kept as DESIGN.md §12 and §16 say, never in settings stored as plain text
    (and a browser's ``fetch`` refuses such a URL)."""


def validate_base_url(value: str) -> str:
    """``value`` stripped of spaces and trailing slashes; ``""`` stays ``""``.

    Raises ``ValueError`` unless it is an absolute ``http://`` or ``https://`` URL, and
    ``CredentialsInUrl`` (a ``ValueError``) when it carries a user name or password.

    >>> validate_base_url(" http://127.0.0.1:1234/v1/ ")
    'http://127.0.0.1:1234/v1'
    >>> validate_base_url("http://ann:secret@127.0.0.1:5984")
    Traceback (most recent call last):
    app.agents.settings.CredentialsInUrl: a URL must not carry a user name or password
    """
    value = value.strip().rstrip("/")
    if not value:
        return ""
    scheme, sep, rest = value.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not rest or rest.startswith("/"):
        raise ValueError("base URL must start with http:// or https://")
    if "@" in rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]:
        raise CredentialsInUrl("a URL must not carry a user name or password")
    return value


def parse_max_turns(text: str) -> int:
    """The "Max turns" field's whole number of earlier turns sent to the model (DESIGN.md §12):
    empty means the default (``DEFAULT_MAX_TURNS``). Raises ``ValueError`` for anything else that
    is not a whole number from 0 to ``MAX_TURNS_LIMIT`` written in digits (``1e2``, ``2.5``, ``-1``,
    ``300``): the dialog says so instead of storing another number than the one typed.

    >>> parse_max_turns(" 12 "), parse_max_turns("")
    (12, 20)
    """
    text = text.strip()
    if not text:
        return DEFAULT_MAX_TURNS
    if not text.isascii() or not text.isdigit() or int(text) > MAX_TURNS_LIMIT:
        raise ValueError(f"max turns must be a whole number from 0 to {MAX_TURNS_LIMIT}, got {text!r}")
    return int(text)


class ModelSettings(BaseModel):
    """The model settings (camelCase JSON: ``agent``, ``baseUrl``, ``model``, ``maxTurns``, ``remember``)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    agent: Literal["demo", "openai"] = "demo"
    base_url: str = ""
    model: str = ""
    max_turns: int = Field(default=DEFAULT_MAX_TURNS, ge=0, le=MAX_TURNS_LIMIT)
    remember: bool = False

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, value: str) -> str:
        return validate_base_url(value)

    @field_validator("model")
    @classmethod
    def _model(cls, value: str) -> str:
        return value.strip()

    def to_json(self) -> str:
        """The stored JSON (compact, camelCase)."""
        return json.dumps(self.model_dump(by_alias=True), separators=(",", ":"), ensure_ascii=False)


def _get(storage: Any, key: str) -> str | None:
    if storage is None:
        return None
    try:
        value = storage.get_item(key)
    except Exception:  # noqa: BLE001 - blocked storage reads as empty
        return None
    return value if isinstance(value, str) else None


def _set(storage: Any, key: str, value: str | None) -> bool:
    if storage is None:
        return value is None
    try:
        if value is None:
            storage.remove_item(key)
        else:
            storage.set_item(key, value)
    except Exception:  # noqa: BLE001 - quota or blocked storage: the caller says so
        return False
    return True


def load_settings(local: Any, session: Any) -> tuple[ModelSettings, str]:
    """``(settings, api_key)`` as stored; damaged or missing settings give the defaults (demo agent)."""
    raw = _get(local, SETTINGS_STORAGE_KEY)
    settings = ModelSettings()
    if raw:
        try:
            settings = ModelSettings.model_validate(json.loads(raw))
        except (ValueError, ValidationError):
            settings = ModelSettings()
    key = _get(local, KEY_STORAGE_KEY) if settings.remember else _get(session, KEY_STORAGE_KEY)
    return settings, key or ""


def save_settings(local: Any, session: Any, settings: ModelSettings, api_key: str) -> bool:
    """Store ``settings`` and ``api_key`` by the rules above; ``False`` when a write failed."""
    api_key = api_key.strip()
    ok = _set(local, SETTINGS_STORAGE_KEY, settings.to_json())
    keep_local = api_key if (api_key and settings.remember) else None
    keep_session = api_key if (api_key and not settings.remember) else None
    ok = _set(local, KEY_STORAGE_KEY, keep_local) and ok
    ok = _set(session, KEY_STORAGE_KEY, keep_session) and ok
    return ok
