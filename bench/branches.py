"""Bench part ``branches`` (DESIGN.md §17): ``bash tools/dev.sh bench --only branches [--quick]``.

A conversation of 200 messages on its shown path (100 turns) with 20 forks (an edited question, with
its own reply, beside every fifth question: 240 messages) is imported into the real page's history
as an ``agentbar-conversation`` version-2 file (``import-json``) and resumed. Then, in that page:

- **switch**: the picker of a question at a fork is moved to its other sibling (``branch-next``: the
  path below is redrawn, shorter) and back (``branch-prev``: the whole 200-message path again), for
  forks among the 40 messages the panel draws (``app.presentation.RENDER_WINDOW``: the path's last 40,
  the rest drawn when scrolled to): at turns 84, 89 and 99; measured from the click until the panel's
  last message is the new path's and two frames are painted: the wall time and the longest
  main-thread task (``PerformanceObserver('longtask')``);
- **baseline**: in the same page, the course picker goes to another course holding a linear thread of
  the same 200 messages and back (the panel draws a whole thread from the thread store): the same
  two figures. The ratio is the switch's median wall time over the baseline's.

Goal (issue 34): no main-thread task over 50 ms while a switch draws the new path.
``--quick``: the fork at turn 89 only, one round.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

from bench.scripts import LONGTASKS

COURSE, LINEAR = "bench-branches", "bench-branches-linear"
TURNS, FORK_EVERY = 100, 5
GOALS = {"longest_task_ms_max": 50}
KEY = "maic-agent-threads"
SETTLE = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 300))))"
# Does `act(arg)` (a picker's button clicked, or the course picker moved), then resolves [wall ms, longest
# task ms] once the panel's last message is `lastId` and two frames were painted.
_DRAWN_JS = """async ([arg, lastId]) => {
  const t0 = performance.now();
  (%s)(arg);
  const shown = () => {
    const messages = document.querySelectorAll('[data-testid=agent-message]');
    return messages.length > 0 && messages[messages.length - 1].dataset.messageId === lastId;
  };
  while (!shown()) await new Promise(r => setTimeout(r, 5));
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const wall = performance.now() - t0;
  await new Promise(r => setTimeout(r, 200));
  return [wall, Math.max(0, ...(window.__longtasks || []).filter(([s]) => s >= t0).map(([, d]) => d))];
}"""
SWITCH_JS = _DRAWN_JS % """([id, which]) =>
  document.querySelector(`[data-testid=agent-message][data-message-id="${id}"] [data-testid=${which}]`).click()"""
COURSE_JS = _DRAWN_JS % """course => {
  const select = document.querySelector('[data-testid=course-select]');
  if (![...select.options].some(o => o.value === course)) select.add(new Option(course, course));
  select.value = course;
  select.dispatchEvent(new Event('change', { bubbles: true }));
}"""


def _text(role: str, turn: int, edited: bool = False) -> str:
    if role == "user":
        return f"Question {turn}{' (edited)' if edited else ''}: how does “attention” work here? 注意力机制 🙂"
    return f"Answer {turn}{' to the edit' if edited else ''}: an ordinary reply of a few words, 一个普通的回答。"


def _message(ident: str, role: str, text: str, parent: str | None) -> dict:
    return {"role": role, "id": ident, "content": [{"type": "text", "text": text}], "parentId": parent}


def tree_export() -> dict:
    """The version-2 export of the benchmark's conversation (module docstring)."""
    messages, turns, shown = [], [], {}
    parent = None
    for turn in range(TURNS):
        user, reply = f"u{turn}", f"a{turn}"
        messages.append(_message(user, "user", _text("user", turn), parent))
        messages.append(_message(reply, "assistant", _text("assistant", turn), user))
        turns.append({"turnId": len(turns) + 1, "timestamp": "2026-11-01T10:00:00.000Z", "model": "demo",
                      "usage": {"inputTokens": 10, "outputTokens": 20, "totalTokens": 30}, "duration": 400,
                      "messageId": reply})
        if turn % FORK_EVERY == FORK_EVERY - 1:
            messages.append(_message(f"e{turn}", "user", _text("user", turn, True), parent))
            messages.append(_message(f"r{turn}", "assistant", _text("assistant", turn, True), f"e{turn}"))
            turns.append({**turns[-1], "turnId": len(turns) + 1, "messageId": f"r{turn}"})
            shown["a%d" % (turn - 1) if turn else ""] = user
        parent = reply
    meta = {"taskId": "task_20261101_branch", "taskName": "Branches", "stageId": COURSE,
            "createdAt": "2026-11-01T10:00:00.000Z", "updatedAt": "2026-11-01T11:00:00.000Z",
            "stats": {"credits": 0, "totalTokens": 30 * len(turns), "inputTokens": 10 * len(turns),
                      "outputTokens": 20 * len(turns)}}
    return {"format": "agentbar-conversation", "version": 2, "meta": meta, "messages": messages, "shown": shown,
            "turns": turns}


def _linear_thread() -> dict:
    messages = []
    for turn in range(TURNS):
        messages += [{"role": "user", "id": f"lu{turn}", "content": [{"type": "text", "text": _text("user", turn)}]},
                     {"role": "assistant", "id": f"la{turn}", "content": [{"type": "text", "text": _text("assistant", turn)}]}]
    return {"messages": messages, "updatedAt": 1_780_000_000_000}


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


def run(run, *, quick: bool) -> dict:
    """Figures (module docstring) and ``goals``."""
    context = run.context()
    context.add_init_script(LONGTASKS)
    page = context.new_page()
    threads = {"state": {"threads": {LINEAR: _linear_thread()}}, "version": 1}
    run.seed(page, {KEY: json.dumps(threads, ensure_ascii=False, separators=(",", ":"))})
    page.goto(run.base + "index.html?" + urlencode({"course": COURSE, "delay": 0}))
    run.wait_ready(page)
    page.wait_for_function("() => document.documentElement.dataset.history === 'ready'", timeout=60_000)
    started = time.perf_counter()
    page.click("[data-testid=history-open]")
    page.wait_for_selector("[data-testid=history-drawer]:not([hidden])")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "branches.json"
        path.write_text(json.dumps(tree_export(), ensure_ascii=False), encoding="utf-8")
        page.set_input_files("[data-testid=import-json]", str(path))
        page.wait_for_selector("[data-testid=history-item][data-task-id=task_20261101_branch]", timeout=120_000)
    page.click("[data-testid=history-item][data-task-id=task_20261101_branch]")
    page.wait_for_function("id => { const m = document.querySelectorAll('[data-testid=agent-message]');"
                           " return m.length > 0 && m[m.length - 1].dataset.messageId === id; }",
                           arg=f"a{TURNS - 1}", timeout=120_000)
    if page.locator("[data-testid=history-close]").is_visible():
        page.click("[data-testid=history-close]")
    page.evaluate(SETTLE)
    figures: dict = {"messages": 240, "shown": 200, "forks": TURNS // FORK_EVERY,
                     "import_and_resume_s": round(time.perf_counter() - started, 1)}
    # the panel draws the last RENDER_WINDOW (40) messages of the path (app.presentation): forks in them
    forks = [TURNS - 1 - FORK_EVERY * 2] if quick else [TURNS - 1 - FORK_EVERY * k for k in (3, 2, 0)]
    rounds = 1 if quick else 3
    switches: list[dict] = []
    for _ in range(rounds):
        for turn in forks:
            away = page.evaluate(SWITCH_JS, [[f"u{turn}", "branch-next"], f"r{turn}"])
            back = page.evaluate(SWITCH_JS, [[f"e{turn}", "branch-prev"], f"a{TURNS - 1}"])
            switches.append({"fork_at_turn": turn, "to_edit_ms": round(away[0], 1), "to_edit_longest_task_ms": away[1],
                             "back_ms": round(back[0], 1), "back_longest_task_ms": back[1]})
    baseline: list[dict] = []
    for _ in range(rounds):
        there = page.evaluate(COURSE_JS, [LINEAR, f"la{TURNS - 1}"])
        home = page.evaluate(COURSE_JS, [COURSE, f"a{TURNS - 1}"])
        baseline.append({"to_linear_ms": round(there[0], 1), "to_linear_longest_task_ms": there[1],
                         "back_ms": round(home[0], 1), "back_longest_task_ms": home[1]})
    context.close()
    walls = [s["back_ms"] for s in switches] + [s["to_edit_ms"] for s in switches]
    base_walls = [b["to_linear_ms"] for b in baseline] + [b["back_ms"] for b in baseline]
    longest = max(max(s["to_edit_longest_task_ms"], s["back_longest_task_ms"]) for s in switches)
    figures.update(switches=switches, baseline=baseline, switch_median_ms=_median(walls),
                   course_switch_median_ms=_median(base_walls),
                   switch_ratio=round(statistics.median(walls) / statistics.median(base_walls), 2),
                   longest_task_ms=longest)
    figures["goals"] = {"longest_task_ms": {"value": longest, "limit": GOALS["longest_task_ms_max"],
                                            "pass": longest <= GOALS["longest_task_ms_max"]}}
    return figures


def report(figures: dict) -> None:
    """Print the part's table."""
    print(f"\nbranches ({figures['messages']} messages, {figures['shown']} shown, {figures['forks']} forks; "
          f"imported and resumed in {figures['import_and_resume_s']} s):")
    for s in figures["switches"]:
        print(f"  fork at turn {s['fork_at_turn']:>3}: to the edit {s['to_edit_ms']:>7.1f} ms (longest task "
              f"{s['to_edit_longest_task_ms']:.0f} ms), back {s['back_ms']:>7.1f} ms (longest task "
              f"{s['back_longest_task_ms']:.0f} ms)")
    print(f"  switch median {figures['switch_median_ms']} ms against a course switch of the same 200 messages "
          f"{figures['course_switch_median_ms']} ms: ×{figures['switch_ratio']}")
    goal = figures["goals"]["longest_task_ms"]
    print(f"  longest task while switching {goal['value']:.0f} ms (goal ≤ {goal['limit']} ms: "
          f"{'met' if goal['pass'] else 'NOT met'})")
