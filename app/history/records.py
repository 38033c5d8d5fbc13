"""History records with the seed's field names (DESIGN.md §9, seed session-storage.md §3).

- ``TaskMeta``: a conversation's meta (the seed's task; its ``stageId`` is the
  seed's project). Stored with ``createdAt``/``updatedAt`` as integer epoch
  milliseconds (they index the list); exported as ISO 8601 UTC with milliseconds.
- ``TurnMeta``: the seed's ConversationMeta, one per completed turn.
- ``new_task_id``: ``task_<YYYYMMDD>_<6 lowercase letters or digits>`` (UTC date).
- ``iso``/``parse_iso``: the export's time format, exactly reversible at ms precision.

Every integer is within ±(2^53 − 1) (what IndexedDB's numbers hold exactly: a larger one comes back
as a float and its record could no longer be read), counts and durations are ≥ 0, and a
conversation's ``createdAt`` ≤ ``updatedAt`` (DESIGN.md §14: the exact record shapes).
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Callable

from typing import Annotated, ClassVar

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, model_serializer, model_validator

__all__ = ["Count", "FieldTimes", "MAX_SAFE_INTEGER", "MODELS", "Stats", "TaskMeta", "TurnMeta", "Usage", "TASK_ID", "Time",
           "build_models", "iso", "new_task_id", "parse_iso"]

MAX_SAFE_INTEGER = 2**53 - 1
"""The largest integer a JavaScript number (and so IndexedDB) holds exactly (DESIGN.md §14)."""
Count = Annotated[StrictInt, Field(ge=0, le=MAX_SAFE_INTEGER)]
"""A count, a token number or a duration in ms: an integer in [0, 2^53 − 1]."""
Time = Annotated[StrictInt, Field(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER)]
"""Epoch milliseconds: an integer within ±(2^53 − 1)."""

TASK_ID = re.compile(r"task_\d{8}_[a-z0-9]{6}\Z")
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


class _Record(BaseModel):
    # Each model's validator is built when first used, or by ``build_models`` (the page: after ready,
    # a model per task; importing this module with the four built at once was one task of 51-86 ms
    # on a cold load, DESIGN.md §13).
    model_config = ConfigDict(extra="ignore", strict=True, defer_build=True)


class Stats(_Record):
    """``{credits, totalTokens, inputTokens, outputTokens}`` (seed §3.1); the demo costs no credits."""

    credits: Count = 0
    totalTokens: Count = 0
    inputTokens: Count = 0
    outputTokens: Count = 0


class FieldTimes(_Record):
    """When each field a person sets on a conversation last changed (epoch ms; 0: never), so that sync
    keeps the later change of each field (DESIGN.md §18): ``taskName`` (a rename) and ``pinned``
    (a pin or an unpin)."""

    taskName: Time = 0
    pinned: Time = 0


class TaskMeta(_Record):
    """A conversation's meta as stored: times in epoch ms; ``turnCount``/``durationMs`` feed the stats.

    Raises ``pydantic.ValidationError`` for a count out of [0, 2^53 − 1], a time out of ±(2^53 − 1)
    or ``createdAt`` after ``updatedAt`` (DESIGN.md §14)."""

    taskId: StrictStr = Field(pattern=TASK_ID.pattern.removesuffix(r"\Z") + "$")
    taskName: StrictStr
    stageId: StrictStr
    createdAt: Time
    updatedAt: Time
    stats: Stats = Field(default_factory=Stats)
    turnCount: Count = 0
    durationMs: Count = 0
    pinnedAt: Time | None = None
    """When the conversation was pinned (epoch ms); None: not pinned (DESIGN.md §18). Absent from the
    list's pin index when None (``app.records.SCHEMA`` version 3)."""
    changedAt: FieldTimes = Field(default_factory=FieldTimes)
    """When its name and its pin last changed (``FieldTimes``)."""
    damaged: ClassVar[bool] = False
    """Always False (a record that cannot be read is listed as ``app.history.repository.Damaged``)."""

    @property
    def pinned(self) -> bool:
        """True when the conversation is pinned (its ``pinnedAt`` is set)."""
        return self.pinnedAt is not None

    @model_serializer(mode="wrap")
    def _without_unset_names(self, handler) -> dict:
        # a conversation never renamed nor pinned is stored, exported and synced as before §18
        data = handler(self)
        if data.get("pinnedAt", 0) is None:
            del data["pinnedAt"]
        if data.get("changedAt") == {"taskName": 0, "pinned": 0}:
            del data["changedAt"]
        return data

    @model_validator(mode="after")
    def _created_before_updated(self) -> "TaskMeta":
        if self.createdAt > self.updatedAt:
            raise ValueError("createdAt is after updatedAt")
        return self


class Usage(_Record):
    """Token counts of one turn (seed §3.3)."""

    inputTokens: Count = 0
    outputTokens: Count = 0
    totalTokens: Count = 0


class TurnMeta(_Record):
    """One completed turn (seed §3.3 ConversationMeta): ``timestamp`` ISO 8601, ``duration`` ms from
    send to completion. ``messageId``: the assistant message it belongs to (for ``turn-meta``)."""

    turnId: Count
    timestamp: StrictStr
    usage: Usage | None = Field(default_factory=Usage)
    """``None``: the agent reported no usage for this turn ("not reported", DESIGN.md §12), never zeros."""
    model: StrictStr = ""
    duration: Count = 0
    messageId: StrictStr | None = None
    droppedTurns: StrictInt | None = Field(default=None, ge=1)
    """Earlier turns left out of the request because the server's context was full (DESIGN.md §12);
    absent when none were."""

    def record(self) -> dict:
        """As stored and exported: absent optional keys left out, but ``usage: null`` kept
        (it says "not reported", which a missing key would turn into zero counts on reading)."""
        data = self.model_dump(exclude_none=True)
        return data if self.usage is not None else {**data, "usage": None}


def new_task_id(now_ms: int, random_bytes: Callable[[int], bytes] = os.urandom) -> str:
    """``task_<YYYYMMDD>_<6 of [a-z0-9]>`` for the UTC date of ``now_ms`` (DESIGN.md §9)."""
    day = _dt.datetime.fromtimestamp(now_ms / 1000, tz=_dt.timezone.utc).strftime("%Y%m%d")
    return f"task_{day}_" + "".join(_ALPHABET[b % 36] for b in random_bytes(6))


def iso(ms: int) -> str:
    """Epoch ms → ``2026-12-01T08:30:00.123Z``."""
    moment = _dt.datetime.fromtimestamp(ms // 1000, tz=_dt.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{ms % 1000:03d}Z"


_ISO = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{3})Z")
_ASCII_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}")
_EPOCH = _dt.datetime(1970, 1, 1)
_SECOND = _dt.timedelta(seconds=1)


def parse_iso(text: str) -> int:
    """``iso`` reversed; raises ``ValueError`` for anything else (a field out of its range, such as
    a 30 February, hour 24 or second 60, included). Its fields are read by ``int`` and checked by
    ``datetime`` itself: what ``strptime`` of ``%Y-%m-%dT%H:%M:%S`` took and refused, at a tenth of
    its cost (a replicated conversation's turns each have one, DESIGN.md §16)."""
    match = _ISO.fullmatch(text)
    if match is None or not _ASCII_TIME.match(text):  # strptime reads the date and time in ASCII digits only
        raise ValueError(f"not an ISO 8601 UTC time with milliseconds: {text!r}")
    year, month, day, hour, minute, second, ms = map(int, match.groups())
    moment = _dt.datetime(year, month, day, hour, minute, second)
    return (moment - _EPOCH) // _SECOND * 1000 + ms


MODELS = (Stats, Usage, FieldTimes, TaskMeta, TurnMeta)
"""The record models, in the order ``build_models`` builds them."""


def build_models():
    """Build each record model's validator (``defer_build``), yielding after each: the caller may
    pause between them (DESIGN.md §13). Building is what the first validation would do anyway."""
    for model in MODELS:
        model.model_rebuild(force=True)
        yield model
