"""A fake OpenAI-compatible server for tests and benchmarks (standard library only, loopback only).

It speaks enough of the Chat Completions protocol for AgentBar (DESIGN.md §12):
``GET <prefix>/v1/models`` and ``POST <prefix>/v1/chat/completions`` with
``stream: true``, answering with scripted server-sent event streams. The
script is picked by the *last user message*, when it starts with a ``#word``:

==============  ==============================================================
``#tool``       a ``regenerate_scene`` call whose arguments arrive in four
                pieces; once the request carries the ``tool`` result, a
                closing text with usage
``#badargs``    a tool call whose arguments are not JSON; then a closing text
``#markdown``   a Markdown reply (table, code block, HTML, a javascript: link)
``#nousage``    a text reply with no usage chunk
``#slow``       400 tokens, one every 25 ms (for Stop)
``#bench N``    N tokens, the whole stream written at once (as fast as it can)
``#endless MS`` tokens ``" e0"``, ``" e1"``, … one every MS ms (default 5), written
                until the client breaks the stream off (Stop), at most 10 minutes
``#bigline N``  one text event whose ``data:`` line holds N characters of
                content (default 10,000,000: ``"x"`` with a newline escape every
                100), written in one piece, then usage and ``[DONE]``
``#401`` …      that HTTP status (401, 403, 404, 429 with ``Retry-After: 7``,
                500, 503) with an OpenAI-style error body (401 repeats the
                bearer key it got, as careless servers do)
``#cut``        some text, then the connection closes without ``[DONE]``
``#badjson``    some text, then an event whose data is not JSON
``#length``     some text, then ``finish_reason: "length"`` (the server's
                length limit cut the reply)
``#echo``       a normal reply that repeats the bearer key it got, split
                across two chunks (as a careless proxy or model might)
``#pathmodel``  a normal reply whose chunks name the model by a file path
                (``PATH_MODEL``), as llama-server started without ``--alias`` does
anything else   a short text reply in several chunks, usage in the last chunk
==============  ==============================================================

Modes of the whole server (attributes, set by tests), each copying what
llama.cpp's ``llama-server`` answers (DESIGN.md §12, "What real servers do"):

- ``no_jinja``: a request with ``tools`` gets HTTP 500 "tools param requires
  --jinja flag" (a server started with ``--no-jinja``);
- ``context_chars``: a request whose ``messages`` (and ``tools``) JSON is
  longer than this many characters gets HTTP 400 "request (N tokens) exceeds
  the available context size (M tokens)" (4 characters counted as a token).

Tool-call ids are Mistral's form (9 alphanumerics, ``TOOL_CALL_ID``), and,
like Mistral, a request whose ``tool`` message or assistant ``tool_calls``
carries an id of another form gets HTTP 400.

Every response carries CORS headers (``Access-Control-Allow-Origin`` echoing
the page's origin, ``Retry-After`` exposed) except under the path prefix
``/nocors``, which behaves the same without them (a CORS refusal). With
``required_key`` set, a request without ``Authorization: Bearer <key>`` gets
401. Each request is recorded in ``server.requests`` (method, path, headers,
parsed JSON body) for tests to inspect; ``server.aborted`` counts streams the
client broke off.

Usage::

    python tools/fake_openai.py --port 8765     # then base URL http://127.0.0.1:8765/v1
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeOpenAIServer", "MODEL_NAME", "MODELS", "PATH_MODEL", "USAGE", "make_server", "start"]

MODEL_NAME = "fake-model-1"
MODELS = ["fake-model-1", "fake-model-2"]
USAGE = {"prompt_tokens": 321, "completion_tokens": 45, "total_tokens": 366}
TOOL_USAGE = {"prompt_tokens": 400, "completion_tokens": 20, "total_tokens": 420}
PLAIN_PIECES = ["Hello", " from", " the", " fake", " model", ":", " a", " streamed", " reply", "."]
TOOL_ARG_PIECES = ['{"scene', 'Id": "scene-2", "instr', 'uction": "add a diagram', ' 🎨 图"}']
MARKDOWN_REPLY = (
    "## Summary\n\nThis is **bold**, *emphasis* and `code`.\n\n"
    "- first item\n- second item\n\n1. one\n2. two\n\n"
    "| name | value |\n| --- | ---: |\n| alpha | 1 |\n| beta | 2 |\n\n"
    "```python\nprint('hi <b>')\n```\n\n"
    "<img src=x onerror=\"window.__xss=1\"> and <script>window.__xss=2</script>\n\n"
    "[safe link](https://example.org/page) and [bad link](javascript:window.__xss=3)\n"
)
PATH_MODEL = "/home/user/.cache/agentbar/models/66d68b13c8dfdf7e/tiny-tool.gguf"
"""The model name of ``#pathmodel`` replies: the path of the file the server loaded."""
TOOL_CALL_ID = "AbC123xyZ"
"""The id the fake gives its tool calls (Mistral's form: 9 alphanumerics)."""
BIGLINE_CHARS = 10_000_000
ENDLESS_MAX_S = 600.0


def bigline_text(chars: int) -> str:
    """``chars`` characters of ``#bigline`` content: runs of 99 ``x`` each ended by a newline."""
    block = "x" * 99 + "\n"
    return (block * (chars // len(block) + 1))[:chars]


ERROR_STATUSES = {"#401": 401, "#403": 403, "#404": 404, "#429": 429, "#500": 500, "#503": 503}


def _chunk(delta: dict[str, Any] | None = None, *, finish: str | None = None, usage: dict | None = None,
           choices: bool = True, model: str = MODEL_NAME) -> bytes:
    body: dict[str, Any] = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1780000000,
                            "model": model,
                            "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}] if choices else []}
    if usage is not None:
        body["usage"] = usage
    return b"data: " + json.dumps(body, ensure_ascii=False).encode("utf-8") + b"\n\n"


DONE = b"data: [DONE]\n\n"


class _Handler(BaseHTTPRequestHandler):
    server: "FakeOpenAIServer"
    protocol_version = "HTTP/1.0"  # the body ends when the connection closes

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass

    # -- plumbing ------------------------------------------------------------
    def _route(self) -> tuple[bool, str]:
        path = self.path.split("?", 1)[0]
        if path.startswith("/nocors/"):
            return False, path[len("/nocors"):]
        return True, path

    def _start(self, status: int, content_type: str, extra: dict[str, str] | None = None) -> None:
        cors, _ = self._route()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-store")
        if cors:
            self.send_header("Access-Control-Allow-Origin", self.headers.get("Origin") or "*")
            self.send_header("Access-Control-Expose-Headers", "Retry-After")
            self.send_header("Vary", "Origin")
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()

    def _json(self, status: int, payload: Any, extra: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        self._start(status, "application/json", {"Content-Length": str(len(data)), **(extra or {})})
        self.wfile.write(data)

    def _record(self, body: Any) -> None:
        with self.server.lock:
            self.server.requests.append({"method": self.command, "path": self.path,
                                         "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})

    def _authorized(self) -> bool:
        key = self.server.required_key
        if key and self.headers.get("Authorization") != f"Bearer {key}":
            self._json(401, {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                                       "code": "invalid_api_key"}})
            return False
        return True

    # -- verbs ---------------------------------------------------------------
    def do_OPTIONS(self) -> None:  # noqa: N802 - CORS preflight
        cors, _ = self._route()
        self._record(None)
        self.send_response(204)
        if cors:
            self.send_header("Access-Control-Allow-Origin", self.headers.get("Origin") or "*")
            self.send_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
            self.send_header("Access-Control-Allow-Headers", "authorization, content-type, accept")
            self.send_header("Access-Control-Max-Age", "600")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802
        _, path = self._route()
        self._record(None)
        if path != "/v1/models":
            self._json(404, {"error": {"message": f"no route {path}"}})
        elif self._authorized():
            self._json(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in MODELS]})

    def do_POST(self) -> None:  # noqa: N802
        _, path = self._route()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        self._record(body)
        if path != "/v1/chat/completions":
            self._json(404, {"error": {"message": f"no route {path}"}})
            return
        if not self._authorized():
            return
        messages = (body or {}).get("messages") or []
        if self._refused(body or {}, messages):
            return
        last_user = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
        command, _, rest = str(last_user).strip().partition(" ")
        has_tool_result = bool(messages) and messages[-1].get("role") == "tool"
        try:
            self._script(command, rest, has_tool_result)
        except (BrokenPipeError, ConnectionResetError):
            with self.server.lock:
                self.server.aborted += 1  # the page aborted the request (Stop)

    def _refused(self, body: dict[str, Any], messages: list[Any]) -> bool:
        """The server modes' refusals (module docstring); True when one answered."""
        server = self.server
        if server.no_jinja and body.get("tools"):
            self._json(500, {"error": {"code": 500, "message": "tools param requires --jinja flag",
                                       "type": "server_error"}})
            return True
        size = len(json.dumps(messages, ensure_ascii=False)) + len(json.dumps(body.get("tools") or []))
        if server.context_chars and size > server.context_chars:
            prompt, context = size // 4, server.context_chars // 4
            self._json(400, {"error": {"code": 400, "message": f"request ({prompt} tokens) exceeds the available "
                                       f"context size ({context} tokens), try increasing it",
                                       "type": "exceed_context_size_error", "n_prompt_tokens": prompt,
                                       "n_ctx": context}})
            return True
        ids = [m.get("tool_call_id") for m in messages if isinstance(m, dict) and m.get("role") == "tool"]
        ids += [c.get("id") for m in messages if isinstance(m, dict) for c in (m.get("tool_calls") or [])
                if isinstance(c, dict)]
        bad = next((i for i in ids if not (isinstance(i, str) and len(i) == 9 and i.isascii() and i.isalnum())), None)
        if bad is not None:
            self._json(400, {"error": {"message": f"Tool call id was {bad} but must be a-z, A-Z, 0-9, "
                                                  "with a length of 9.", "type": "invalid_request_error"}})
            return True
        return False

    def _script(self, command: str, rest: str, has_tool_result: bool) -> None:
        if command in ERROR_STATUSES:
            status = ERROR_STATUSES[command]
            extra = {"Retry-After": "7"} if status == 429 else None
            bearer = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            message = {401: f"Incorrect API key provided: {bearer}.", 403: "Forbidden.", 404: "The model does not exist.",
                       429: "Rate limit reached.", 500: "Internal error.", 503: "Overloaded."}[status]
            self._json(status, {"error": {"message": message}}, extra)
            return
        self._start(200, "text/event-stream")
        write = self.wfile.write
        if command in ("#tool", "#badargs") and not has_tool_result:
            write(_chunk({"role": "assistant", "content": ""}))
            pieces = TOOL_ARG_PIECES if command == "#tool" else ['{"sceneId": "scene-1", ', '"instruction": ']
            write(_chunk({"tool_calls": [{"index": 0, "id": TOOL_CALL_ID, "type": "function",
                                          "function": {"name": "regenerate_scene", "arguments": ""}}]}))
            for piece in pieces:
                write(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
            write(_chunk(finish="tool_calls"))
            write(_chunk(choices=False, usage=TOOL_USAGE))
            write(DONE)
            return
        if command in ("#tool", "#badargs"):
            self._text(["Scene", " regenerated", " as", " asked", "."], usage=USAGE)
        elif command == "#markdown":
            self._text([MARKDOWN_REPLY[i:i + 7] for i in range(0, len(MARKDOWN_REPLY), 7)], usage=USAGE)
        elif command == "#nousage":
            self._text(PLAIN_PIECES, usage=None)
        elif command == "#slow":
            self._text([f" t{i}" for i in range(400)], usage=USAGE, delay=0.025)
        elif command == "#bench":  # as fast as it can: the whole stream prepared, then written at once
            count = int(rest.strip() or 2000)
            body = [_chunk({"role": "assistant", "content": ""})]
            body += [_chunk({"content": f" w{i}"}) for i in range(count)]
            body += [_chunk(finish="stop"), _chunk(choices=False, usage={
                "prompt_tokens": 10, "completion_tokens": count, "total_tokens": count + 10}), DONE]
            write(b"".join(body))
        elif command == "#endless":  # a stream that never ends by itself: only Stop ends it
            self._endless(float(rest.strip() or 5) / 1000)
        elif command == "#bigline":
            self._text(["<", bigline_text(int(rest.strip() or BIGLINE_CHARS)), ">"], usage=USAGE)
        elif command == "#cut":
            for piece in PLAIN_PIECES[:5]:
                write(_chunk({"content": piece}))
            self.wfile.flush()
            self.close_connection = True  # no [DONE], no finish_reason: the stream is cut
        elif command == "#pathmodel":
            self._text(PLAIN_PIECES, usage=USAGE, model=PATH_MODEL)
        elif command == "#length":
            self._text(PLAIN_PIECES[:6], usage=USAGE, finish="length")
        elif command == "#echo":
            bearer = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            half = len(bearer) // 2
            self._text(["Your key is ", bearer[:half], bearer[half:], ", right?"], usage=USAGE)
        elif command == "#badjson":
            for piece in PLAIN_PIECES[:3]:
                write(_chunk({"content": piece}))
            write(b"data: {not json at all\n\n")
            write(DONE)
        else:
            self._text(PLAIN_PIECES, usage=USAGE)

    def _endless(self, delay: float) -> None:
        write, flush = self.wfile.write, self.wfile.flush
        write(_chunk({"role": "assistant", "content": ""}))
        deadline = time.monotonic() + ENDLESS_MAX_S
        i = 0
        while time.monotonic() < deadline:
            write(_chunk({"content": f" e{i}"}))
            flush()  # each token its own network read, as a real server sends them
            i += 1
            time.sleep(delay)
        write(_chunk(finish="stop"))
        write(DONE)

    def _text(self, pieces: list[str], *, usage: dict | None, delay: float = 0.0, finish: str = "stop",
              model: str = MODEL_NAME) -> None:
        write = self.wfile.write
        write(_chunk({"role": "assistant", "content": ""}, model=model))
        for piece in pieces:
            write(_chunk({"content": piece}, model=model))
            if delay:
                time.sleep(delay)
        write(_chunk(finish=finish, model=model))
        if usage is not None:
            write(_chunk(choices=False, usage=usage, model=model))
        write(DONE)


class FakeOpenAIServer(ThreadingHTTPServer):
    """The server; ``requests`` lists what it received, ``required_key`` enforces a bearer key."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], required_key: str | None = None) -> None:
        super().__init__(address, _Handler)
        self.required_key = required_key
        self.no_jinja = False
        """Refuse every request with ``tools`` as llama-server ``--no-jinja`` does (HTTP 500)."""
        self.context_chars = 0
        """When set: a longer request is over the context, as llama-server answers it (HTTP 400)."""
        self.requests: list[dict[str, Any]] = []
        self.aborted = 0
        """Streams the client broke off (the server's next write failed)."""
        self.lock = threading.Lock()

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:<port>``."""
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def posts(self) -> list[dict[str, Any]]:
        """The recorded ``POST …/chat/completions`` requests, oldest first."""
        with self.lock:
            return [r for r in self.requests if r["method"] == "POST"]


SHUTDOWN_POLL_S = 0.01
"""How often ``start``'s serving thread checks for ``shutdown()`` (seconds): a test waits at most this."""


def make_server(port: int = 0, required_key: str | None = None) -> FakeOpenAIServer:
    """A server bound to 127.0.0.1 (never another address); ``port=0`` picks a free one."""
    return FakeOpenAIServer(("127.0.0.1", port), required_key)


def start(port: int = 0, required_key: str | None = None) -> FakeOpenAIServer:
    """``make_server`` and serve it on a daemon thread; call ``shutdown()`` and ``server_close()`` to stop."""
    server = make_server(port, required_key)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL_S}, daemon=True).start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--key", default=None, help="require this bearer key")
    args = parser.parse_args()
    server = make_server(args.port, args.key)
    print(f"fake OpenAI-compatible server at {server.origin}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
