"""Pyodide boots of an end-to-end run: what the suite costs CI (each boot is 5-10 s of CPU).

Every main-frame navigation to the app's page (``index.html`` or a folder's index, as the built site
serves it) starts Pyodide once, in whichever browser context it happens: the ``context`` fixture's, a
second tab's, or one a test makes itself with ``browser.new_context()`` (a second device, another
time zone). ``BootCounter.watch(browser)`` makes every context of that browser count its own, and the
run's terminal summary says the total against ``GOAL``, per test file.
"""

from __future__ import annotations

from collections import Counter
from urllib.parse import urlsplit

GOAL = 100
"""At most this many boots in one run of the whole end-to-end suite (CI's 90-minute limit)."""


def is_app_document(request) -> bool:
    """True for a main-frame navigation to the app's page (``…/index.html`` or ``…/``)."""
    if not request.is_navigation_request():
        return False
    try:
        if request.frame.parent_frame is not None:
            return False
    except Exception:  # a service worker's own request has no frame
        return False
    return urlsplit(request.url).path.endswith(("/index.html", "/"))


class BootCounter:
    """Boots per test file (``by_file``: file name -> boots); ``file`` is the running test's file."""

    def __init__(self) -> None:
        self.file = ""
        self.by_file: Counter = Counter()

    def count(self, request) -> None:
        """A context's ``request`` listener: one boot for the running file when it starts the app."""
        if is_app_document(request):
            self.by_file[self.file] += 1

    def total(self) -> int:
        return self.by_file.total()

    def watch(self, browser):
        """Make every context ``browser.new_context(...)`` makes from now on count its boots (once,
        however often ``browser`` is watched); returns ``browser``."""
        if getattr(browser, "_agentbar_counts_boots", False):
            return browser
        make = browser.new_context

        def new_context(*args, **kwargs):
            context = make(*args, **kwargs)
            context.on("request", self.count)
            return context

        browser.new_context = new_context
        browser._agentbar_counts_boots = True
        return browser

    def summary_lines(self) -> list[str]:
        """The run's total against ``GOAL``, the files by boots, and a warning line when over."""
        if not self.by_file:
            return []
        total = self.total()
        lines = [f"Pyodide boots: {total} (goal: at most {GOAL})",
                 "  " + ", ".join(f"{name} {n}" for name, n in self.by_file.most_common())]
        if total > GOAL:
            lines.append(f"WARNING: {total} Pyodide boots, over the goal of {GOAL}: CI's end-to-end suite costs more")
        return lines
