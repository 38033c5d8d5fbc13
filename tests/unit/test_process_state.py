"""The state a snapshot-restored interpreter is given at main() matches a fresh boot's (DESIGN.md §13).

Expected values are what a fresh ``loadPyodide`` (no snapshot) reported in Chromium for each
context's ``timezone_id`` and ``locale`` (2026-12, ``time.timezone, time.altzone, time.daylight,
time.tzname, os.environ["LANG"]``); the offsets are ``Date.getTimezoneOffset()`` of 1 January and
1 July 2026 in that zone.
"""

import pytest

from app.process_state import TimeZone, lang_variable, time_zone


@pytest.mark.parametrize(("january", "july", "expected"), [
    (300, 240, TimeZone(18000, 14400, 1, ("UTC-0500", "UTC-0400"))),        # America/New_York
    (-660, -600, TimeZone(-36000, -39600, 1, ("UTC+1000", "UTC+1100"))),    # Australia/Sydney
    (-330, -330, TimeZone(-19800, -19800, 0, ("UTC+0530", "UTC+0530"))),    # Asia/Kolkata
    (0, 0, TimeZone(0, 0, 0, ("UTC-0000", "UTC-0000"))),                    # UTC
    (-540, -540, TimeZone(-32400, -32400, 0, ("UTC+0900", "UTC+0900"))),    # Asia/Tokyo
])
def test_time_zone_is_what_a_fresh_boot_computes(january, july, expected):
    assert time_zone(january, july) == expected


@pytest.mark.parametrize(("languages", "expected"), [
    (["en-US"], "en_US.UTF-8"),
    (["de-DE", "en"], "de_DE.UTF-8"),
    (["ar-SA"], "ar_SA.UTF-8"),
    (["zh-Hant-TW"], "zh_Hant-TW.UTF-8"),  # only the first "-", as Emscripten's String.replace
    ([], "C.UTF-8"),
])
def test_lang_variable_follows_emscripten(languages, expected):
    assert lang_variable(languages) == expected
