"""Driving a generator of steps (``app.json_steps``: work that yields between slices) in tests."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any


def driven(steps: Generator[None, None, Any]) -> tuple[Any, int]:
    """Run ``steps`` to its end: its return value and how many times it yielded (its pauses)."""
    yields = 0
    try:
        while True:
            next(steps)
            yields += 1
    except StopIteration as done:
        return done.value, yields
