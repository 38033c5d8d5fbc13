"""History's files: the shown conversation exported as Markdown or JSON, printed (PDF), a thread
history cannot keep exported before New conversation, and a JSON export imported
(DESIGN.md §9 UI hooks, §5, §14). Every outcome is said in ``history-status``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import time
from typing import Awaitable, Callable

import js
from pyscript import document
from pyscript.ffi import is_none

from app.agents.errors import describe as describe_error
from app.browser.dom import element as _node
from app.browser.files import download, read_text
from app.browser.status_line import say
from app.history.labels import import_outcome, import_refusal, import_said, markdown_left_out, markdown_meta
from app.history.list_model import HistoryList
from app.history.recorder import HistoryRecorder
from app.history.service import HistoryService
from app.presentation import card_text, tool_card_view
from app.projection import CUT_MARKER, failure_of

__all__ = ["HistoryFiles", "SLICE_S", "install_graphemes"]

SLICE_S = 0.008
"""An import gives the page its turn once a slice of reading a conversation took this long (seconds)."""


@contextlib.contextmanager
def _no_cycle_collection():
    """Python's cycle collector held off while an import runs (its full passes over the import's
    objects were its longest pauses: 1.6 s for a conversation of 30,000 turns); reference counting
    still frees what the import lets go, and collection resumes as it was afterwards."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


async def _pause() -> None:
    """Give the page its turn between two slices of writing an imported conversation."""
    await asyncio.sleep(0)


async def install_graphemes() -> None:
    """Load the grapheme wheel (vendored with its bytecode, in the generated lock) on first use, with
    Pyodide's ``loadPackage`` (``import micropip`` took 130-550 ms in one task, DESIGN.md §13), and
    import it in two tasks: its Unicode tables, then its segmenter (in the first title of a cold
    load, ``import pyuegc`` was one task of 33-129 ms)."""
    import pyodide_js

    from app.browser.tasks import next_task
    from app.imports import import_in_steps

    await pyodide_js.loadPackage("pyuegc")
    await next_task()
    await import_in_steps("pyuegc", ["_unicode", "egc"], next_task)


def _chosen(field, kind: str):
    """The file chosen in the ``<input type=file>`` ``field`` (emptied, so the same file can be chosen
    again) and ``history-status`` cleared to a pending ``kind``; ``(None, None)`` when none was chosen."""
    files = field.files
    if is_none(files) or files.length == 0:
        return None, None
    file = files.item(0)
    field.value = ""
    status = document.getElementById("history-status")
    status.setAttribute("data-kind", kind)
    status.setAttribute("data-result", "pending")
    for name in ("data-reason", "data-imported", "data-existing", "data-skipped"):
        status.removeAttribute(name)
    status.textContent = ""
    return file, status


class HistoryFiles:
    """Export, print and import for one page.

    ``runtime``: ``stage_id``; ``store``: the ``ThreadStore`` (the shown thread, for the export of
    a thread history cannot keep); ``service``/``recorder``: history and its runtime recorder;
    ``history_list``: its ``current`` is the conversation exported; ``on_imported(task_id, added)``:
    ``added`` conversations were imported into the course the list shows, ``task_id`` the first of them
    (the list draws itself afresh, and reveals it when it is the only one); ``clock``: epoch ms.
    """

    def __init__(self, runtime, store, service: HistoryService, recorder: HistoryRecorder,
                 history_list: HistoryList, translator, clock,
                 on_imported: Callable[[str, int], Awaitable[None]]) -> None:
        self.runtime, self.store, self.service, self.recorder = runtime, store, service, recorder
        self.list, self.t, self.clock, self._on_imported = history_list, translator, clock, on_imported

    async def _bundle(self):
        task_id = self.list.current
        return await self.service.bundle(task_id) if task_id else None

    async def export(self, kind: str) -> None:
        """Download the active conversation as ``<taskId>.md`` or ``<taskId>.json``."""
        from app.history.export import export_json, export_markdown  # loaded on first export

        bundle = await self._bundle()
        if bundle is None:
            return
        tree = bundle.tree  # every branch in JSON; Markdown says how many it leaves out (DESIGN.md §17)
        if kind == "json":
            text, mime = export_json(*bundle, tree=tree), "application/json"
        else:
            text, mime = export_markdown(*bundle, {**self._labels(bundle[0]), "leftOut": markdown_left_out(
                self.t, tree.left_out())}, lambda error: describe_error(self.t, error), tree=tree), "text/markdown"
        download(text, mime, f"{bundle[0].taskId}.{kind}")

    async def export_unkept(self) -> None:
        """Download the shown thread as a JSON export when history cannot keep it (asked before New
        conversation, DESIGN.md §5); it imports back once history works. The thread stays."""
        from app.history.export import export_unkept
        from app.history.text import needs_segmenter

        stage_id = self.runtime.stage_id
        messages = self.store.load(stage_id) if stage_id is not None else None
        if not messages:
            return
        if needs_segmenter(messages):
            await install_graphemes()
        task_id, text = export_unkept(stage_id, messages, self.clock())
        download(text, "application/json", f"{task_id}.json")

    def _labels(self, meta=None) -> dict[str, str]:
        return {"you": self.t("edit.agent.you"), "assistant": self.t("edit.agent.assistant"),
                "tool": self.t("history.tool"), "meta": markdown_meta(self.t, meta) if meta else "",
                "cut": self.t("model.turnCut")}

    async def print_view(self) -> None:
        """Fill the print view with the active conversation and open the browser's print (PDF)."""
        bundle = await self._bundle()
        if bundle is None:
            return
        meta, messages, _ = bundle
        view = document.getElementById("print-view")
        view.replaceChildren(_node("h1", text=meta.taskName or self.t("history.untitled")))
        for message in messages:
            view.append(_node("h2", text=self._labels()["you" if message.get("role") == "user" else "assistant"]))
            for part in message.get("content") or []:
                view.append(self._printed_part(part))
        js.window.print()

    def _printed_part(self, part: dict):
        if (failure := failure_of(part)) is not None:  # a failed reply: its status, as the panel says it
            return _node("p", text=describe_error(self.t, failure), attrs={"dir": "auto"})
        if part == CUT_MARKER:  # a reply the server cut: its status, as the panel says it
            return _node("p", text=self.t("model.turnCut"), attrs={"dir": "auto"})
        if part.get("type") == "tool-call":  # a tool call: its card's texts, as the panel reads them
            return self._printed_card(part)
        text = part.get("text") if part.get("type") == "text" else json.dumps(part, ensure_ascii=False, indent=2)
        return _node("pre" if part.get("type") != "text" else "p", text=text, attrs={"dir": "auto"})

    def _printed_card(self, part: dict):
        from app.model import ToolCallPart

        try:
            card = card_text(tool_card_view(ToolCallPart.model_validate(part)), self.t)
        except ValueError:  # not a tool call the panel could draw either: printed as stored
            return _node("pre", text=json.dumps(part, ensure_ascii=False, indent=2), attrs={"dir": "auto"})
        lines = [f"{card.name} · {card.badge}", card.elements, card.actions, card.summary]
        return _node("p", text="\n".join(line for line in lines if line), classes="printed-tool-call",
                     attrs={"dir": "auto"})

    async def import_file(self, field) -> None:
        """Import a JSON export into the shown course's history (DESIGN.md §14): a file over 50 MB is
        refused before it is read, the text is parsed in slices that leave the page its turn, and every
        refusal (an unexpected failure too) is said in ``history-status``; a refused file changes nothing.
        A ``maic-agent-threads`` value (the TS original's, ``app.history.original``) is read instead as
        one conversation per course, each into its own course, counted as ``import_chatgpt_file`` counts."""
        file, status = _chosen(field, "import")
        if file is None:
            return
        bundle = await self._parsed(file)
        if bundle is None:
            return
        if isinstance(bundle, str):  # the original's value
            return await self._import_reads(status, lambda: self._original_reads(bundle), own_course=True)
        stage_id = self.runtime.stage_id or ""
        try:
            result = await self.recorder.run(  # paused between slices: a long message is not one task (§14)
                stage_id, lambda: self.service.import_bundle(stage_id, *bundle, pause=_pause, branches=bundle.branches,
                                                             shown=bundle.shown))
        except Exception as error:  # noqa: BLE001 - never a silent failure: the page says it (§14)
            js.console.error(f"import failed: {type(error).__name__}: {error}")
            return self._refused("failed")
        status.setAttribute("data-result", "ok" if result in ("ok", "copy", "extended") else "error")
        status.setAttribute("data-outcome", result)
        say(status, import_said(self.t, result))
        if result in ("ok", "copy", "extended") and stage_id == self.list.stage:
            await self._on_imported(bundle[0].taskId, 1)

    def _original_reads(self, text: str):
        from app.history.original import read_original

        read = read_original(text, self.clock())
        yield from ((meta, messages, turns) for (meta, messages), turns in zip(read.documents, read.turns))
        yield from read.skipped

    async def import_chatgpt_file(self, field) -> None:
        """Import ChatGPT's data export (``conversations.json`` or the export zip) into the shown
        course's history (DESIGN.md §14, ``app.history.chatgpt``): each conversation through the same
        ``import_bundle`` as a JSON export, one already kept left as it is. ``history-status`` says how
        many were added (``data-imported``), already there (``data-existing``) and could not be read
        (``data-skipped``, named in the text); a file of another shape is refused with what was expected."""
        from app.history.chatgpt import conversations_steps, read_conversations
        from app.history.export import check_size

        file, status = _chosen(field, "import-chatgpt")
        if file is None:
            return

        def steps(data: bytes):  # decoded in slices too (None between them), then read one by one
            raw = yield from conversations_steps(data)
            yield from read_conversations(raw, self.runtime.stage_id or "", self.clock())

        async def reads():
            check_size(int(file.size))
            return steps((await file.arrayBuffer()).to_bytes())

        await self._import_reads(status, reads, importer="chatgpt")

    async def _import_reads(self, status, reads, *, own_course: bool = False, importer: str = "json") -> None:
        """Write each conversation ``reads()`` gives (an iterable, or an awaitable of one, of ``(meta,
        messages, turns, …)``, ``Skipped``, or ``None`` between slices of reading) into history
        (``_write_reads``): into the shown course, or into its own (``own_course``: ``meta.stageId``);
        then say the counts in ``status`` (``app.history.labels.import_outcome``: an import that stops
        partway after adding some says what it added, never "nothing was changed"). A refusal before
        anything was added is said in ``importer``'s words (``app.history.labels.import_refusal``)."""
        shown = self.runtime.stage_id or ""
        with _no_cycle_collection():
            results, skipped, first, stopped, added = await self._write_reads(reads, shown, own_course)
        if stopped is not None and "ok" not in results:  # nothing was added: the file is refused
            return self._refused(stopped, importer)
        self._say_counts(status, results.count("ok") + results.count("copy"), results.count("exists"), skipped,
                         stopped, extended=results.count("extended"))
        if first and shown == self.list.stage:
            await self._on_imported(first, added)

    async def _write_reads(self, reads, shown: str, own_course: bool):
        """``_import_reads``' writing: each conversation in its own task, the page given its turn
        whenever a slice of reading took ``SLICE_S``. Returns ``(results, skipped, first, stopped, added)``:
        ``import_bundle``'s result per conversation, the ``Skipped``, the first task id added to the
        ``shown`` course, why the import stopped partway (an ``ImportRefused`` reason,
        ``unavailable`` or ``failed``; None when it went to the end), and how many were added to the
        ``shown`` course."""
        from app.history.chatgpt import Skipped
        from app.history.export import ImportRefused

        results, skipped, first, added = [], [], None, 0
        try:
            found = reads()
            began = time.perf_counter()
            for read in (await found) if asyncio.iscoroutine(found) else found:
                if read is None:  # between two slices of reading
                    if time.perf_counter() - began >= SLICE_S:
                        await asyncio.sleep(0)
                        began = time.perf_counter()
                    continue
                if isinstance(read, Skipped):
                    skipped.append(read)
                    continue
                stage_id, bundle = read[0].stageId if own_course else shown, (read[0], read[1], read[2])
                tree = dict(zip(("branches", "shown"), read[4:6]))  # a ChatGPT conversation's other branches
                results.append(await self.recorder.run(stage_id, lambda s=stage_id, b=bundle, k=tree:
                                                       self.service.import_bundle(s, *b, pause=_pause, **k)))
                if results[-1] == "unavailable":
                    return results, skipped, first, "unavailable", added
                if results[-1] in ("ok", "copy") and stage_id == shown:
                    first, added = first or read[0].taskId, added + 1
                await asyncio.sleep(0)
                began = time.perf_counter()
        except ImportRefused as refused:
            return results, skipped, first, refused.reason, added
        except Exception as error:  # noqa: BLE001 - never a silent failure: the page says it (§14)
            js.console.error(f"import failed: {type(error).__name__}: {error}")
            return results, skipped, first, "failed", added
        return results, skipped, first, None, added

    def _say_counts(self, status, imported: int, existing: int, skipped: list, stopped: str | None = None, *,
                    extended: int = 0) -> None:
        result, text = import_outcome(self.t, imported, existing, skipped, stopped, extended=extended)
        status.setAttribute("data-result", result)
        status.setAttribute("data-imported", str(imported))
        status.setAttribute("data-existing", str(existing))
        status.setAttribute("data-skipped", str(len(skipped)))
        if stopped is not None:
            status.setAttribute("data-reason", "stopped")
        say(status, text)

    async def _parsed(self, file):
        """The file's bundle, its text when it is a ``maic-agent-threads`` value, or ``None`` once its
        refusal is said."""
        from app.history.export import ImportRefused, check_size, parse_export_sliced
        from app.history.original import ReadCheck, looks_original

        try:
            check_size(int(file.size))
            read = ReadCheck()  # nesting and length refused while read, before the pieces are joined
            text = await read_text(file, each=read.each)
            if looks_original(text):
                return text
            return await parse_export_sliced(text, self.clock(), depth_checked=read.checked)
        except ImportRefused as refused:
            self._refused(refused.reason)
        except Exception as error:  # noqa: BLE001 - never a silent failure: the page says it (§14)
            js.console.error(f"import failed: {type(error).__name__}: {error}")
            self._refused("failed")
        return None

    def _refused(self, reason: str, importer: str = "json") -> None:
        key, text = import_refusal(self.t, reason, importer)
        status = document.getElementById("history-status")
        status.setAttribute("data-result", "error")
        status.setAttribute("data-reason", key)
        say(status, text)
