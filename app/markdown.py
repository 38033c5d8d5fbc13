"""Markdown of assistant replies as a safe element tree (the model back end, DESIGN.md §12; §5: text, never HTML).

``markdown_tree(text)`` parses with ``markdown-it-py`` (CommonMark with tables
and strikethrough, **HTML disabled**: any HTML in the source stays literal
text) and turns its token stream into ``Element``/``str`` nodes that the
browser layer builds with ``createElement`` and ``textContent`` only
(``app.browser.markdown_view``). What survives:

- blocks: ``p h1–h6 ul ol li blockquote pre code table thead tbody tr th td hr``
  (``ol`` keeps a numeric ``start``; ``th``/``td`` keep ``align`` = left,
  center or right; a fenced block keeps its language as ``lang``, letters,
  digits, ``+ # . _ -`` only);
- inline: ``em strong s code br a``; a link becomes ``a`` only for an
  ``http(s)`` URL (``href``), otherwise its text stays as text; an image is
  never loaded: it becomes a link to its ``http(s)`` source labelled with its
  alt text, or just the alt text; bare ``http(s)`` URLs in text become links
  (``app.presentation.link_segments``).

No other tag or attribute is produced. The stored text stays the raw text.
``markdown-it-py`` is imported lazily (it arrives after start-up in the
browser): ``available()`` tells whether it can be.

Example::

    >>> markdown_tree("**hi** <b>x</b>")
    [Element(tag='p', attrs={}, children=[Element(tag='strong', attrs={}, children=['hi']), ' <b>x</b>'])]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Union

from app.presentation import link_segments

__all__ = ["Element", "Node", "available", "markdown_tree", "parser", "safe_href"]


@dataclass
class Element:
    """An element of the tree: an allowed ``tag``, its allowed ``attrs``, its ``children``."""

    tag: str
    attrs: dict[str, str] = field(default_factory=dict)
    children: list["Node"] = field(default_factory=list)


Node = Union[Element, str]

_BLOCK_TAGS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote",
               "table", "thead", "tbody", "tr", "th", "td"}
_INLINE_TAGS = {"em_open": "em", "strong_open": "strong", "s_open": "s"}
_LANG = re.compile(r"^[\w+#.\-]{1,32}$")
_ALIGN = re.compile(r"text-align:\s*(left|center|right)")


def available() -> bool:
    """True when ``markdown_it`` can be imported."""
    try:
        import markdown_it  # noqa: F401
    except ImportError:
        return False
    return True


@cache
def parser():
    """The one ``MarkdownIt`` parser (built on first use; the browser builds it in a task of its own
    after start-up, DESIGN.md §13). Raises ``ImportError`` while markdown-it-py is not installed."""
    return _parser()


@cache
def _parser():
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


def safe_href(url: str) -> str | None:
    """``url`` when it is an absolute ``http://`` or ``https://`` URL, else ``None``.

    >>> safe_href("https://a.example/x"), safe_href("javascript:alert(1)"), safe_href("/rel")
    ('https://a.example/x', None, None)
    """
    lowered = url.strip().lower()
    return url.strip() if lowered.startswith(("http://", "https://")) and len(lowered) > 8 else None


def _text_nodes(text: str) -> list[Node]:
    out: list[Node] = []
    for segment in link_segments(text):
        if segment.kind == "link":
            out.append(Element("a", {"href": segment.text}, [segment.text]))
        else:
            out.append(segment.text)
    return out


def _append(target: list[Node], nodes: list[Node]) -> None:
    for node in nodes:
        if isinstance(node, str) and target and isinstance(target[-1], str):
            target[-1] += node
        elif node != "":
            target.append(node)


def _inline(tokens: list[Any]) -> list[Node]:
    root: list[Node] = []
    stack: list[tuple[Element | None, list[Node]]] = [(None, root)]  # (element or None for a dropped link, children)
    for token in tokens:
        children = stack[-1][1]
        kind = token.type
        if kind == "text":
            in_link = any(el is not None and el.tag == "a" for el, _ in stack)
            _append(children, [token.content] if in_link else _text_nodes(token.content))
        elif kind == "softbreak":
            _append(children, ["\n"])
        elif kind == "hardbreak":
            children.append(Element("br"))
        elif kind == "code_inline":
            children.append(Element("code", {}, [token.content]))
        elif kind in ("html_inline", "html_block"):
            _append(children, [token.content])
        elif kind in _INLINE_TAGS:
            element = Element(_INLINE_TAGS[kind])
            children.append(element)
            stack.append((element, element.children))
        elif kind == "link_open":
            href = safe_href(str(token.attrs.get("href", "")))
            if href is not None and not any(el is not None and el.tag == "a" for el, _ in stack):
                element = Element("a", {"href": href})
                children.append(element)
                stack.append((element, element.children))
            else:
                stack.append((None, children))  # not http(s): keep the text, drop the link
        elif kind == "image":
            alt = token.content or str(token.attrs.get("alt", ""))
            src = safe_href(str(token.attrs.get("src", "")))
            children.append(Element("a", {"href": src}, [alt or src]) if src else alt)
        elif kind.endswith("_close") and len(stack) > 1:
            stack.pop()
    return root


def markdown_tree(text: str) -> list[Node]:
    """The element tree of Markdown ``text`` (see the module docstring). Raises ``ImportError`` without markdown-it."""
    tokens = _parser().parse(text)
    root: list[Node] = []
    stack: list[list[Node]] = [root]
    for token in tokens:
        children = stack[-1]
        kind = token.type
        if token.nesting == 1:
            if token.hidden:  # the paragraph of a tight list item: its inline content goes straight in
                stack.append(children)
                continue
            tag = token.tag if token.tag in _BLOCK_TAGS else "div"
            attrs: dict[str, str] = {}
            if tag == "ol" and str(token.attrs.get("start", "1")).isdigit() and str(token.attrs.get("start", "1")) != "1":
                attrs["start"] = str(token.attrs["start"])
            if tag in ("th", "td"):
                align = _ALIGN.search(str(token.attrs.get("style", "")))
                if align:
                    attrs["align"] = align[1]
            element = Element(tag, attrs)
            children.append(element)
            stack.append(element.children)
        elif token.nesting == -1:
            if len(stack) > 1:
                stack.pop()
        elif kind == "inline":
            _append(children, _inline(token.children or []))
        elif kind in ("fence", "code_block"):
            lang = (token.info or "").strip().split(" ")[0]
            code = Element("code", {"lang": lang} if _LANG.match(lang) else {}, [token.content])
            children.append(Element("pre", {}, [code]))
        elif kind == "hr":
            children.append(Element("hr"))
        elif kind == "html_block":
            children.append(Element("p", {}, [token.content]))
    return root
