"""Suite-wide ordering: CPython unit tests run before the Chromium tests, which run before the
Firefox and WebKit ones (``tests/browsers``: the slowest, and a Chromium failure is cheaper to see).

pytest-playwright's sync API keeps an asyncio loop running in the main thread
for the rest of the session once a browser test has started, after which
``asyncio.run`` (used by the async unit tests) refuses to run. Running the
browser tests last keeps every invocation, whatever paths it names, green.

Number rules: code under test that writes numbers in CPython (``app.i18n``) gets Babel's CLDR
data (``tools.cldr_numbers``), the same data the page reads through ``Intl``.
"""

from pathlib import Path

from app.i18n import use_number_rules
from tools.cldr_numbers import cldr_numbers

use_number_rules(cldr_numbers)

E2E = Path(__file__).parent / "e2e"
ENGINES = Path(__file__).parent / "browsers"


def pytest_collection_modifyitems(items):
    def rank(item) -> int:  # 0: unit, 1: Chromium, 2: Firefox and WebKit
        path = Path(str(item.path))
        return 2 if path.is_relative_to(ENGINES) else 1 if path.is_relative_to(E2E) else 0

    items.sort(key=rank)
