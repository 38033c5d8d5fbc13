"""The deployable build in Chromium (DESIGN.md §11).

``dist/`` is built into a temporary folder and served under a sub-path
(``/some/where/``) with the headers README asks a host to send (the CSP
included). Through the service worker a reload fetches nothing but ``sw.js``
(the browser's update check), the app starts and saves turns with the network
cut, and a changed file shows on the next load, with every file of one version.
One built page shows all of it, in order (each Pyodide boot is costly).
"""

from __future__ import annotations

import fnmatch
import shutil
import threading
import zipfile
from pathlib import Path

import pytest
from playwright.sync_api import expect

from bench.scripts import ACTIVE_JS
from tests.e2e.conftest import ROOT, AgentPage
from tools import build, vendor
from tools.serve import SHUTDOWN_POLL_S, dist_headers, make_server

BASE = "/some/where/"


def _source_tree(dest: Path) -> Path:
    """What tools/build.py reads, copied so a test can change a file without touching the repo."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("index.html", "pyscript.toml", "vendor.lock.json"):
        shutil.copy2(ROOT / name, dest / name)
    shutil.copytree(ROOT / "app" / "locales", dest / "app" / "locales")
    shutil.copytree(ROOT / "static", dest / "static", ignore=shutil.ignore_patterns("test"))
    return dest


@pytest.fixture(scope="session")
def source_tree(tmp_path_factory):
    vendor.main([])  # idempotent: the page runs the code under test
    return _source_tree(tmp_path_factory.mktemp("source"))


@pytest.fixture
def dist_site(source_tree, tmp_path):
    """(base URL, server, served folder, manifest) of a fresh build served under BASE."""
    out = tmp_path / "dist"
    manifest = build.build(out, root=source_tree, quiet=True)
    server = make_server("127.0.0.1", 0, root=out, quiet=True, base=BASE, headers=dist_headers(out),
                         count_bytes=True, log_requests=True)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL_S}, daemon=True).start()
    host, port = server.server_address[:2]
    yield f"http://{host}:{port}{BASE}", server, out, manifest
    server.shutdown()
    server.server_close()


@pytest.fixture
def dist_agent(page, dist_site):
    helper = AgentPage(page, dist_site[0])
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    yield helper
    assert helper.off_origin_requests() == []
    assert violations == []


def _served_paths(server, since: int) -> list[str]:
    return [path.split("?", 1)[0][len(BASE):] for path, _ in server.request_log[since:]]


def test_dist_holds_only_what_the_page_needs(dist_site):
    _, _, out, manifest = dist_site
    shipped = set(manifest["files"])
    assert {"index.html", "pyscript.toml", "static/boot.js", "static/vendor/pyodide/pyodide.asm.wasm"} <= shipped
    assert not [p for p in shipped if p.startswith(("bench/", "tests/", "static/vendor/test/")) or p.endswith(".map")]
    assert not [p for p in shipped if p.startswith("app/") and not p.startswith("app/locales/")]
    assert "static/vendor/pyodide/snapshot.bin.gz" in shipped and "static/pyodide-boot.mjs" in shipped
    (wheel,) = [p for p in shipped if fnmatch.fnmatch(p, build.APP_WHEEL)]
    with zipfile.ZipFile(out / wheel) as archive:  # the dev-only hooks stay on the development server
        members = set(archive.namelist())
    assert "app/runtime/__init__.py" in members and "app/store/facade.py" in members
    assert not [m for m in members if "dev_hooks" in m or m.endswith(("store/trace.py", "runtime/trace.py"))
                or "/trace.cpython-" in m]
    for rel in shipped:
        if rel.endswith(".gz"):  # the interpreter snapshot: gzip already, served as it is
            assert not (out / f"{rel}.br").exists()
            continue
        assert (out / f"{rel}.br").is_file() and (out / f"{rel}.gz").is_file()


SWITCH_COURSE = """id => { const url = new URL(location.href); url.searchParams.set('course', id);
  history.pushState({}, '', url.href); dispatchEvent(new PopStateEvent('popstate')); }"""


def built_checkpoint_list_is_drawn_by_its_module_under_the_csp(agent, manifest) -> None:
    """In the shown course (intro-ml, scene-1 not yet regenerated)."""
    assert "static/checkpoint-view.js" in manifest["files"]
    agent.send("/regenerate scene-1 pictures")
    node = agent.page.locator("[data-testid=scene][data-scene-id='scene-1']")
    expect(node).to_have_attribute("data-version", "1")
    node.locator("[data-testid=scene-versions-open]").click()
    item = node.locator("[data-testid=checkpoint-item]")
    expect(item).to_have_count(1)
    expect(item).to_have_attribute("data-version", "1")
    stamp = item.locator("time")
    expected = agent.page.evaluate(  # the page locale's format of the stored time
        "([iso, locale]) => new Intl.DateTimeFormat(locale, {dateStyle: 'short', timeStyle: 'medium', numberingSystem: 'latn'})"
        ".format(new Date(iso))", [stamp.get_attribute("datetime"), agent.page.evaluate("() => document.documentElement.lang")])
    expect(stamp).to_have_text(expected)
    expect(node.locator("[data-testid=checkpoint-original] [data-testid=checkpoint-restore-original]")).to_have_count(1)


def slide_images_are_drawn(agent) -> None:
    """``/regenerate`` draws the slide's images: data: URLs, allowed by the CSP."""
    agent.send("/regenerate scene-1 pictures")
    images = agent.page.locator("[data-testid=scene-slide] img")
    assert images.count() > 0
    agent.page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=scene-slide] img')].every(i => i.complete)")
    assert agent.page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=scene-slide] img')].every(i => i.naturalWidth > 0)")


PAINT_RECORD_IS_OF_THE_STORED_THREAD = """async (course) => {
  const hit = await (await caches.open('agentbar.paint')).match(new URL('paint/' + course, document.baseURI));
  const thread = JSON.parse(localStorage.getItem('maic-agent-threads')).state.threads[course];
  return !!hit && (await hit.json()).updatedAt === thread.updatedAt;
}"""


def redeploy(source_tree_copy: Path, out: Path, first: dict) -> dict:
    """Build again with one style sheet changed, and put it in the host's folder; its manifest."""
    changed = _source_tree(source_tree_copy / "changed")
    css = changed / "static" / "app.css"
    css.write_text(css.read_text() + "\n:root { --agentbar-build-test: 2; }\n")
    second_dir = source_tree_copy / "second"
    second = build.build(second_dir, root=changed, quiet=True)
    assert second["version"] != first["version"]
    shutil.rmtree(out)
    shutil.copytree(second_dir, out)  # the deploy: the host's folder now holds the new build
    return second


HOLD_KEY = "agentbar-test-hold-update-check"
HOLD_UPDATE_CHECK = """(() => {
  if (!sessionStorage.getItem('%s') || !window.ServiceWorkerRegistration) return;
  const update = ServiceWorkerRegistration.prototype.update;
  window.heldUpdateChecks = [];
  ServiceWorkerRegistration.prototype.update = function () {
    return new Promise((resolve, reject) => window.heldUpdateChecks.push(() => update.call(this).then(resolve, reject)));
  };
})()""" % HOLD_KEY
"""The service worker's update check held unanswered (a slow server) until the test answers it: an init
script of the context, active while ``sessionStorage`` holds ``HOLD_KEY``."""


HOLD_ACTIVATION_KEY = "agentbar-test-hold-activation"
HOLD_ACTIVATION = """(() => {
  if (!sessionStorage.getItem('%s') || !window.ServiceWorker) return;
  const post = ServiceWorker.prototype.postMessage;
  window.heldActivations = [];
  ServiceWorker.prototype.postMessage = function (message, ...rest) {
    if (!message || message.type !== 'agentbar:activate') return post.call(this, message, ...rest);
    window.heldActivations.push(() => post.call(this, message, ...rest));
  };
})()""" % HOLD_ACTIVATION_KEY
"""The page's request that a waiting new version take over held unsent until the test sends it: an
init script of the context, active while ``sessionStorage`` holds ``HOLD_ACTIVATION_KEY``."""


SYNC_CLIENT_CACHED = """async () => {
  for (const name of await caches.keys())
    if (await (await caches.open(name)).match(new URL('static/vendor/pouchdb/pouchdb.min.js', document.baseURI)))
      return true;
  return false;
}"""


def test_one_visit_from_a_sub_path_then_offline_then_a_redeploy(dist_agent, dist_site, context, tmp_path):
    """One built page, in order: the checkpoint list drawn by its module (first visit); the worker in
    control, a reload fetching only sw.js, the interpreter started beside its update check (ready while
    the check is unanswered); offline, a turn saved, its paint record kept and a slide's
    images drawn; then a changed file, shown on the next load and alone fetched, the offline turn
    still there and painted under the CSP."""
    _, server, out, first = dist_site
    agent = dist_agent
    agent.open(course="intro-ml")
    assert agent.page.evaluate("() => location.pathname") == BASE + "index.html"
    # the snapshot's digest (snapshot.json) is checked on this server too, and holds
    assert agent.page.evaluate("() => document.documentElement.dataset.snapshot") == "restored"
    built_checkpoint_list_is_drawn_by_its_module_under_the_csp(agent, first)
    assert agent.page.evaluate("() => typeof window.agentbarCheckpoints") == "undefined"  # a dev-only hook

    agent.page.evaluate(ACTIVE_JS)
    before = len(server.request_log)
    context.add_init_script(HOLD_UPDATE_CHECK)
    agent.page.evaluate(f"() => sessionStorage.setItem('{HOLD_KEY}', '1')")
    agent.reload()  # the interpreter starts beside the update check: ready while it is still unanswered
    assert agent.page.evaluate("() => window.heldUpdateChecks.length") == 1
    assert agent.page.evaluate("() => performance.getEntriesByName('agentbar:update-checked').length") == 0
    agent.page.evaluate(f"() => {{ sessionStorage.removeItem('{HOLD_KEY}'); window.heldUpdateChecks.forEach((answer) => answer()); }}")
    agent.page.wait_for_function("() => performance.getEntriesByName('agentbar:update-checked').length === 1")
    assert agent.page.evaluate("() => !!navigator.serviceWorker.controller")
    assert set(_served_paths(server, before)) == {"sw.js"}  # the update check, nothing else
    assert agent.page.evaluate(SYNC_CLIENT_CACHED) is False  # sync is off: its client is not precached
    client = (out / "static/vendor/pouchdb/pouchdb.min.js").read_text()
    assert agent.page.evaluate(  # its first use fetches it through the worker, which keeps it (checked)
        "() => fetch('static/vendor/pouchdb/pouchdb.min.js').then((r) => r.text())") == client
    assert agent.page.evaluate(SYNC_CLIENT_CACHED) is True

    agent.page.evaluate(SWITCH_COURSE, "linear-algebra")  # a course with no turn yet; a reload boots into it
    expect(agent.testid("course-select")).to_have_value("linear-algebra")
    context.set_offline(True)
    agent.reload()
    assert agent.page.evaluate("() => document.documentElement.dataset.snapshot") == "restored"  # from the worker
    agent.send("hello without a network")
    assert agent.messages().count() == 2
    assert len(agent.stored()["state"]["threads"]["linear-algebra"]["messages"]) == 2
    agent.page.wait_for_function(  # the course's paint record is kept (DESIGN.md §13)
        "() => caches.open('agentbar.paint').then((c) => c.match(new URL('paint/linear-algebra', document.baseURI)))"
        ".then(Boolean)", polling=100)
    slide_images_are_drawn(agent)  # offline too
    agent.page.wait_for_function(PAINT_RECORD_IS_OF_THE_STORED_THREAD, arg="linear-algebra", polling=100)
    context.set_offline(False)

    build_meta = "() => document.querySelector('meta[name=agentbar-build]').content"
    old_version = agent.page.evaluate(build_meta)
    second = redeploy(tmp_path, out, first)
    before = len(server.request_log)
    context.add_init_script(HOLD_ACTIVATION)
    agent.page.evaluate(f"() => sessionStorage.setItem('{HOLD_ACTIVATION_KEY}', '1')")
    agent.page.reload()  # next load: the page picks the new version up before PyScript starts ...
    agent.page.wait_for_function("() => performance.getEntriesByName('agentbar:ready-held').length === 1"
                                 " || document.documentElement.dataset.ready === 'true'")
    assert agent.page.evaluate("() => window.heldActivations.length") == 1
    # ... and while the new version's take-over is unanswered the app does not say it is ready: a page
    # in use never reloads under a person's hands
    assert agent.page.evaluate("() => document.documentElement.dataset.ready") is None
    # a message sent meanwhile (before ready) goes with the page onto the new version, sent once it is ready
    agent.testid("agent-input").fill("sent before the new version")
    agent.testid("agent-input").press("Enter")
    expect(agent.testid("composer-status")).to_be_visible()  # queued: sent once the app is ready
    with agent.page.expect_navigation():
        agent.page.evaluate(f"() => {{ sessionStorage.removeItem('{HOLD_ACTIVATION_KEY}');"
                            " window.heldActivations.forEach((send) => send()); }")
    agent.wait_ready()
    new_version = agent.page.evaluate(build_meta)
    assert new_version != old_version
    served_index = (out / "index.html").read_text()
    assert f'content="{new_version}"' in served_index
    # Every file the page uses is of the new version: the style sheet it applied is the new one.
    assert agent.page.evaluate(
        "() => getComputedStyle(document.documentElement).getPropertyValue('--agentbar-build-test').trim()") == "2"
    fetched = set(_served_paths(server, before)) - {"sw.js", ""}
    changed_files = {r for r in second["files"] if first["files"].get(r) != second["files"][r]}
    assert fetched <= changed_files | {"index.html"}  # unchanged files came from the old version's cache
    assert "static/vendor/pyodide/pyodide.asm.wasm" not in fetched

    # the offline turns (a message and a regenerate) kept, and the message sent before the reload sent
    expect(agent.messages()).to_have_count(6)
    assert "sent before the new version" in agent.stored_raw()
    assert agent.page.evaluate("() => document.documentElement.dataset.painted") == "true"  # drawn under the CSP
