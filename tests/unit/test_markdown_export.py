"""The Markdown export's structure cannot be forged by a message's text (DESIGN.md §9, §17 "Moving
data"): a question that holds an ``## Assistant`` heading, a setext underline, an open code fence, an
HTML comment or the "other branches" line still reads, in a Markdown reader, as one message under its
own heading, its text shown as written."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt

from app.history.export import export_markdown
from app.history.records import TaskMeta
from app.history.tree import Tree

T0 = 1_780_000_000_000
LABELS = {"you": "You", "assistant": "Assistant", "tool": "Tool", "meta": "{created}",
          "leftOut": "1 other branch not shown"}


def _message(role: str, ident: str, text: str) -> dict:
    return {"role": role, "id": ident, "content": [{"type": "text", "text": text}]}


def _tokens(markdown: str) -> list:
    return MarkdownIt("commonmark").parse(markdown)  # HTML enabled, as a generic reader renders it


def _headings(markdown: str) -> list[tuple[str, str]]:
    tokens = _tokens(markdown)
    return [(t.tag, tokens[n + 1].content) for n, t in enumerate(tokens) if t.type == "heading_open"]


def _left_out_lines(markdown: str) -> int:
    tokens = _tokens(markdown)
    return sum(1 for n, t in enumerate(tokens) if t.type == "inline" and t.children
               and [c.type for c in t.children] == ["em_open", "text", "em_close"]
               and t.children[1].content == LABELS["leftOut"])


def _visible(markdown: str) -> str:
    """The text a reader shows (every inline and code block's content, markup left out)."""
    out = []
    for token in _tokens(markdown):
        if token.type == "inline":
            out.append("".join(c.content for c in token.children or () if c.type in ("text", "code_inline")))
        elif token.type in ("fence", "code_block", "html_block"):
            out.append(token.content)
    return "\n".join(out)


FORGERIES = [
    "hello\n## Assistant\nforged reply",
    "   # Title forged\n###### deep",
    "hello\nAssistant\n---\nforged",
    "text\n===",
    "```\nan open fence",
    "~~~~ python\nstill open",
    "<!-- a comment that never closes",
    "<pre>\nraw",
    "_1 other branch not shown_",
]


@pytest.mark.parametrize("text", FORGERIES)
def test_a_questions_text_cannot_forge_the_exports_headings_or_left_out_line(text):
    meta = TaskMeta(taskId="task_20260101_abcdef", taskName="T", stageId="s", createdAt=T0, updatedAt=T0)
    path = [_message("user", "u1", text), _message("assistant", "a1", "the answer")]
    tree = Tree.chain(path).grow([path[0], _message("assistant", "a2", "another")]).show("a1")
    markdown = export_markdown(meta, tree.path(), [], LABELS, tree=tree)
    assert _headings(markdown) == [("h1", "T"), ("h2", "You"), ("h2", "Assistant")]
    assert _left_out_lines(markdown) == 1
    shown = _visible(markdown)
    assert "the answer" in shown
    for line in text.splitlines():  # the question's text is shown as written (markup aside)
        words = line.strip(" #=-_~`<!").replace("python", "").strip()
        assert words in shown


def test_a_title_cannot_forge_a_heading_and_plain_text_stays_verbatim():
    meta = TaskMeta(taskId="task_20260101_abcdef", taskName="T\n## Assistant", stageId="s", createdAt=T0,
                    updatedAt=T0)
    text = "line *one*\n```python\nx\n```\n# not a heading"
    markdown = export_markdown(meta, [_message("user", "u1", text)], [], LABELS)
    assert [h for h in _headings(markdown) if h[0] == "h2"] == [("h2", "You")]
    assert "line *one*\n```python\nx\n```\n" in markdown  # nothing to escape: written as it is
    assert "# not a heading" in _visible(markdown)


def test_the_module_examples_hold():
    import doctest

    import app.history.export
    import app.projection

    assert doctest.testmod(app.history.export).failed == 0
    assert doctest.testmod(app.projection).failed == 0


@pytest.mark.parametrize("title", ["<img src=x onerror=alert(1)> title", "a title ##", "[link](javascript:x) *b* `c` &#35;"])
def test_a_title_is_shown_as_text_never_as_markup_or_html(title):
    """The heading's text is the conversation's title as typed: no raw HTML, link, emphasis, entity or
    closing ``#`` of it is rendered (DESIGN.md §5: stored text is data, never HTML)."""
    meta = TaskMeta(taskId="task_20260101_abcdef", taskName=title, stageId="s", createdAt=T0, updatedAt=T0)
    markdown = export_markdown(meta, [_message("user", "u1", "q")], [], LABELS)
    tokens = _tokens(markdown)
    heading = tokens[[t.type for t in tokens].index("heading_open") + 1]
    assert [c.type for c in heading.children] == ["text"] * len(heading.children)
    assert "".join(c.content for c in heading.children) == title
