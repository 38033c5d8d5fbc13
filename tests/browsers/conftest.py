"""Cross-browser fixtures: the served folder and one page per engine (Firefox ESR, WebKitGTK).

- ``app_server``: the same dev server as the Chromium suite (``tests/e2e/conftest.py``).
- ``engine``: an ``EnginePage`` (``drivers.py``) for the session, one per engine (the tests take it
  as a parameter, ``firefox`` then ``webkit``), closed at the session's end; each starts with a fresh
  profile. ``AGENTBAR_ENGINES=firefox`` (comma-separated names) runs a subset.
- ``fake_model_server`` (``tools/fake_openai.py``) and ``couch`` (``pouchdb-server --in-memory``): the
  Chromium suite's fixtures, shared.
- ``second_page``: a ``factory(name)`` of further pages (a profile of their own: another device),
  each closed at the test's end.
- ``shots``: the folder screenshots are written to (``test-results/engines/``, kept for a look).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browsers.drivers import ENGINES
from tests.e2e.conftest import app_server, fake_model_server  # noqa: F401  (the fixtures, shared)
from tests.e2e.test_sync import couch  # noqa: F401  (pouchdb-server for the module, shared)

ROOT = Path(__file__).resolve().parents[2]
NAMES = [n for n in os.environ.get("AGENTBAR_ENGINES", ",".join(ENGINES)).split(",") if n]


def pytest_collection_modifyitems(items):
    for item in items:
        if Path(str(item.fspath)).is_relative_to(Path(__file__).parent):
            item.add_marker(pytest.mark.browsers)


@pytest.fixture(scope="session")
def _pages():
    opened: dict = {}
    yield opened
    for page in opened.values():
        page.close()


@pytest.fixture(scope="session", params=NAMES)
def engine(request, _pages):
    """The session's page in the engine named by the parameter (started at its first use)."""
    if request.param not in _pages:
        _pages[request.param] = ENGINES[request.param]()
    return _pages[request.param]


@pytest.fixture
def second_page():
    """``open(name) -> EnginePage``: a further page in engine ``name``, a fresh profile of its own
    (another device); closed at the test's end."""
    opened = []

    def open_page(name: str):
        opened.append(ENGINES[name]())
        return opened[-1]

    yield open_page
    for page in opened:
        page.close()


@pytest.fixture(scope="session")
def shots() -> Path:
    folder = ROOT / "test-results" / "engines"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def dist_folder(tmp_path_factory) -> Path:
    """The deployable build (``tools/build.py``) of the code under test, made once for the session."""
    from tests.e2e import test_build as built
    from tools import build, vendor

    vendor.main([])  # idempotent: the build holds the code under test
    source = built._source_tree(tmp_path_factory.mktemp("source"))
    out = tmp_path_factory.mktemp("dist") / "dist"
    build.build(out, root=source, quiet=True)
    return out


@pytest.fixture
def dist_server(dist_folder):
    """``(base URL, server)``: the build served under ``/some/where/`` with the headers it wrote, on a
    new port (a new origin: no worker of an earlier test); the test may shut it down (offline)."""
    import threading

    from tests.e2e.test_build import BASE
    from tools.serve import SHUTDOWN_POLL_S, dist_headers, make_server

    server = make_server("127.0.0.1", 0, root=dist_folder, quiet=True, base=BASE, headers=dist_headers(dist_folder))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL_S}, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    yield f"http://{host}:{port}{BASE}", server
    if thread.is_alive():
        server.shutdown()
        server.server_close()
