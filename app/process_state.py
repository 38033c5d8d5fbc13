"""What an interpreter restored from the memory snapshot must be told about this browser (DESIGN.md §13).

``tools/snapshot.py`` makes the snapshot once, under Node; every page restored from it starts with
the state that Node left in memory. Most of it is the same in any browser. What is not, and what a
fresh boot would have set from the browser (measured in Chromium, ``loadPyodide`` without a
snapshot, four time zones and locales; the unit tests hold those figures):

- ``time.timezone``, ``time.altzone``, ``time.daylight``, ``time.tzname``: set once at the ``time``
  module's start from Emscripten's ``_tzset_js`` (the offsets of 1 January and 1 July this year);
  restored, they are Node's. ``time.localtime()`` and ``datetime.astimezone()`` ask the browser on
  every call and need nothing.
- ``LANG`` (and ``_``) in ``os.environ``: Emscripten's defaults from ``navigator.languages[0]``.
- the ``random`` module's seed: the same sequence in every restored page; reseeded from
  ``os.urandom`` (the app's ids come from ``os.urandom`` already).

Left as restored: string hashes (``PYTHONHASHSEED``) are the same in every restored page; they only
order sets and dicts' collisions, which nothing here depends on.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

__all__ = ["TimeZone", "time_zone", "lang_variable", "EXECUTABLE_NAME"]

EXECUTABLE_NAME = "./this.program"
"""Emscripten's value of ``_`` in a browser (``os.environ["_"]`` of a fresh boot)."""


class TimeZone(NamedTuple):
    """The ``time`` module's zone attributes: seconds *west* of UTC, as CPython keeps them."""

    timezone: int
    altzone: int
    daylight: int
    tzname: tuple[str, str]


def _zone_name(offset_minutes: int) -> str:
    sign = "-" if offset_minutes >= 0 else "+"
    hours, minutes = divmod(abs(offset_minutes), 60)
    return f"UTC{sign}{hours:02d}{minutes:02d}"


def time_zone(january_offset: int, july_offset: int) -> TimeZone:
    """The zone attributes a fresh boot computes, from JavaScript's ``Date.getTimezoneOffset()`` (minutes
    *west* of UTC, e.g. 300 for New York in January) of 1 January and 1 July of this year.

    Emscripten's rule (``_tzset_js``): the standard offset is the larger of the two, daylight saving
    is on when they differ, names read ``UTC±hhmm`` (``UTC-0000`` for UTC), standard first.
    """
    standard, summer = max(january_offset, july_offset), min(january_offset, july_offset)
    january_name, july_name = _zone_name(january_offset), _zone_name(july_offset)
    names = (january_name, july_name) if july_offset < january_offset else (july_name, january_name)
    return TimeZone(timezone=standard * 60, altzone=summer * 60, daylight=int(january_offset != july_offset),
                    tzname=names)


def lang_variable(languages: Sequence[str]) -> str:
    """``LANG`` as Emscripten sets it from ``navigator.languages``: the first tag with its first ``-`` as
    ``_``, then ``.UTF-8`` (``["de-DE", "en"]`` → ``"de_DE.UTF-8"``); ``"C.UTF-8"`` when there is none."""
    first = languages[0] if languages else "C"
    return first.replace("-", "_", 1) + ".UTF-8"
