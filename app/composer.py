"""What the composer sends: the typed text with only its outer blank lines trimmed.

Indentation is part of what the user typed (code, quoted verse, lists), so the
first line keeps its leading spaces; only whole blank lines before the text and
whitespace after its last visible character go. Blank text
sends nothing (``AgentRuntime.send`` ignores it).

Example::

    >>> composer_text("\\n\\n    indented code\\n  next\\n\\n")
    '    indented code\\n  next'
"""

from __future__ import annotations

import re

__all__ = ["composer_text"]

_LEADING_BLANK_LINES = re.compile(r"\A(?:[^\S\n]*\n)+")


def composer_text(value: str) -> str:
    """``value`` without its leading blank lines and trailing whitespace; indentation kept.

    A "blank line" is one holding only whitespace (any Unicode whitespace but the
    newline, e.g. spaces, tabs, U+3000). Returns ``""`` for blank input.
    """
    text = value.rstrip()
    return _LEADING_BLANK_LINES.sub("", text)
