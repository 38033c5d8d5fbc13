"""``OpenAIAgent``: the ``app.agent.Agent`` protocol over an OpenAI-compatible server (DESIGN.md §12).

One turn is one or more ``POST <base>/chat/completions`` requests with
``stream: true``, ``stream_options: {include_usage: true}`` and the
``regenerate_scene`` tool (``app.agents.tools.TOOLS``):

0. first, ``UsageReported(configured model, None)``: a turn that fails later
   still names its model (usage not reported);
1. the thread (``app.agents.protocol.chat_messages``) goes out; the reply
   streams back as server-sent events (``app.agents.sse.SSEParser``); text
   pieces become ``TextDelta`` events, one per network chunk (the pieces a read
   delivers are joined, so the panel redraws once per read, not per token);
2. streamed tool calls are assembled from their pieces (by ``index``); at the
   end of the stream each becomes ``ToolCallStarted`` → the tool runs locally
   (``run_tool``) → ``ToolCallFinished``; arguments that are not a JSON
   object give an ``is_error`` result (a card, not a crash); the results go
   back as ``tool`` messages and the model is asked again to finish the turn
   (at most ``max_tool_rounds`` times); a server that refuses ``tools`` with
   a 400 naming them (a model without tool support) is asked again without;
   a server that ignores ``stream`` and answers one JSON completion is read
   as one chunk;
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
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from app.agent import AgentEvent, TextDelta, ToolCallFinished, ToolCallStarted
from app.agents.errors import ModelError, TransportError, http_error, scrub
from app.agents.events import TokenUsage, UsageReported, usage_from_chunk
from app.agents.protocol import DEFAULT_MAX_TURNS, chat_messages, slim_result_text, tool_call_message
from app.agents.sse import SSEParser
from app.agents.tools import TOOLS, error_result, run_tool
from app.model import Message, ToolCallPart

__all__ = ["AgentConfig", "OpenAIAgent", "StreamResponse", "Transport", "list_models", "request_headers"]

MAX_ERROR_BODY = 4096
"""Characters of an error response's body read for its message."""

IDLE_TIMEOUT_S = 180.0
"""Seconds without response headers or a new chunk before a turn fails with ``timeout`` (a local
server may take a minute or more to load a model before its first byte)."""


FEED_BYTES = 256 * 1024
"""A network read longer than this is parsed in slices of this many bytes, with ``pause`` between
them: one read of megabytes (a 10 MB line) never becomes one long task of the page (DESIGN.md §12)."""


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


class _ToolsRefused(Exception):
    """The server answered 400 naming tools (e.g. Ollama's "does not support tools")."""


@dataclass
class _PendingCall:
    name: str = ""
    arguments: str = ""


@dataclass
class _Round:
    """What one streamed request brought: its text, tool calls, usage, model name."""

    text: str = ""
    calls: dict[int, _PendingCall] | None = None
    usage: TokenUsage | None = None
    model: str | None = None


def _new_call_id() -> str:
    return "call_" + os.urandom(8).hex()


class OpenAIAgent:
    """An ``Agent`` speaking Chat Completions to ``config.base_url`` through ``transport``.

    ``system``: a callable giving the system prompt for each turn (or ``None``);
    ``tool_runner``: ``(name, args) -> (live result, is_error)``, plain or async
    (default ``app.agents.tools.run_tool``); ``now``: epoch seconds (for an
    HTTP-date ``Retry-After``); ``new_id``: tool-call ids (unique, §5); ``pause``: awaited between
    the ``FEED_BYTES`` slices of one long network read (the browser passes
    ``app.browser.tasks.next_task``, which lets the page draw; default ``asyncio.sleep(0)``).
    """

    def __init__(self, transport: Transport, config: AgentConfig, *,
                 system: Callable[[], str | None] | None = None,
                 tool_runner: Callable[[str, dict[str, Any]], Any] = run_tool,
                 max_tool_rounds: int = 4, now: Callable[[], float] = time.time,
                 new_id: Callable[[], str] = _new_call_id, idle_timeout_s: float | None = IDLE_TIMEOUT_S,
                 pause: Callable[[], Awaitable[None]] = lambda: asyncio.sleep(0)) -> None:
        self.transport = transport
        self.config = config
        self._system = system
        self._tool_runner = tool_runner
        self.max_tool_rounds = max_tool_rounds
        self._now = now
        self._new_id = new_id
        self.idle_timeout_s = idle_timeout_s
        self._pause = pause
        self._offer_tools = True

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
        messages = chat_messages(history, text, max_turns=config.max_turns, system=system)
        total: TokenUsage | None = TokenUsage(0, 0, 0)
        model: str | None = None
        for _ in range(self.max_tool_rounds + 1):
            result = _Round()
            try:
                async for event in self._stream(messages, result, tools=self._offer_tools):
                    yield event
            except _ToolsRefused:  # a model without tool support: ask again without tools
                self._offer_tools = False
                result = _Round()
                async for event in self._stream(messages, result, tools=False):
                    yield event
            model = result.model or model
            total = total + result.usage if (total is not None and result.usage is not None) else None
            if not result.calls:
                yield UsageReported(model or config.model, total)
                return
            finished: list[tuple[str, str, dict[str, Any], dict[str, Any], bool]] = []
            for index in sorted(result.calls):
                pending = result.calls[index]
                call_id, name = self._new_id(), pending.name or "tool"
                args, parsed = _parse_arguments(pending.arguments)
                yield ToolCallStarted(call_id, name, args)
                if parsed:
                    outcome = self._tool_runner(name, args)
                    live, is_error = (await outcome) if inspect.isawaitable(outcome) else outcome
                else:
                    excerpt = scrub(pending.arguments, None, 80)
                    live, is_error = error_result(f"The call's arguments are not a JSON object: {excerpt}"), True
                yield ToolCallFinished(call_id, live, is_error=is_error)
                finished.append((call_id, name, args, live, is_error))
            messages.append(tool_call_message([(c, n, a) for c, n, a, _, _ in finished], result.text))
            for call_id, name, _, live, is_error in finished:
                part = ToolCallPart(tool_call_id=call_id, tool_name=name, result=live, is_error=is_error or None)
                messages.append({"role": "tool", "tool_call_id": call_id, "content": slim_result_text(part)})
        raise ModelError("tool-rounds", count=self.max_tool_rounds)

    async def _stream(self, messages: list[dict[str, Any]], result: _Round, *, tools: bool) -> AsyncIterator[TextDelta]:
        """One streamed request: yields text per chunk, fills ``result``; raises ``ModelError``
        (``_ToolsRefused`` for a 400 that names tools, before anything was yielded)."""
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
                text = (await response.text())[:MAX_ERROR_BODY]
                if tools and response.status == 400 and "tool" in text.lower():
                    raise _ToolsRefused()
                raise http_error(response.status, response.headers, text, model=config.model,
                                 secret=config.api_key, now_s=self._now())
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
            parser = SSEParser()
            chunks = response.__aiter__()
            try:
                while True:
                    try:
                        chunk = await self._within(chunks.__anext__())
                    except StopAsyncIteration:
                        break
                    for start in range(0, len(chunk), FEED_BYTES):  # a huge read: parsed in slices, paused between
                        if start:
                            await self._pause()
                        pieces = state.take(parser.feed(memoryview(chunk)[start:start + FEED_BYTES]))
                        if pieces:
                            yield TextDelta(pieces)
                        if state.error is not None:
                            raise state.error
                        if state.done:
                            break
                    if state.done:
                        break
            except TransportError:
                raise ModelError("stream-cut") from None
            if not state.done:
                pieces = state.take(parser.close())  # what the decoder still held (an unterminated event is dropped)
                if pieces:
                    yield TextDelta(pieces)
                if state.error is not None:
                    raise state.error
            if not (state.done or state.finished):
                raise ModelError("stream-cut")
        finally:
            await response.aclose()


class _StreamState:
    """Folds parsed events into a ``_Round``; ``done`` after ``[DONE]``, ``finished`` after a finish_reason.

    ``error``: the ``ModelError`` an event said (an error event, an unparseable one). ``take``
    returns the text that came before it in the same read, and the caller raises it after
    showing that text, so nothing the server sent before the failure is dropped.
    """

    def __init__(self, result: _Round, secret: str) -> None:
        self.result = result
        self.secret = secret
        self.done = False
        self.finished = False
        self.error: ModelError | None = None

    def _decode(self, events) -> list[tuple[Any, Any]]:
        """``(event, parsed JSON)`` up to ``[DONE]``; the events of one read are parsed in one
        ``json.loads`` (one call instead of one per token), item by item only to find a bad one."""
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
        if self.done or self.error is not None:
            return ""
        pieces: list[str] = []
        result = self.result
        for event, chunk in self._decode(events):
            if not isinstance(chunk, dict):
                self.error = ModelError("bad-event", excerpt=scrub(event.data.strip(), self.secret, 80))
                break
            if chunk.get("error") is not None or event.event == "error":
                error = chunk.get("error")
                message = error.get("message") if isinstance(error, dict) else error
                self.error = ModelError("stream-error", message=scrub(str(message or event.data), self.secret))
                break
            if isinstance(chunk.get("model"), str) and chunk["model"]:
                result.model = chunk["model"]
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
        text = "".join(pieces)
        result.text += text
        return text

    def take_completion(self, body: str) -> str:
        """Fold a non-streamed ``chat.completion`` body in (``choices[].message``); returns its text."""
        try:
            completion = json.loads(body)
        except ValueError:
            raise ModelError("bad-event", excerpt=scrub(body, self.secret, 80)) from None
        if not isinstance(completion, dict) or not isinstance(completion.get("choices"), list):
            raise ModelError("bad-event", excerpt=scrub(body, self.secret, 80))
        chunk = dict(completion)
        chunk["choices"] = [{**c, "delta": c.get("message") or {}} for c in completion["choices"] if isinstance(c, dict)]
        for choice in chunk["choices"]:
            calls = choice["delta"].get("tool_calls") if isinstance(choice["delta"], dict) else None
            for index, call in enumerate(calls or []):
                if isinstance(call, dict) and "index" not in call:
                    call["index"] = index
        text = self.take([_Whole(json.dumps(chunk))])
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
