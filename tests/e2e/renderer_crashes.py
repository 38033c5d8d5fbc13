"""Chromium renderer crashes in the end-to-end run: what the machine looked like, and a fresh
browser for the next try.

A renderer process that dies ("Target crashed") is a fact about the machine the tests run on, not
a verdict on the app: the test runs again (pytest-rerunfailures, ``pyproject.toml``), in a browser
launched anew, and every crash is written down so that a run that still fails says why.

- ``logged_executable(path)``: a small shell script that runs Chromium at ``path`` with its
  standard error appended to ``LOG`` (Playwright does not hand that stream on).
- ``note(test_id, attempt)``: records one crash with ``facts()`` and asks for a new browser.
- ``BrowserHolder``: the browser the tests share; ``get()`` relaunches after a crash or a lost
  connection.
- ``summary_lines()``: what the run's terminal summary prints (nothing when no renderer died).
"""

from __future__ import annotations

import os
import platform
import resource
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

CRASH_MARKERS = ("Target crashed", "Page crashed", "renderer crashed")
LOG_DIR = Path(tempfile.mkdtemp(prefix="agentbar-chromium-"))
LOG = LOG_DIR / "stderr.log"
STDERR_LINES = 8  # lines of Chromium's standard error kept per crash
# Lines Chromium prints on every start on a machine without a session bus or CPU frequency files.
STDERR_NOISE = ("dbus/", "cpufreq/")

crashes: list[tuple[str, int, str]] = []  # (test id, attempt, facts), in the order they happened
_relaunch = False
_mark = 0  # size of LOG when the current test started


def logged_executable(path: str) -> str:
    """Path of an executable script (in ``LOG_DIR``) that runs ``path`` with its arguments and
    appends Chromium's standard error to ``LOG``."""
    script = LOG_DIR / "chromium"
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(path)} "$@" 2>>{shlex.quote(str(LOG))}\n')
    script.chmod(0o755)
    return str(script)


def mark_test_start() -> None:
    """Remember where ``LOG`` ends, so a crash report shows only what this test's browser said."""
    global _mark
    _mark = LOG.stat().st_size if LOG.exists() else 0


def is_crash(text: str) -> bool:
    """True when a failure's text is one of Playwright's or ``wait_ready``'s renderer-crash words."""
    return any(marker in text for marker in CRASH_MARKERS)


def _mib(n: float) -> str:
    return f"{n / 2**20:,.0f} MiB"


def _mem_available() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return _mib(int(line.split()[1]) * 1024)
    except OSError:
        pass
    return "unknown"


def _kernel_lines() -> list[str]:
    """The kernel's last words on killed or faulting processes (empty where ``dmesg`` is refused)."""
    try:
        out = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    words = ("out of memory", "oom", "killed process", "segfault", "traps:")
    return [line for line in out.splitlines() if any(w in line.lower() for w in words)][-3:]


def _stderr_since_mark() -> list[str]:
    try:
        with LOG.open("rb") as f:
            f.seek(_mark)
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return []
    kept = [line for line in text.splitlines() if line.strip() and not any(n in line for n in STDERR_NOISE)]
    return kept[-STDERR_LINES:]


def facts() -> str:
    """One block of text: free memory, free space for Chromium's shared memory (``/dev/shm`` and
    the temporary folder, which Playwright's ``--disable-dev-shm-usage`` makes it use), open-file
    limit, load average, the kernel's lines on killed processes, and Chromium's standard error
    since the test started."""
    tmp = tempfile.gettempdir()
    shm = shutil.disk_usage("/dev/shm").free if os.path.isdir("/dev/shm") else 0
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        f"memory available {_mem_available()}; free in {tmp} {_mib(shutil.disk_usage(tmp).free)},"
        f" in /dev/shm {_mib(shm)}; open files {soft}/{hard}; load {load}",
    ]
    lines += [f"kernel: {line}" for line in _kernel_lines()]
    lines += [f"chromium: {line}" for line in _stderr_since_mark()]
    return "\n".join(lines)


def note(test_id: str, attempt: int) -> str:
    """Record a renderer crash of ``test_id`` in its ``attempt`` (1 for the first run; a phase
    that fails after the crash in the same attempt is not counted again) and ask
    ``BrowserHolder`` for a new browser; returns the facts recorded."""
    global _relaunch
    _relaunch = True
    for crashed_id, crashed_attempt, found in crashes:
        if (crashed_id, crashed_attempt) == (test_id, attempt):
            return found
    found = facts()
    crashes.append((test_id, attempt, found))
    return found


def ask_relaunch() -> None:
    """A page of this browser died: the next test gets a browser launched anew."""
    global _relaunch
    _relaunch = True


class BrowserHolder:
    """The Playwright browser shared by the tests, launched anew after a renderer crash (a dying
    renderer can leave the browser process short of what the next page needs) or a lost
    connection. ``launch`` is pytest-playwright's ``launch_browser``."""

    def __init__(self, launch: Callable[[], object]) -> None:
        self._launch = launch
        self.browser = None
        self.launches = 0

    def get(self):
        global _relaunch
        if self.browser is not None and (_relaunch or not self.browser.is_connected()):
            self.close()
        _relaunch = False
        if self.browser is None:
            self.browser = self._launch()
            self.launches += 1
            set_browser_version(self.browser.version)
        return self.browser

    def close(self) -> None:
        if self.browser is not None:
            try:
                self.browser.close()
            except Exception:  # a browser whose process is gone cannot be closed twice
                pass
            self.browser = None


def machine() -> str:
    """One line on the machine as a whole: architecture, kernel, CPU model and address sizes,
    memory in all, and the Chromium build the tests drive (machines of one kind have differed in
    how often a renderer dies)."""
    cpu, sizes, total = "unknown CPU", "", "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and cpu == "unknown CPU":
                cpu = value.strip()
            elif key.strip() == "address sizes" and not sizes:
                sizes = f" ({value.strip()})"
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                total = _mib(int(line.split()[1]) * 1024)
    except OSError:
        pass
    return f"{platform.machine()}, Linux {platform.release()}, {cpu}{sizes}, memory {total}, {_browser_version}"


_browser_version = "Chromium version unknown"


def set_browser_version(version: str) -> None:
    """The version Playwright reports for the launched browser (said once in the summary)."""
    global _browser_version
    _browser_version = f"Chromium {version}"


def summary_lines() -> list[str]:
    """The terminal summary's lines on renderer crashes: a count, then each crash's test and facts
    (the first ten)."""
    if not crashes:
        return []
    lines = [
        f"{len(crashes)} Chromium renderer crash(es); each test that crashed ran again in a new browser",
        f"machine: {machine()}",
    ]
    for test_id, attempt, found in crashes[:10]:
        lines.append(f"- {test_id} (attempt {attempt})")
        lines += [f"    {line}" for line in found.splitlines()]
    return lines
