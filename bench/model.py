"""Bench part ``model`` (DESIGN.md §12): tokens drawn per second from an OpenAI-compatible stream.

The fake server (``tools/fake_openai.py``, 127.0.0.1) streams ``TOKENS`` tokens
(``#bench N``: one server-sent event per token, written as fast as it can).

- app: AgentBar with the ``openai`` agent pointed at the fake server; send
  ``#bench N`` and time from the click to ``data-running="false"`` (every
  token drawn, the turn saved, the bubble re-drawn as Markdown);
- baseline (``bench/pages/model-baseline.html``, same server, same browser, the
  two interleaved in each round): ``fetch`` + reader + SSE parsing in
  JavaScript, appending each token to one text node, until the frame after the
  last token.

Figures: tokens/s of both (median of rounds), their ratio, the median of the
per-round ratios, time to the first token, and the longest main-thread task
(``PerformanceObserver`` ``longtask``) inside each streaming window.
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

from bench.scripts import LONGTASKS
from tools import fake_openai

TOKENS = 2000
GOALS = {"tokens_per_s_ratio_min": 0.5, "tokens_per_s_min": 2000.0, "longest_task_ms_max": 100.0}
"""ratio: the app draws at least half as fast as bare JavaScript; tokens/s: it keeps up with the
fastest hosted models (about 2,000 tokens/s) with room to spare; longest task: no visible stall."""


APP_TURN = """
async (text) => {
  const panel = document.querySelector("[data-testid=agent-panel]");
  const input = document.querySelector("[data-testid=agent-input]");
  const messages = document.getElementById("agent-messages");
  let first = null;
  const seen = new MutationObserver(() => {
    const reply = messages.querySelector("[data-role=assistant] .bubble");
    if (first === null && reply && reply.textContent.includes("w0")) first = performance.now();
  });
  seen.observe(messages, { childList: true, subtree: true, characterData: true });
  const done = new Promise((resolve) => {
    const watch = new MutationObserver(() => {
      if (panel.dataset.running === "false") { watch.disconnect(); resolve(); }
    });
    watch.observe(panel, { attributes: true, attributeFilter: ["data-running"] });
  });
  input.value = text;
  const t0 = performance.now();
  document.querySelector("[data-testid=agent-send]").click();
  await done;
  await new Promise(requestAnimationFrame);
  seen.disconnect();
  const t1 = performance.now();
  const bubbles = document.querySelectorAll("[data-role=assistant]");
  const last = bubbles[bubbles.length - 1];
  return { ms: t1 - t0, first_ms: first === null ? null : first - t0, t0, t1, text: last.textContent.length,
           error: !!last.querySelector("[data-testid=turn-error]") };
}
"""


def _longest(page, t0: float, t1: float) -> float | None:
    tasks = page.evaluate("window.__longtasks")
    if tasks is None:
        return None
    inside = [d for start, d in tasks if start + d >= t0 and start <= t1]
    return max(inside, default=0.0)


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def run(run: Any, *, quick: bool) -> dict:
    """Measure (see the module docstring); ``quick``: 1 warm-up + 1 round, otherwise 1 + 9."""
    rounds = 1 if quick else 9
    server = fake_openai.start()
    base_url = f"{server.origin}/v1"
    settings = json.dumps({"agent": "openai", "baseUrl": base_url, "model": fake_openai.MODEL_NAME,
                           "maxTurns": 0, "remember": False})
    command = f"#bench {TOKENS}"
    body = json.dumps({"model": fake_openai.MODEL_NAME, "stream": True,
                       "messages": [{"role": "user", "content": command}]})
    samples: dict[str, list[dict]] = {"app": [], "baseline": []}
    try:
        context = run.context()
        context.add_init_script(LONGTASKS)
        app = context.new_page()
        run.seed(app, {"agentbar-model-settings": settings})
        app.goto(run.base + "index.html?course=bench-model&delay=0")
        run.wait_ready(app)
        app.wait_for_function("() => ['ready','failed'].includes(document.documentElement.dataset.markdown)",
                              timeout=60_000)
        baseline = context.new_page()
        baseline.goto(run.base + "bench/pages/model-baseline.html")
        for i in range(rounds + 1):
            order = ("app", "baseline") if i % 2 == 0 else ("baseline", "app")
            for name in order:
                (app if name == "app" else baseline).bring_to_front()  # a background tab's frames are throttled
                if name == "app":
                    if app.locator("#agent-new-conversation").is_visible():
                        app.click("#agent-new-conversation")
                    result = app.evaluate(APP_TURN, command)
                    result["longest_task_ms"] = _longest(app, result["t0"], result["t1"])
                else:
                    result = baseline.evaluate("([u, b]) => runBaseline(u, b)", [f"{base_url}/chat/completions", body])
                    result["longest_task_ms"] = _longest(baseline, result["t0"], result["t1"])
                result["tokens_per_s"] = TOKENS / (result["ms"] / 1000)
                if i > 0:  # round 0 warms up both pages
                    samples[name].append(result)
            time.sleep(0.2)
        context.close()
    finally:
        server.shutdown()
        server.server_close()
    app_s, base_s = samples["app"], samples["baseline"]
    if any(s.get("error") for s in app_s):
        raise RuntimeError("bench model: the app's turn failed (turn-error shown)")
    out = {
        "tokens": TOKENS,
        "rounds": rounds,
        "app": {k: _median([s[k] for s in app_s]) for k in ("ms", "first_ms", "tokens_per_s", "longest_task_ms")},
        "baseline": {k: _median([s[k] for s in base_s]) for k in ("ms", "first_ms", "tokens_per_s", "longest_task_ms")},
        "app_max_longest_task_ms": max((s["longest_task_ms"] or 0) for s in app_s),
        "app_text_chars": app_s[-1]["text"],
        "baseline_text_chars": base_s[-1]["text"],
    }
    out["tokens_per_s_ratio"] = out["app"]["tokens_per_s"] / out["baseline"]["tokens_per_s"]
    out["paired_ratio_median"] = _median([a["tokens_per_s"] / b["tokens_per_s"] for a, b in zip(app_s, base_s)])
    longest = float(out["app_max_longest_task_ms"])  # the worst round, not the median: a stall is felt once
    out["goals"] = {
        "tokens_per_s_ratio": {"value": out["tokens_per_s_ratio"], "limit": f">= {GOALS['tokens_per_s_ratio_min']}",
                               "pass": out["tokens_per_s_ratio"] >= GOALS["tokens_per_s_ratio_min"]},
        "tokens_per_s": {"value": out["app"]["tokens_per_s"], "limit": f">= {GOALS['tokens_per_s_min']}",
                         "pass": out["app"]["tokens_per_s"] >= GOALS["tokens_per_s_min"]},
        "longest_task_ms": {"value": longest, "limit": f"<= {GOALS['longest_task_ms_max']}",
                            "pass": longest is not None and longest <= GOALS["longest_task_ms_max"]},
    }
    return out


def report(figures: dict) -> None:
    """Print the table of ``run``'s figures."""
    a, b = figures["app"], figures["baseline"]

    def f(x, nd=0):
        return "—" if x is None else f"{x:,.{nd}f}"

    def task(x):  # the longtask API reports only tasks of 50 ms or more
        return "—" if x is None else ("none ≥ 50" if x == 0 else f"{x:,.0f}")

    print(f"Model stream: {figures['tokens']:,} tokens from the fake server, median of {figures['rounds']} rounds")
    print("| page | ms (send → drawn) | first token ms | tokens/s | longest main-thread task ms |")
    print("| --- | --- | --- | --- | --- |")
    print(f"| AgentBar (openai agent) | {f(a['ms'])} | {f(a['first_ms'])} | {f(a['tokens_per_s'])} | {task(a['longest_task_ms'])} |")
    print(f"| JS baseline (reader + text node) | {f(b['ms'])} | {f(b['first_ms'])} | {f(b['tokens_per_s'])} | {task(b['longest_task_ms'])} |")
    print(f"ratio of tokens/s (app / JS): {figures['tokens_per_s_ratio']:.3f} (median of per-round ratios "
          f"{figures['paired_ratio_median']:.3f}); app's worst longest task in any round: {task(figures['app_max_longest_task_ms'])} ms")
