"""Suite-wide ordering: CPython unit tests run before the Chromium tests.

pytest-playwright's sync API keeps an asyncio loop running in the main thread
for the rest of the session once a browser test has started, after which
``asyncio.run`` (used by the async unit tests) refuses to run. Running the
browser tests last keeps every invocation, whatever paths it names, green.
"""

from pathlib import Path

E2E = Path(__file__).parent / "e2e"


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: Path(str(item.path)).is_relative_to(E2E))
