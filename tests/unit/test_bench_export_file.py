"""The history part's import files (bench/history.py ``_export_file``): a valid export whose one user
message holds the repeated line up to the size asked (written in chunks, the same bytes as a line at
a time), or exactly that many characters."""

from __future__ import annotations

import json

import pytest

from bench import history

RAW_LINE = "The quick brown fox, “quoted” \\n and more. "
"""The line as the file holds it (JSON: an escaped newline)."""


@pytest.mark.parametrize("characters", [1, 41, 42, 43, 1_000, 2_000_003])
def test_the_message_is_the_line_repeated_past_the_size_asked(tmp_path, characters, monkeypatch):
    monkeypatch.setattr(history, "CHUNK_LINES", 7)  # several chunks, the last one short
    path = tmp_path / "export.json"
    size = history._export_file(path, characters)
    exported = json.loads(path.read_text(encoding="utf-8"))
    text = exported["messages"][0]["content"][0]["text"]
    lines = -(-characters // len(RAW_LINE))
    assert text == json.loads(f'"{RAW_LINE}"') * lines
    assert size == path.stat().st_size


def test_an_exact_file_holds_just_that_many_characters(tmp_path):
    path = tmp_path / "export.json"
    history._export_file(path, 1_000, exact=True)
    text = json.loads(path.read_text(encoding="utf-8"))["messages"][0]["content"][0]["text"]
    assert len(text) == 1_000
