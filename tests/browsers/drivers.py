"""One page in Firefox ESR or WebKitGTK, with the same few verbs in both (DESIGN.md §2).

- ``firefox``: Debian's ``firefox-esr`` driven by ``puppeteer-core`` over WebDriver BiDi, through
  ``firefox_bridge.mjs`` (JSON lines on its standard input and output), headless, with a fresh
  profile and Firefox's default permission behaviour (nothing answers the persistent-storage prompt).
- ``webkit``: Debian's ``WebKitWebDriver`` (its MiniBrowser) through Selenium, under ``xvfb-run``
  (WebKitGTK has no headless mode), which this module starts.

``EnginePage`` verbs: ``goto``, ``reload``, ``js`` (a JavaScript expression; a promise is awaited;
returns its JSON value), ``wait`` (until an expression is truthy), ``click`` and ``fill`` (a CSS
selector), ``viewport`` (the page's inner size in CSS px), ``screenshot``, ``close``. A JavaScript
error or a timeout raises ``EngineError``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

from tools import engines

HERE = Path(__file__).resolve().parent
WAIT_POLL_S = 0.1
WEBKIT_LEAST_WIDTH = 480  # CSS px: WebKitGTK's MiniBrowser window is not narrower (447 px inside, here)
FIREFOX = os.environ.get("AGENTBAR_FIREFOX") or shutil.which("firefox-esr") or "/usr/bin/firefox-esr"
WEBKIT_DRIVER = os.environ.get("AGENTBAR_WEBKIT_DRIVER") or shutil.which("WebKitWebDriver") or "/usr/bin/WebKitWebDriver"


class EngineError(AssertionError):
    """A command the engine failed: a JavaScript error, a missing element, or a wait that timed out."""


class EnginePage:
    """The verbs of one page; subclasses talk to their engine (``_js``, ``click``, ``fill``...)."""

    name = ""

    def js(self, expression: str):
        """The JSON value of the JavaScript ``expression`` in the page (a promise is awaited)."""
        raise NotImplementedError

    def wait(self, expression: str, timeout_s: float = 60.0):
        """Poll ``expression`` until it is truthy and return its value; ``EngineError`` after
        ``timeout_s`` seconds (naming the expression and its last value)."""
        deadline = time.monotonic() + timeout_s
        value = None
        while time.monotonic() < deadline:
            try:
                value = self.js(expression)
            except EngineError:  # the document is being replaced (a reload)
                value = None
            if value:
                return value
            time.sleep(WAIT_POLL_S)
        raise EngineError(f"{self.name}: still false after {timeout_s:.0f} s: {expression} (last: {value!r})")

    def narrow(self, url: str, width: int, height: int) -> bool:
        """Show the app at ``width`` × ``height`` CSS px: the page itself when the engine's window can
        be that narrow (returns False: no boot), else ``url`` loaded anew in a frame of that size
        (``pages/frame.html``, on ``url``'s origin; later verbs act in the frame; returns True)."""
        self.viewport(width, height)
        return False

    def testid(self, name: str) -> str:
        """The CSS selector of the element with ``data-testid=name``."""
        return f"[data-testid={name}]"


class FirefoxPage(EnginePage):
    """Firefox ESR through ``firefox_bridge.mjs`` (puppeteer-core, WebDriver BiDi)."""

    name = "firefox"

    def __init__(self) -> None:
        self.profile = Path(tempfile.mkdtemp(prefix="agentbar-firefox-"))
        self.process = subprocess.Popen(
            ["node", str(HERE / "firefox_bridge.mjs"), FIREFOX, str(self.profile), str(engines.install())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True)

    def _call(self, op: str, **fields):
        self.process.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise EngineError(f"firefox: the driver ended (exit {self.process.poll()}) during {op}")
        answer = json.loads(line)
        if "error" in answer:
            raise EngineError(f"firefox: {op}: {answer['error']}")
        return answer["ok"]

    def goto(self, url: str) -> None:
        self._call("goto", url=url)

    def reload(self) -> None:
        self._call("reload")

    def js(self, expression: str):
        return self._call("eval", js=expression)

    def click(self, selector: str) -> None:
        self._call("click", selector=selector)

    def fill(self, selector: str, text: str) -> None:
        self.js(f"(document.querySelector({json.dumps(selector)}).value = '', true)")
        self._call("type", selector=selector, text=text)

    def viewport(self, width: int, height: int) -> None:
        self._call("viewport", width=width, height=height)

    def screenshot(self, path: Path) -> None:
        self._call("screenshot", path=str(path))

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self._call("close")
                self.process.wait(timeout=20)
            except (EngineError, OSError, subprocess.TimeoutExpired):
                os.killpg(self.process.pid, 9)
        shutil.rmtree(self.profile, ignore_errors=True)


class WebKitPage(EnginePage):
    """WebKitGTK's MiniBrowser through Selenium and ``WebKitWebDriver``, on its own Xvfb display."""

    name = "webkit"

    def __init__(self) -> None:
        from selenium import webdriver
        from selenium.webdriver.webkitgtk.options import Options
        from selenium.webdriver.webkitgtk.service import Service

        self.display = _Xvfb()
        options = Options()
        service = Service(executable_path=WEBKIT_DRIVER, env={**os.environ, "DISPLAY": self.display.name})
        self.driver = webdriver.WebKitGTK(options=options, service=service)
        self.driver.set_script_timeout(120)

    def goto(self, url: str) -> None:
        self.driver.switch_to.default_content()
        self.driver.get(url)

    def narrow(self, url: str, width: int, height: int) -> bool:
        from selenium.webdriver.common.by import By

        if width >= WEBKIT_LEAST_WIDTH:
            self.viewport(width, height)
            return False
        base = url.split("index.html")[0]
        self.goto(f"{base}tests/browsers/pages/frame.html?{urlencode({'src': url, 'width': width, 'height': height})}")
        self.driver.switch_to.frame(self.driver.find_element(By.ID, "app"))
        return True

    def reload(self) -> None:
        self.driver.refresh()

    def js(self, expression: str):
        from selenium.common.exceptions import WebDriverException

        script = ("const done = arguments[arguments.length - 1];"
                  f"(async () => ({expression}))().then((ok) => done({{ok: ok === undefined ? null : ok}}),"
                  " (e) => done({error: String(e && e.message ? e.message : e)}));")
        try:
            answer = self.driver.execute_async_script(script)
        except WebDriverException as error:
            raise EngineError(f"webkit: {error.msg}") from None
        if answer is None or "error" in answer:
            raise EngineError(f"webkit: {answer and answer['error']}: {expression}")
        return answer["ok"]

    def _element(self, selector: str):
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, selector)

    def click(self, selector: str) -> None:
        self._element(selector).click()

    def fill(self, selector: str, text: str) -> None:
        element = self._element(selector)
        element.clear()
        element.send_keys(text)

    def viewport(self, width: int, height: int) -> None:
        """The inner size ``width`` × ``height``; WebKitGTK's window has a least width (447 px here):
        narrower is refused with ``EngineError`` (``narrow`` uses a frame instead). The window takes a
        new size asynchronously (its first resize right after launch was seen to land later, the page
        still 1024 px wide): the size is asked for again, and read again, for up to 5 s."""
        got = None
        for _ in range(25):
            size = self.driver.get_window_size()
            inner = self.js("[innerWidth, innerHeight]")
            if inner[0] == width and inner[1] == height:
                return
            self.driver.set_window_size(width + size["width"] - inner[0], height + size["height"] - inner[1])
            got = self.js("innerWidth")
            if got == width:
                return
            time.sleep(0.2)
        raise EngineError(f"webkit: inner width {got} px, not {width} px")

    def screenshot(self, path: Path) -> None:
        self.driver.save_screenshot(str(path))

    def close(self) -> None:
        try:
            self.driver.quit()
        finally:
            self.display.stop()


class _Xvfb:
    """An ``Xvfb`` server on a free display number (``-displayfd``), for WebKitGTK's window."""

    def __init__(self) -> None:
        read, write = os.pipe()
        self.process = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1600x1200x24", "-nolisten", "tcp"],
                                        pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        start_new_session=True)
        os.close(write)
        with os.fdopen(read) as answer:
            number = answer.readline().strip()
        if not number:
            raise EngineError("webkit: Xvfb did not start")
        self.name = f":{number}"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


ENGINES = {"firefox": FirefoxPage, "webkit": WebKitPage}
