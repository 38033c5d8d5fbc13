"""The composer keeps indentation and trims only outer blank lines."""

import pytest

from app.composer import composer_text


@pytest.mark.parametrize(("typed", "sent"), [
    ("    def f():\n        return 1", "    def f():\n        return 1"),
    ("\n \n\t\n  indented\n", "  indented"),
    ("text  \n\n\u3000\n", "text"),
    ("\u3000全角缩进", "\u3000全角缩进"),
    ("a\n\n\nb", "a\n\n\nb"),
    ("   \n\t\n", ""),
    ("", ""),
])
def test_outer_blank_lines_go_and_indentation_stays(typed, sent):
    assert composer_text(typed) == sent
