"""``OpenAIAgent``: the ``app.agent.Agent`` protocol over an OpenAI-compatible server (DESIGN.md §12).

One turn is one or more ``POST <base>/chat/completions`` requests with
``stream: true``, ``stream_options: {include_usage: true}`` and the
``regenerate_scene`` tool (``app.agents.tools.TOOLS``):

0. first, ``UsageReported(configured model, None)``: a turn that fails later
   still names its model (usage not reported);
1. the thread (``app.agents.chat_completions.chat_messages``) goes out; the reply
   streams back as server-sent events (``app.agents.sse.SSEParser``); text
   pieces become ``TextDelta`` events, one per network chunk (the pieces a read
   delivers are joined, so the panel redraws once per read, not per token);
2. streamed tool calls are assembled from their pieces (by ``index``); at the
   end of the stream each becomes ``ToolCallStarted`` → the tool runs locally
   (``run_tool``) → ``ToolCallFinished``; arguments that are not a JSON
   object give an ``is_error`` result (a card, not a crash); the results go
   back as ``tool`` messages and the model is asked again to finish the turn
   (at most ``max_tool_rounds`` times); a server that refuses ``tools`` (a 400
   naming them: a model without tool support; llama.cpp's 500 "tools param
   requires --jinja flag": a server without templates) is asked again without,
   and this agent does not offer them again (the tab keeps the agent while the
   settings stay); a server that ignores ``stream`` and answers one JSON
   completion is read as one chunk;
   tool-call ids: the model's own go back unchanged in ``tool_calls`` and the
   ``tool`` message; the stored id is the app's unique one with the model's
   appended (``app.agents.chat_completions.stored_call_id``); a 400 that refuses the
   tool-call ids (``refuses_call_ids``: a conversation begun on another server,
   whose ids this one does not take, e.g. Mistral's nine alphanumerics) is
   sent again with every id in the form every server accepts
   (``app.agents.chat_completions.wire_messages`` ``strict``), and this agent keeps
   sending that form, so the conversation goes on after the base URL changed;
   a prompt over the server's context (``app.agents.context``) is sent once
   more with fewer of the oldest turns, and the turn's ``UsageReported`` says
   how many were left out (``dropped_turns``); over it again, the turn fails
   with ``context``;
   a reply the server ended with ``finish_reason: "length"`` is followed by
   ``ReplyCut`` (the turn ends cut, not complete);
   the configured API key is masked in everything the server sends that the
   thread keeps (text, tool-call arguments, model name: ``KeyMask``);
3. last, ``UsageReported(model, usage)``: usage summed over the turn's
   requests, ``None`` when any of them reported none ("not reported", never
   invented); the model name from the last chunk that named one, else the
   configured model (the one asked for).

Every failure raises ``app.agents.errors.ModelError`` (the runtime then marks
the turn failed and the view localizes the code). Cancelling the consuming task
closes the response, which aborts the request in the browser transport.

The network is behind ``Transport`` (injected): the browser layer implements it
with ``fetch`` (``app.browser.model_transport``), tests with a fake.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, replace
from typing import Any, NoReturn, Protocol

from app.agent import AgentEvent, TextDelta, ToolCallFinished, ToolCallStarted
from app.agents.context import ContextOverflow, context_overflow, turns_that_fit
from app.agents.errors import KeyMask, ModelError, TransportError, http_error, mask_key, scrub
from app.agents.events import ReplyCut, TokenUsage, UsageReported, usage_from_chunk
from app.agents.chat_completions import (DEFAULT_MAX_TURNS, past_turns, slim_result_text, stored_call_id,
                                         tool_call_message, wire_messages)
from app.agents.sse import SSEParser
from app.agents.tools import TOOLS, error_result, run_tool
from app.json_steps import loads_in_steps, run_paused, run_steps
from app.model import Message, ToolCallPart

__all__ = ["AgentConfig", "ConnectionCheck", "OpenAIAgent", "StreamResponse", "Transport", "check_connection",
           "list_models", "probe_tools",
           "refuses_tools", "request_headers"]

MAX_ERROR_BODY = 4096
"""Characters of an error response's body read for its message."""

IDLE_TIMEOUT_S = 180.0
"""Seconds without response headers or a new chunk before a turn fails with ``timeout`` (a local
server may take a minute or more to load a model before its first byte)."""


PROBE_TIMEOUT_S = 60.0
"""Seconds Test connection waits for the answer to its tools request (``probe_tools``)."""

FEED_BYTES = 256 * 1024
"""A network read longer than this is parsed in slices of this many bytes, with ``pause`` between
them: one read of megabytes (a 10 MB line) never becomes one long task of the page (DESIGN.md §12).
An event's JSON longer than this many characters is decoded in slices of this size too."""


class StreamResponse(Protocol):
    """A response whose body is read as it arrives.

    ``status``: the HTTP status; ``headers``: the readable response headers,
    names in lower case; iterating yields the body's bytes chunk by chunk
    (raising ``TransportError`` when the connection breaks); ``text()`` reads
    the whole (error) body; ``aclose()`` stops reading and aborts the request.
    """

    status: int
    headers: Mapping[str, str]

    def __aiter__(self) -> AsyncIterator[bytes]: ...

    async def text(self) -> str: ...

    async def aclose(self) -> None: ...


class Transport(Protocol):
    """The network: ``post_stream`` opens a streamed POST, ``get_json`` fetches JSON.

    ``get_json`` returns ``(status, headers, data)``, ``data`` being ``None``
    when the body is not JSON. Both raise ``TransportError`` when no response
    arrives (network, CORS, Content-Security-Policy).
    """

    async def post_stream(self, url: str, headers: dict[str, str], body: str) -> StreamResponse: ...

    async def get_json(self, url: str, headers: dict[str, str]) -> tuple[int, Mapping[str, str], Any]: ...


@dataclass(frozen=True)
class AgentConfig:
    """What a request needs: ``base_url`` (no trailing slash, e.g. ``http://127.0.0.1:11434/v1``),
    ``model``, ``api_key`` (``""`` = none, for local servers), ``max_turns`` of history sent."""

    base_url: str
    model: str
    api_key: str = ""
    max_turns: int = DEFAULT_MAX_TURNS

    def __repr__(self) -> str:  # never print the key (logs, tracebacks)
        return f"AgentConfig(base_url={self.base_url!r}, model={self.model!r}, api_key={'***' if self.api_key else ''!r})"


def request_headers(api_key: str, *, stream: bool) -> dict[str, str]:
    """Request headers: JSON body, ``Authorization: Bearer`` only when a key is set.

    >>> request_headers("", stream=False)
    {'Accept': 'application/json'}
    """
    headers = {"Accept": "text/event-stream" if stream else "application/json"}
    if stream:
        headers["Content-Type"] = "application/json"
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def _transport_error(error: TransportError, url: str) -> ModelError:
    if error.kind in ("cors", "blocked"):
        return ModelError(error.kind, origin=error.origin or url)
    return ModelError("network", url=url)


async def list_models(transport: Transport, config: AgentConfig, *, now: Callable[[], float] = time.time) -> list[str]:
    """``GET <base>/models`` → the model ids the server lists (``data[].id``), sorted.

    Raises ``ModelError`` like a turn does (``auth``, ``network``, ``cors``, …;
    ``bad-event`` when the answer is not a model list).
    """
    if not config.base_url:
        raise ModelError("settings", field="baseUrl")
    url = f"{config.base_url}/models"
    try:
        status, headers, data = await transport.get_json(url, request_headers(config.api_key, stream=False))
    except TransportError as error:
        raise _transport_error(error, url) from None
    if not 200 <= status <= 299:
        body = json.dumps(data) if data is not None else ""
        raise http_error(status, headers, body, model=config.model, secret=config.api_key, now_s=now())
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ModelError("bad-event", excerpt=scrub(json.dumps(data)[:80], config.api_key))
    return sorted({item["id"] for item in items if isinstance(item, dict) and isinstance(item.get("id"), str)})


def refuses_tools(status: int, text: str) -> bool:
    """True when a non-2xx answer (``status``, body ``text``) refuses the request's ``tools``: a 400
    naming tools (a model without tool support, e.g. Ollama's "does not support tools"), or a 500
    naming them with ``--jinja``, "tools param" or "not support" (llama.cpp without templates,
    ``--no-jinja``: "tools param requires --jinja flag"; DESIGN.md §12).

    >>> refuses_tools(500, '{"error":{"code":500,"message":"tools param requires --jinja flag"}}')
    True
    >>> refuses_tools(500, '{"error":{"message":"Internal error."}}'), refuses_tools(400, "bad request")
    (False, False)
    """
    lower = text.lower()
    if "tool" not in lower:
        return False
    return status == 400 or (status == 500 and any(word in lower for word in ("jinja", "tools param", "not support")))


async def probe_tools(transport: Transport, config: AgentConfig) -> bool | None:
    """One tiny request offering the tool (``max_tokens: 1``, not streamed), for Test connection:
    ``False`` when the server refuses tools (``refuses_tools``), ``True`` when it answers 2xx, ``None``
    when it answers anything else, cannot be reached or sends no headers within ``PROBE_TIMEOUT_S``
    (the model list already said what there is)."""
    body = json.dumps({"model": config.model, "messages": [{"role": "user", "content": "Hi"}], "tools": TOOLS,
                       "max_tokens": 1, "stream": False})
    headers = {**request_headers(config.api_key, stream=False), "Content-Type": "application/json"}
    try:
        response = await asyncio.wait_for(
            transport.post_stream(f"{config.base_url}/chat/completions", headers, body), PROBE_TIMEOUT_S)
    except (TransportError, asyncio.TimeoutError):
        return None
    try:
        if 200 <= response.status <= 299:
            return True
        return False if refuses_tools(response.status, (await response.text())[:MAX_ERROR_BODY]) else None
    finally:
        await response.aclose()


@dataclass(frozen=True)
class ConnectionCheck:
    """What "Test connection" found (DESIGN.md §12): the server's ``models`` (sorted ids), the ``model``
    configured (``""``: none) and ``tools``: ``probe_tools``'s answer for it (or the first listed)."""

    models: list[str]
    model: str
    tools: bool | None = None

    @property
    def model_listed(self) -> bool:
        """False when a configured model is not among the listed ones (llama.cpp answers anyway, with its own)."""
        return not self.model or self.model in self.models

    def warnings(self) -> list[tuple[str, str, dict[str, Any]]]:
        """``(code, locale key, params)`` of each thing a turn would trip on: ``model-not-listed``
        (params ``model``, ``models``: the listed ids, at most 8 then "…"), ``tools-refused``."""
        found: list[tuple[str, str, dict[str, Any]]] = []
        if not self.model_listed:
            shown = ", ".join(self.models[:8]) + (" …" if len(self.models) > 8 else "") if self.models else "—"
            found.append(("model-not-listed", "model.settings.testModelMissing", {"model": self.model, "models": shown}))
        if self.tools is False:
            found.append(("tools-refused", "model.settings.testToolsRefused", {}))
        return found


async def check_connection(transport: Transport, config: AgentConfig) -> ConnectionCheck:
    """Test connection: ``list_models`` (raising ``ModelError`` like it), then one tiny tools request
    (``probe_tools``) for the configured model, or the first listed when none is configured."""
    models = await list_models(transport, config)
    model = config.model or (models[0] if models else "")
    tools = await probe_tools(transport, replace(config, model=model)) if model else None
    return ConnectionCheck(models, config.model, tools)


def refuses_call_ids(status: int, text: str) -> bool:
    """True when a non-2xx answer (``status``, body ``text``) refuses the request's tool-call ids: a 400
    naming them (Mistral's API: "Tool call id was … but must be a-z, A-Z, 0-9, with a length of 9";
    its chat templates in llama.cpp and vLLM: "Tool call IDs should be alphanumeric strings with length
    9"; DESIGN.md §12).

    >>> refuses_call_ids(400, '{"message":"Tool call id was abc but must be a-z, A-Z, 0-9, with a length of 9."}')
    True
    >>> refuses_call_ids(400, "tool_call_id must be alphanumeric"), refuses_call_ids(400, "tools not supported")
    (True, False)
    """
    return status == 400 and re.search(r"tool[\s_-]*call[\s_-]*ids?\b", text, re.IGNORECASE) is not None


class _IdsRefused(Exception):
    """The server refused the request's tool-call ids (``refuses_call_ids``)."""


class _ToolsRefused(Exception):
    """The server refused the request's tools (``refuses_tools``)."""


class _ContextExceeded(Exception):
    """The prompt is over the server's context (``app.agents.context.context_overflow``)."""

    def __init__(self, overflow: ContextOverflow) -> None:
        super().__init__(overflow.message)
        self.overflow = overflow


@dataclass
class _PendingCall:
    name: str = ""
    arguments: str = ""
    id: str | None = None  # the model's id for the call (kept in the stored id, DESIGN.md §12)


@dataclass
class _Round:
    """What one streamed request brought: its text, tool calls, usage, model name."""

    text: str = ""
    calls: dict[int, _PendingCall] | None = None
    usage: TokenUsage | None = None
    model: str | None = None
    finish_reason: str | None = None


def _new_call_id() -> str:
    return "call_" + os.urandom(8).hex()


class OpenAIAgent:
    """An ``Agent`` speaking Chat Completions to ``config.base_url`` through ``transport``.

    ``system``: a callable giving the system prompt for each turn (or ``None``);
    ``tool_runner``: ``(name, args) -> (live result, is_error)``, plain or async
    (default ``app.agents.tools.run_tool``); ``now``: epoch seconds (for an
    HTTP-date ``Retry-After``); ``new_id``: tool-call ids (unique, §5); ``offer_tools``: False when
    the server is known to refuse tools (Test connection found it, ``check_connection``); ``pause``: awaited between
    the ``FEED_BYTES`` slices of one long network read (the browser passes
    ``app.browser.tasks.next_task``, which lets the page draw; default ``asyncio.sleep(0)``).
    """

    def __init__(self, transport: Transport, config: AgentConfig, *,
                 system: Callable[[], str | None] | None = None,
                 tool_runner: Callable[[str, dict[str, Any]], Any] = run_tool,
                 max_tool_rounds: int = 4, now: Callable[[], float] = time.time,
                 new_id: Callable[[], str] = _new_call_id, idle_timeout_s: float | None = IDLE_TIMEOUT_S,
                 offer_tools: bool = True,
                 pause: Callable[[], Awaitable[None]] = lambda: asyncio.sleep(0)) -> None:
        self.transport = transport
        self.config = config
        self._system = system
        self._tool_runner = tool_runner
        self.max_tool_rounds = max_tool_rounds
        self._now = now
        self._new_id = new_id
        self.idle_timeout_s = idle_timeout_s
        self._offer_tools = offer_tools
        self._strict_ids = False  # a server refused the ids as the models gave them: all sent in one form
        self._pause = pause

    async def _within(self, awaitable: Awaitable[Any]) -> Any:
        """``await awaitable``, failing with ``timeout`` after ``idle_timeout_s`` without progress."""
        if self.idle_timeout_s is None:
            return await awaitable
        try:
            return await asyncio.wait_for(awaitable, self.idle_timeout_s)
        except asyncio.TimeoutError:
            raise ModelError("timeout", seconds=round(self.idle_timeout_s)) from None

    def __repr__(self) -> str:
        return f"OpenAIAgent({self.config!r})"

    def mask_secret(self, text: str) -> str:
        """``text`` with the configured API key masked (``app.agents.errors.mask_key``): the runtime stores
        the user's message so, should the key have been pasted into it (DESIGN.md §12: the key is never in
        ``maic-agent-threads``, history or exports)."""
        return mask_key(text, self.config.api_key)

    async def run(self, history: list[Message], text: str) -> AsyncIterator[AgentEvent | UsageReported]:
        """Answer ``text`` after ``history`` (see the module docstring); raises ``ModelError``."""
        config = self.config
        if not config.base_url:
            raise ModelError("settings", field="baseUrl")
        if not config.model:
            raise ModelError("settings", field="model")
        # The model is named before anything streams, so a turn that fails still records it (DESIGN.md §9
        # per-turn meta; usage not reported); the last report of the turn replaces this one.
        yield UsageReported(config.model, None)
        system = self._system() if self._system else None
        head = [{"role": "system", "content": system}] if system else []
        turns = past_turns(history)
        kept = turns[max(0, len(turns) - config.max_turns):] if config.max_turns > 0 else []
        current: list[dict[str, Any]] = [{"role": "user", "content": text}]  # this turn: grows by tool rounds
        dropped: int | None = None  # earlier turns left out for the server's context (None: not tried)
        total: TokenUsage | None = TokenUsage(0, 0, 0)
        model: str | None = None
        for _ in range(self.max_tool_rounds + 1):
            while True:
                result = _Round()
                stored = head + [m for turn in kept for m in turn] + current
                messages = wire_messages(stored, strict=self._strict_ids)

                def ids(sent: list[dict[str, Any]] = messages, stored: list[dict[str, Any]] = stored) -> bool:
                    """Asked only when a server refused the ids: would the strict form send other ones?"""
                    return not self._strict_ids and wire_messages(stored, strict=True) != sent

                try:
                    async for event in self._stream(messages, result, tools=self._offer_tools, ids=ids):
                        yield event
                    break
                except _IdsRefused:  # ids another server gave: sent again, and from now on, in the one form
                    self._strict_ids = True
                except _ToolsRefused:  # no tool support, or no templates: ask again without tools
                    self._offer_tools = False
                except _ContextExceeded as error:  # send fewer of the oldest turns, once per turn
                    keep = turns_that_fit(kept, error.overflow, head + current + (TOOLS if self._offer_tools else []))
                    if dropped is not None or not kept:
                        raise ModelError("context", detail=scrub(error.overflow.message, config.api_key)) from None
                    dropped = len(kept) - keep
                    kept = kept[len(kept) - keep:]
                    yield UsageReported(config.model, None, dropped)
            model = result.model or model
            total = total + result.usage if (total is not None and result.usage is not None) else None
            if not result.calls:
                yield UsageReported(model or config.model, total, dropped or 0)
                if not result.text.strip() and len(current) == 1:
                    # nothing said and no tool run: a failure the user sees and can regenerate, never an empty
                    # "complete" reply the thread cannot keep (its question then dropped from what is sent)
                    raise ModelError("empty-reply")
                if result.finish_reason == "length":
                    yield ReplyCut()
                return
            async for event in self._run_tools(result, current):
                yield event
        raise ModelError("tool-rounds", count=self.max_tool_rounds)

    async def _run_tools(self, result: _Round, current: list[dict[str, Any]]) -> AsyncIterator[AgentEvent]:
        """Run the round's tool calls in the model's order, yielding each call's ``ToolCallStarted`` and
        ``ToolCallFinished`` (arguments that are no JSON object fail the call); then append the
        assistant's tool-call message and one tool message per call to ``current`` (DESIGN.md §12)."""
        config = self.config
        finished: list[tuple[str, str, dict[str, Any], dict[str, Any], bool]] = []
        for index in sorted(result.calls):
            pending = result.calls[index]
            call_id, name = stored_call_id(self._new_id(), pending.id), pending.name or "tool"
            args, parsed = _parse_arguments(mask_key(pending.arguments, config.api_key))
            yield ToolCallStarted(call_id, name, args)
            if parsed:
                outcome = self._tool_runner(name, args)
                live, is_error = (await outcome) if inspect.isawaitable(outcome) else outcome
            else:
                excerpt = scrub(pending.arguments, config.api_key, 80)
                live, is_error = error_result(f"The call's arguments are not a JSON object: {excerpt}"), True
            yield ToolCallFinished(call_id, live, is_error=is_error)
            finished.append((call_id, name, args, live, is_error))
        # stored ids, as in ``past_turns``: the request's ``wire_messages`` gives the sent ones
        current.append(tool_call_message([(c, n, a) for c, n, a, _, _ in finished], result.text))
        for call_id, name, _, live, is_error in finished:
            part = ToolCallPart(tool_call_id=call_id, tool_name=name, result=live, is_error=is_error or None)
            current.append({"role": "tool", "tool_call_id": call_id, "content": slim_result_text(part)})

    async def _stream(self, messages: list[dict[str, Any]], result: _Round, *, tools: bool,
                      ids: Callable[[], bool] = lambda: False) -> AsyncIterator[TextDelta]:
        """One streamed request: yields text per chunk, fills ``result``; raises ``ModelError``
        (``_ToolsRefused`` when the server refused the tools, ``_IdsRefused`` when it refused the
        tool-call ids and ``ids()`` says the strict form would send others, ``_ContextExceeded`` when the
        prompt is over its context: each before anything was yielded)."""
        config = self.config
        url = f"{config.base_url}/chat/completions"
        request: dict[str, Any] = {"model": config.model, "messages": messages, "stream": True,
                                   "stream_options": {"include_usage": True}}
        if tools:
            request["tools"] = TOOLS
        body = json.dumps(request, ensure_ascii=False)
        try:
            response = await self._within(
                self.transport.post_stream(url, request_headers(config.api_key, stream=True), body))
        except TransportError as error:
            raise _transport_error(error, url) from None
        try:
            if not 200 <= response.status <= 299:
                await self._refused(response, tools=tools, ids=ids)
            state = _StreamState(result, config.api_key)
            if "application/json" in response.headers.get("content-type", ""):
                # A server that ignored ``stream: true`` (some do when tools are offered): one whole completion.
                text = state.take_completion(await self._within(response.text()))
                if text:
                    yield TextDelta(text)
                return
            if "text/html" in response.headers.get("content-type", ""):
                # A web page (a proxy's login page, a wrong base URL) answered 200: say what came, not "cut off".
                text = (await self._within(response.text()))[:MAX_ERROR_BODY]
                raise ModelError("bad-event", excerpt=scrub(" ".join(text.split()), config.api_key, 80))
            async for pieces in self._events(response, state):
                yield TextDelta(pieces)
        finally:
            await response.aclose()

    async def _refused(self, response: StreamResponse, *, tools: bool,
                       ids: Callable[[], bool] = lambda: False) -> NoReturn:
        """Raise what a non-2xx answer means: ``_ContextExceeded`` (the prompt is over the server's
        context), ``_IdsRefused`` (the tool-call ids were refused and ``ids()``: others can be sent),
        ``_ToolsRefused`` (tools were offered and refused), else ``http_error``'s ``ModelError``
        (DESIGN.md §12)."""
        config = self.config
        text = (await response.text())[:MAX_ERROR_BODY]
        overflow = context_overflow(response.status, text)
        if overflow is not None:
            raise _ContextExceeded(overflow)
        if refuses_call_ids(response.status, text) and ids():
            raise _IdsRefused()
        if tools and refuses_tools(response.status, text):
            raise _ToolsRefused()
        raise http_error(response.status, response.headers, text, model=config.model,
                         secret=config.api_key, now_s=self._now())

    async def _events(self, response: StreamResponse, state: _StreamState) -> AsyncIterator[str]:
        """The reply's text of an event stream, piece by piece, as ``state`` folds its events; a huge
        read is parsed in ``FEED_BYTES`` slices with a pause between. Raises the ``ModelError`` an
        event said, ``stream-cut`` when the connection broke or ended before the reply did."""
        parser = SSEParser()
        chunks = response.__aiter__()
        try:
            while not state.done:
                try:
                    chunk = await self._within(chunks.__anext__())
                except StopAsyncIteration:
                    break
                for start in range(0, len(chunk), FEED_BYTES):
                    if start:
                        await self._pause()
                    pieces = await self._taken(state, parser.feed(memoryview(chunk)[start:start + FEED_BYTES]))
                    if state.error is not None or state.done:
                        pieces += state.rest()
                    if pieces:
                        yield pieces
                    if state.error is not None:
                        raise state.error
                    if state.done:
                        break
        except TransportError:
            raise ModelError("stream-cut") from None
        if not state.done:
            pieces = await self._taken(state, parser.close())  # what the decoder still held (an unterminated event is dropped)
            pieces += state.rest()
            if pieces:
                yield pieces
            if state.error is not None:
                raise state.error
        if not (state.done or state.finished):
            raise ModelError("stream-cut")


    async def _taken(self, state: _StreamState, events) -> str:
        """``state.take(events)``, with ``pause`` awaited between the slices of an event's long JSON."""
        return await run_paused(state.take_steps(events), self._pause)


class _StreamState:
    """Folds parsed events into a ``_Round``; ``done`` after ``[DONE]``, ``finished`` after a finish_reason.

    ``error``: the ``ModelError`` an event said (an error event, an unparseable one). ``take``
    returns the text that came before it in the same read, and the caller raises it after
    showing that text, so nothing the server sent before the failure is dropped.
    """

    def __init__(self, result: _Round, secret: str) -> None:
        self.result = result
        self.secret = secret
        self.mask = KeyMask(secret)  # the key never reaches the thread, even split across reads
        self.done = False
        self.finished = False
        self.error: ModelError | None = None

    def _decode(self, events) -> Generator[None, None, list[tuple[Any, Any]]]:
        """Steps whose value is ``(event, parsed JSON)`` up to ``[DONE]``; the events of one read are
        parsed in one ``json.loads`` (one call instead of one per token), item by item only to find a
        bad one. When one event's JSON is over ``FEED_BYTES`` characters, each is parsed on its own and
        that one in slices (``loads_in_steps``), a step between them."""
        datas: list[str] = []
        kept = []
        for event in events:
            data = event.data.strip()
            if data == "[DONE]":
                self.done = True
                break
            datas.append(data)
            kept.append(event)
        if not datas:
            return []
        if any(len(data) > FEED_BYTES for data in datas):
            parsed = []
            for data in datas:
                try:
                    parsed.append((yield from loads_in_steps(data, step_chars=FEED_BYTES)))
                except ValueError:
                    self.error = ModelError("bad-event", excerpt=scrub(data, self.secret, 80))
                    break
                yield
            return list(zip(kept, parsed))
        try:
            parsed = json.loads("[" + ",".join(datas) + "]")
            if len(parsed) != len(datas):
                raise ValueError("an event held more than one value")
        except ValueError:
            parsed = []
            for data in datas:
                try:
                    parsed.append(json.loads(data))
                except ValueError:
                    self.error = ModelError("bad-event", excerpt=scrub(data, self.secret, 80))
                    break
        return list(zip(kept, parsed))

    def take(self, events) -> str:
        """The text of ``events`` up to ``[DONE]`` or the first failing event (then ``error`` is set)."""
        return run_steps(self.take_steps(events))

    def take_steps(self, events) -> Generator[None, None, str]:
        """``take`` as a generator of steps (``None`` between the slices of a long event's JSON, see
        ``_decode``) whose value is the text."""
        if self.done or self.error is not None:
            return ""
        pieces: list[str] = []
        result = self.result
        for event, chunk in (yield from self._decode(events)):
            if not isinstance(chunk, dict):
                self.error = ModelError("bad-event", excerpt=scrub(event.data.strip(), self.secret, 80))
                break
            if chunk.get("error") is not None or event.event == "error":
                error = chunk.get("error")
                message = error.get("message") if isinstance(error, dict) else error
                self.error = ModelError("stream-error", message=scrub(str(message or event.data), self.secret))
                break
            if isinstance(chunk.get("model"), str) and chunk["model"]:
                result.model = mask_key(chunk["model"], self.secret)
            usage = usage_from_chunk(chunk.get("usage"))
            if usage is not None:
                result.usage = usage
            for choice in chunk.get("choices") or []:
                if not isinstance(choice, dict):
                    continue
                delta = choice.get("delta") or {}
                content = delta.get("content") if isinstance(delta, dict) else None
                if isinstance(content, str) and content:
                    pieces.append(content)
                for piece in (delta.get("tool_calls") or []) if isinstance(delta, dict) else []:
                    self._tool_piece(piece)
                if choice.get("finish_reason"):
                    self.finished = True
                    result.finish_reason = str(choice["finish_reason"])
        joined = "".join(pieces)
        if len(joined) > FEED_BYTES:
            yield  # masking the key and keeping the text copy megabytes: a step of their own
        text = self.mask.feed(joined)
        result.text += text
        return text

    def rest(self) -> str:
        """The text ``take`` held back as a possible start of the key (the stream ended or failed: it was not)."""
        text = self.mask.flush()
        self.result.text += text
        return text

    def take_completion(self, body: str) -> str:
        """Fold a non-streamed ``chat.completion`` body in (``choices[].message``); returns its text."""
        try:
            completion = json.loads(body)
        except ValueError:
            raise ModelError("bad-event", excerpt=scrub(body, self.secret, 80)) from None
        if isinstance(completion, dict) and completion.get("error") is not None:  # 200 with an error object
            error = completion["error"]
            message = error.get("message") if isinstance(error, dict) else error
            raise ModelError("stream-error", message=scrub(str(message or body), self.secret))
        if not isinstance(completion, dict) or not isinstance(completion.get("choices"), list):
            raise ModelError("bad-event", excerpt=scrub(body, self.secret, 80))
        chunk = dict(completion)
        chunk["choices"] = [{**c, "delta": c.get("message") or {}} for c in completion["choices"] if isinstance(c, dict)]
        for choice in chunk["choices"]:
            calls = choice["delta"].get("tool_calls") if isinstance(choice["delta"], dict) else None
            for index, call in enumerate(calls or []):
                if isinstance(call, dict) and "index" not in call:
                    call["index"] = index
        text = self.take([_Whole(json.dumps(chunk))]) + self.rest()
        if self.error is not None:
            raise self.error
        self.done = True
        return text

    def _tool_piece(self, piece: Any) -> None:
        if not isinstance(piece, dict):
            return
        calls = self.result.calls = self.result.calls or {}
        index = piece.get("index")
        if not isinstance(index, int):
            index = max(calls, default=-1) + (0 if piece.get("id") is None and calls else 1)
        pending = calls.setdefault(index, _PendingCall())
        if pending.id is None and isinstance(piece.get("id"), str) and piece["id"]:
            pending.id = piece["id"]
        function = piece.get("function") or {}
        name = function.get("name")
        if isinstance(name, str) and name != pending.name:  # some servers repeat the name in every piece
            pending.name += name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            pending.arguments += arguments
        elif isinstance(arguments, dict):  # some servers send the object itself
            pending.arguments += json.dumps(arguments)


class _Whole:
    """A stand-in event carrying one whole JSON chunk (``take_completion``)."""

    event = "message"

    def __init__(self, data: str) -> None:
        self.data = data


def _parse_arguments(text: str) -> tuple[dict[str, Any], bool]:
    """``(args, True)`` when ``text`` is a JSON object (blank counts as ``{}``), else ``({}, False)``."""
    if not text.strip():
        return {}, True
    try:
        value = json.loads(text)
    except ValueError:
        return {}, False
    return (value, True) if isinstance(value, dict) else ({}, False)
