""".ci/run: llama.cpp's build runs in the background from the start, beside the quick bench and the
tests that do not need it, and the run ends by saying each phase's wall time and the total.

The script runs here in a copy of the tree whose ``tools/dev.sh`` only notes what it was asked
(with the time) and prints what the real one would end with.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

STUB_DEV_SH = r"""#!/usr/bin/env bash
# notes "<command> <start|end> <epoch seconds, ns>" in $CALLS; "llama" takes a while, as the build does:
# it lasts until the tests have started, and the bench until the build has started (each waits at most
# 10 s, so a run that puts them in turn shows it in the times instead of hanging), whatever the load
note() { echo "$1 $2 $(date +%s.%N) ${AGENTBAR_LLAMA_BACKGROUND:-}" >> "$CALLS"; }
await() { for _ in $(seq 100); do grep -q "^$1 start" "$CALLS" && return; sleep 0.1; done; }
name="$1"; shift
[ "$name" = llama ] && [ "${1:-}" = --tools ] && name=llama-tools
note "$name" start
case "$name" in
  llama) await test; sleep 1.5 ;;
  bench) sleep 0.3; await llama; echo "bench: done" ;;
  test) sleep 0.3; echo "============ 7 passed in 0.30s ============" ;;
esac
note "$name" end
"""


def run_ci(tmp_path: Path) -> tuple[str, list[tuple[str, str, float, str]]]:
    (tmp_path / ".ci").mkdir()
    shutil.copy2(ROOT / ".ci" / "run", tmp_path / ".ci" / "run")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "dev.sh").write_text(STUB_DEV_SH)
    calls = tmp_path / "calls.txt"
    env = {**os.environ, "CALLS": str(calls)}
    env.pop("AGENTBAR_LLAMA_BACKGROUND", None)
    done = subprocess.run(["bash", str(tmp_path / ".ci" / "run")], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    rows = []
    for line in calls.read_text().splitlines():
        name, when, at, *flag = line.split(" ")
        rows.append((name, when, float(at), "".join(flag)))
    return done.stdout, rows


def test_the_llama_build_overlaps_the_quick_bench_and_the_tests_leave_the_wait_to_its_tests(tmp_path):
    _, rows = run_ci(tmp_path)
    at = {(name, when): t for name, when, t, _ in rows}
    assert at[("llama-tools", "end")] <= at[("llama", "start")]  # its compilers are set up first, in turn
    assert at[("llama", "start")] < at[("bench", "end")] and at[("llama", "end")] > at[("bench", "start")]
    assert at[("test", "start")] < at[("llama", "end")]  # the tests do not wait for the whole build ...
    assert [flag for name, when, _, flag in rows if (name, when) == ("test", "start")] == ["1"]  # ... they are told


def test_the_run_ends_with_each_phases_wall_time_and_the_total_after_the_test_summary(tmp_path):
    out, _ = run_ci(tmp_path)
    lines = out.splitlines()
    summaries = [i for i, line in enumerate(lines) if re.fullmatch(r"=+ 7 passed in [0-9.]+s =+", line)]
    assert len(summaries) == 2 and summaries[1] == len(lines) - 1  # said again last, after the phases
    tail = lines[summaries[0] + 1:-1]
    assert [re.sub(r"[0-9]+ s", "N s", line) for line in tail] == [
        "ci: llama.cpp build tools N s",
        "ci: quick bench N s",
        "ci: tests N s",
        "ci: llama.cpp build (in the background from the start) N s",
        "ci: total N s",
    ]
    assert int(re.search(r"[0-9]+", tail[-1]).group()) >= 1  # the stub build alone takes 1.5 s
