"""Markdown replies in the page: markdown-it-py installed in the background, trees built as DOM.

``start_install(on_ready)`` runs after start-up: it loads ``markdown-it-py``
(+ ``mdurl``) with Pyodide's ``loadPackage``; both are vendored wheels, with
their bytecode, listed in the generated ``pyodide-lock.json``, so they come from this origin
(nothing is fetched from the network and nothing is added to start-up). Until
then assistant text is drawn as plain text; once the import works,
``html[data-markdown="ready"]`` is set and ``on_ready()`` redraws the
messages. A failed install sets ``data-markdown="failed"`` and text stays plain.

``render(text)`` → a ``div.bubble.markdown`` built from
``app.markdown.markdown_tree`` with ``createElement`` and ``textContent`` only
(no ``innerHTML`` of model text), or ``None`` while markdown-it is not there.
Code blocks get a copy button (``[data-testid=code-copy]``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import js
from pyodide.ffi import create_proxy
from pyscript.ffi import is_none

from app import markdown
from app.browser.tasks import next_task
from app.imports import import_in_steps

__all__ = ["is_ready", "render", "start_install"]

_log = logging.getLogger(__name__)
_state = {"ready": False, "task": None, "labels": ("Copy", "Copied")}


def is_ready() -> bool:
    """True once markdown-it is importable (assistant text then renders as Markdown)."""
    return _state["ready"]


def _build(node, document):
    if isinstance(node, str):
        return document.createTextNode(node)
    element = document.createElement(node.tag)
    for name, value in node.attrs.items():
        if name == "href":
            element.setAttribute("href", value)
            element.setAttribute("target", "_blank")
            element.setAttribute("rel", "noopener noreferrer nofollow")
        elif name == "lang":
            element.setAttribute("data-lang", value)
        elif name == "align":
            element.setAttribute("data-align", value)
        else:
            element.setAttribute(name, value)
    if node.tag == "pre":
        wrapper = document.createElement("div")
        wrapper.className = "code-block"
        copy = document.createElement("button")
        copy.type = "button"
        copy.className = "code-copy"
        copy.setAttribute("data-testid", "code-copy")
        copy.textContent = _state["labels"][0]
        wrapper.append(copy)
    for child in node.children:
        element.append(_build(child, document))
    if node.tag == "pre":
        wrapper.append(element)
        return wrapper
    return element


def render(text: str):
    """The Markdown bubble for ``text``, or ``None`` while markdown-it is not installed (or it fails)."""
    if not _state["ready"]:
        return None
    document = js.document
    try:
        tree = markdown.markdown_tree(text)
    except Exception:  # noqa: BLE001 - never lose a message to the renderer: plain text instead
        _log.exception("markdown rendering failed")
        return None
    bubble = document.createElement("div")
    bubble.className = "bubble markdown"
    bubble.setAttribute("dir", "auto")
    bubble.setAttribute("data-testid", "markdown")
    for node in tree:
        bubble.append(_build(node, document))
    return bubble


def _import_mdurl() -> None:
    import mdurl  # noqa: F401


MARKDOWN_IT_PARTS = ("common.utils", "rules_inline", "helpers", "rules_block", "rules_core", "main")
"""``markdown_it``'s submodules imported one per task (``app.imports.import_in_steps``): ``import
markdown_it`` was one task of 73-77 ms on a cold load (DESIGN.md §13)."""

INSTALL_STEPS = (markdown.parser, lambda: markdown.markdown_tree("warm *up*"))
"""After the wheels are loaded and markdown_it imported in steps: the parser's construction and one
warm-up parse, one task each."""


def _on_click(event) -> None:
    button = event.target.closest("[data-testid=code-copy]")
    if is_none(button):
        return
    code = button.parentElement.querySelector("code")
    text = "" if is_none(code) else code.textContent
    button.dataset.copied = "true"
    button.textContent = _state["labels"][1]
    try:
        js.navigator.clipboard.writeText(text)
    except Exception:  # noqa: BLE001 - no clipboard (permissions): the code can still be selected
        pass


async def _install(on_ready: Callable[[], None]) -> None:
    root = js.document.documentElement
    root.dataset.markdown = "loading"
    try:
        from app.browser.wheels import install_in_steps

        # Straight from the generated lock (mdurl is its dependency): importing micropip took
        # 130-550 ms in one task here, and loadPackage unpacks a wheel in one task (59-298 ms for
        # markdown-it-py on a cold load), against DESIGN.md §13's 50 ms after ready.
        await install_in_steps(["mdurl", "markdown-it-py"])
        # each step in a task of its own (DESIGN.md §13: nothing after ready over 50 ms)
        await next_task()
        _import_mdurl()
        await next_task()
        await import_in_steps("markdown_it", MARKDOWN_IT_PARTS, next_task)
        for step in INSTALL_STEPS:
            await next_task()
            step()
        await next_task()
    except Exception as error:  # noqa: BLE001 - Markdown is an improvement, not a requirement
        _log.warning("markdown-it-py could not be installed: %s", error)
        root.dataset.markdown = "failed"
        return
    _state["ready"] = True
    on_ready()
    root.dataset.markdown = "ready"


def start_install(on_ready: Callable[[], None], labels: tuple[str, str] = ("Copy", "Copied")) -> None:
    """Install markdown-it-py in the background; ``on_ready()`` redraws once it works.

    ``labels``: the copy button's text before and after a copy (localized).
    """
    _state["labels"] = labels
    messages = js.document.getElementById("agent-messages")
    if not is_none(messages):
        messages.addEventListener("click", create_proxy(_on_click))
    if _state["task"] is None:
        _state["task"] = asyncio.ensure_future(_install(on_ready))
