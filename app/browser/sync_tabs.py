"""One tab of a browser replicates at a time (DESIGN.md §15, §16): the page's side of
``app.sync.tabs``, over ``static/sync.js``'s ``lead`` (Web Locks) and a ``BroadcastChannel``.

``SyncTabs.claim(name)`` asks for the lock ``name`` (``app.sync.tabs.lock_name``): true when this
tab holds it and so replicates; otherwise it follows, and ``take_over()`` is called once the lock
comes (the tab that held it closed or turned sync off). While it replicates, its
``[data-testid=sync-status]`` as drawn (``data-state``, ``data-reason``) goes to the other tabs,
and what they ask of it (``ask``, ``now``, ``wrote``) is answered (``sync_now()``, ``wake()``);
while it follows, the status it hears is ``show(status)``-n. ``data-role`` on the status says
which (``replicating``/``following``), and a following tab's status says in its title that
another tab of this browser syncs (``sync.elsewhere``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import js
from pyodide.ffi import create_proxy, to_js
from pyscript.ffi import is_none

from app.i18n import Translator
from app.sync.settings import SyncStatus
from app.sync.tabs import CHANNEL, TabMessage, read_message

__all__ = ["SyncTabs"]


class SyncTabs:
    """This tab among the others of its origin (module docstring). ``node``: the drawn
    ``sync-status``; ``t``: the translator; ``take_over()``: the lock came, start again replicating;
    ``sync_now()``, ``wake()``: what a following tab asks of the replicating one (start again at
    once; read what another tab wrote into the local database); ``show(status)``: draw the
    replicating tab's ``SyncStatus`` here. Nothing listens until the first ``claim``."""

    def __init__(self, node, t: Translator, *, take_over: Callable[[], None], sync_now: Callable[[], None],
                 wake: Callable[[], None], show: Callable[[SyncStatus], None]) -> None:
        self.node, self.t = node, t
        self._take_over, self._sync_now, self._wake, self._show = take_over, sync_now, wake, show
        self.role: Literal["replicating", "following"] | None = None
        self._lock = None  # static/sync.js's lead() handle while this tab holds or waits for the lock
        self._name: str | None = None
        self._asking = False
        self._channel = None
        self._proxies: list = []  # kept alive as long as the page

    async def claim(self, name: str) -> bool:
        """Ask for the lock ``name`` (once; again when it is another name: other settings); true when
        this tab holds it (it was free, or came since), false while another tab holds it."""
        self._join()
        if self._lock is not None and self._name != name:
            self.release()
        if self._lock is None:
            self.role, self._name, self._asking = "following", name, True
            try:
                self._lock = js.window.agentbarSync.lead(name, self._proxy(self._granted))
                await self._lock.ready
            finally:
                self._asking = False
        self._mark()
        return self.role == "replicating"

    def release(self) -> None:
        """Let the lock go (a waiting tab takes over), or stop waiting for it."""
        if self._lock is not None:
            self._lock.release()
        self._lock = self._name = self.role = None
        self._mark()

    def post(self, kind: Literal["ask", "now", "wrote"]) -> None:
        """Tell the other tabs (``app.sync.tabs.TabMessage``)."""
        if self._channel is not None:
            self._channel.postMessage(TabMessage(kind=kind).to_json())

    def _proxy(self, handler):
        proxy = create_proxy(handler)
        self._proxies.append(proxy)
        return proxy

    def _granted(self) -> None:
        self.role = "replicating"
        self._mark()
        if not self._asking:  # it came later, not in answer to the request: start over replicating
            self._take_over()

    def _mark(self) -> None:
        if self.role is None:
            self.node.removeAttribute("data-role")
        else:
            self.node.dataset.role = self.role
        if self.role == "following":
            self.node.title = self.t("sync.elsewhere")
        else:
            self.node.removeAttribute("title")

    def _join(self) -> None:
        """Once: listen on ``CHANNEL``, and relay the status each time it is drawn while replicating."""
        if self._channel is not None or not hasattr(js.window, "BroadcastChannel"):
            return
        self._channel = js.window.BroadcastChannel.new(CHANNEL)
        self._channel.addEventListener("message", self._proxy(self._heard))
        js.MutationObserver.new(self._proxy(lambda *_args: self._relay())).observe(self.node, to_js(
            {"attributes": True, "attributeFilter": ["data-state", "data-reason"]}, dict_converter=js.Object.fromEntries))

    def _relay(self) -> None:
        """The replicating tab's status, as drawn, to the others."""
        if self.role != "replicating" or self._channel is None:
            return
        state, reason = (self.node.getAttribute(name) for name in ("data-state", "data-reason"))
        try:
            message = TabMessage(kind="status", state=str(state), reason=None if is_none(reason) else str(reason))
        except ValueError:
            return
        self._channel.postMessage(message.to_json())

    def _heard(self, event) -> None:
        message = read_message(str(event.data))
        if message is None:
            return
        if self.role == "replicating":
            if message.kind == "ask":
                self._relay()
            elif message.kind == "now":
                self._sync_now()
            elif message.kind == "wrote":
                self._wake()
        elif self.role == "following" and (shown := message.shown()) is not None:
            self._show(shown)
