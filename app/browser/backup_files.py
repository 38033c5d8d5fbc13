"""The history drawer's backup hooks (DESIGN.md §14 "Backup"): ``backup-export`` downloads one
``agentbar-backup`` zip of everything, ``backup-import`` (an ``<input type=file>``) restores one;
the outcome, counts or why it was refused, is said in ``history-status`` (``data-kind=backup``).

The tables are read and written by ``app.backup.tables`` a slice per task (``next_task`` between
slices); this module only crosses files and the status to the page.
"""

from __future__ import annotations

import os

import js
from pyodide.ffi import create_proxy
from pyscript import document
from pyscript.ffi import is_none

from app.browser.files import download, read_bytes
from app.browser.status_line import say
from app.browser.tasks import next_task
from app.history.labels import backup_saved_text
from app.i18n import join_sentences

__all__ = ["BackupFiles"]

_COUNTS = ("added", "present", "renamed", "extended", "versionsAdded", "versionsPresent", "threadsRestored",
           "threadsKept", "tooLong")


def _attr(key: str) -> str:
    """``versionsAdded`` → ``data-versions-added``."""
    return "data-" + "".join("-" + c.lower() if c.isupper() else c for c in key)


class BackupFiles:
    """Backup and restore for one page.

    ``records``: the page's ``RecordBackend`` (history and scene versions); ``store``: the
    ``ThreadStore`` (each course's active thread); ``translator``; ``clock``: epoch ms;
    ``busy(stageId)``: that course has a turn in flight (its thread is not replaced);
    ``on_restored(plan)``: awaited after a restore (``app.backup.format.MergePlan``: the page shows
    the restored threads, versions and list)."""

    def __init__(self, records, store, translator, clock, on_restored, busy=lambda stage_id: False) -> None:
        self.records, self.store, self.t, self.clock, self._on_restored = records, store, translator, clock, on_restored
        self._busy = busy

    def _status(self, result: str):
        status = document.getElementById("history-status")
        status.setAttribute("data-kind", "backup")
        status.setAttribute("data-result", result)
        for name in ("data-reason", "data-bytes") + tuple(_attr(c) for c in _COUNTS):
            status.removeAttribute(name)
        status.textContent = ""
        return status

    def _threads(self) -> dict:
        threads = {}
        for stage_id in self.store.stage_ids():
            messages = self.store.load(stage_id)
            if messages:
                threads[stage_id] = {"messages": messages, "updatedAt": self.store.updated_at(stage_id) or 0}
        return {"state": {"threads": threads}, "version": 1}

    async def export(self) -> None:
        """Download ``agentbar-backup-<epoch ms>.zip``; ``history-status`` gives its counts."""
        from app.backup.tables import write_backup
        from app.backup.format import open_backup

        status = self._status("pending")
        try:
            now = self.clock()
            data = await write_backup(self.records, self._threads(), now, next_task)
        except Exception as error:  # noqa: BLE001 - never a silent failure (§14)
            js.console.error(f"backup failed: {type(error).__name__}: {error}")
            status.setAttribute("data-result", "error")
            status.setAttribute("data-reason", "failed")
            say(status, self.t("backup.failed"))  # a backup's own words, not a restore's
            return
        download(data, "application/zip", f"agentbar-backup-{now}.zip")
        counts = open_backup(data).manifest["counts"]
        status.setAttribute("data-result", "ok")
        status.setAttribute("data-bytes", str(len(data)))
        say(status, backup_saved_text(self.t, counts))

    async def restore(self, field) -> None:
        """Restore the file chosen in ``field`` (DESIGN.md §14): refused whole (size, not a backup,
        newer, damaged) with nothing changed, or merged by id with the counts said."""
        from app.backup.format import MAX_FILE_BYTES, BackupRefused
        from app.backup.tables import restore
        from app.history.records import new_task_id
        from app.records import RecordStoreError

        files = field.files
        if is_none(files) or files.length == 0:
            return
        file = files.item(0)
        field.value = ""
        status = self._status("pending")
        try:
            if int(file.size) > MAX_FILE_BYTES:
                raise BackupRefused("size")
            data = await read_bytes(file)
            plan = await restore(self.records, data, next_task,
                                 local_thread=lambda stage_id: bool(self.store.load(stage_id)) or self._busy(stage_id),
                                 new_id=lambda meta: new_task_id(self.clock(), os.urandom))
            for stage_id, thread in plan.threads.items():
                self.store.save(stage_id, thread["messages"], int(thread.get("updatedAt") or 0))  # as its head says
        except BackupRefused as refused:
            return self._refused(status, refused.reason)
        except RecordStoreError as error:
            js.console.error(f"restore failed: {error}")
            return self._refused(status, "unavailable")
        except Exception as error:  # noqa: BLE001 - never a silent failure (§14)
            js.console.error(f"restore failed: {type(error).__name__}: {error}")
            return self._refused(status, "failed")
        values = {"added": plan.added, "present": plan.present, "renamed": plan.renamed, "extended": plan.extended,
                  "versionsAdded": plan.versions_added, "versionsPresent": plan.versions_present,
                  "threadsRestored": plan.threads_restored, "threadsKept": plan.threads_kept,
                  "tooLong": plan.too_long}
        said = [self.t("backup.added", count=plan.added), self.t("backup.present", count=plan.present)]
        said += [self.t(f"backup.{k}", count=v) for k, v in values.items() if v and k not in ("added", "present")]
        for key, value in values.items():
            status.setAttribute(_attr(key), str(value))
        status.setAttribute("data-result", "ok")
        say(status, join_sentences(said))
        await self._on_restored(plan)

    def _refused(self, status, reason: str) -> None:
        status.setAttribute("data-result", "error")
        status.setAttribute("data-reason", reason)
        say(status, self.t(f"backup.refused.{reason}"))


_proxies: list = []


def bind_backup(records, store, translator, clock, on_restored, busy=lambda stage_id: False) -> BackupFiles:
    """Attach ``backup-export`` (click) and ``backup-import`` (change) to a new ``BackupFiles``
    (its arguments)."""
    import asyncio

    files = BackupFiles(records, store, translator, clock, on_restored, busy)
    tasks: set = set()

    def schedule(coro) -> None:
        task = asyncio.ensure_future(coro)
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    for element_id, event, handler in (("backup-export", "click", lambda e: schedule(files.export())),
                                       ("backup-import", "change", lambda e: schedule(files.restore(e.target)))):
        proxy = create_proxy(handler)
        _proxies.append(proxy)
        document.getElementById(element_id).addEventListener(event, proxy)
    files.tasks = tasks
    return files
