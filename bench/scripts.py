"""Page scripts that several benchmark parts and end-to-end tests inject (one copy each)."""

# Collects main-thread tasks over 50 ms as window.__longtasks = [[startTime, duration], ...]
# (null where the browser has no longtask observer). An init script: runs before the page's own.
LONGTASKS = """
(() => {
  window.__longtasks = [];
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) window.__longtasks.push([e.startTime, e.duration]);
    }).observe({ type: "longtask", buffered: true });
  } catch (e) { window.__longtasks = null; }
})();
"""

# Times every call into the storage bridge (static/storage-bridge.js) on the JS side:
# entries [name, t0, t1, status] (status: what set/splice returned, e.g. "ok", "stale").
BRIDGE_WRAP = """
() => {
  const b = window.agentbarStorage;
  if (!b || b.__benchWrapped) return;
  const log = (window.__bridgeLog = []);
  for (const name of ["get", "set", "splice", "unchanged", "remove"]) {
    const f = b[name];
    b[name] = function (...args) {
      const t0 = performance.now();
      let r;
      try { r = f.apply(this, args); return r; }
      finally { log.push([name, t0, performance.now(), typeof r === "string" && name !== "get" ? r : null]); }
    };
  }
  b.__benchWrapped = true;
}
"""

# Resolves once the page's service worker has precached the build and is activated.
ACTIVE_JS = """async () => {
  const worker = (await navigator.serviceWorker.ready).active;
  if (worker.state !== "activated")
    await new Promise((resolve) => worker.addEventListener("statechange", () => worker.state === "activated" && resolve()));
  return true;
}"""

# Runs Python ``code`` (its last expression is the result) in the page's own PyScript interpreter.
RUN_PY = """async (code) => {
  const core = await import('./static/vendor/pyscript/core.js');
  const py = await (await core.whenDefined('py')).interpreter;
  return await py.runPythonAsync(code);
}"""

# The Python of index.html for a benchmark page (``?bench=1``): fetch bench/hooks.py from the
# development server, let it wrap the runtime's constructor (``capture``), then start the app as
# index.html does. The app itself ships no benchmark code (DESIGN.md §15): only this page has it.
HOOKED_MAIN = """
import types, js
request = js.XMLHttpRequest.new()
request.open("GET", "bench/hooks.py", False)
request.send(None)
hooks = types.ModuleType("bench_hooks")
exec(compile(request.responseText, "bench/hooks.py", "exec"), hooks.__dict__)
hooks.capture(js.window)
from app.browser import main
main()
"""


def goto_hooked(page, url: str) -> None:
    """Open ``url`` (the app with ``?bench=1``) on ``page`` with index.html's Python replaced by
    ``HOOKED_MAIN``, so ``window.agentbarBench`` is installed on the runtime the page builds."""
    import re
    from pathlib import Path

    index_html = (Path(__file__).resolve().parent.parent / "index.html").read_text(encoding="utf-8")
    html = re.sub(r'(<script type="py" config="pyscript.toml">)(.*?)(</script>)',
                  lambda m: m.group(1) + HOOKED_MAIN + "  " + m.group(3), index_html, flags=re.S)

    def fulfil(route, _request=None):
        route.fulfill(status=200, body=html, headers={"Content-Type": "text/html; charset=utf-8",
                                                      "Cache-Control": "no-cache"})

    page.route("**/index.html?*", fulfil)
    page.goto(url)
