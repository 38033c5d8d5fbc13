"""``history-status``, the drawer's one line for outcomes (DESIGN.md §9, §14: import, ChatGPT import,
backup and restore, resume and delete say there what happened or why nothing did).

Every outcome is said anew (``say``): its text goes in a new ``<span>`` that replaces the line's
child, and ``data-said`` counts the outcomes said. A second outcome identical to the first (the same
refused file chosen twice) is then still a change: the live region (``role=status``) announces the
inserted node to screen readers, the span's short highlight (``static/app.css``) shows it, and a
test can watch ``data-said``. Setting the same ``textContent`` again changed nothing anyone could
see or hear. An outcome stays until the next action (``dismiss``, ``app.history.list_model.list_line``).
"""

from __future__ import annotations

from typing import Any

from app.browser.dom import element

__all__ = ["dismiss", "say"]

_KEPT = ("data-testid", "data-said")


def say(status: Any, text: str) -> None:
    """Say ``text`` in ``status`` (the ``history-status`` element) as a new node; ``data-said`` + 1."""
    said = int(status.getAttribute("data-said") or 0) + 1
    status.setAttribute("data-said", str(said))
    status.replaceChildren(element("span", text=text, classes="history-status-said"))


def dismiss(status: Any) -> None:
    """End the outcome ``status`` shows (the user acted again: opened the list, searched, sorted):
    its text and its ``data-kind``/``data-result``/``data-reason``/counts go (``data-said`` stays)."""
    for name in [a.name for a in status.attributes]:
        if name.startswith("data-") and name not in _KEPT:
            status.removeAttribute(name)
    status.textContent = ""
