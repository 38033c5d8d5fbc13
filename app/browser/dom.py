"""DOM nodes for the views: every piece of text goes in as ``textContent``, never as HTML
(DESIGN.md §5: stored text is data). One helper for every view module."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyscript import document

__all__ = ["decorate", "element", "field_text"]


def decorate(node: Any, *, text: str | None = None, testid: str | None = None, classes: str | None = None,
             attrs: dict[str, str] | None = None) -> Any:
    """Set ``node``'s class, text (as ``textContent``), ``data-testid`` and ``attrs``; returns ``node``."""
    if classes:
        node.className = classes
    if text is not None:
        node.textContent = text
    if testid:
        node.setAttribute("data-testid", testid)
    for name, value in (attrs or {}).items():
        node.setAttribute(name, value)
    return node


def element(tag: str, *, text: str | None = None, testid: str | None = None, classes: str | None = None,
            attrs: dict[str, str] | None = None, children: Iterable[Any] = ()) -> Any:
    """A new ``<tag>`` element (``decorate``d), with ``children`` appended in order.

    Example (in the page): ``element("p", text="<b>hi</b>", testid="x")`` is a ``<p>``
    whose text is the literal ``<b>hi</b>``.
    """
    node = decorate(document.createElement(tag), text=text, testid=testid, classes=classes, attrs=attrs)
    for child in children:
        node.append(child)
    return node


def field_text(field: Any) -> str:
    """The value of a text field (``<textarea>``, ``<input>``) as a Python ``str``.

    It crosses as UTF-8 bytes through ``agentbarText.fieldUtf8`` (``static/storage-bridge.js``):
    copying a long non-ASCII JS string into Python is several times slower (a 2 MB message:
    ~30 ms against ~12 ms; sending one must show no main-thread task over 200 ms). A value with
    lone surrogates crosses as it is.
    """
    import js

    bridge = getattr(js, "agentbarText", None)
    if bridge is None:
        return str(field.value)
    value = bridge.fieldUtf8(field)
    return value if isinstance(value, str) else value.to_bytes().decode("utf-8")
