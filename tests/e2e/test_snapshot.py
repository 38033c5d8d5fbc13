"""The interpreter started from its memory snapshot (DESIGN.md §13; ``tools/snapshot.py``,
``static/pyodide-boot.mjs``, ``app/process_state.py``).

A restored interpreter must be what a fresh boot is, for this browser: the same time zone
attributes and ``LANG`` as a boot without the snapshot in the same browser context, and its own
``random`` sequence on every load. A snapshot that is missing, damaged or refused must leave a
normal start, with nothing lost.
"""

from __future__ import annotations

import gzip
import json
import os
import time

from bench.scripts import RUN_PY
from tests.e2e.conftest import ROOT, AgentPage

SNAPSHOT = "**/static/vendor/pyodide/snapshot.bin.gz"
STATE = """
import json, os, random, time
json.dumps({"zone": [time.timezone, time.altzone, time.daylight, list(time.tzname)],
            "lang": os.environ.get("LANG"), "underscore": os.environ.get("_"), "random": random.random()})
"""


def state_of(agent: AgentPage) -> dict:
    return json.loads(agent.page.evaluate(RUN_PY, STATE))


def snapshot_state(agent: AgentPage) -> str | None:
    return agent.page.evaluate("() => document.documentElement.dataset.snapshot || null")


def test_a_restored_interpreter_has_this_browsers_zone_and_language_and_its_own_random_sequence(browser, app_server):
    context = browser.new_context(timezone_id="America/New_York", locale="de-DE")
    try:
        agent = AgentPage(context.new_page(), app_server)
        agent.open(snapshot="off")
        assert snapshot_state(agent) == "off"
        fresh = state_of(agent)

        agent.open()
        assert snapshot_state(agent) == "restored"
        restored = state_of(agent)
        assert restored["zone"] == fresh["zone"] and restored["zone"][0] != 0  # not the maker's UTC
        assert (restored["lang"], restored["underscore"]) == (fresh["lang"], fresh["underscore"])
        agent.send("hello from a restored interpreter")

        agent.reload()
        assert snapshot_state(agent) == "restored"
        again = state_of(agent)
        assert again["random"] != restored["random"]  # reseeded: the snapshot's seed is shared by every load
        assert "hello from a restored interpreter" in agent.messages().all_inner_texts()[0]
        assert agent.off_origin_requests() == []
    finally:
        context.close()


def a_missing_damaged_or_refused_snapshot_leaves_a_normal_start(agent, course: str) -> None:
    """One boot per snapshot case, each on ``course`` (a course of its own, with no turn yet), each
    boot also showing the turns the boots before it saved; the snapshot's routes are removed at the
    end, the page left ready: it is test_hardening's second tab (another tab of the splice case)."""
    agent.page.goto(f"{agent.base_url}static/icons/agentbar.svg")
    real = bytes(agent.page.evaluate("async () => Array.from(new Uint8Array(await (await fetch("
                                     "'static/vendor/pyodide/snapshot.bin.gz')).arrayBuffer()).slice(0, 1 << 20))"))
    broken = {"Content-Type": "application/octet-stream", "Content-Encoding": "gzip"}
    memory = bytearray(gzip.decompress((ROOT / "static/vendor/pyodide/snapshot.bin.gz").read_bytes()))
    memory[-4096:] = bytes(b ^ 0x5A for b in memory[-4096:])  # altered memory that still gunzips
    altered = gzip.compress(bytes(memory), compresslevel=1, mtime=0)
    cases = [  # (html[data-snapshot], body, headers)
        # sent as Content-Encoding: gzip but not decodable: from a real host the body fails mid-way,
        # before Pyodide asks for it (the fresh tester's proxy); through Playwright's route the page
        # has been seen to get the bytes undecoded instead (then Pyodide refuses them)
        ("failed", real[:4] + real[100:200_000], broken),
        ("absent", None, {}),
        ("failed", gzip.compress(os.urandom(1 << 20), mtime=0), {}),  # inflates; Pyodide refuses it
        ("failed", real, {}),  # the real one cut short
        ("failed", altered, {}),  # not what snapshot.json's digest names: never restored
    ]

    def answering(body: bytes | None, headers: dict):
        if body is None:
            return lambda route: route.fulfill(status=404, body="not found")
        return lambda route: route.fulfill(status=200, body=body, headers={"Content-Type": "application/gzip", **headers})

    def late(route):  # Pyodide's script held back: the snapshot fails before Pyodide awaits it
        time.sleep(1.5)
        route.continue_()

    for turn, (expected, body, headers) in enumerate(cases):
        agent.page.unroute(SNAPSHOT)
        agent.page.route(SNAPSHOT, answering(body, headers))
        if headers:
            agent.page.route("**/pyodide.asm.mjs", late)
        agent.open(course=course)
        agent.page.unroute("**/pyodide.asm.mjs")
        assert snapshot_state(agent) == expected
        if expected == "failed":
            assert agent.page.evaluate("() => document.documentElement.dataset.snapshotError")
        if body is altered:
            assert "digest" in agent.page.evaluate("() => document.documentElement.dataset.snapshotError")
        agent.send(f"turn {turn} after a {expected} snapshot")
        assert len(agent.messages().all()) == 2 * (turn + 1)  # every earlier turn still there
        # a failure seen before Pyodide asked for the bytes is not the page's start-up error
        assert agent.page.evaluate("() => document.documentElement.getAttribute('data-error')") is None
    agent.page.unroute(SNAPSHOT)


def boot_with_a_snapshot_that_does_not_come_in_time(agent) -> None:
    """Boot the app (its default course, a fresh origin) with the snapshot's host answering after the
    page's wait (10 s): the snapshot is given up and the start is a normal one. test_indexeddb's page
    is this boot; ``a_turn_after_the_snapshot_was_given_up`` ends it."""
    def stalled(route):  # a host that answers after the page's wait (10 s)
        time.sleep(12)
        try:
            route.fulfill(status=200, body=b"late", headers={"Content-Type": "application/gzip"})
        except Exception:  # noqa: BLE001 - the page gave the request up meanwhile
            pass

    agent.page.route(SNAPSHOT, stalled)
    agent.open()
    assert snapshot_state(agent) == "failed"
    assert "not here within" in agent.page.evaluate("() => document.documentElement.dataset.snapshotError")
    assert agent.page.evaluate("() => document.documentElement.getAttribute('data-error')") is None


def a_turn_after_the_snapshot_was_given_up(agent) -> None:
    """In the page ``boot_with_a_snapshot_that_does_not_come_in_time`` booted, with no turn yet: a turn
    is answered."""
    agent.send("after giving the snapshot up")
    assert len(agent.messages().all()) == 2
