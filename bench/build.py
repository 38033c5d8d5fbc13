"""Bench part ``build``: the deployable build (DESIGN.md §11).

Same run, same browser, rounds interleaved:

- **reload start-up**: navigation → ``html[data-ready]`` on the *third* load in
  one browser context (cold, reload, reload: HTTP cache and compiled-wasm cache
  warm as they get), for the app built into ``dist/`` (served under
  ``/some/where/`` with the build's headers, running under its service worker
  from the second load on) and for the floor page ``bench/pages/floor-pyodide.html``
  (``loadPyodide()`` + pydantic + one model). Goal: app ≤ 0.8 × floor.
- **cold bytes on the wire**: body bytes the server sent for a first visit
  (fresh context) until the service worker has precached the build, against
  the development page's first visit (the repository served as it is,
  uncompressed) in the same run. Goal: ≤ 40 % of it.
- for information: bytes the server sent for the reloads under the worker
  (only ``sw.js``, the update check), and the development page's third load
  (not in ``--quick``: the development page's cold load alone, whose bytes the
  goal needs; its two reloads were the part's slowest loads).

``--quick`` proves the build and its loads run: the floor page (the same page the start-up and
firstpaint parts load) is not loaded here, so the reload goal has no figure in a quick run.

The app's stored value is the start-up part's seed (20 courses, 100 messages
on the shown one).
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from bench import data
from bench.scripts import ACTIVE_JS
from tools import build as build_tool
from tools.serve import make_server

ROOT = Path(__file__).resolve().parent.parent
BASE = "/some/where/"
CURRENT = "intro-ml"
RELOAD_GOAL = 0.8
BYTES_GOAL = 0.40


def _serve(root: Path, **kwargs):
    server = make_server("127.0.0.1", 0, root=root, quiet=True, count_bytes=True, **kwargs)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def _three_loads(run, url: str, seed: str | None, server=None, worker: bool = False, reloads: bool = True) -> dict:
    """Cold load, reload, reload in one fresh context; ready times (ms) and server bytes. ``reloads``
    false: the cold load alone (the reloads' figures ``None``)."""
    context = run.context()
    page = context.new_page()
    if seed is not None:
        page.goto(url.split("index.html")[0] + "static/icons/agentbar.svg")
        page.evaluate("v => { localStorage.clear(); localStorage.setItem('maic-agent-threads', v); }", seed)
    start = server.bytes_sent[0] if server else 0
    page.goto(url)
    cold = run.wait_ready(page)["ready"]
    if worker:
        page.evaluate(ACTIVE_JS)  # the first visit is over once the build is precached
    time.sleep(0.2)
    cold_bytes = (server.bytes_sent[0] - start) if server else None
    if not reloads:
        context.close()
        return {"cold": cold, "second": None, "third": None, "cold_bytes": cold_bytes, "reload_bytes": None,
                "controlled": False}
    page.reload()
    second = run.wait_ready(page)["ready"]
    controlled = page.evaluate("() => !!(navigator.serviceWorker && navigator.serviceWorker.controller)")
    mid = server.bytes_sent[0] if server else 0
    page.reload()
    third = run.wait_ready(page)["ready"]
    time.sleep(0.2)
    reload_bytes = (server.bytes_sent[0] - mid) if server else None
    context.close()
    return {"cold": cold, "second": second, "third": third, "cold_bytes": cold_bytes,
            "reload_bytes": reload_bytes, "controlled": controlled}


QUICK_QUALITY = 9
"""``--quick``'s Brotli quality: the build proves it works; 11 takes minutes on a cold compression cache."""


def build_dist(quality: int) -> tuple[str, dict, float]:
    """``dist/`` built into a new temporary folder at Brotli ``quality``: ``(folder, manifest, seconds)``,
    ``folder`` holding ``dist/`` (the caller removes it)."""
    work = Path(tempfile.mkdtemp(prefix="agentbar-bench-build-"))
    started = time.time()
    manifest = build_tool.build(work / "dist", quiet=True, brotli_quality=quality)
    return str(work), manifest, time.time() - started


def _remove(built: tuple) -> None:
    shutil.rmtree(built[0], ignore_errors=True)


def prepare(run, *, quick: bool) -> None:
    """``--quick``: ``dist/`` built in the background while the earlier parts run (``Run.prepare``; on a
    fresh clone its compression is tens of seconds of CPU), so this part only loads it."""
    if quick:
        run.prepare(build_dist, QUICK_QUALITY, discard=_remove)


def run(run, *, quick: bool) -> dict:
    """Figures and goals of the build part (see the module docstring); ``build_s`` is the build's own time
    (``--quick``: in the background, beside the parts before this one, when ``prepare`` started it)."""
    rounds = 1 if quick else 5
    quality = QUICK_QUALITY if quick else 11
    folder, manifest, build_s = run.prepared(build_dist, quality)
    work = Path(folder)
    dist_server, dist_origin = _serve(work / "dist", base=BASE, headers=build_tool.HEADERS)
    dev_server, dev_origin = _serve(ROOT)
    seed = data.envelope({**data.others(19), CURRENT: 100})
    app_url = f"{dist_origin}{BASE}index.html?course={CURRENT}&delay=0"
    dev_url = f"{dev_origin}/index.html?course={CURRENT}&delay=0"
    floor_url = f"{run.base}bench/pages/floor-pyodide.html"
    samples: dict[str, list[dict]] = {"app_dist": [], "app_dev": [], "floor": []}
    try:
        for i in range(rounds):
            order = ["app_dist", "floor", "app_dev"] if i % 2 == 0 else ["app_dev", "floor", "app_dist"]
            if quick:  # no floor: the reload goal is the full run's
                order.remove("floor")
            for name in order:
                if name == "app_dist":
                    samples[name].append(_three_loads(run, app_url, seed, dist_server, worker=True))
                elif name == "app_dev":  # --quick: its cold load alone (its bytes are the goal's measure)
                    samples[name].append(_three_loads(run, dev_url, seed, dev_server, reloads=not quick))
                else:
                    samples[name].append(_three_loads(run, floor_url, None))
            print(f"  build round {i + 1}/{rounds}: " + ", ".join(
                f"{n} third load {samples[n][-1]['third']:.0f} ms" for n in samples
                if samples[n] and samples[n][-1]["third"] is not None), flush=True)
    finally:
        for server in (dist_server, dev_server):
            server.shutdown()
            server.server_close()
        shutil.rmtree(work, ignore_errors=True)

    def med(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None
    figures: dict = {"rounds": rounds, "build_s": round(build_s, 1), "brotli_quality": quality,
                     "version": manifest["version"],
                     "files": len(manifest["files"]),
                     "raw_bytes": sum(f["size"] for f in manifest["files"].values())}
    for name, rows in samples.items():
        if not rows:  # --quick: the floor was not loaded
            figures[name] = None
            continue
        figures[name] = {
            "cold_ms": med(r["cold"] for r in rows),
            "reload_ms": med(r["third"] for r in rows),
            "reload_ms_all": [r["third"] for r in rows],
            "cold_bytes": med(r["cold_bytes"] for r in rows) if rows[0]["cold_bytes"] is not None else None,
            "reload_bytes": med(r["reload_bytes"] for r in rows) if rows[0]["reload_bytes"] is not None else None,
            "controlled": all(r["controlled"] for r in rows),
        }
    floor = figures["floor"]["reload_ms"] if figures["floor"] else None
    figures["reload_ratio_to_floor"] = None if floor is None else figures["app_dist"]["reload_ms"] / floor
    figures["reload_paired_ratio_median"] = med(a["third"] / b["third"] for a, b in zip(samples["app_dist"], samples["floor"]))
    dev_reload = figures["app_dev"]["reload_ms"]
    figures["dev_reload_ratio_to_floor"] = None if dev_reload is None or floor is None else dev_reload / floor
    figures["cold_bytes_ratio_to_dev"] = figures["app_dist"]["cold_bytes"] / figures["app_dev"]["cold_bytes"]
    figures["goals"] = {
        "cold_bytes_ratio_to_dev": {"value": figures["cold_bytes_ratio_to_dev"], "limit": BYTES_GOAL,
                                    "pass": figures["cold_bytes_ratio_to_dev"] <= BYTES_GOAL},
    }
    if floor is not None:
        figures["goals"] = {"reload_ratio_to_floor": {"value": figures["reload_ratio_to_floor"], "limit": RELOAD_GOAL,
                                                      "pass": figures["reload_ratio_to_floor"] <= RELOAD_GOAL},
                            **figures["goals"]}
    return figures


def report(figures: dict) -> None:
    """Print the build part's table."""
    print(f"  dist/: {figures['files']} files, {figures['raw_bytes'] / 1e6:.2f} MB raw, version {figures['version']},"
          f" built in {figures['build_s']} s (Brotli quality {figures.get('brotli_quality', 11)});"
          f" {figures['rounds']} round(s)")
    print("  | page | cold ms | third-load ms | ratio to floor | cold bytes sent | reload bytes sent |")
    print("  | --- | --- | --- | --- | --- | --- |")
    floor = figures["floor"]["reload_ms"] if figures.get("floor") else None
    for name, label in (("app_dist", "AgentBar dist/ (service worker)"), ("app_dev", "AgentBar dev server"),
                        ("floor", "floor: loadPyodide() + pydantic")):
        f = figures[name]
        if f is None:  # --quick: not loaded
            print(f"  | {label} | — | — | — | — | — |")
            continue
        cold_b = "—" if f["cold_bytes"] is None else f"{f['cold_bytes'] / 1e6:.2f} MB"
        rel_b = "—" if f["reload_bytes"] is None else f"{f['reload_bytes'] / 1e3:.1f} kB"
        third = "—" if f["reload_ms"] is None else f"{f['reload_ms']:.0f}"
        ratio = "—" if f["reload_ms"] is None or floor is None else f"{f['reload_ms'] / floor:.2f}"
        print(f"  | {label} | {f['cold_ms']:.0f} | {third} | {ratio} | {cold_b} | {rel_b} |")
    paired = figures["reload_paired_ratio_median"]
    print(f"  reload ratio (median of per-round ratios): {'—' if paired is None else f'{paired:.2f}'};"
          f" cold bytes dist/dev: {figures['cold_bytes_ratio_to_dev']:.3f}; all dist loads controlled after the first:"
          f" {figures['app_dist']['controlled']}")
