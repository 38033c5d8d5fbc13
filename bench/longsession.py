"""Bench part ``longsession`` (DESIGN.md §6, §13): many turns in one session.

One page at ``delay=0`` runs turns back to back through the composer (value
set, Send clicked, until ``data-running`` is ``false`` and a frame is painted),
300 turns (600 messages; ``--quick``: 20 turns). Per-turn time is the median
of the 5 turns ending at each checkpoint; at each checkpoint the DOM node
count (CDP ``Memory.getDOMCounters``), the messages rendered, and the JS heap
(CDP ``Runtime.getHeapUsage``, after a forced GC) are read, and 3 more turns
through the bench hooks (``?bench=1``, ``agentbarBench.turn``; cut off again
with ``trim``) time the completion callback (serialize + ``store.save`` +
render), to show where a turn's time goes. Pyodide's wasm memory is not in
the heap figure.

Goal: turn time at message 600 ≤ 1.5× the turn time at message 10. This
machine's load swings make single checkpoints noisy (±50 % between runs), so
the goal is measured paired: turns on the 600-message page alternate with
turns on a fresh page (own context and storage) from message 10, 15 rounds,
ratio of the medians; the in-page ratio of the first and last checkpoints is
reported beside it. ``--quick`` (it proves the part runs) has no fresh page: its goal figure is the
in-page ratio.
"""

from __future__ import annotations

import statistics
from urllib.parse import urlencode

from bench.scripts import goto_hooked

GROWTH_MAX = 1.5
PAIRED_ROUNDS = 15
COURSE = "intro-ml"

# Runs ``count`` turns; returns the ms of each (click → running false → next frame).
TURNS = """
async ([start, count]) => {
  const input = document.querySelector('[data-testid=agent-input]');
  const send = document.querySelector('[data-testid=agent-send]');
  const panel = document.querySelector('[data-testid=agent-panel]');
  const idle = () => new Promise((resolve) => {
    if (panel.dataset.running === 'false') return resolve();
    const o = new MutationObserver(() => { if (panel.dataset.running === 'false') { o.disconnect(); resolve(); } });
    o.observe(panel, { attributes: true, attributeFilter: ['data-running'] });
  });
  const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  const times = [];
  for (let i = 0; i < count; i++) {
    input.value = 'turn ' + (start + i) + ': what does this scene say about “learning” 学习? 🙂';
    const t0 = performance.now();
    send.click();
    await new Promise((r) => setTimeout(r, 0));
    await idle();
    await frame();
    times.push(performance.now() - t0);
  }
  return times;
}
"""


COMPLETIONS = """
async ([keep, count]) => {
  const bench = window.agentbarBench;
  const out = [];
  for (let i = 0; i < count; i++) out.push(JSON.parse(await bench.turn('completion probe ' + i + ' 学习 🙂')));
  bench.trim(keep);
  return out;
}
"""


def run(run, *, quick: bool) -> dict:
    """Per-turn ms, DOM nodes and JS heap at checkpoints (message counts), and ``goals``."""
    turns = 20 if quick else 300
    checkpoints = [5, 50, 100, 200, 300] if not quick else [5, 20]
    checkpoints = [c for c in checkpoints if c <= turns]
    context = run.context()
    page = context.new_page()
    run.seed(page, {})
    goto_hooked(page, run.base + "index.html?" + urlencode({"course": COURSE, "delay": 0, "bench": 1}))
    run.wait_ready(page)
    cdp = context.new_cdp_session(page)
    cdp.send("HeapProfiler.enable")
    times: list[float] = []
    rows = []
    done = 0
    for checkpoint in checkpoints:
        times += page.evaluate(TURNS, [done, checkpoint - done])
        done = checkpoint
        # Where a turn's time goes: its completion callback (save + render), timed by the bench
        # hooks on 3 turns through runtime.send; they are cut off again afterwards (trim).
        completion = page.evaluate(COMPLETIONS, [checkpoint * 2, 3])
        cdp.send("HeapProfiler.collectGarbage")
        heap = cdp.send("Runtime.getHeapUsage")
        counters = cdp.send("Memory.getDOMCounters")
        rows.append({
            "turns": checkpoint,
            "messages": checkpoint * 2,
            "turn_ms": statistics.median(times[max(0, checkpoint - 5):checkpoint]),
            "dom_nodes": counters["nodes"],
            "listeners": counters["jsEventListeners"],
            "rendered_messages": page.evaluate("() => document.querySelectorAll('[data-testid=agent-message]').length"),
            "js_heap_mb": heap["usedSize"] / 1e6,
            "completion_ms": statistics.median(c["end"] - c["finish"] for c in completion),
            "save_ms": statistics.median(c["saveOut"] - c["saveIn"] for c in completion),
        })
        print(f"  longsession: {checkpoint * 2} messages, turn {rows[-1]['turn_ms']:.0f} ms, "
              f"{rows[-1]['dom_nodes']} DOM nodes", flush=True)
    first, last = rows[0], rows[-1]
    growth = last["turn_ms"] / first["turn_ms"]
    if quick:  # no paired page: the in-page ratio is the goal's figure
        context.close()
        return {"turns": turns, "rows": rows, "turn_ms_all": times, "paired": None,
                "goals": {f"turn time at message {last['messages']} vs message 10 (in the page; --quick)": {
                    "value": growth, "limit": GROWTH_MAX, "pass": growth <= GROWTH_MAX}}}
    # The goal, paired so that this machine's load drifts cancel: turns on the long page
    # alternate with turns on a fresh page (own context, own storage) holding ~10 messages.
    fresh_context = run.context()
    fresh = fresh_context.new_page()
    run.seed(fresh, {})
    fresh.goto(run.base + "index.html?" + urlencode({"course": COURSE, "delay": 0}))
    run.wait_ready(fresh)
    fresh.evaluate(TURNS, [0, 4])  # 8 messages, then the paired rounds start at message 10
    paired_long, paired_short = [], []
    for i in range(PAIRED_ROUNDS):
        paired_long += page.evaluate(TURNS, [done + i, 1])
        paired_short += fresh.evaluate(TURNS, [4 + i, 1])
    fresh_context.close()
    context.close()
    paired = statistics.median(paired_long) / statistics.median(paired_short)
    return {
        "turns": turns,
        "rows": rows,
        "turn_ms_all": times,
        "paired": {"long_messages": last["messages"], "rounds": len(paired_long),
                   "long_ms": statistics.median(paired_long), "short_ms": statistics.median(paired_short),
                   "ratio": paired, "in_page_ratio": growth},
        "goals": {f"turn time at message {last['messages']} vs message 10 (paired pages)": {
            "value": paired, "limit": GROWTH_MAX, "pass": paired <= GROWTH_MAX}},
    }


def report(figures: dict) -> None:
    """Print one row per checkpoint."""
    rows = figures.get("rows") or []
    if not rows:
        return
    base = rows[0]["turn_ms"]
    print(f"{figures['turns']} turns at delay=0 in one page (turn = Send click → idle → next frame; median of 5)")
    print(f"{'messages':>9}{'turn ms':>9}{'ratio':>7}{'completion':>12}{'save':>7}{'DOM nodes':>11}{'rendered':>10}"
          f"{'listeners':>11}{'JS heap MB':>12}")
    for r in rows:
        print(f"{r['messages']:>9}{r['turn_ms']:>9.1f}{r['turn_ms'] / base:>7.2f}{r['completion_ms']:>12.1f}"
              f"{r['save_ms']:>7.1f}{r['dom_nodes']:>11}{r['rendered_messages']:>10}{r['listeners']:>11}"
              f"{r['js_heap_mb']:>12.1f}")
    pr = figures.get("paired")
    if pr:
        print(f"  paired ({pr['rounds']} alternating turns): {pr['long_messages']} messages {pr['long_ms']:.1f} ms vs "
              f"a fresh page from message 10 {pr['short_ms']:.1f} ms = {pr['ratio']:.2f}× (in-page, first vs last"
              f" checkpoint: {pr['in_page_ratio']:.2f}×)")
    print("  (completion = the turn's completion callback: serialize, store.save, render; save = store.save alone;"
          " both medians of 3 turns through the bench hooks, Python time in the page)")
