"""Sync across devices in the page (DESIGN.md §16): settings, the panel's status, the adapter.

- ``SyncSetup.install()`` runs after ready (``app.browser.page.Page.finish``): it draws
  ``[data-testid=sync-status]`` (``data-state`` ``off``/``syncing``/``synced``/``offline``/``error``,
  ``data-reason`` for the last two, a localized text) in the panel's status line and
  ``[data-testid=sync-now]`` in the panel's menu, both hidden while sync is off
  (``data-starts`` on the status: how many times this page started replicating),
  and, only when the stored settings say sync is on, loads ``static/sync.js``, which runs PouchDB
  (``static/vendor/pouchdb/pouchdb.min.js``) and its replication in a worker,
  ``static/sync-worker.js``, off the main thread (with sync off none of them is loaded and no
  request leaves the origin).
- ``SyncSection``: the settings dialog's sync fields (``sync-enabled``, ``sync-url``,
  ``sync-database``, ``sync-user``, ``sync-password``, ``sync-remember``), saved by
  ``settings-save``; the password is kept like the model key (``app.sync.settings``).
- The rules are ``app.sync.engine.SyncEngine``'s: this tab's history changes (heard on history's hub,
  ``app.history.changes``; ``SyncEngine.sends`` says which) and the scene versions
  it writes (``SceneCheckpoints.on_recorded``) go out as documents, replicated documents come into
  history and the version store in arrival order, a slice per step (``app.browser.sync_intake``,
  which keeps the change sequence applied so that a reload goes on from there). Once the server
  answered, everything stored here goes out at the first sync with that server and database
  (``SyncEngine.send_all``; turning sync off forgets it, so what was made meanwhile goes out too).
- A replication that says ``syncing`` and moves nothing is stalled (``app.sync.watchdog``, polled
  every ``POLL_S``): it is cancelled (the worker and its local database stay, so this tab's
  changes still go there), the status reads ``offline`` with the reason ``stalled`` (never
  ``syncing`` while nothing moves, a restart's included) and it starts again on the watchdog's
  backoff; Sync now starts it at once. Progress is a batch the worker moved either way; the
  server's welcome and a slice taken into history keep the count from running out, but do not
  end a stall.
- Each start hears only its own replication: what one that ended (Sync now, the watchdog, new
  settings, sync off) still reports, an aborted request that reads like a server gone away
  included, is never this page's status (nor is it in the worker, ``static/sync-worker.js``). A
  write a step still makes through one that ended is refused at once (``static/sync.js``): the step
  fails and is logged (a slice it was taking in keeps its sequence unsaved, so the next start takes
  it in again), where a step left waiting for ever held every later one, the next start's intake
  among them, so that start never read ``synced`` and the watchdog called it stalled.
- A delete made here is held while Undo can take it back (``app.sync.held``): a timer set at the
  delete, ``UNDO_MS`` and ``RELEASE_AFTER_MS`` later, and every start (a tab closed meanwhile) send
  what is due (``SyncEngine.release``).
- A server the worker's Content-Security-Policy refuses (``connect-src``, the build's
  ``--connect-src``) is ``error`` with the reason ``blocked``, not ``offline``.
- A window whose IndexedDB keeps no Blob (WebKit's private windows), where PouchDB never answers, is
  ``error`` with the reason ``storageUnsupported``: the worker checks once before it asks the server
  (``static/sync-worker.js``), nothing is replicated, the watchdog does not restart it, and history
  stays on this device as with sync off.

The password never reaches a log: errors are logged by their kind, never with the configuration.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import js
from pyodide.ffi import create_once_callable, create_proxy
from pyscript import document

from app.browser.dom import element
from app.browser.model_setup import WebStorage
from app.browser.sync_intake import SyncIntake
from app.browser.sync_tabs import SyncTabs
from app.i18n import Translator
from app.browser.tasks import next_task
from app.history.changes import ChangeHub, HistoryChange
from app.history.delete_writes import UNDO_MS
from app.store import Notice
from app.sync.engine import SENT_KEY, SyncEngine, Unsent
from app.sync.settings import SyncCredentials, SyncSettings, SyncStatus, load_sync_settings, save_sync_settings
from app.sync.tabs import lock_name
from app.sync.watchdog import ProgressWatchdog

__all__ = ["SyncSection", "SyncSetup"]

SCRIPTS = ("static/sync.js",)
"""Loaded in the page when sync is on; it starts ``static/sync-worker.js``, which loads PouchDB."""
POLL_S = 1.0
"""Seconds between two looks of the watchdog (``app.sync.watchdog``) while sync is on."""
STALLED = SyncStatus.failed("stalled")
"""What the panel shows while the watchdog holds the replication stalled."""
RELEASE_AFTER_MS = 500
"""A held deletion is released this long after Undo's time (``UNDO_MS``) is over, so the release
never comes before the hold's own time (``app.sync.held``)."""


async def _load_script(src: str) -> None:
    """Append a classic ``<script src>`` and wait for it; raises ``RuntimeError`` when it fails."""
    done = asyncio.get_running_loop().create_future()
    node = document.createElement("script")
    node.src = src
    ok = create_proxy(lambda _e: done.done() or done.set_result(None))
    bad = create_proxy(lambda _e: done.done() or done.set_exception(RuntimeError(f"{src} did not load")))
    node.addEventListener("load", ok)
    node.addEventListener("error", bad)
    document.head.append(node)
    try:
        await done
    finally:
        ok.destroy()
        bad.destroy()


class _Replica:
    """``app.sync.engine.Replica`` over ``static/sync.js``'s ``Replication``."""

    def __init__(self, replication) -> None:
        self._replication = replication

    async def put(self, doc: dict[str, Any]) -> None:
        await self._replication.put(json.dumps(doc, ensure_ascii=False))

    async def remove(self, doc_id: str, body: dict[str, Any] | None = None) -> None:
        await self._replication.remove(doc_id, json.dumps(body or {}, ensure_ascii=False))

    async def resolve(self, docs: list[dict[str, Any]]) -> None:
        await self._replication.resolve(json.dumps(docs, ensure_ascii=False))


class SyncSetup:
    """Sync in this page for ``history`` (``HistoryService``; ``None`` until the page loaded it, which
    it does before ``install``), ``translator``, ``checkpoints`` (``SceneCheckpoints``) and ``records``
    (the ``RecordBackend`` both live in). ``changes``: history's hub (``ChangeHub``), heard once sync
    starts; ``say(Notice)`` / ``dismiss(code)``: the panel's ``add_notice`` and ``dismiss_notice`` (a
    sync notice replaces its earlier count)."""

    def __init__(self, history: Any, translator: Translator, checkpoints: Any = None, records: Any = None, *,
                 changes: ChangeHub, say: Callable[[Notice], None],
                 dismiss: Callable[[str], None] | None = None) -> None:
        self.history = history
        self.checkpoints = checkpoints
        self.records = records
        self._changes, self._say, self.dismiss = changes, say, dismiss
        self._welcomed = False
        self.t = translator
        self.local, self.session = WebStorage("localStorage"), WebStorage("sessionStorage")
        self.settings, self._password = load_sync_settings(self.local, self.session)
        self.engine: SyncEngine | None = None
        self._unsent = Unsent()  # what a replication that ended refused to write, for the next start
        self.replication = None
        self.status = SyncStatus("off")  # as the replication reports it (the panel may show STALLED)
        self.watchdog = ProgressWatchdog(time.monotonic)
        self._watching: asyncio.Future | None = None
        self._queue: asyncio.Future | None = None
        self._proxies: list = []
        self.intake = SyncIntake(self.local, current=lambda: (self.replication, self.engine), enqueue=self._enqueue,
                                 worked=self.watchdog.worked, settled=self._settled)
        self._reported: SyncStatus | None = None  # the replication's last status (SyncStatus.shown)
        self.node = None
        self.now_button = None
        self._hooked = False
        self._starts = 0

    # -- the panel -----------------------------------------------------------------
    def install(self, menu=None) -> None:
        """Draw the status in the panel's status line and Sync now in its ``menu``
        (``app.browser.panel_menu.PanelMenu``; without one, both in a row of their own at the top of
        the panel); start when the stored settings say so. While sync is off both are hidden."""
        self.node = element("span", testid="sync-status", classes="sync-status",
                            attrs={"role": "status", "aria-live": "polite", "data-state": "off"})
        self.now_button = element("button", text=self.t("sync.now"), testid="sync-now", classes="sync-now",
                                  attrs={"type": "button"})
        if menu is not None and menu.button is not None:
            line = menu.button.closest("[data-testid=checkpoint-summary]")
            line.insertBefore(self.node, menu.button.parentNode)
            menu.add(self.now_button)
        else:
            bar = element("div", classes="sync-bar", attrs={"id": "sync-bar"}, children=[self.node, self.now_button])
            body = document.getElementById("agent-body")
            body.insertBefore(bar, body.firstChild)
        proxy = create_proxy(lambda _e: self.sync_now())
        self._proxies.append(proxy)
        self.now_button.addEventListener("click", proxy)
        self._show(SyncStatus("off"))
        if self.settings.enabled:
            self._spawn(self.start())

    def _show(self, status: SyncStatus) -> None:
        """The replication's ``status`` (the watchdog watches while it is ``syncing``), drawn."""
        self.status = status
        self.watchdog.observe(status.state)
        self._draw()

    def _draw(self) -> None:
        """Draw ``self.status``, or ``STALLED`` in its place while the watchdog holds a ``syncing``
        replication stalled."""
        if self.node is None:
            return
        status = STALLED if self.watchdog.stalled and self.status.state == "syncing" else self.status
        self.node.dataset.state = status.state
        if status.reason:
            self.node.dataset.reason = status.reason
        else:
            self.node.removeAttribute("data-reason")
        parts = urlsplit(self.settings.url)
        self.node.textContent = self.t(status.key, origin=f"{parts.scheme}://{parts.netloc}")
        self.node.hidden = self.now_button.hidden = status.state == "off"  # off: nothing to show or press

    def _moved(self) -> None:
        """Documents moved (watchdog progress); a stall shown so far gives way to the status."""
        stalled = self.watchdog.stalled
        self.watchdog.moved()
        if stalled:
            self._draw()

    async def _watch(self) -> None:
        """While sync is on: every ``POLL_S``, cancel a stalled replication (shown as ``STALLED``) and
        start it again when the watchdog's backoff says so."""
        try:
            while self.settings.enabled:
                await asyncio.sleep(POLL_S)
                verdict = self.watchdog.poll()
                if verdict == "stalled":  # cancelled; this tab's changes still reach the local database
                    js.console.warn("sync: no progress; the replication is restarted")
                    if self.replication is not None:
                        self.replication.cancel()
                    self._draw()
                elif verdict == "restart" and self.settings.enabled:
                    self._spawn(self.restart())
        finally:
            self._watching = None

    def _spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        task.add_done_callback(_report)

    # -- settings ------------------------------------------------------------------
    def load(self) -> tuple[SyncSettings, str]:
        """What the dialog shows: this tab's sync settings and password."""
        return self.settings, self._password

    def save(self, settings: SyncSettings, password: str) -> bool:
        """Store and apply ``settings``: sync starts, restarts with the new server, or stops (saved
        before ``install``, while history is still loading, it starts there)."""
        stored = save_sync_settings(self.local, self.session, settings, password)
        if not settings.enabled:  # what is made while sync is off goes out at the next first sync
            try:
                self.local.remove_item(SENT_KEY)
            except Exception:  # noqa: BLE001
                pass
        changed = (settings, password) != (self.settings, self._password)
        self.settings, self._password = settings, password
        if self.node is None:  # not installed yet: install() starts it when it is on
            return stored
        if changed or (settings.enabled and self.replication is None):
            self._spawn(self.restart())
        return stored

    # -- running -------------------------------------------------------------------
    async def restart(self) -> None:
        """Stop any replication; start again when sync is on."""
        self.stop()
        if self.settings.enabled:
            await self.start()
        else:
            self.watchdog.stop()
            self._show(SyncStatus("off"))

    def stop(self) -> None:
        """End the replication of this page (the local database stays); with sync off, let the
        replicating tab's lock go (another tab waiting for it takes over)."""
        if self.replication is not None:
            self.replication.stop()
            self.replication = None
        if not self.settings.enabled and self._tabs is not None:
            self._tabs.release()

    def sync_now(self) -> None:
        """The Sync now button: probe the server again and replicate at once."""
        if self.settings.enabled:
            self._spawn(self.restart())

    async def start(self) -> None:
        """Load the client (once), open the local database, probe the server and replicate.
        ``sync-status``'s ``data-starts`` counts the starts of this page (Sync now is one)."""
        self._starts += 1
        if self.node is not None:
            self.node.dataset.starts = str(self._starts)
        self.watchdog.restarted()
        if self._watching is None:
            self._watching = asyncio.ensure_future(self._watch())
            self._watching.add_done_callback(_report)
        self._show(SyncStatus("syncing"))
        self._reported = None
        try:
            if getattr(js.window, "agentbarSync", None) is None:
                await _load_script(SCRIPTS[0])
        except RuntimeError as error:
            js.console.error(f"sync: {error}")
            self._show(SyncStatus("error", "unreachable"))
            return
        if not await self._tabs_of().claim(lock_name(self.settings)):  # another tab replicates: follow it
            self._follow()
            return
        credentials = SyncCredentials.of(self.settings, self._password)
        config = json.dumps({"server": self.settings.url, "remote": credentials.remote, "user": credentials.user,
                             "password": credentials.password, "since": self.intake.since()})
        ours: list = []  # the replication these callbacks hear: once it ended (stop, restart) nothing is heard
        on_change = create_proxy(lambda: self.intake.changed() if ours and ours[0] is self.replication else None)
        on_status = create_proxy(lambda *args: self._on_status(*args) if ours and ours[0] is self.replication else None)
        self._proxies += [on_change, on_status]
        replication = self.replication = js.window.agentbarSync.open(config, on_change, on_status)
        ours.append(replication)
        del config
        self.engine = SyncEngine(self.history, _Replica(self.replication), self.local, checkpoints=self.checkpoints,
                                 records=self.records, pause=next_task, clock=lambda: int(js.Date.now()),
                                 notify=self._notify, unsent=self._unsent)
        self._hook_history()
        self._welcomed = False
        try:
            status = int(await self.replication.probe())
        except Exception as error:  # noqa: BLE001 - the client did not load in its worker, or it failed
            if replication is not self.replication:  # stopped meanwhile (the watchdog, Sync now, off)
                return
            js.console.error(f"sync: {type(error).__name__}")
            if self.status.state == "syncing":
                self._show(SyncStatus("error", "unreachable"))
            return
        if self.status.state == "syncing" and status == 200 and self.replication is replication:
            self._welcomed = True
            self.replication.start()
            engine, target = self.engine, credentials.remote
            self._enqueue(engine.resend)  # what the replication before this one refused to write
            self._enqueue(engine.release)  # deletions held while Undo could take them back (a tab closed meanwhile)
            self._enqueue(lambda: engine.send_all(target))

    def _notify(self, notice) -> None:
        """A sync notice (``sync-unreadable``: the count so far) in the panel, in place of the one
        before it (``dismiss``: the page's ``runtime.dismiss_notice``)."""
        if self.dismiss is not None:
            self.dismiss(notice.code)
        self._say(notice)

    def _hook_history(self) -> None:
        if self._hooked:
            return
        self._hooked = True

        def changed(change: HistoryChange) -> None:  # sync's own changes (source "sync") never go back out
            if self.engine is not None and self.settings.enabled and SyncEngine.sends(change):
                self._enqueue(lambda: self.engine.local_changed(change))
                if change.kind == "delete":  # held while Undo can take it back: sent once that time is over
                    js.setTimeout(create_once_callable(self._release), UNDO_MS + RELEASE_AFTER_MS)

        self._changes.subscribe(changed)
        if self.checkpoints is not None:
            def recorded(item) -> None:
                if self.engine is not None and self.settings.enabled:
                    self._enqueue(lambda: self.engine.local_version(item))

            self.checkpoints.on_recorded(recorded)

    def _release(self) -> None:
        """The deletions held here that Undo can no longer take back go out (``SyncEngine.release``)."""
        if self.engine is not None and self.settings.enabled:
            self._enqueue(self.engine.release)

    def _enqueue(self, make) -> None:
        """Run ``make()`` after every step queued before (arrival order), reporting failures."""
        previous = self._queue

        async def step():
            if previous is not None:
                await asyncio.gather(previous, return_exceptions=True)
            try:
                await make()
            except Exception as error:  # noqa: BLE001 - logged by kind, never with the credentials
                js.console.warn(f"sync: {type(error).__name__}")
        self._queue = asyncio.ensure_future(step())

    def _settled(self) -> None:
        """Nothing waits for the replication that runs: a ``synced`` held back is shown."""
        if self._reported is not None:
            self._show(self._reported.shown(applying=False))

    def _on_status(self, event, http_status, body) -> None:
        if event == "progress":  # a batch moved (not a status)
            self._moved()
            return
        if event == "welcome":
            self.watchdog.worked()
        parsed = None
        if isinstance(body, str):
            try:
                parsed = json.loads(body)
            except ValueError:
                parsed = body
        self._reported = SyncStatus.of_event(str(event), int(http_status or 0), parsed, welcomed=self._welcomed)
        # 'synced' waits while history still takes changes in (the worker reports a pause only once
        # its change feed handed every replicated change to this page, so the drain has begun)
        self._show(self._reported.shown(applying=self.intake.applying))

    # -- one tab replicates (app.browser.sync_tabs) --------------------------------------
    _tabs: SyncTabs | None = None  # made at the first start (after install drew the status)
    _follows = 0  # starts of this page as a tab that follows

    def _tabs_of(self) -> SyncTabs:
        if self._tabs is None:
            self._tabs = SyncTabs(self.node, self.t, take_over=lambda: self._spawn(self.restart()),
                                  sync_now=self.sync_now, wake=self._wake, show=self._followed)
        return self._tabs

    def _wake(self) -> None:
        if self.replication is not None:
            self.replication.wake()

    def _followed(self, status: SyncStatus) -> None:
        """The replicating tab's ``status``, drawn as this tab's (nothing is watched here)."""
        self.status = status
        self._draw()

    def _follow(self) -> None:
        """Start as a tab that follows: this tab's history changes and versions go into the local
        database (the replicating tab is told, ``wrote``), nothing is replicated or taken in here
        (another tab's writes to history reach this one by history's own signals); the status is the
        replicating tab's, asked for at the first start; a later start (Sync now) asks that tab to
        start again."""
        self.watchdog.stop()  # nothing replicates here: nothing to watch
        quiet = create_proxy(lambda *_args: None)
        self._proxies.append(quiet)
        replication = self.replication = js.window.agentbarSync.open(json.dumps({"feed": False}), quiet, quiet)
        tabs = self._tabs_of()
        self.engine = SyncEngine(self.history, _TabReplica(replication, lambda: tabs.post("wrote")), self.local,
                                 checkpoints=self.checkpoints, records=self.records, pause=next_task,
                                 clock=lambda: int(js.Date.now()), notify=self._notify, unsent=self._unsent)
        self._hook_history()
        self._enqueue(self.engine.resend)  # into the local database: no server to wait for
        self._enqueue(self.engine.release)
        self._follows += 1
        tabs.post("ask" if self._follows == 1 else "now")


class _TabReplica(_Replica):
    """``_Replica`` of a tab that follows: after each write, ``wrote()`` (the replicating tab reads it)."""

    def __init__(self, replication, wrote: Callable[[], None]) -> None:
        super().__init__(replication)
        self._wrote = wrote

    async def put(self, doc: dict[str, Any]) -> None:
        await super().put(doc)
        self._wrote()

    async def remove(self, doc_id: str, body: dict[str, Any] | None = None) -> None:
        await super().remove(doc_id, body)
        self._wrote()

    async def resolve(self, docs: list[dict[str, Any]]) -> None:
        await super().resolve(docs)
        self._wrote()


def _report(task: asyncio.Future) -> None:
    if not task.cancelled() and task.exception() is not None:
        js.console.error(f"sync: {type(task.exception()).__name__}")


class SyncSection:
    """The settings dialog's sync fields (module docstring) for ``setup``."""

    def __init__(self, t: Translator, setup: SyncSetup) -> None:
        self.t = t
        self.setup = setup
        self.enabled = element("input", testid="sync-enabled", attrs={"type": "checkbox"})
        self.url = element("input", testid="sync-url", attrs={
            "type": "url", "placeholder": "http://127.0.0.1:5984", "spellcheck": "false", "dir": "ltr"})
        self.database = element("input", testid="sync-database", attrs={"type": "text", "spellcheck": "false",
                                                                         "dir": "ltr", "autocomplete": "off"})
        self.user = element("input", testid="sync-user", attrs={"type": "text", "spellcheck": "false", "dir": "ltr",
                                                                 "autocomplete": "off"})
        self.password = element("input", testid="sync-password", attrs={"type": "password", "autocomplete": "off",
                                                                         "spellcheck": "false", "dir": "ltr"})
        self.remember = element("input", testid="sync-remember", attrs={"type": "checkbox"})

    def _field(self, key: str, control):
        return element("label", classes="settings-field", children=[element("span", text=self.t(key)), control])

    def build(self):
        """The fieldset to put in the dialog's form."""
        return element("fieldset", classes="settings-sync", testid="sync-settings", children=[
            element("legend", text=self.t("sync.title")),
            element("label", classes="settings-check", children=[self.enabled, element("span", text=self.t("sync.enabled"))]),
            self._field("sync.url", self.url), self._field("sync.database", self.database),
            self._field("sync.user", self.user), self._field("sync.password", self.password),
            element("label", classes="settings-check", children=[self.remember, element("span", text=self.t("sync.remember"))]),
            element("small", text=self.t("sync.hint"), classes="settings-hint")])

    def fill(self) -> None:
        """Show what is stored."""
        settings, password = self.setup.load()
        self.enabled.checked = settings.enabled
        self.url.value = settings.url
        self.database.value = settings.database
        self.user.value = settings.user
        self.password.value = password
        self.remember.checked = settings.remember

    def read(self) -> tuple[SyncSettings, str]:
        """The fields as settings; raises ``ValueError`` whose message is a locale key."""
        from pydantic import ValidationError

        from app.agents.settings import CredentialsInUrl
        from app.sync.settings import validate_database, validate_sync_url

        try:
            url = validate_sync_url(str(self.url.value))
        except CredentialsInUrl:
            raise ValueError("sync.credentialsInUrl") from None
        except ValueError:
            raise ValueError("sync.invalidUrl") from None
        try:
            database = validate_database(str(self.database.value))
        except ValueError:
            raise ValueError("sync.invalidDatabase") from None
        enabled = bool(self.enabled.checked)
        if enabled and not (url and database):
            raise ValueError("sync.needServer")
        try:
            settings = SyncSettings(enabled=enabled, url=url, database=database or "agentbar",
                                    user=str(self.user.value), remember=bool(self.remember.checked))
        except ValidationError:
            raise ValueError("sync.needServer") from None
        return settings, str(self.password.value)

    def save(self, values: tuple[SyncSettings, str]) -> bool:
        """Store and apply what ``read`` gave; False when storage refused."""
        return self.setup.save(*values)
