"""Bench part ``backup`` (DESIGN.md §14 "Backup"): ``bash tools/dev.sh bench --only backup [--quick]``.

One browser context's IndexedDB is filled with N conversations of one course (``bench.history``'s
seed: T turns each, mixed Chinese/English text), then, each with the ``MessageChannel`` heartbeat
``longtask`` observer on (every main-thread task over 50 ms):

- **baseline** (same page, same run): plain JavaScript reads every conversation, message and turn
  record through Dexie in pages of 200 and ``JSON.stringify``-es them into a ``Blob``, what any
  export has to do at least, with no zip and no validation;
- **write**: ``backup-export`` clicked → ``history-status`` says the backup was saved; the file's
  bytes and manifest counts;
- **restore into a fresh profile**: a new context, ``backup-import`` given the file → the outcome in
  ``history-status`` (``data-added`` must be N);
- **restore into a profile holding half**: a third context restores a cut of the file holding the
  first half of its conversation members, then the whole file: ``data-added`` must be the other
  half and ``data-present`` the first.

N = 10,000 conversations × 10 turns (``--quick``: 200 × 10, which proves the part runs). Each step also runs under a Chrome
trace (``bench.trace``): its main-thread tasks by thread CPU time beside the wall clock.
"""

from __future__ import annotations

import io
import json
import tempfile
import time
import zipfile
from pathlib import Path

from app.backup.format import SLICE
from bench.history import COURSE, _open_app, seeded_page
from bench.trace import cpu, traced

GOALS = {"longtask_ms_max": 50}

# A passive probe of the main thread: the ``longtask`` observer (no heartbeat of its own, which
# would compete with the page's own task scheduling for a whole restore).
LONGTASKS = """() => {
  window.__longtasks = [];
  window.__longObserver = new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__longtasks.push(e.duration); });
  window.__longObserver.observe({ type: "longtask" });
}"""
STOP_PROBES = """() => { window.__longObserver.disconnect(); return window.__longtasks; }"""

BASELINE_JS = """
async (course) => {
  const { Dexie } = await import('./static/vendor/dexie/dexie.mjs');
  const db = await new Dexie('agentbar').open();
  const t0 = performance.now();
  const parts = [];
  let lower = '', count = 0;
  for (;;) {
    const metas = await db.table('conversations').where('taskId').above(lower).limit(200).toArray();
    if (!metas.length) break;
    const ids = metas.map((m) => m.taskId);
    const messages = await db.table('messages').bulkGet(ids);
    const turns = await db.table('turns').bulkGet(ids);
    parts.push(metas.map((meta, i) => JSON.stringify({ meta, messages: messages[i].messages, turns: turns[i].turns })).join('\\n'));
    count += metas.length;
    lower = ids[ids.length - 1];
    await new Promise((r) => setTimeout(r, 0));
  }
  const blob = new Blob(parts, { type: 'application/x-ndjson' });
  db.close();
  return [performance.now() - t0, count, blob.size];
}
"""

# Resolves with [ms from the control's event to history-status's outcome, result, the status's data-*].
WATCH_JS = """
([testid, event]) => {
  const control = document.querySelector(`[data-testid=${testid}]`);
  const status = document.querySelector('[data-testid=history-status]');
  status.removeAttribute('data-result');
  status.dataset.kind = '';
  window.__outcome = new Promise((resolve) => {
    let began = null;
    control.addEventListener(event, () => { began = performance.now(); }, { capture: true, once: true });
    const obs = new MutationObserver(() => {
      const result = status.getAttribute('data-result');
      if (began !== null && status.dataset.kind === 'backup' && (result === 'ok' || result === 'error')) {
        obs.disconnect();
        resolve([performance.now() - began, result, { ...status.dataset }]);
      }
    });
    obs.observe(status, { attributes: true });
  });
}
"""


def _step(name: str) -> None:
    print(f"  backup: {name} ({time.strftime('%H:%M:%S')})", flush=True)


def _probed(run, page, act) -> dict:
    """Run ``act()`` (it returns a dict) with the ``longtask`` observer on and under a Chrome trace
    (``bench.trace``); adds the longest main-thread task (``longest_task_ms``, 0 when none reached
    50 ms), how many passed 50 ms, and ``cpu``: the same tasks by thread CPU time."""
    page.evaluate(LONGTASKS)
    traced(run, page)
    page.wait_for_timeout(100)
    out = act()
    page.wait_for_timeout(100)  # longtask entries arrive asynchronously
    tasks = page.evaluate(STOP_PROBES)
    return out | {"longest_task_ms": round(max(tasks, default=0.0), 1), "longtasks_over_50": len(tasks),
                  "longtask_total_ms": round(sum(tasks)), "cpu": cpu(run)}


def _restore(run, page, path: Path, timeout_ms: int) -> dict:
    page.evaluate(WATCH_JS, ["backup-import", "change"])

    def act():
        page.set_input_files("[data-testid=backup-import]", str(path))
        ms, result, status = page.evaluate("() => window.__outcome")
        return {"ms": round(ms), "result": result, "added": status.get("added"), "present": status.get("present"),
                "reason": status.get("reason")}
    page.set_default_timeout(timeout_ms)
    return _probed(run, page, act)


def _half(data: bytes) -> tuple[bytes, int]:
    """The backup cut to the first half of its conversations (by line, so a file of one member is
    cut too; no versions, threads or heads)."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = sorted(n for n in archive.namelist() if n.startswith("conversations/"))
        lines = [line for n in members for line in archive.read(n).splitlines() if line]
        manifest = json.loads(archive.read("manifest.json"))
    kept = lines[:len(lines) // 2]
    manifest["counts"] = {"threads": 0, "conversations": len(kept), "versions": 0}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        out.writestr("manifest.json", json.dumps(manifest))
        for i in range(0, len(kept), SLICE):
            out.writestr(f"conversations/{i // SLICE:06d}.jsonl", b"\n".join(kept[i:i + SLICE]) + b"\n")
    return buffer.getvalue(), len(kept)


def _console(page):
    import os
    if os.environ.get("BENCH_CONSOLE"):
        page.on("console", lambda m: print(f"    [console {m.type}] {m.text[:300]}", flush=True))
    return page


def _fresh(run):
    context = run.context()
    page = _console(_open_app(run, context))
    page.click("[data-testid=history-open]")
    page.wait_for_selector("[data-testid=history-drawer]:not([hidden])")
    return context, page


def run(run, *, quick: bool) -> dict:
    n, turns = (200, 10) if quick else (10_000, 10)
    timeout_ms = 600_000
    figures: dict = {"conversations": n, "turns_each": turns}
    source = run.context()
    _step(f"seed {n} conversations")
    page = _console(seeded_page(run, source, n, turns, figures))
    page.set_default_timeout(timeout_ms)
    page.click("[data-testid=history-open]")
    page.wait_for_selector("[data-testid=history-drawer]:not([hidden])")

    def baseline():
        ms, count, size = page.evaluate(BASELINE_JS, COURSE)
        return {"ms": round(ms), "records": count, "bytes": size}
    _step("JS baseline")
    figures["baseline"] = _probed(run, page, baseline)
    figures["idle"] = _probed(run, page, lambda: (page.wait_for_timeout(1000), {})[1])

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "backup.zip"
        page.click("[data-testid=history-more-toggle]")  # the file actions wait behind this disclosure
        page.wait_for_selector("[data-testid=backup-export]", state="visible")

        def write():
            page.evaluate(WATCH_JS, ["backup-export", "click"])
            with page.expect_download(timeout=timeout_ms) as info:
                page.click("[data-testid=backup-export]")
            ms, result, status = page.evaluate("() => window.__outcome")
            info.value.save_as(path)
            return {"ms": round(ms), "result": result, "bytes": path.stat().st_size}
        _step("write")
        figures["write"] = _probed(run, page, write)
        with zipfile.ZipFile(path) as archive:
            figures["write"]["counts"] = json.loads(archive.read("manifest.json"))["counts"]
        source.close()

        _step("restore into a fresh profile")
        context, fresh = _fresh(run)
        figures["restore_fresh"] = _restore(run, fresh, path, timeout_ms)
        context.close()

        half_path = Path(folder) / "half.zip"
        data, half = _half(path.read_bytes())
        half_path.write_bytes(data)
        _step("restore into a profile holding half")
        context, holder = _fresh(run)
        figures["restore_half_first"] = _restore(run, holder, half_path, timeout_ms)
        figures["restore_over_half"] = _restore(run, holder, path, timeout_ms) | {"expected_added": n - half,
                                                                               "expected_present": half}
        context.close()

    over = figures["restore_over_half"]
    longest = max(figures[k]["longest_task_ms"] for k in ("write", "restore_fresh", "restore_over_half"))
    figures["goals"] = {
        f"backup of {n} conversations written and restored with no task > 50 ms": {
            "value": longest, "limit": GOALS["longtask_ms_max"], "pass": longest <= GOALS["longtask_ms_max"]},
        "restore over a profile holding half adds exactly the other half": {
            "value": f"added {over['added']}, present {over['present']}", "limit": f"added {n - half}, present {half}",
            "pass": over["added"] == str(n - half) and over["present"] == str(half)},
        "restore into a fresh profile adds every conversation": {
            "value": figures["restore_fresh"]["added"], "limit": str(n),
            "pass": figures["restore_fresh"]["added"] == str(n)},
    }
    return figures


def report(figures: dict) -> None:
    """Print the backup table."""
    print(f"\nBackup ({figures['conversations']} conversations × {figures['turns_each']} turns, one course; "
          f"seeded in {figures['seed_s']} s):")
    rows = (("baseline", "JS baseline: read all through Dexie + JSON.stringify"),
            ("idle", "idle page, 1 s (heartbeat floor)"),
            ("write", "backup-export → saved"),
            ("restore_fresh", "backup-import, fresh profile"),
            ("restore_half_first", "backup-import of the first half"),
            ("restore_over_half", "backup-import over that half"))
    for key, label in rows:
        row = figures.get(key)
        if row is None:
            continue
        extra = {k: v for k, v in row.items() if k not in ("ms", "longest_task_ms", "longtasks_over_50",
                                                             "longtask_total_ms", "cpu")}
        took = f"{row['ms']} ms, " if "ms" in row else ""
        c = row.get("cpu") or {}
        by_cpu = (f"; by thread CPU longest {c['longest_cpu_ms']} ms, {c['over_50_cpu']} tasks > 50 ms"
                  if c.get("tasks") else "")
        print(f"  {label}: {took}longest main-thread task {row['longest_task_ms']:.0f} ms "
              f"({row['longtasks_over_50']} tasks > 50 ms, {row['longtask_total_ms']} ms in all{by_cpu}) {extra or ''}")
