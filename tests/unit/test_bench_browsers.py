"""The browsers bench part's figures (bench/browsers.py): phases from the page's marks, goals as medians
of per-round ratios to Chromium, and a quick run that skips the part without starting a browser."""

from __future__ import annotations

from bench import browsers


def marks(scale: float, ready: float, snapshot: str = "restored", controlled: bool = True) -> dict:
    """Marks of one load: every phase ``scale`` × a fixed shape, ready at ``ready`` ms."""
    return {"restored": 1000 * scale, "packages": 2000 * scale, "main": 2200 * scale, "imported": 3000 * scale,
            "hydrated": 3100 * scale, "rendered": 3300 * scale, "ready": ready, "painted": None,
            "snapshot": snapshot, "controlled": controlled}


def round_of(scale: float, ready: float, dist_ready: float) -> dict:
    return {"dev": marks(scale, ready), "dev_reload": marks(scale, ready), "dist_reload": marks(scale, dist_ready)}


def samples(webkit: list[tuple[float, float]], firefox: list[tuple[float, float]]) -> dict:
    return {"chromium": [round_of(1, 4000, 2000)] * len(webkit),
            "firefox": [round_of(1.1, r, d) for r, d in firefox],
            "webkit": [round_of(2, r, d) for r, d in webkit]}


def test_goals_are_medians_of_per_round_ratios_to_chromium_against_their_limits():
    f = browsers.summarize(samples(webkit=[(6000, 2800), (5800, 3200), (8000, 3000)],
                                   firefox=[(4800, 2400), (4900, 2500), (4400, 2000)]))
    assert f["rounds"] == 3
    assert f["ratios"] == {"webkit/dev": 1.5, "webkit/dist_reload": 1.5, "firefox/dev": 1.2, "firefox/dist_reload": 1.2}
    assert all(g["pass"] for g in f["goals"].values()), f["goals"]
    assert {g["limit"] for name, g in f["goals"].items() if name.startswith("webkit")} == {1.5}
    assert {g["limit"] for name, g in f["goals"].items() if name.startswith("firefox")} == {1.2}

    over = browsers.summarize(samples(webkit=[(6040, 3100)], firefox=[(4000, 2500)]))
    met = {name: g["pass"] for name, g in over["goals"].items()}
    assert met == {"webkit dev server ready / Chromium's": False, "webkit dist/ reload (worker) ready / Chromium's": False,
                   "firefox dev server ready / Chromium's": True, "firefox dist/ reload (worker) ready / Chromium's": False}


def test_phases_are_spans_between_the_pages_marks_and_a_missing_mark_leaves_its_phase_blank():
    rounds = samples(webkit=[(9000, 5000)], firefox=[(5000, 2500)])
    rounds["webkit"][0]["dev"]["restored"] = None  # booted without the snapshot: no restore mark
    f = browsers.summarize(rounds)
    names = [name.split(" (")[0] for name, _a, _b in browsers.PHASES]
    chromium = dict(zip(names, f["phases"]["chromium"]["dev"]))
    assert chromium == {"snapshot": 1000, "packages": 1000, "PyScript set-up": 200, "imports": 800, "hydrate": 100,
                        "render": 200, "render → ready": 700, "ready": 4000}
    webkit = dict(zip(names, f["phases"]["webkit"]["dev"]))
    assert webkit["snapshot"] is None and webkit["packages"] is None and webkit["imports"] == 1600
    assert f["controlled"] == {"chromium": True, "firefox": True, "webkit": True}


def test_the_report_names_each_engine_and_where_the_slower_ones_spend_their_time(capsys):
    browsers.report(browsers.summarize(samples(webkit=[(9000, 4000)], firefox=[(5000, 2500)])))
    out = capsys.readouterr().out.splitlines()
    headers = [x.split()[-3:] for x in out if x.strip().startswith("phase ")]
    assert headers == [["chromium", "firefox", "webkit"]] * 3  # one table per load
    # WebKit's marks are twice Chromium's, ready 9000 against 4000 ms: its three largest gaps, largest first
    assert "  webkit: where its dev-server load is longer than Chromium's: render → ready +1700 ms, " \
           "snapshot +1000 ms, packages +1000 ms" in out


def test_a_quick_run_skips_the_part_and_starts_no_browser(capsys):
    class NoBrowser:
        def __getattr__(self, name):
            raise AssertionError(f"the quick run used the bench's {name}")

    figures = browsers.run(NoBrowser(), quick=True)
    assert figures["goals"] == {} and figures["skipped"]
    browsers.report(figures)
    assert "skipped" in capsys.readouterr().out
