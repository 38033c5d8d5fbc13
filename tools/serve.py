"""Serve the app folder over HTTP on localhost (standard library ``http.server``).

Module scripts and ``.wasm`` need a real HTTP origin (``file://`` does not work,
DESIGN.md §2); ``http.server`` already sends ``application/wasm`` and a
JavaScript type for ``.mjs``. ``.whl`` and ``.zip`` go out as binary.

Usage::

    python tools/serve.py [--port 8000] [--host 127.0.0.1] [--quiet]

Prints ``AgentBar is running at http://HOST:PORT/`` once listening; port 0 picks
a free port (tests use that).
"""

from __future__ import annotations

import argparse
import functools
import http.server
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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

    def send_head(self):  # noqa: D102 - standard hook
        # Never serve dot folders (.git, .venv, .cache): only the app's own files.
        path = self.path.split("?", 1)[0].split("#", 1)[0]
        if any(part.startswith(".") for part in path.split("/") if part):
            self.send_error(404, "File not found")
            return None
        return super().send_head()

    def end_headers(self) -> None:  # noqa: D102 - standard hook
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - stdlib signature
        if not self.quiet:
            super().log_message(format, *args)


def make_server(host: str = "127.0.0.1", port: int = 8000, root: Path = ROOT, quiet: bool = False):
    """Return a ``ThreadingHTTPServer`` serving ``root``; ``server.server_address`` has the bound port."""
    handler = functools.partial(type("H", (Handler,), {"quiet": quiet}), directory=str(root))
    return http.server.ThreadingHTTPServer((host, port), handler)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve AgentBar on localhost.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    server = make_server(args.host, args.port, quiet=args.quiet)
    host, port = server.server_address[:2]
    print(f"AgentBar is running at http://{host}:{port}/", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
