"""Serve the app folder over HTTP on localhost (standard library ``http.server``).

Module scripts and ``.wasm`` need a real HTTP origin (``file://`` does not work,
DESIGN.md §2); ``http.server`` already sends ``application/wasm`` and a
JavaScript type for ``.mjs``. ``.whl`` and ``.zip`` go out as binary.

Precompressed files (DESIGN.md §11): when ``FILE.br`` (or ``FILE.gz``) lies
beside ``FILE`` and the request's ``Accept-Encoding`` admits ``br`` (or
``gzip``), that file's bytes are sent with ``Content-Encoding`` and
``Vary: Accept-Encoding`` (``tools/build.py`` writes both for every file of
``dist/``); ``If-Modified-Since`` gets a 304 as for plain files.

Usage::

    python tools/serve.py [--port 8000] [--host 127.0.0.1] [--quiet] [--dist [--build] [--connect-src ORIGIN]...]
                          [--base /some/where/]

``--dist`` serves ``dist/`` (``bash tools/dev.sh build``) with the headers a
host should send, those the build wrote to ``dist/headers.json`` (``dist_headers``: the
Content-Security-Policy of ``dist/index.html``, with its ``connect-src``); ``--build`` (what
``bash tools/dev.sh serve --dist`` passes) rebuilds ``dist/`` first with ``--connect-src`` as given
here or else the origins of the build already there;
``--base`` serves the folder under that sub-path only (anything else is 404).
Prints ``AgentBar is running at http://HOST:PORT/BASE`` once listening; port 0
picks a free port (tests use that).
"""

from __future__ import annotations

import argparse
import email.utils
import functools
import http.server
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SHUTDOWN_POLL_S = 0.01
"""``serve_forever(poll_interval=…)`` for servers a test starts and stops: ``shutdown()`` returns
within this many seconds (with the standard library's 0.5 s default, waiting for it made most of
the unit suite's wall time)."""


class Handler(http.server.SimpleHTTPRequestHandler):
    """Static file handler with the MIME types the runtime needs and no caching surprises."""

    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".mjs": "text/javascript",
        ".js": "text/javascript",
        ".whl": "application/zip",
        ".json": "application/json",
        ".toml": "text/plain; charset=utf-8",
    }
    quiet = False
    base = "/"
    extra_headers: dict[str, str] = {}
    bytes_sent = None  # a one-element list: body bytes sent, summed over requests (benchmarks)
    request_log = None  # a list of (path, status) per request (tests)

    def log_request(self, code="-", size="-") -> None:  # noqa: D102 - standard hook
        if self.request_log is not None:
            self.request_log.append((self.path, int(code) if isinstance(code, int) else code))
        super().log_request(code, size)

    def translate_path(self, path: str) -> str:  # noqa: D102 - standard hook
        if self.base != "/":
            if not path.startswith(self.base):
                return os.path.join(self.directory, ".outside-base")  # a dot name: never served
            path = "/" + path[len(self.base):]
        return super().translate_path(path)

    def send_head(self):  # noqa: D102 - standard hook
        # Never serve dot folders (.git, .venv, .cache): only the app's own files.
        path = self.path.split("?", 1)[0].split("#", 1)[0]
        if any(part.startswith(".") for part in path.split("/") if part):
            self.send_error(404, "File not found")
            return None
        if self.base != "/" and not path.startswith(self.base):
            if path + "/" == self.base:
                self.send_response(301)
                self.send_header("Location", self.base)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            self.send_error(404, "File not found")
            return None
        file_path = self.translate_path(self.path)
        if os.path.isdir(file_path) and path.endswith("/"):
            file_path = os.path.join(file_path, "index.html")
        encoding = self._encoding_for(file_path) if os.path.isfile(file_path) else None
        if encoding:
            return self._send_encoded(file_path, encoding)
        return super().send_head()

    def _encoding_for(self, file_path: str) -> str | None:
        """``"br"`` or ``"gzip"`` when the client accepts it and the precompressed file exists."""
        accepted = {}
        for item in self.headers.get("Accept-Encoding", "").split(","):
            name, _, params = item.strip().partition(";")
            q = params.strip()[2:] if params.strip().startswith("q=") else "1"
            try:
                accepted[name.strip().lower()] = float(q)
            except ValueError:
                continue
        for name, suffix in (("br", ".br"), ("gzip", ".gz")):
            if accepted.get(name, 0) > 0 and os.path.isfile(file_path + suffix):
                return name
        return None

    def _send_encoded(self, file_path: str, encoding: str):
        variant = file_path + (".br" if encoding == "br" else ".gz")
        handle = open(variant, "rb")
        stat = os.fstat(handle.fileno())
        since = self.headers.get("If-Modified-Since")
        if since and not self.headers.get("If-None-Match"):
            try:
                if int(stat.st_mtime) <= email.utils.parsedate_to_datetime(since).timestamp():
                    handle.close()
                    self.send_response(304)
                    self.send_header("Vary", "Accept-Encoding")
                    self.end_headers()
                    return None
            except (TypeError, ValueError, IndexError, OverflowError):
                pass
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(file_path))
        self.send_header("Content-Encoding", encoding)
        self.send_header("Vary", "Accept-Encoding")
        self.send_header("Content-Length", str(stat.st_size))
        self.send_header("Last-Modified", self.date_time_string(stat.st_mtime))
        self.end_headers()
        return handle

    def copyfile(self, source, outputfile) -> None:  # noqa: D102 - standard hook
        if self.bytes_sent is None:
            return super().copyfile(source, outputfile)
        while block := source.read(1 << 16):
            self.bytes_sent[0] += len(block)  # counted before the client can see the bytes
            outputfile.write(block)

    def end_headers(self) -> None:  # noqa: D102 - standard hook
        self.send_header("Cache-Control", "no-cache")
        for name, value in self.extra_headers.items():
            self.send_header(name, value)
        super().end_headers()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - stdlib signature
        if not self.quiet:
            super().log_message(format, *args)


def dist_headers(root: Path) -> dict[str, str]:
    """The response headers of the build in ``root``: its ``headers.json`` (``tools.build.headers``
    of the policy in its ``index.html``). Raises ``SystemExit`` when ``root`` has none (a build
    from before the file existed: build again)."""
    from tools.build import HEADERS_FILE

    try:
        recorded = json.loads((root / HEADERS_FILE).read_text())
    except (OSError, ValueError) as error:
        raise SystemExit(f"serve: {root / HEADERS_FILE} is missing or unreadable ({error}): "
                         "run bash tools/dev.sh build") from None
    return {str(name): str(value) for name, value in recorded.items()}


def make_server(host: str = "127.0.0.1", port: int = 8000, root: Path = ROOT, quiet: bool = False,
                base: str = "/", headers: dict[str, str] | None = None, count_bytes: bool = False,
                log_requests: bool = False):
    """Return a ``ThreadingHTTPServer`` serving ``root`` under ``base`` (a path starting and ending
    with ``/``); ``server.server_address`` has the bound port. ``headers`` are added to every
    response. With ``count_bytes``, ``server.bytes_sent[0]`` sums the body bytes sent; with
    ``log_requests``, ``server.request_log`` lists ``(path, status)`` of every request."""
    if not (base.startswith("/") and base.endswith("/")):
        raise ValueError(f"base must start and end with '/': {base!r}")
    counter = [0] if count_bytes else None
    log = [] if log_requests else None
    attrs = {"quiet": quiet, "base": base, "extra_headers": dict(headers or {}), "bytes_sent": counter,
             "request_log": log}
    handler = functools.partial(type("H", (Handler,), attrs), directory=str(root))
    server = http.server.ThreadingHTTPServer((host, port), handler)
    server.bytes_sent = counter
    server.request_log = log
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve AgentBar on localhost.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--dist", action="store_true", help="serve dist/ (bash tools/dev.sh build) with its headers")
    parser.add_argument("--base", default="/", help="serve under this sub-path, e.g. /some/where/")
    parser.add_argument("--build", action="store_true",
                        help="with --dist: rebuild dist/ first, keeping its --connect-src unless given here")
    parser.add_argument("--connect-src", action="append", default=[], metavar="ORIGIN",
                        help="with --dist --build: an origin the build admits (tools/build.py); repeatable")
    args = parser.parse_args(argv)
    base = "/" + args.base.strip("/") + "/" if args.base.strip("/") else "/"
    root, headers = ROOT, {}
    if args.connect_src and not (args.dist and args.build):
        parser.error("--connect-src is an option of the build: use it with --dist --build")
    if args.dist:
        root = ROOT / "dist"
        if args.build:
            from tools import build

            build.main(["--keep-connect-src", *[w for o in args.connect_src for w in ("--connect-src", o)]])
        if not (root / "index.html").exists():
            parser.error("dist/ is missing: run bash tools/dev.sh build")
        headers = dist_headers(root)
    server = make_server(args.host, args.port, root=root, quiet=args.quiet, base=base, headers=headers)
    host, port = server.server_address[:2]
    print(f"AgentBar is running at http://{host}:{port}{base}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
