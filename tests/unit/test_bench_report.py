"""The benchmark's report ends with each part's wall time and the whole run's (bench/__main__.py): CI's
quick bench shows what it cost and whether it kept to its few minutes, without failing on time."""

from __future__ import annotations

from bench.__main__ import QUICK_BUDGET_S, print_report

MACHINE = {"cpu": "test CPU", "cores": 2, "chromium": "1", "loadavg_at_start": [1.0, 1.0, 1.0],
           "loadavg_at_end": [2.0, 2.0, 2.0]}


def report_of(result: dict, capsys) -> list[str]:
    print_report(result)
    return capsys.readouterr().out.splitlines()


def test_the_report_ends_with_each_parts_time_and_the_total(capsys):
    lines = report_of({"machine": MACHINE, "mode": "quick", "part_s": {"start-up": 41.25, "quota": 9.0},
                       "elapsed_s": 55.5}, capsys)
    at = lines.index("Time per part (wall clock; load average 1.0 at start, 2.0 at end):")
    assert lines[at + 1:] == [
        "  start-up          41.2 s",
        "  quota              9.0 s",
        f"  total             55.5 s (quick mode: within {QUICK_BUDGET_S} s)",
    ]


def test_a_quick_run_over_its_budget_says_so_and_a_full_run_names_no_budget(capsys):
    lines = report_of({"machine": MACHINE, "mode": "quick", "part_s": {"save": QUICK_BUDGET_S + 1.0},
                       "elapsed_s": QUICK_BUDGET_S + 2.0}, capsys)
    assert lines[-1] == (f"  total {QUICK_BUDGET_S + 2.0:>16.1f} s (quick mode: OVER its {QUICK_BUDGET_S} s; "
                         "the run is not failed for it)")
    lines = report_of({"machine": MACHINE, "mode": "full", "part_s": {"save": 600.0}, "elapsed_s": 610.0}, capsys)
    assert lines[-1] == "  total            610.0 s"
