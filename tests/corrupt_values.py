"""Damaged ``maic-agent-threads`` values, each with what must survive it (DESIGN.md §5).

Shared by the unit test that proves the rule for every value (tests/unit/test_store_corrupt_values.py)
and the browser test that shows it for the values only a real page can tell apart
(tests/e2e/test_resilience.py: the deep nesting, against Pyodide's stack; a kept thread, drawn).
"""

from __future__ import annotations

import json

KEY = "maic-agent-threads"
BACKUP_PREFIX = KEY + ".backup."


def envelope(threads: dict, version: int | None = 1) -> str:
    """The stored value (``{"state": {"threads": …}, "version": …}``) written compactly, as the app does."""
    value = {"state": {"threads": threads}}
    if version is not None:
        value["version"] = version
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def turn(question: str, answer: str = "an answer") -> list[dict]:
    """One user message and its assistant reply, each a single text part."""
    return [
        {"role": "user", "content": [{"type": "text", "text": question}]},
        {"role": "assistant", "content": [{"type": "text", "text": answer}]},
    ]


def thread(messages: list[dict], updated_at: int = 1_780_000_000_000) -> dict:
    """A stored thread: its messages and ``updatedAt`` (epoch ms)."""
    return {"messages": messages, "updatedAt": updated_at}


GOOD = thread(turn("good question", "good answer"))

CORRUPT_VALUES = {
    "truncated-json": '{"state":{"threads":{"intro-ml":{"messages":[{"role":"user","con',
    "null": "null",
    "array": "[]",
    "version-only": '{"version":1}',
    "messages-not-a-list": envelope({"intro-ml": GOOD, "linear-algebra": {"messages": "oops", "updatedAt": 1}}),
    "message-without-content": envelope({"intro-ml": thread(
        [{"role": "user"}] + turn("good question", "good answer"))}),
    "nested-too-deep": '{"state":{"threads":{"intro-ml":{"messages":[{"role":"user","content":[],"z":'
                       + "[" * 8000 + "]" * 8000 + '}],"updatedAt":1}}},"version":1}',
    "unknown-part-type": envelope({"intro-ml": thread([
        {"role": "user", "content": [{"type": "text", "text": "good question"}]},
        {"role": "assistant", "content": [{"type": "hologram", "data": 1}, {"type": "text", "text": "good answer"}]},
    ])}),
}
"""Case name → the raw value seeded under ``KEY``."""

KEEPS_GOOD_THREAD = {"messages-not-a-list", "message-without-content", "unknown-part-type"}
"""The cases whose intro-ml thread (good question, good answer) is kept after the repair."""
