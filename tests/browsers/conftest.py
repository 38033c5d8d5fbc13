"""Cross-browser fixtures: the served folder and one page per engine (Firefox ESR, WebKitGTK).

- ``app_server``: the same dev server as the Chromium suite (``tests/e2e/conftest.py``).
- ``engine``: an ``EnginePage`` (``drivers.py``) for the session, one per engine (the tests take it
  as a parameter, ``firefox`` then ``webkit``), closed at the session's end; each starts with a fresh
  profile. ``AGENTBAR_ENGINES=firefox`` (comma-separated names) runs a subset.
- ``shots``: the folder screenshots are written to (``test-results/engines/``, kept for a look).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browsers.drivers import ENGINES
from tests.e2e.conftest import app_server  # noqa: F401  (the fixture, shared)

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


@pytest.fixture(scope="session")
def shots() -> Path:
    folder = ROOT / "test-results" / "engines"
    folder.mkdir(parents=True, exist_ok=True)
    return folder
