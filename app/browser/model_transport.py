"""The model back end's network in the browser: ``fetch`` with a stream reader (DESIGN.md §12).

``FetchTransport`` implements ``app.agents.openai.Transport``:

- ``post_stream`` sends the request with an ``AbortController``; the body is
  read with ``response.body.getReader()`` and handed over chunk by chunk as
  bytes; ``aclose()`` (the agent calls it when the turn ends, fails or is
  stopped) aborts the request, so Stop ends the HTTP exchange, not only the
  reading;
- a ``fetch`` that rejects is classified: a ``securitypolicyviolation`` for
  that origin → ``blocked`` (the page's CSP ``connect-src``); otherwise a
  ``no-cors`` probe of the same URL — it succeeds when the server is reachable
  but did not allow this origin → ``cors``; it fails too → ``network``.
  (Browsers report all three as the same ``TypeError``.)

Response headers are readable only when CORS-safelisted or exposed by the
server (``Access-Control-Expose-Headers: Retry-After``).

A request the page's own leaving cuts (``beforeunload``/``pagehide``: a reload, a navigation, a
closed tab) is no failure of the server: Firefox aborts it right after ``beforeunload`` and still
runs the page's tasks, and ending the turn as
``stream-cut`` then stored a fragment the user never saw finish, blamed on the server, and dropped
the draft of its question. Such a cut never ends the turn (``_Leaving``): the turn is lost with the
page, as DESIGN.md §4 says of a refresh mid-stream, and the question comes back as a draft. Should
the page come back from the back-forward cache (``pageshow``), the cut is reported then.
"""

from __future__ import annotations

import asyncio
from typing import Any

import js
from pyodide.ffi import JsException, create_proxy, to_js

from app.agents.errors import TransportError

__all__ = ["FetchTransport", "origin_of"]


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of an absolute URL (``""`` when it is not one)."""
    try:
        return str(js.URL.new(url).origin)
    except JsException:
        return ""


def _options(**values: Any):
    return to_js(values, dict_converter=js.Object.fromEntries)


LEAVE_WAIT_S = 10.0
"""How long a request cut after ``beforeunload`` waits for the page to go (``pagehide``) before the
cut is said after all (a navigation that did not happen; a reload's next page slower than that)."""


class _Leaving:
    """Whether the page is being left, and a wait for its return (module docstring).

    ``left``: True from ``beforeunload`` (Firefox cuts the page's requests right after it, before
    ``pagehide``, measured) or ``pagehide`` until a ``pageshow``; ``until_back()`` returns at the next
    ``pageshow`` (a page the back-forward cache brings back), at once when no ``pagehide`` followed
    ``beforeunload`` within ``LEAVE_WAIT_S`` (the page stayed: ``left`` is False again), else never
    (the page is gone)."""

    def __init__(self) -> None:
        self.left = False
        self._hidden = False
        self._moved, self._shown = asyncio.Event(), asyncio.Event()
        self._proxies = [create_proxy(self._before), create_proxy(self._hide), create_proxy(self._show)]
        for event, proxy in zip(("beforeunload", "pagehide", "pageshow"), self._proxies):
            js.addEventListener(event, proxy)

    def _before(self, event=None) -> None:
        self.left, self._hidden = True, False
        self._moved.clear()
        self._shown.clear()

    def _hide(self, event=None) -> None:
        self.left, self._hidden = True, True
        self._shown.clear()
        self._moved.set()

    def _show(self, event=None) -> None:
        self.left, self._hidden = False, False
        self._moved.set()
        self._shown.set()

    async def until_back(self) -> None:
        """Wait for the page to come back (``pageshow``), or ``LEAVE_WAIT_S`` for it to go when only
        ``beforeunload`` was seen."""
        if not self._hidden:
            try:
                await asyncio.wait_for(self._moved.wait(), LEAVE_WAIT_S)
            except asyncio.TimeoutError:
                self.left = False  # still here: the navigation did not happen, the cut is said
                return
        if self.left:
            await self._shown.wait()


class _FetchResponse:
    """``app.agents.openai.StreamResponse`` over a ``Response`` and its ``AbortController``; a read the
    page's leaving cuts, or ends early, waits for the page to come back (``_Leaving``)."""

    def __init__(self, response, controller, leaving: _Leaving) -> None:
        self._response = response
        self._controller = controller
        self._leaving = leaving
        self.status = int(response.status)
        self.headers = {str(pair[0]).lower(): str(pair[1]) for pair in response.headers.entries()}
        self._done = False

    def __aiter__(self):
        return self._read()

    async def _read(self):
        reader = self._response.body.getReader()
        while True:
            try:
                result = await reader.read()
            except JsException as error:
                if self._leaving.left:  # cut by the page's own leaving: the turn goes with the page
                    await self._leaving.until_back()
                raise TransportError("network") from error
            if result.done:
                if self._leaving.left:  # ended while the page is being left: maybe cut, never reported as a failure
                    await self._leaving.until_back()
                self._done = True
                return
            yield result.value.to_bytes()

    async def text(self) -> str:
        try:
            return str(await self._response.text())
        except JsException:
            return ""

    async def aclose(self) -> None:
        if not self._done:
            self._controller.abort()  # Stop, a failure or an early end: end the HTTP exchange too
            self._done = True


class FetchTransport:
    """``Transport`` over the page's ``fetch``; remembers CSP violations to classify refusals."""

    def __init__(self) -> None:
        self._blocked: list[str] = []
        self._leaving = _Leaving()
        self._listener = create_proxy(self._on_violation)
        js.document.addEventListener("securitypolicyviolation", self._listener)

    def _on_violation(self, event) -> None:
        directive = str(getattr(event, "effectiveDirective", "") or getattr(event, "violatedDirective", ""))
        if directive.startswith("connect-src"):
            self._blocked.append(str(event.blockedURI))
            del self._blocked[:-20]

    def _was_blocked(self, origin: str) -> bool:
        return any(uri.startswith(origin) for uri in self._blocked if origin)

    async def _refusal(self, url: str) -> TransportError:
        origin = origin_of(url)
        await asyncio.sleep(0.05)  # the violation event is queued as a task after the rejection
        if self._was_blocked(origin):
            return TransportError("blocked", origin)
        try:
            await js.fetch(url, _options(mode="no-cors", cache="no-store", credentials="omit"))
        except JsException:
            await asyncio.sleep(0.05)
            return TransportError("blocked" if self._was_blocked(origin) else "network", origin)
        return TransportError("cors", origin)

    async def post_stream(self, url: str, headers: dict[str, str], body: str) -> _FetchResponse:
        """POST ``body`` to ``url``; returns once the response headers are in. Raises ``TransportError``."""
        controller = js.AbortController.new()
        options = _options(method="POST", headers=to_js(headers, dict_converter=js.Object.fromEntries), body=body,
                           signal=controller.signal, cache="no-store", credentials="omit")
        try:
            response = await js.fetch(url, options)
        except JsException:
            if self._leaving.left:  # refused as the page goes away: no failure of the server
                await self._leaving.until_back()
            raise await self._refusal(url) from None
        except BaseException:  # Stop while waiting for the headers
            controller.abort()
            raise
        return _FetchResponse(response, controller, self._leaving)

    async def get_json(self, url: str, headers: dict[str, str]):
        """GET ``url`` → ``(status, headers, data)``, ``data`` ``None`` when the body is not JSON."""
        options = _options(method="GET", headers=to_js(headers, dict_converter=js.Object.fromEntries),
                           cache="no-store", credentials="omit")
        try:
            response = await js.fetch(url, options)
        except JsException:
            raise await self._refusal(url) from None
        headers_out = {str(pair[0]).lower(): str(pair[1]) for pair in response.headers.entries()}
        try:
            data = (await response.json()).to_py()
        except (JsException, AttributeError):
            data = None
        return int(response.status), headers_out, data
