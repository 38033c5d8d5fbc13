"""Bench part ``stream``: does a fast or endless model stream keep the page responsive?

The fake server (``tools/fake_openai.py``, 127.0.0.1) sends the app's
``openai`` agent:

- ``#endless 5``: one token every 5 ms, each its own network write, until the
  page stops it. The course's thread already holds 20 turns with 50 tool
  cards (``bench.data.cards_thread``), all in the rendered window. Measured:
  the longest main-thread task (``PerformanceObserver`` ``longtask``: only
  tasks of 50 ms or more are reported) while it streams for ``STREAM_S``
  seconds, the tokens received in that time, and the time from the Stop click to
  the reply drawn as stopped and to ``data-running="false"`` (the panel idle: the turn saved as stopped and its
  turn meta written to history) and to the next frame;
- ``#bigline``: one server-sent event whose ``data:`` line holds 10,000,000
  characters of content, in a new conversation: the longest task from Send to
  the panel idle, and that the whole text arrived.

Baseline (same server, same browser, ``bench/pages/model-baseline.html``):
``fetch`` + reader + SSE parsing in bare JavaScript appending to one text node,
on the same ``#endless 5`` stream for the same time (its longest task, its
tokens), and on ``#bigline`` (its longest task).

Goals (DESIGN.md §12): no task over 50 ms while streaming; Stop
to idle within 100 ms; the 10 MB line arrives whole (its longest task is
reported against the baseline's).
"""

from __future__ import annotations

import json
import statistics
from typing import Any

from bench import data
from bench.scripts import LONGTASKS
from bench import pysteps
from bench.trace import cpu, print_cpu, traced
from tools import fake_openai

COURSE = "bench-stream"
STREAM_S = 6.0
GOALS = {"longest_task_ms_max": 50.0, "stop_to_idle_ms_max": 100.0}

START_ENDLESS = """
async (text) => {
  const input = document.querySelector("[data-testid=agent-input]");
  input.value = text;
  document.querySelector("[data-testid=agent-send]").click();
  const bubble = () => {
    const replies = document.querySelectorAll("[data-testid=agent-message][data-role=assistant]");
    return replies[replies.length - 1]?.querySelector("[data-testid=agent-message-text]");
  };
  while (!(bubble()?.textContent || "").includes(" e0")) await new Promise((r) => setTimeout(r, 5));
  return performance.now();
}
"""

STOP = """
async (course) => {
  const panel = document.querySelector("[data-testid=agent-panel]");
  const replies = document.querySelectorAll("[data-testid=agent-message][data-role=assistant]");
  const shown = (replies[replies.length - 1].textContent.match(/ e\\d+/g) || []).length;
  const idle = new Promise((resolve) => {
    const watch = new MutationObserver(() => {
      if (panel.dataset.running === "false") { watch.disconnect(); resolve(performance.now()); }
    });
    watch.observe(panel, { attributes: true, attributeFilter: ["data-running"] });
  });
  let stopped = null;
  const box = document.getElementById("agent-messages");
  const mark = new MutationObserver(() => {
    const now = box.querySelectorAll("[data-testid=agent-message][data-role=assistant]");
    if (stopped === null && now[now.length - 1].dataset.status === "incomplete") { stopped = performance.now(); mark.disconnect(); }
  });
  mark.observe(box, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-status"] });
  const t1 = performance.now();
  document.querySelector("[data-testid=agent-stop]").click();
  const at = await idle;
  mark.disconnect();
  await new Promise(requestAnimationFrame);
  const drawn = performance.now();
  const last = document.querySelectorAll("[data-testid=agent-message][data-role=assistant]");
  const stored = JSON.parse(localStorage.getItem("maic-agent-threads")).state.threads[course].messages;
  const kept = (stored[stored.length - 1].content[0].text.match(/ e\d+/g) || []).length;
  return { t1, idle_ms: at - t1, drawn_ms: drawn - t1, t2: drawn, tokens_shown: shown, tokens_kept: kept,
           stopped_ms: stopped === null ? null : stopped - t1, status: last[last.length - 1].dataset.status };
}
"""

BIGLINE = """
async () => {
  const panel = document.querySelector("[data-testid=agent-panel]");
  const input = document.querySelector("[data-testid=agent-input]");
  const done = new Promise((resolve) => {
    const watch = new MutationObserver(() => {
      if (panel.dataset.running === "false") { watch.disconnect(); resolve(); }
    });
    watch.observe(panel, { attributes: true, attributeFilter: ["data-running"] });
  });
  input.value = "#bigline";
  const t0 = performance.now();
  document.querySelector("[data-testid=agent-send]").click();
  await done;
  await new Promise(requestAnimationFrame);
  const t1 = performance.now();
  const expand = document.querySelector("[data-role=assistant] [data-testid=agent-message-expand]");
  return { t0, t1, ms: t1 - t0, chars: expand ? Number(expand.dataset.chars) : null,
           error: !!document.querySelector("[data-testid=turn-error]") };
}
"""

BASELINE_ENDLESS = """
async ([url, body, seconds]) => {
  const node = document.createTextNode("");
  document.getElementById("out").replaceChildren(node);
  const controller = new AbortController();
  const response = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body,
                                      signal: controller.signal });
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "", tokens = 0, t0 = null, stopAt = null;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\\n\\n")) >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        for (const line of event.split("\\n")) {
          if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
          const content = JSON.parse(line.slice(6)).choices?.[0]?.delta?.content;
          if (content) { node.appendData(content); tokens++; if (t0 === null) t0 = performance.now(); }
        }
      }
      if (t0 !== null && stopAt === null) stopAt = t0 + seconds * 1000;
      if (stopAt !== null && performance.now() >= stopAt) { const t1 = performance.now(); controller.abort();
        return { t0, t1, tokens }; }
    }
  } catch (e) { /* aborted */ }
  return { t0, t1: performance.now(), tokens };
}
"""


def _longest(page, t0: float, t1: float) -> float | None:
    tasks = page.evaluate("window.__longtasks")
    if tasks is None:
        return None
    return max((d for start, d in tasks if start + d >= t0 and start <= t1), default=0.0)


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def prepare(run: Any, *, quick: bool) -> None:
    """``--quick``: the course's 20 turns of tool cards (``bench.data.cards_thread``, seconds of pydantic
    work on a loaded machine) made in the background while the earlier parts run (``Run.prepare``)."""
    if quick:
        run.prepare(data.cards_thread, COURSE)


def run(run: Any, *, quick: bool) -> dict:
    """Measure (see the module docstring); ``quick``: 1 endless round, otherwise 5, and one big line."""
    rounds = 1 if quick else 5
    server = fake_openai.start()
    base_url = f"{server.origin}/v1"
    settings = json.dumps({"agent": "openai", "baseUrl": base_url, "model": fake_openai.MODEL_NAME,
                           "maxTurns": 0, "remember": False})
    thread = run.prepared(data.cards_thread, COURSE)
    envelope = json.dumps({"state": {"threads": {COURSE: {"messages": thread, "updatedAt": data.BASE_TIME}}},
                           "version": 1}, ensure_ascii=False, separators=(",", ":"))
    rows: list[dict] = []
    base_rows: list[dict] = []
    try:
        context = run.context()
        context.add_init_script(LONGTASKS)
        page = context.new_page()
        baseline = context.new_page()
        baseline.goto(run.base + "bench/pages/model-baseline.html")
        for i in range(rounds):
            page.bring_to_front()  # a background tab's frames are throttled
            run.seed(page, {data.STORAGE_KEY: envelope, "agentbar-model-settings": settings})
            page.goto(run.base + f"index.html?course={COURSE}&delay=0")
            run.wait_ready(page)
            page.wait_for_function("() => ['ready','failed'].includes(document.documentElement.dataset.markdown)",
                                   timeout=60_000)
            page.wait_for_function("() => document.documentElement.dataset.history", timeout=60_000)
            cards = page.locator("[data-testid=tool-card]").count()
            t0 = page.evaluate(START_ENDLESS, "#endless 5")
            page.wait_for_timeout(STREAM_S * 1000)
            stop = page.evaluate(STOP, COURSE)
            row = {"cards": cards, **stop, "t0": t0,
                   "longest_task_ms": _longest(page, t0, stop["t1"]),
                   "stop_longest_task_ms": _longest(page, stop["t1"], stop["t2"]),
                   "stream_s": (stop["t1"] - t0) / 1000}
            rows.append(row)
            baseline.bring_to_front()
            body = json.dumps({"model": fake_openai.MODEL_NAME, "stream": True,
                               "messages": [{"role": "user", "content": "#endless 5"}]})
            b = baseline.evaluate(BASELINE_ENDLESS, [f"{base_url}/chat/completions", body, STREAM_S])
            b["longest_task_ms"] = _longest(baseline, b["t0"], b["t1"])
            base_rows.append(b)
        page.bring_to_front()
        page.click("[data-testid=agent-new-conversation]")
        page.wait_for_function("() => !document.querySelector('[data-role=assistant]')")
        pysteps.watch(page)
        traced(run, page, detail=True)
        big = page.evaluate(BIGLINE)
        big["cpu"] = cpu(run)  # each task's thread CPU beside its wall clock (Chrome trace)
        big["python_steps"] = pysteps.steps(page)  # the longest Python steps, named
        big["longest_task_ms"] = _longest(page, big["t0"], big["t1"])
        baseline.bring_to_front()
        body = json.dumps({"model": fake_openai.MODEL_NAME, "stream": True,
                           "messages": [{"role": "user", "content": "#bigline"}]})
        big_base = baseline.evaluate("([u, b]) => runBaseline(u, b)", [f"{base_url}/chat/completions", body])
        big_base["longest_task_ms"] = _longest(baseline, big_base["t0"], big_base["t1"])
        context.close()
    finally:
        server.shutdown()
        server.server_close()
    expected = fake_openai.BIGLINE_CHARS + 2
    if big.get("error") or big.get("chars") != expected:
        raise RuntimeError(f"bench stream: the 10 MB line did not arrive whole ({big})")
    if any(r["status"] != "incomplete" or r["tokens_kept"] < r["tokens_shown"] or not r["tokens_shown"] for r in rows):
        raise RuntimeError(f"bench stream: a stopped turn lost what it had ({rows})")
    longest = max(r["longest_task_ms"] or 0 for r in rows)
    stop_idle = max(r["idle_ms"] for r in rows)
    out = {
        "rounds": rounds, "stream_s": STREAM_S, "cards": rows[0]["cards"],
        "app": {"longest_task_ms": longest, "median_longest_task_ms": _median([r["longest_task_ms"] for r in rows]),
                "tokens_kept": _median([r["tokens_kept"] for r in rows]),
                "per_round_longest_task_ms": [r["longest_task_ms"] for r in rows],
                "per_round_stop_to_idle_ms": [round(r["idle_ms"], 1) for r in rows],
                "stop_to_stopped_drawn_ms": _median([r["stopped_ms"] for r in rows]),
                "stop_to_idle_ms": _median([r["idle_ms"] for r in rows]), "stop_to_idle_ms_max": stop_idle,
                "stop_to_frame_ms": _median([r["drawn_ms"] for r in rows]),
                "stop_longest_task_ms": max(r["stop_longest_task_ms"] or 0 for r in rows)},
        "baseline": {"longest_task_ms": max(b["longest_task_ms"] or 0 for b in base_rows),
                     "tokens": _median([b["tokens"] for b in base_rows])},
        "bigline": {"chars": big["chars"], "ms": big["ms"], "longest_task_ms": big["longest_task_ms"], "cpu": big["cpu"],
                    "python_steps": big["python_steps"],
                    "baseline_ms": big_base["ms"], "baseline_longest_task_ms": big_base["longest_task_ms"]},
    }
    out["goals"] = {
        "longest_task_ms": {"value": longest, "limit": f"<= {GOALS['longest_task_ms_max']}",
                            "pass": longest <= GOALS["longest_task_ms_max"]},
        "stop_to_idle_ms": {"value": stop_idle, "limit": f"<= {GOALS['stop_to_idle_ms_max']}",
                            "pass": stop_idle <= GOALS["stop_to_idle_ms_max"]},
        "bigline_longest_task_ms": {"value": big["longest_task_ms"] or 0,
                                    "limit": f"<= {GOALS['longest_task_ms_max']}",
                                    "pass": (big["longest_task_ms"] or 0) <= GOALS["longest_task_ms_max"]},
    }
    return out


def report(figures: dict) -> None:
    """Print the table of ``run``'s figures."""
    a, b, big = figures["app"], figures["baseline"], figures["bigline"]

    def task(x):  # the longtask API reports only tasks of 50 ms or more
        return "—" if x is None else ("none ≥ 50" if x == 0 else f"{x:,.0f}")

    print(f"Stream: #endless 5 (a token every 5 ms) for {figures['stream_s']:.0f} s in a thread with "
          f"{figures['cards']} tool cards, {figures['rounds']} round(s); then one 10 MB SSE line")
    print("| measure | AgentBar | JS baseline (reader + text node) |")
    print("| --- | --- | --- |")
    print(f"| longest main-thread task while streaming, ms (worst round) | {task(a['longest_task_ms'])} | "
          f"{task(b['longest_task_ms'])} |")
    print(f"| tokens received while streaming (median; the app's as kept after Stop) | {a['tokens_kept']:,.0f} | "
          f"{b['tokens']:,.0f} |")
    print(f"| longest task per round, ms | {', '.join(task(x) for x in a['per_round_longest_task_ms'])} | — |")
    print(f"| Stop → reply drawn as stopped, ms (median) | {a['stop_to_stopped_drawn_ms']:,.0f} | — |")
    print(f"| Stop → panel idle, ms (median; worst; per round) | {a['stop_to_idle_ms']:,.0f}; "
          f"{a['stop_to_idle_ms_max']:,.0f}; {', '.join(f'{x:,.0f}' for x in a['per_round_stop_to_idle_ms'])} | — |")
    print(f"| Stop → next frame, ms (median) | {a['stop_to_frame_ms']:,.0f} | — |")
    print(f"| longest task from Stop to idle, ms | {task(a['stop_longest_task_ms'])} | — |")
    print(f"| one 10 MB line: send → idle, ms | {big['ms']:,.0f} | {big['baseline_ms']:,.0f} |")
    print(f"| one 10 MB line: longest task, ms | {task(big['longest_task_ms'])} | {task(big['baseline_longest_task_ms'])} |")
    print_cpu(big.get("cpu"), "one 10 MB line", "  ")
    pysteps.report(big.get("python_steps"))
