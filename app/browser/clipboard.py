"""The clipboard, for a message's Copy (DESIGN.md §17): ``navigator.clipboard.writeText``, nothing else.

The thin browser layer of one call; what is copied (a message's text) is
``app.runtime.branches.message_text``'s rule.
"""

from __future__ import annotations

from pyscript import window

__all__ = ["write_text"]


async def write_text(text: str) -> bool:
    """Put ``text`` on the clipboard; True once written, False when the browser refused (no
    permission, no focus, no secure context) or has no clipboard. Never raises."""
    clipboard = getattr(window.navigator, "clipboard", None)
    if clipboard is None:
        return False
    try:
        await clipboard.writeText(text)
    except Exception:  # noqa: BLE001 - a refused write is said in the button, not raised
        return False
    return True
