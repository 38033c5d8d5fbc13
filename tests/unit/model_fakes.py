"""Transports for the model agent's CPython tests: scripted in memory, and urllib against tools/fake_openai.py."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from typing import Any

from app.agents.errors import TransportError


class ScriptedResponse:
    """A ``StreamResponse`` that yields ``chunks`` (an item that is an exception is raised)."""

    def __init__(self, status: int = 200, chunks: list[Any] = (), headers: dict[str, str] | None = None,
                 body: str = "") -> None:
        self.status = status
        self.headers = headers or {}
        self._chunks = list(chunks)
        self._body = body
        self.closed = False
        self.read = 0

    def __aiter__(self):
        return self._iterate()

    async def _iterate(self):
        for chunk in self._chunks:
            await asyncio.sleep(0)
            if isinstance(chunk, BaseException):
                raise chunk
            self.read += 1
            yield chunk

    async def text(self) -> str:
        return self._body

    async def aclose(self) -> None:
        self.closed = True


class ScriptedTransport:
    """Answers each ``post_stream`` with the next scripted response (or raises it when it is an exception)."""

    def __init__(self, *responses: Any, models: Any = None) -> None:
        self.responses = list(responses)
        self.posts: list[dict[str, Any]] = []
        self.opened: list[ScriptedResponse] = []
        self.models = models

    async def post_stream(self, url, headers, body):
        self.posts.append({"url": url, "headers": dict(headers), "body": json.loads(body)})
        response = self.responses.pop(0)
        if isinstance(response, BaseException):
            raise response
        self.opened.append(response)
        return response

    async def get_json(self, url, headers):
        self.posts.append({"url": url, "headers": dict(headers), "body": None})
        if isinstance(self.models, BaseException):
            raise self.models
        return self.models


def sse(*chunks: dict | str) -> bytes:
    """Encode chunk dicts (or raw data strings) as one SSE byte string."""
    out = b""
    for chunk in chunks:
        data = chunk if isinstance(chunk, str) else json.dumps(chunk, ensure_ascii=False)
        out += b"data: " + data.encode() + b"\n\n"
    return out


class UrllibResponse:
    def __init__(self, status: int, headers: dict[str, str], handle: Any) -> None:
        self.status, self.headers, self._handle = status, headers, handle

    def __aiter__(self):
        return self._iterate()

    async def _iterate(self):
        while True:
            try:
                data = await asyncio.to_thread(self._handle.read1, 65536)
            except OSError as error:
                raise TransportError("network") from error
            if not data:
                return
            yield data

    async def text(self) -> str:
        return (await asyncio.to_thread(self._handle.read)).decode("utf-8", "replace")

    async def aclose(self) -> None:
        self._handle.close()


class UrllibTransport:
    """A real HTTP transport over urllib (threads), for the fake server on 127.0.0.1."""

    async def post_stream(self, url, headers, body):
        request = urllib.request.Request(url, data=body.encode(), headers=headers, method="POST")
        try:
            handle = await asyncio.to_thread(urllib.request.urlopen, request, timeout=10)
        except urllib.error.HTTPError as error:
            return UrllibResponse(error.code, {k.lower(): v for k, v in error.headers.items()}, error)
        except OSError as error:
            raise TransportError("network") from error
        return UrllibResponse(handle.status, {k.lower(): v for k, v in handle.headers.items()}, handle)

    async def get_json(self, url, headers):
        request = urllib.request.Request(url, headers=headers)
        try:
            handle = await asyncio.to_thread(urllib.request.urlopen, request, timeout=10)
        except urllib.error.HTTPError as error:
            handle = error
        except OSError as error:
            raise TransportError("network") from error
        with handle:
            raw = handle.read()
            try:
                data = json.loads(raw)
            except ValueError:
                data = None
            return handle.status if hasattr(handle, "status") else handle.code, dict(handle.headers), data


FIXTURES = __import__("pathlib").Path(__file__).resolve().parents[1] / "fixtures" / "llama-server"


def transcript(name: str, chunk_size: int = 0) -> ScriptedResponse:
    """A recorded llama-server response (``tests/fixtures/llama-server/<name>``) as a ``ScriptedResponse``:
    its status, its headers (lower case) and its body, read in pieces of ``chunk_size`` bytes (0: whole)."""
    raw = (FIXTURES / name).read_bytes()
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    size = chunk_size or max(1, len(body))
    chunks = [body[i:i + size] for i in range(0, len(body), size)] if status == 200 else []
    return ScriptedResponse(status, chunks=chunks, headers=headers, body=body.decode("utf-8"))


NOW_MS = 1_780_000_000_000
"""The fixed clock of ``recorded_runtime`` (epoch ms)."""


def recorded_runtime(agent, store=None):
    """``(runtime, service, recorder)``: an ``AgentRuntime`` on course ``intro-ml`` answering with
    ``agent``, its thread in ``store`` (a fresh in-memory ``ThreadStore`` when None), each turn recorded
    by a ``HistoryService`` in memory; the clock is ``NOW_MS``. ``await recorder.drain()`` after a turn."""
    from app.history.recorder import HistoryRecorder
    from app.history.service import HistoryService
    from app.records import MemoryBackend
    from app.runtime import AgentRuntime
    from app.storage import MemoryStorage
    from app.store import ThreadStore

    service = HistoryService(MemoryBackend(), clock=lambda: NOW_MS)
    recorder = HistoryRecorder(service)
    runtime = AgentRuntime(store if store is not None else ThreadStore(MemoryStorage()), agent,
                           clock=lambda: NOW_MS, history=recorder)
    runtime.hydrate()
    runtime.set_stage("intro-ml")
    return runtime, service, recorder
