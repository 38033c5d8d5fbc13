"""tests/e2e/boots.py: the end-to-end run counts every Pyodide boot, in every browser context, and says
how many against the goal (what CI's end-to-end suite costs)."""

from __future__ import annotations

from tests.e2e import boots


class FakeFrame:
    parent_frame = None


class FakeRequest:
    """A Playwright request: a navigation (or not) of a main frame (or not) to ``url``."""

    def __init__(self, url: str, navigation: bool = True, child: bool = False) -> None:
        self.url = url
        self._navigation = navigation
        self.frame = FakeFrame()
        if child:
            self.frame.parent_frame = FakeFrame()

    def is_navigation_request(self) -> bool:
        return self._navigation


class FakeContext:
    def __init__(self) -> None:
        self.listeners: dict[str, list] = {}

    def on(self, event: str, listener) -> None:
        self.listeners.setdefault(event, []).append(listener)

    def emit(self, event: str, value) -> None:
        for listener in self.listeners.get(event, []):
            listener(value)


class FakeBrowser:
    """Playwright's Browser as far as contexts go: ``new_context(**options)``."""

    def __init__(self) -> None:
        self.options: list[dict] = []

    def new_context(self, **options) -> FakeContext:
        self.options.append(options)
        return FakeContext()


def test_a_context_made_straight_from_the_browser_counts_its_boots_once():
    counter = boots.BootCounter()
    browser = counter.watch(FakeBrowser())
    counter.watch(browser)  # watched twice (the fixture runs per test): still one listener per context
    counter.file = "test_sync.py"
    context = browser.new_context(timezone_id="America/New_York")  # as test_sync and test_snapshot make theirs
    assert browser.options == [{"timezone_id": "America/New_York"}]
    for request in (FakeRequest("http://127.0.0.1:1/index.html?course=a"),
                    FakeRequest("http://127.0.0.1:1/base/"),  # a folder's index (the built site)
                    FakeRequest("http://127.0.0.1:1/static/icons/agentbar.svg"),  # a page, not the app
                    FakeRequest("http://127.0.0.1:1/index.html", navigation=False),
                    FakeRequest("http://127.0.0.1:1/index.html", child=True)):
        context.emit("request", request)
    assert counter.total() == 2 and counter.by_file == {"test_sync.py": 2}


def test_the_summary_says_the_count_against_the_goal_and_warns_over_it():
    counter = boots.BootCounter()
    counter.by_file.update({"test_a.py": 60, "test_b.py": 40})
    lines = counter.summary_lines()
    assert lines[0] == f"Pyodide boots: 100 (goal: at most {boots.GOAL})"
    assert lines[1] == "  test_a.py 60, test_b.py 40"
    assert not any("WARNING" in line for line in lines)
    counter.by_file["test_b.py"] += 1
    lines = counter.summary_lines()
    assert lines[-1] == f"WARNING: 101 Pyodide boots, over the goal of {boots.GOAL}: CI's end-to-end suite costs more"
    assert boots.BootCounter().summary_lines() == []  # a run without a page says nothing
