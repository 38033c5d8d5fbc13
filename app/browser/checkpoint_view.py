"""The checkpoint list of each scene, the panel's checkpoint summary, and the exports
(DESIGN.md §10 UI hooks). Everything shown comes from the one read model
(``SceneCheckpoints.read_model``); restores go through the runtime
(``AgentRuntime.restore_checkpoint``), which emits the ``ArtifactSnapshot``.

Hooks: ``scene-versions-open`` (a button in each scene, ``aria-expanded``),
``checkpoint-list``, ``checkpoint-item`` (``data-version``,
``data-checkpoint-id``, ``data-source``, ``data-current``), ``checkpoint-diff``
and ``checkpoint-diff-view`` (``<ins>``/``<del>`` lines), ``checkpoint-restore``,
``checkpoint-summary`` (``data-count``, ``data-latest``: the panel's one status line, whose
menu, ``app.browser.panel_menu``, holds ``export-evidence`` and ``export-replay``); notices of the version store as ``agent-notice`` items in the
summary bar, each with its ``agent-notice-dismiss`` button. Another tab's versions arrive through
``app.browser.signals`` as a ``SceneCheckpoints.load_stage``, whose notice redraws what changed.

All stored text is set as ``textContent``.
"""

from __future__ import annotations

import asyncio
import json
import logging

import js
from pyodide.ffi import create_proxy
from pyscript import document
from pyscript.ffi import is_none

from app.browser.dom import element as _node
from app.browser.files import download
from app.browser.panel_menu import PanelMenu
from app.checkpoints.diff import line_kind
from app.checkpoints.listing import list_rows
from app.checkpoints.paths import segment
from app.checkpoints.read_model import CheckpointNotFound
from app.presentation import isolated_segments

__all__ = ["CheckpointView"]

_log = logging.getLogger(__name__)

CURRENT: "CheckpointView | None" = None
"""The page's view once installed (the benchmark drives it from Python in the page)."""




def _attr(node, name: str) -> str | None:
    value = node.getAttribute(name)
    return None if is_none(value) else str(value)


class CheckpointView:
    """Scene checkpoint lists, the summary bar and the export buttons for one page.

    ``runtime``: ``app.runtime.AgentRuntime`` (with ``checkpoints``); ``translator``:
    ``app.i18n.Translator``; ``clock``: epoch ms (export time); ``covered``: notice codes another
    notice already says (IndexedDB unusable from the start: one notice, DESIGN.md §5).
    """

    def __init__(self, runtime, translator, clock, covered: frozenset[str] = frozenset()) -> None:
        self.runtime = runtime
        self.checkpoints = runtime.checkpoints
        self.t = translator
        self._clock = clock
        self.covered = covered
        self._open: set[str] = set()  # scene ids whose list is open
        self._dismissed: set[str] = set()  # notice codes the user closed (each is said once per page anyway)
        self._summary_generation = 0
        self._summary_key: tuple | None = None
        self._bar = None
        self.menu: PanelMenu | None = None
        self._proxies: list = []
        self.tasks: set[asyncio.Task] = set()

    # ---- set-up ------------------------------------------------------------
    def install(self) -> None:
        """Create the summary bar (the panel's status line and its menu) and listen for clicks on it
        and on the stage."""
        global CURRENT
        CURRENT = self
        bar = _node("section", classes="checkpoint-bar", testid="checkpoint-summary",
                    attrs={"data-count": "0", "data-latest": ""})
        bar.append(_node("span", classes="checkpoint-summary-text", text=self.t("checkpoints.summaryNone"),
                         attrs={"aria-live": "polite"}))
        self.menu = PanelMenu(self.t)  # the exports (and Sync now, app.browser.sync_setup) are its actions
        self.menu.install(bar)
        for testid, key in (("export-evidence", "checkpoints.exportEvidence"), ("export-replay", "checkpoints.exportReplay")):
            self.menu.add(_node("button", text=self.t(key), classes="export-button", testid=testid, attrs={"type": "button"}))
        notices = document.getElementById("agent-notices")  # the panel's own notices stay first
        notices.parentNode.insertBefore(bar, notices.nextSibling)
        self._bar = bar
        self._listen(bar, self._on_bar_click)
        self._listen(document.getElementById("stage"), self._on_stage_click)

    def _listen(self, target, handler) -> None:
        proxy = create_proxy(handler)
        self._proxies.append(proxy)
        target.addEventListener("click", proxy)

    def _spawn(self, coroutine) -> None:
        task = asyncio.ensure_future(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def settle(self) -> None:
        """Wait until every list, diff and summary refresh started so far is drawn (tests, bench)."""
        while pending := [task for task in self.tasks if not task.done()]:  # a done task may not be discarded
            await asyncio.gather(*pending, return_exceptions=True)  # yet: awaiting it again would spin

    # ---- rendering ---------------------------------------------------------
    def render(self) -> None:
        """Give each scene its versions button and list; refresh what depends on the versions."""
        stage_id = self.runtime.stage_id
        if stage_id is None:
            return
        for node in document.querySelectorAll("#stage [data-testid=scene]"):
            scene_id = node.dataset.sceneId
            box = node.querySelector(".scene-versions")
            if is_none(box):
                box = self._scene_controls(node, scene_id)
            # the list follows the scene's version, and versions from another device (§16) beside it
            version = f'{_attr(node, "data-version") or "0"}/{self.checkpoints.generation}'
            if scene_id in self._open and _attr(box, "data-listed-version") != version:
                box.setAttribute("data-listed-version", version)
                self._spawn(self._fill_list(stage_id, scene_id, box))
        self._render_notices()
        key = (stage_id, self.runtime.conversation_key(stage_id), self.checkpoints.busy,
               tuple(_attr(n, "data-version") for n in document.querySelectorAll("#stage [data-testid=scene]")))
        if key != self._summary_key:
            self._summary_key = key
            self._spawn(self.refresh_summary())

    def _scene_controls(self, node, scene_id: str):
        box = _node("div", classes="scene-versions")
        list_id = f"versions-{segment(scene_id)}"
        label = self.t("checkpoints.versionsLabel", sceneId=scene_id)
        box.append(_node("button", text=self.t("checkpoints.versions"), classes="versions-button",
                         testid="scene-versions-open",
                         attrs={"type": "button", "aria-expanded": "false", "aria-controls": list_id,
                                "aria-label": label, "data-scene-id": scene_id}))
        listing = _node("ol", classes="checkpoint-list", testid="checkpoint-list",
                        attrs={"id": list_id, "aria-label": label})
        listing.hidden = True
        box.append(listing)
        node.append(box)
        return box

    async def _fill_list(self, stage_id: str, scene_id: str, box) -> None:
        listing = box.querySelector("[data-testid=checkpoint-list]")
        try:
            result = await self.checkpoints.read_model.list_scene(stage_id, scene_id)
        except Exception:  # noqa: BLE001 - shown to the user, logged for the developer
            _log.exception("listing versions of %r failed", scene_id)
            listing.replaceChildren(_node("li", text=self.t("checkpoints.failed"), classes="checkpoint-empty"))
            return
        if self.runtime.stage_id != stage_id:
            return
        current = self.checkpoints.current(stage_id, scene_id).version_no
        self.draw_list(listing, result["checkpoints"], current)
        listing.setAttribute("data-count", str(result["checkpoint_count"]))

    def draw_list(self, listing, checkpoints: list[dict], current: int) -> None:
        """Draw checkpoint list items (newest first) into ``listing``; ``current``: the version shown.

        ``app.checkpoints.listing.list_rows`` decides every text and attribute; one call to
        ``static/checkpoint-view.js`` draws them (textContent and attributes only)."""
        js.agentbarCheckpointDom.draw(listing, self.t.locale, json.dumps(list_rows(self.t, checkpoints, current)))

    async def _toggle_diff(self, item, button) -> None:
        view = item.querySelector("[data-testid=checkpoint-diff-view]")
        if not is_none(view):
            view.remove()
            button.setAttribute("aria-expanded", "false")
            button.textContent = self.t("checkpoints.diff")
            return
        try:
            result = await self.checkpoints.read_model.diff(item.dataset.checkpointId)
        except CheckpointNotFound:
            item.append(_node("p", text=self.t("checkpoints.failed"), classes="checkpoint-error",
                              testid="checkpoint-diff-view"))
            return
        item.append(self.draw_diff(result["diff"]))
        button.setAttribute("aria-expanded", "true")
        button.textContent = self.t("checkpoints.diffHide")

    def draw_diff(self, diff: dict):
        """The diff view of one ``document_diff`` result: the element summary and the unified diff,
        each added line an ``<ins>``, each removed line a ``<del>``."""
        t = self.t
        view = _node("div", classes="checkpoint-diff-view", testid="checkpoint-diff-view")
        elements = diff["elements"]
        view.append(_node("p", classes="diff-summary", testid="checkpoint-diff-summary",
                          text=t("checkpoints.diffSummary", added=len(elements["added"]),
                                 removed=len(elements["removed"]), changed=len(elements["changed"])),
                          attrs={"data-added": ",".join(elements["added"]), "data-removed": ",".join(elements["removed"]),
                                 "data-changed": ",".join(elements["changed"])}))
        pre = _node("pre", classes="diff", attrs={"dir": "ltr", "tabindex": "0"})
        lines = diff["lines"]
        if not lines:
            pre.textContent = t("checkpoints.diffEmpty")
        fragment = document.createDocumentFragment()
        create = document.createElement
        for line in lines:
            kind = line_kind(line)
            tag = {"ins": "ins", "del": "del"}.get(kind, "span")
            node = create(tag)
            node.className = f"diff-{kind}"
            node.textContent = line + "\n"
            fragment.append(node)
        pre.append(fragment)
        view.append(pre)
        return view

    async def refresh_summary(self) -> None:
        """Redraw ``checkpoint-summary`` from the read model's summary of the shown conversation."""
        stage_id = self.runtime.stage_id
        if stage_id is None or self._bar is None:
            return
        self._summary_generation += 1
        generation = self._summary_generation
        conversation = await self.runtime.conversation(stage_id, allocate=False)  # none yet: nothing made in it
        # what this page shows of the course's versions and the times its conversation was let go (a
        # resume, a restored backup): the same as at the last read, the summary read then stands
        seen = (stage_id, tuple(_attr(n, "data-version") for n in document.querySelectorAll("#stage [data-testid=scene]")),
                self.checkpoints.generation, self.checkpoints.busy, self.runtime.conversation_key(stage_id)[1])
        summary = (await self.checkpoints.read_model.summary(conversation, seen=seen) if conversation is not None
                   else {"count": 0, "latest_checkpoint": None})
        if generation != self._summary_generation:
            return  # a newer refresh is on its way
        latest = summary["latest_checkpoint"]
        self._bar.setAttribute("data-count", str(summary["count"]))
        self._bar.setAttribute("data-latest", latest["checkpoint_id"] if latest else "")
        text = self._bar.querySelector(".checkpoint-summary-text")
        if latest:
            text.textContent = self.t("checkpoints.summary", count=summary["count"]) + " · "
            params = {"title": latest["title"] or latest["path"], "version": latest["version_no"] or 0}
            for piece in isolated_segments(self.t, "checkpoints.latest", params, ("title",)):
                if piece.kind == "isolate":  # a scene title in any script: its own run inside RTL text
                    title = document.createElement("bdi")
                    title.setAttribute("data-testid", "checkpoint-summary-title")
                    title.textContent = piece.text
                    text.append(title)
                else:
                    text.append(piece.text)
        else:
            text.textContent = self.t("checkpoints.summaryNone")
        text.title = text.textContent  # the line may cut it short; the whole of it on hover
        self._render_notices()

    def cover(self, code: str) -> None:
        """Leave notice ``code`` to another notice that now says it (IndexedDB's open failed)."""
        self.covered = self.covered | {code}
        self._render_notices()

    def _render_notices(self) -> None:
        if self._bar is None:
            return
        codes = [code for code in self.checkpoints.notices if code not in self.covered and code not in self._dismissed]
        shown = [n.dataset.code for n in self._bar.querySelectorAll("[data-testid=agent-notice]")]
        if list(codes) == shown:
            return
        for node in self._bar.querySelectorAll("[data-testid=agent-notice]"):
            node.remove()
        label = self.t("checkpoints.dismiss")
        for code in reversed(codes):  # prepended: the first code ends up first
            notice = _node("div", classes="notice", testid="agent-notice", attrs={"data-code": code, "role": "status"})
            notice.append(_node("span", text=self.t(f"checkpoints.notice.{code}")))
            notice.append(_node("button", text="×", classes="notice-dismiss", testid="agent-notice-dismiss",
                                attrs={"type": "button", "aria-label": label, "title": label, "data-code": code}))
            self._bar.prepend(notice)

    def dismiss_notice(self, code: str) -> None:
        """Close the version store's notice ``code`` (its × button); focus goes to the bar's menu
        button so a keyboard user stays in the bar."""
        self._dismissed.add(code)
        self._render_notices()
        if self.menu is not None:
            self.menu.button.focus()

    # ---- events --------------------------------------------------------------
    def _on_stage_click(self, event) -> None:
        target = event.target
        opener = target.closest("[data-testid=scene-versions-open]")
        if not is_none(opener):
            self._toggle_list(opener)
            return
        original = target.closest("[data-testid=checkpoint-restore-original]")
        if not is_none(original):
            box = original.closest("[data-testid=scene]")
            if not is_none(box) and self.runtime.stage_id is not None:
                self._spawn(self.runtime.restore_original(self.runtime.stage_id, box.dataset.sceneId))
            return
        item = target.closest("[data-testid=checkpoint-item]")
        if is_none(item):
            return
        diff = target.closest("[data-testid=checkpoint-diff]")
        if not is_none(diff):
            self._spawn(self._toggle_diff(item, diff))
        elif not is_none(target.closest("[data-testid=checkpoint-restore]")):
            self._spawn(self._restore(item.dataset.checkpointId))

    def _toggle_list(self, opener) -> None:
        scene_id = opener.dataset.sceneId
        box = opener.parentNode
        listing = box.querySelector("[data-testid=checkpoint-list]")
        opening = _attr(opener, "aria-expanded") != "true"
        opener.setAttribute("aria-expanded", "true" if opening else "false")
        listing.hidden = not opening
        if opening:
            self._open.add(scene_id)
            listing.replaceChildren(_node("li", text=self.t("checkpoints.loading"), classes="checkpoint-empty"))
            box.removeAttribute("data-listed-version")
            self.render()
        else:
            self._open.discard(scene_id)

    async def _restore(self, checkpoint_id: str) -> None:
        try:
            await self.runtime.restore_checkpoint(checkpoint_id)
        except CheckpointNotFound:
            _log.warning("checkpoint %r is gone", checkpoint_id)

    def _on_bar_click(self, event) -> None:
        button = event.target.closest("button")
        if is_none(button):
            return
        kind = _attr(button, "data-testid")
        if kind == "agent-notice-dismiss":
            self.dismiss_notice(_attr(button, "data-code") or "")
        elif kind in ("export-evidence", "export-replay"):
            self._spawn(self._export(kind))

    def _saved_turns(self) -> set[str]:
        """The ids of the shown thread's saved messages (a reply still running is not saved, DESIGN.md §4):
        a version of any other turn is exported as naming no turn (``app.checkpoints.timeline.as_saved``)."""
        from app.checkpoints.timeline import saved_turn_ids

        return saved_turn_ids(self.runtime.messages)

    async def _export(self, kind: str) -> None:
        from app.browser.tasks import next_task
        from app.checkpoints.exports import evidence_pack, replay_case

        stage_id = self.runtime.stage_id
        if stage_id is None:
            return
        build = evidence_pack if kind == "export-evidence" else replay_case
        data = await build(self.checkpoints.read_model, stage_id=stage_id,
                           conversation_id=await self.runtime.conversation(stage_id), exported_at=self._clock(),
                           pause=next_task, saved_turns=self._saved_turns())
        name = f"agentbar-{segment(stage_id)}-{'evidence-pack' if kind == 'export-evidence' else 'replay-case'}.zip"
        download(data, "application/zip", name)

