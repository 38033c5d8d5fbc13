"""Bench part ``browsers`` (DESIGN.md §2, §13): ``bash tools/dev.sh bench --only browsers``.

The app's start-up in Chromium (the bench's own), Firefox ESR and WebKitGTK (the cross-browser suite's
drivers, ``tests/browsers/drivers.py``), one page per engine for the whole run (a fresh profile each),
the engines interleaved in each round (their order turned round every other round), the same stored
value (20 courses, 100 messages on the shown one) on each origin:

- **dev server**: the repository served as it is; navigation → ``html[data-ready]`` (the first
  round's is a cold load: an empty HTTP cache), then a reload → ready;
- **dist/ reload**: the deployable build (``tools/build.py``) served under ``/some/where/`` with its
  headers; a first visit (which precaches it), then a reload under its service worker → ready.

Times are the page's own: the ``agentbar:*`` performance marks (ms from navigation) of
``static/pyodide-boot.mjs`` (snapshot restored, packages loaded) and ``app.browser`` (main, imported,
hydrated, rendered, ready), so a driver's polling adds nothing. The phase table gives each engine's
medians; the goals are ratios to Chromium of the medians of per-round ratios: WebKit ready and dist/
reload ≤ 1.5 × Chromium's, Firefox's ≤ 1.2 ×.

``--quick`` skips the part (its result says so): a round boots the app six times in each of three
browsers, WebKitGTK's alone taking well over the quick run's share of its budget on this kind of machine.
"""

from __future__ import annotations

import json
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from bench import data
from bench.scripts import ACTIVE_JS

ROOT = Path(__file__).resolve().parent.parent
BASE = "/some/where/"
COURSE = "intro-ml"
ROUNDS = 3
ENGINES = ("chromium", "firefox", "webkit")
GOALS = {"webkit": 1.5, "firefox": 1.2}
TIMEOUT_S = 300
READY = ("document.documentElement.dataset.ready === 'true'"
         " || document.documentElement.getAttribute('data-error')")

MARKS_JS = """(() => {
  const at = (n) => { const e = performance.getEntriesByName('agentbar:' + n); return e.length ? e[0].startTime : null; };
  return { restored: at('snapshot-restored'), packages: at('packages-loaded'), main: at('main'),
           imported: at('imported'), hydrated: at('hydrated'), rendered: at('rendered'), ready: at('ready'),
           painted: at('painted'), snapshot: document.documentElement.dataset.snapshot || null,
           controlled: !!(navigator.serviceWorker && navigator.serviceWorker.controller) };
})()"""

PHASES = [  # (name, from mark, to mark); None: navigation start
    ("snapshot (navigation → restored: fetch, inflate, wasm compile, memory restored)", None, "restored"),
    ("packages (restored → pydantic and the app wheel loaded)", "restored", "packages"),
    ("PyScript set-up (packages loaded → our main())", "packages", "main"),
    ("imports (our modules)", "main", "imported"),
    ("hydrate (localStorage → threads)", "imported", "hydrated"),
    ("render (course, thread)", "hydrated", "rendered"),
    ("render → ready (IndexedDB, scene documents)", "rendered", "ready"),
    ("ready (navigation → html[data-ready])", None, "ready"),
]
LOADS = ("dev", "dev_reload", "dist_reload")
LOAD_NAMES = {"dev": "dev server", "dev_reload": "dev server reload", "dist_reload": "dist/ reload (worker)"}


class _Chromium:
    """The bench's Chromium (a context of its own) with the verbs of ``tests.browsers.drivers.EnginePage``
    this part uses: ``goto``, ``reload``, ``js`` (an expression; a promise awaited), ``close``."""

    name = "chromium"

    def __init__(self, browser) -> None:
        self.context = browser.new_context()
        self.page = self.context.new_page()

    def goto(self, url: str) -> None:
        self.page.goto(url, timeout=TIMEOUT_S * 1000)

    def reload(self) -> None:
        self.page.reload(timeout=TIMEOUT_S * 1000)

    def js(self, expression: str):
        return self.page.evaluate(f"async () => ({expression})")

    def close(self) -> None:
        self.context.close()


def _open(name: str, run):
    if name == "chromium":
        return _Chromium(run.browser)
    from tests.browsers.drivers import ENGINES as DRIVERS

    return DRIVERS[name]()


def _ready(page) -> dict:
    """Wait (polling, the page's clock is what counts) for ready; the page's marks."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        try:
            state = page.js(READY)
        except Exception:  # noqa: BLE001 - the document is being replaced
            state = None
        if state is True:
            return page.js(MARKS_JS)
        if state:
            raise RuntimeError(f"{page.name}: the app failed to start: {state}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{page.name}: not ready after {TIMEOUT_S} s: {_where(page)}")
        time.sleep(0.05)


def _where(page) -> str:
    """Where a load stands (for a timeout's message): its URL, the root's data attributes, its marks."""
    try:
        return json.dumps(page.js("({url: location.href, root: {...document.documentElement.dataset}, "
                                  "marks: performance.getEntriesByType('mark').map((m) => [m.name, Math.round(m.startTime)])})"))
    except Exception as error:  # noqa: BLE001 - a page that does not answer
        return f"(no answer: {error})"


def _seed(page, url: str, value: str) -> None:
    """Put ``value`` in the origin's stored threads (a page of that origin without the app)."""
    page.goto(url)
    page.js(f"(localStorage.clear(), localStorage.setItem({json.dumps(data.STORAGE_KEY)}, {json.dumps(value)}), true)")


def _round(page, dev: str, dist: str) -> dict:
    """One engine's loads of a round: dev server (navigation, then a reload) and the build (a first
    visit, precached, then a reload under its worker). Marks per load."""
    out = {}
    page.goto(dev)
    out["dev"] = _ready(page)
    page.reload()
    out["dev_reload"] = _ready(page)
    page.goto(dist)
    _ready(page)
    page.js(f"({ACTIVE_JS})()")
    page.reload()
    out["dist_reload"] = _ready(page)
    return out


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _span(marks: dict, a: str | None, b: str):
    if marks.get(b) is None or (a is not None and marks.get(a) is None):
        return None
    return marks[b] - (marks[a] if a else 0.0)


def _serve(root: Path, **kwargs):
    from tools.serve import make_server

    server = make_server("127.0.0.1", 0, root=root, quiet=True, **kwargs)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def run(run, *, quick: bool) -> dict:
    """Figures and goals of the part (see the module docstring); ``quick``: skipped."""
    if quick:
        return {"skipped": "--quick: three browsers' boots take longer than the quick run's share", "goals": {}}
    from tools import build as build_tool

    work = Path(tempfile.mkdtemp(prefix="agentbar-bench-browsers-"))
    build_tool.build(work / "dist", quiet=True, brotli_quality=9)
    dist_server, dist_origin = _serve(work / "dist", base=BASE, headers=build_tool.HEADERS)
    seed = data.envelope({**data.others(19), COURSE: 100})
    dev_origin = run.base.rstrip("/")  # the bench's served copy of the repository
    dev = f"{dev_origin}/index.html?course={COURSE}&delay=0"
    dist = f"{dist_origin}{BASE}index.html?course={COURSE}&delay=0"
    samples: dict[str, list[dict]] = {name: [] for name in ENGINES}
    pages = {}
    try:
        for name in ENGINES:
            started = time.monotonic()
            pages[name] = _open(name, run)
            _seed(pages[name], f"{dev_origin}/bench/pages/blank.html", seed)
            _seed(pages[name], f"{dist_origin}{BASE}static/icons/agentbar.svg", seed)
            print(f"  browsers: {name} started and seeded in {time.monotonic() - started:.1f} s", flush=True)
        for i in range(ROUNDS):
            for name in (ENGINES if i % 2 == 0 else tuple(reversed(ENGINES))):
                samples[name].append(_round(pages[name], dev, dist))
            print(f"  browsers round {i + 1}/{ROUNDS}: " + "; ".join(
                f"{n} ready {samples[n][-1]['dev']['ready']:.0f} / reload {samples[n][-1]['dev_reload']['ready']:.0f}"
                f" / dist/ reload {samples[n][-1]['dist_reload']['ready']:.0f} ms" for n in ENGINES), flush=True)
    finally:
        for page in pages.values():
            try:
                page.close()
            except Exception:  # noqa: BLE001 - a driver that ended already
                pass
        dist_server.shutdown()
        dist_server.server_close()
        shutil.rmtree(work, ignore_errors=True)

    return summarize(samples)


def summarize(samples: dict[str, list[dict]]) -> dict:
    """The part's figures from ``samples`` (engine → one ``{load: marks}`` per round, ``load`` one of
    ``LOADS``, marks as ``MARKS_JS`` reads them, ms from navigation; Chromium's included): each
    engine's median phases per load, its ready times, and per goal the median of per-round ratios to
    Chromium's ready, with its limit and whether it is met."""
    engines = list(samples)
    figures: dict = {"rounds": len(samples["chromium"]), "engines": engines, "phases": {}, "ready_ms": {},
                     "ratios": {}, "snapshot": {}, "controlled": {}}
    for name in engines:
        figures["phases"][name] = {load: [_median([_span(s[load], a, b) for s in samples[name]]) for _, a, b in PHASES]
                                   for load in LOADS}
        figures["ready_ms"][name] = {load: [s[load]["ready"] for s in samples[name]] for load in LOADS}
        figures["snapshot"][name] = sorted({s[load]["snapshot"] or "none" for s in samples[name] for load in LOADS})
        figures["controlled"][name] = all(s["dist_reload"]["controlled"] for s in samples[name])
    goals = {}
    for name, limit in GOALS.items():
        if name not in samples:
            continue
        for load in ("dev", "dist_reload"):
            ratio = _median([s[load]["ready"] / c[load]["ready"] for s, c in zip(samples[name], samples["chromium"])])
            figures["ratios"][f"{name}/{load}"] = ratio
            goals[f"{name} {LOAD_NAMES[load]} ready / Chromium's"] = {"value": ratio, "limit": limit, "pass": ratio <= limit}
    figures["goals"] = goals
    return figures


def report(f: dict) -> None:
    """Print the per-engine phase table, the ratios to Chromium and where the time goes."""
    if f.get("skipped"):
        print(f"\nBrowsers: skipped ({f['skipped']})")
        return
    engines = f["engines"]
    print(f"\nStart-up in three engines ({f['rounds']} interleaved rounds, one profile each; medians of the "
          "page's own marks, ms)")
    for load in LOADS:
        print(f"  {LOAD_NAMES[load]}:")
        print(f"    {'phase':<80}" + "".join(f"{n:>10}" for n in engines))
        for i, (phase, _a, _b) in enumerate(PHASES):
            cells = [f["phases"][n][load][i] for n in engines]
            print(f"    {phase:<80}" + "".join("         —" if c is None else f"{c:>10.0f}" for c in cells))
    print("  ratios to Chromium (median of per-round ratios): " + ", ".join(
        f"{k} {v:.2f}" for k, v in f["ratios"].items()))
    print("  snapshot: " + ", ".join(f"{n} {'/'.join(f['snapshot'][n])}" for n in engines)
          + "; dist/ reloads under the worker: " + ", ".join(f"{n} {f['controlled'][n]}" for n in engines))
    for name in GOALS:
        chromium, other = f["phases"]["chromium"]["dev"], f["phases"][name]["dev"]
        gaps = sorted(((o - c, phase.split(" (")[0]) for (phase, _a, _b), o, c in zip(PHASES[:-1], other, chromium)
                       if o is not None and c is not None), reverse=True)
        print(f"  {name}: where its dev-server load is longer than Chromium's: " + ", ".join(
            f"{phase} +{gap:.0f} ms" for gap, phase in gaps[:3] if gap > 0))
