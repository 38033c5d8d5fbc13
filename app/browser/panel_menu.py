"""The panel's menu: one button in the panel's status line that holds the actions few people use
(Evidence pack, Replay case, and Sync now while sync is on), so that the panel spends one quiet
line above the conversation on its chrome (DESIGN.md §10, §16).

Hooks: ``panel-menu`` (the button: ``aria-haspopup="menu"``, ``aria-expanded``, ``aria-controls``)
and ``panel-menu-list`` (``role="menu"``, hidden while closed), whose ``role="menuitem"`` buttons
keep their own ``data-testid``. Enter or Space on the button opens the menu with its first shown
action focused; ArrowDown/ArrowUp, Home/End move between the shown actions; Escape closes it and
gives focus back to the button (the press goes no further: it does not also stop a running turn);
choosing an action, Tab, or a click outside closes it.
"""

from __future__ import annotations

from pyodide.ffi import create_proxy
from pyscript import document
from pyscript.ffi import is_none

from app.browser.dom import element

__all__ = ["PanelMenu"]

LIST_ID = "panel-menu-list"


class PanelMenu:
    """The menu button and its list, drawn into ``parent`` by ``install``; ``t`` is the page's
    ``app.i18n.Translator``. ``add`` puts an action (a ``<button>``) in the menu."""

    def __init__(self, t) -> None:
        self.t = t
        self.button = None
        self.list = None
        self._proxies: list = []

    def install(self, parent) -> None:
        """Draw the closed menu at the end of ``parent`` and listen to it."""
        label = self.t("edit.agent.menu")
        self.button = element("button", text="⋯", classes="panel-menu-button", testid="panel-menu",
                              attrs={"type": "button", "aria-haspopup": "menu", "aria-expanded": "false",
                                     "aria-controls": LIST_ID, "aria-label": label, "title": label})
        self.list = element("div", classes="panel-menu-list", testid="panel-menu-list",
                            attrs={"id": LIST_ID, "role": "menu", "aria-label": label})
        self.list.hidden = True
        parent.append(element("div", classes="panel-menu", children=[self.button, self.list]))
        self._on(self.button, "click", lambda _e: self.close() if self.is_open else self.open())
        self._on(self.list, "click", self._on_choose)
        self._on(self.list, "keydown", self._on_key)
        self._on(self.button, "keydown", self._on_button_key)
        self._on(document, "click", self._on_outside)

    def add(self, button) -> None:
        """Put ``button`` (an action) at the end of the menu as a menu item."""
        button.setAttribute("role", "menuitem")
        button.setAttribute("tabindex", "-1")
        self.list.append(button)

    @property
    def is_open(self) -> bool:
        return self.list is not None and not self.list.hidden

    def open(self) -> None:
        """Show the menu and focus its first shown action."""
        self.list.hidden = False
        self.button.setAttribute("aria-expanded", "true")
        items = self._items()
        if items:
            items[0].focus()

    def close(self, focus: bool = False) -> None:
        """Hide the menu; ``focus``: give focus back to the menu button."""
        if self.list is None:
            return
        self.list.hidden = True
        self.button.setAttribute("aria-expanded", "false")
        if focus:
            self.button.focus()

    def _items(self) -> list:
        return [n for n in self.list.querySelectorAll("[role=menuitem]") if not n.hidden and not n.disabled]

    def _on(self, target, kind: str, handler) -> None:
        proxy = create_proxy(handler)
        self._proxies.append(proxy)
        target.addEventListener(kind, proxy)

    def _on_choose(self, event) -> None:
        if not is_none(event.target.closest("[role=menuitem]")):
            self.close(focus=True)  # the action's own listener runs too

    def _on_outside(self, event) -> None:
        if self.is_open and is_none(event.target.closest(".panel-menu")):
            self.close()

    def _on_button_key(self, event) -> None:
        if event.key == "ArrowDown" and not self.is_open:
            event.preventDefault()
            self.open()
        elif event.key == "Escape" and self.is_open:
            event.stopPropagation()
            self.close(focus=True)

    def _on_key(self, event) -> None:
        key = event.key
        if key == "Escape":
            event.stopPropagation()  # closes the menu; it must not also stop a running turn
            event.preventDefault()
            self.close(focus=True)
            return
        if key == "Tab":
            self.close()
            return
        items = self._items()
        if not items or key not in ("ArrowDown", "ArrowUp", "Home", "End"):
            return
        event.preventDefault()
        active = document.activeElement
        index = next((i for i, item in enumerate(items) if item == active), -1)
        step = {"ArrowDown": index + 1, "ArrowUp": index - 1, "Home": 0, "End": len(items) - 1}[key]
        items[step % len(items)].focus()
