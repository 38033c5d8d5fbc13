"""End-to-end fixtures: the served folder, Chromium, and page helpers.

- ``app_server``: ``tools/serve.py`` on a free loopback port for the session.
- Chromium: Debian's ``/usr/bin/chromium`` through pytest-playwright (its own
  browser download cannot run here, DESIGN.md §2); ``AGENTBAR_CHROMIUM``
  overrides the path. Every non-local host fails to resolve, and every request
  of every page is recorded: a test fails if any left the local server.
- ``AgentPage``: opens the app with URL parameters, waits for
  ``html[data-ready]`` (failing at once with ``html[data-error]``'s message),
  seeds ``localStorage`` before the app loads, and reads the stored value.
- Boots: every main-frame document request for the app's page (``index.html``
  or a folder's index) in any browser context starts Pyodide once; the run's
  terminal summary prints how many there were against the goal (``boots.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path
from urllib.parse import urlencode

import pytest

from tests.e2e import renderer_crashes
from tests.e2e.boots import BootCounter
from tools import fake_openai, vendor
from tools.serve import SHUTDOWN_POLL_S, make_server

ROOT = Path(__file__).resolve().parents[2]
STORAGE_KEY = "maic-agent-threads"
READY_TIMEOUT_MS = 60_000

AXE_PATH = ROOT / "static" / "vendor" / "test" / "axe-core" / "axe.min.js"
AXE_RUN_JS = """async () => {
  const result = await axe.run(document, { resultTypes: ["violations"] });
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map((n) => n.target.join(" ")) }));
}"""

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]


def pytest_collection_modifyitems(items):
    for item in items:
        if Path(str(item.fspath)).is_relative_to(Path(__file__).parent):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    path = os.environ.get("AGENTBAR_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    executable = renderer_crashes.logged_executable(path)  # its standard error, for crash reports
    return {**browser_type_launch_args, "executable_path": executable, "args": CHROMIUM_FLAGS}


@pytest.fixture(scope="session")
def _browser_holder(launch_browser):
    holder = renderer_crashes.BrowserHolder(launch_browser)
    yield holder
    holder.close()
    shutil.rmtree(renderer_crashes.LOG_DIR, ignore_errors=True)


@pytest.fixture
def browser(_browser_holder):
    """pytest-playwright's shared browser, launched anew after a renderer crash (renderer_crashes);
    every context made from it counts its Pyodide boots (BOOTS)."""
    return BOOTS.watch(_browser_holder.get())


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    renderer_crashes.mark_test_start()
    BOOTS.file = Path(str(item.fspath)).name


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and renderer_crashes.is_crash(str(report.longrepr)):
        attempt = getattr(item, "execution_count", 1)
        report.sections.append(("renderer crash", renderer_crashes.note(item.nodeid, attempt)))


BOOTS = BootCounter()
"""Pyodide boots in this run, per test file (tests/e2e/boots.py)."""


def pytest_terminal_summary(terminalreporter):
    lines = BOOTS.summary_lines()
    if lines:
        terminalreporter.write_sep("-", lines[0])
        for line in lines[1:]:
            terminalreporter.write_line(line, yellow=line.startswith("WARNING"))
    lines = renderer_crashes.summary_lines()
    if lines:
        terminalreporter.write_sep("-", "Chromium renderer crashes")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def app_server():
    """Base URL (with trailing slash) of the app served from the repo root."""
    vendor.main([])  # idempotent: re-packs app/ so the page runs the code under test
    server = make_server("127.0.0.1", 0, quiet=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL_S}, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    yield f"http://{host}:{port}/"
    server.shutdown()
    server.server_close()


class AgentPage:
    """A Playwright page on the app, with helpers named for what a user does."""

    def __init__(self, page, base_url: str) -> None:
        self.page = page
        self.base_url = base_url
        self.requests: list[str] = []
        self.allowed_origins: list[str] = []  # besides base_url: only the fake model server's origin (fake_model)
        self.dialogs: list[str] = []
        self.crashed = False  # the renderer died (Playwright's "crash" event): said by wait_ready
        page.on("crash", self._on_crash)
        page.on("request", lambda request: self.requests.append(request.url))
        page.on("dialog", self._on_dialog)

    def _on_crash(self, _page) -> None:
        self.crashed = True
        renderer_crashes.ask_relaunch()

    def _on_dialog(self, dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def url(self, **params) -> str:
        params.setdefault("delay", 0)
        return f"{self.base_url}index.html?{urlencode(params)}"

    def open(self, **params) -> "AgentPage":
        """Navigate to the app with URL ``params`` (``delay`` defaults to 0) and wait until ready."""
        self.page.goto(self.url(**params))
        self.wait_ready()
        return self

    def wait_ready(self) -> None:
        try:
            handle = self.page.wait_for_function(
                "() => document.documentElement.dataset.ready === 'true'"
                " || document.documentElement.getAttribute('data-error')",
                timeout=READY_TIMEOUT_MS,
            )
        except Exception:
            if self.crashed:
                pytest.fail(f"the renderer crashed while {self.page.url} was starting")
            raise
        result = handle.json_value()
        if result is not True:
            pytest.fail(f"app failed to start: {result}")

    def reload(self) -> "AgentPage":
        self.page.reload()
        self.wait_ready()
        return self

    def seed(self, items: dict[str, str | None]) -> None:
        """Set raw ``localStorage`` items for this origin before the app loads."""
        self.page.goto(f"{self.base_url}static/icons/agentbar.svg")
        self.page.evaluate(
            "items => { for (const [k, v] of Object.entries(items)) v === null ? localStorage.removeItem(k) : localStorage.setItem(k, v); }",
            items,
        )

    def stored_raw(self, key: str = STORAGE_KEY) -> str | None:
        return self.page.evaluate("key => localStorage.getItem(key)", key)

    def stored(self) -> dict | None:
        raw = self.stored_raw()
        return None if raw is None else json.loads(raw)

    def testid(self, name: str):
        return self.page.locator(f"[data-testid={name}]")

    def panel_action(self, name: str) -> None:
        """Click the panel's action ``name`` (``export-evidence``, ``export-replay``, ``sync-now``),
        which sits in the panel's menu: the menu is opened first."""
        if self.testid("panel-menu").get_attribute("aria-expanded") != "true":
            self.testid("panel-menu").click()
        self.testid(name).click()

    def send(self, text: str, wait: bool = True) -> None:
        """Type ``text`` into the composer, press send, and by default wait for the turn to end."""
        self.testid("agent-input").fill(text)
        self.testid("agent-send").click()
        if wait:
            self.wait_idle()

    def wait_idle(self) -> None:
        self.page.wait_for_function(
            "() => document.querySelector('[data-testid=agent-panel]').dataset.running === 'false'"
        )

    def messages(self):
        return self.testid("agent-message")

    def assert_accessible(self, state: str = "") -> None:
        """Run axe-core (vendored, test-only) on the page as it is now; fail on any serious or
        critical violation, naming the rule and the first offending elements. ``state`` names
        what is shown, for the failure message. Reusable by every view."""
        if not self.page.evaluate("() => typeof window.axe === 'object'"):
            self.page.add_script_tag(content=AXE_PATH.read_text())  # inline: no request leaves the page
        found = self.page.evaluate(AXE_RUN_JS)
        assert found == [], f"axe: serious/critical violations ({state or self.page.url}): {json.dumps(found, indent=1)}"

    def off_origin_requests(self) -> list[str]:
        allowed = (self.base_url, "data:", "blob:", *(origin + "/" for origin in self.allowed_origins))
        return [u for u in self.requests if not u.startswith(allowed)]


@pytest.fixture
def agent(page, app_server):
    """An ``AgentPage``; after the test, asserts that no request left the local server."""
    helper = AgentPage(page, app_server)
    yield helper
    assert helper.off_origin_requests() == []


@pytest.fixture
def second_agent(context, app_server):
    """A second tab in the same browser context (shares localStorage with ``agent``)."""
    helper = AgentPage(context.new_page(), app_server)
    yield helper
    assert helper.off_origin_requests() == []


@pytest.fixture(scope="session")
def fake_model_server():
    """The fake OpenAI-compatible server (``tools/fake_openai.py``) on 127.0.0.1 for the session."""
    server = fake_openai.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def fake_model(fake_model_server, agent):
    """The fake model server, reset, with its origin (``http://127.0.0.1:<port>``, nothing else)
    allowed in ``agent``'s no-request-leaves check."""
    fake_model_server.required_key = None
    fake_model_server.no_jinja, fake_model_server.context_chars = False, 0
    fake_model_server.aborted = 0
    with fake_model_server.lock:
        fake_model_server.requests.clear()
    agent.allowed_origins.append(fake_model_server.origin)
    return fake_model_server
