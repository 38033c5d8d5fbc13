"""Suite-wide ordering: CPython unit tests run before the Chromium tests.

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


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: Path(str(item.path)).is_relative_to(E2E))
