"""Backup and restore over the record store (DESIGN.md §14 "Backup", §9, §10): the records read
and written slice by slice, ``pause()`` awaited between slices so the page keeps its turn.

Pure async code over ``app.records.RecordBackend`` (IndexedDB in the page, ``MemoryBackend`` in
CPython tests), reached through history's repository (``app.history.repository``: its pages of
conversations and of versions as stored, and ``Writes``), never by table names (§15); the zip rules
live in ``app.backup.format``, the page's files and status in ``app.browser.backup_files``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from app.backup.format import (PIECE_CHARS, SLICE, BackupReader, BackupWriter, MergePlan, check_counts, open_backup,
                               plan_heads, plan_merge, plan_threads, plan_versions)
from app.history.records import TaskMeta, TurnMeta
from app.history.repository import (Writes, conversation_records, head_records, held_artifacts, held_conversations,
                                    version_pages, version_records)
from app.records import BulkValue, RecordBackend

__all__ = ["read_backup", "restore", "write_backup"]

Pause = Callable[[], Awaitable[None]]

EXPORT_PER = 50
"""Conversations (or versions) a backup reads and writes per member, one member per task: 200 at
once, their records parsed from IndexedDB's JSON, encoded and deflated, is a main-thread task of
25–60 ms in Pyodide (the first, more)."""
STEP = 10
"""Conversations a restore plans and writes per transaction: their search records are built
(``Writes.keep``), the ops encoded and parsed again in JavaScript in the task that writes them
(200 at once is a main-thread task of 200–500 ms in Pyodide)."""


def _no_none(value: Any) -> Any:
    """A copy without ``None`` dict values (a ``BulkValue`` must hold none, ``app.records``; scene
    documents are stored without them, ``exclude_none``)."""
    if isinstance(value, dict):
        return {k: _no_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_no_none(v) for v in value]
    return value


async def write_backup(backend: RecordBackend, threads: dict, created_at: int, pause: Pause, *,
                       per: int = EXPORT_PER) -> bytes:
    """The whole backup zip: ``threads`` (the ``maic-agent-threads`` envelope, DESIGN.md §3), every
    conversation (meta, messages, turns), each course's head (which conversation its thread is) and
    every scene version with its snapshot document, ``per`` (≤ ``SLICE``) a member and a task.
    ``created_at``: epoch ms. Raises ``RecordStoreError`` when the store fails."""
    writer = BackupWriter(created_at)
    writer.add_threads(threads)
    stages = list(((threads or {}).get("state") or {}).get("threads") or {})
    writer.add_heads(await head_records(backend, stages))
    async for conversations in conversation_records(backend, per):
        await pause()
        writer.add_conversations(conversations)
        await pause()
    async for page in version_pages(backend, per):
        await pause()
        writer.add_versions([{"version": v, "snapshot": s} for v, s in page if s is not None])
        await pause()
    return writer.bytes()


async def read_backup(data: bytes, pause: Pause) -> tuple[BackupReader, list[dict]]:
    """Opens the file and checks every record, a piece of a member (``PIECE_CHARS``) per slice, keeping none of the
    conversations (a second pass reads them again to write them: the whole file parsed at once is
    millions of live objects, whose garbage collections grow with it into long tasks, and a restore
    of 10,000 conversations does not finish in time); the scene versions, each a whole document,
    are kept. Raises ``BackupRefused`` (nothing is written before every record has passed)."""
    reader = open_backup(data)
    conversations = 0
    versions: list[dict] = []
    for kind, items in reader.slices(PIECE_CHARS):
        if kind == "conversations":
            conversations += len(items)
        else:
            versions.extend(items)
        del items
        await pause()
    check_counts(reader.manifest, conversations, len(versions))
    return reader, versions


async def restore(backend: RecordBackend, data: bytes, pause: Pause, *, local_thread: Callable[[str], bool],
                  new_id: Callable[[dict], str], per: int = SLICE, step: int = STEP) -> MergePlan:
    """Merge the backup ``data`` into the store (DESIGN.md §14): conversations by id, compared as
    trees (``app.backup.format.plan_merge``), versions skipped when their checkpoint id is
    here and renumbered past the scene's highest (a scene with no artifact gets one naming its
    highest restored version; a local scene keeps its current document), written ``per`` versions
    or ``step`` conversations per transaction. Every record is checked first (``read_backup``);
    then each member is read again, a piece per task, and its conversations are planned against the
    store and written ``step`` at a time, so no more than one member's conversations are held
    (``plan.conversations`` is empty afterwards; ``plan.stages`` names their courses, ``plan.written``
    their task ids by course). Threads are
    planned (``local_thread(stageId)``: the course has one here) but
    written by the caller (``plan.threads``); the heads of the restored threads (``plan.heads``,
    ``syncedAt`` their ``updatedAt``) are written here, last, so the caller must write those threads
    with that ``updatedAt``. Raises ``BackupRefused`` before any write, or
    ``RecordStoreError``."""
    reader, versions = await read_backup(data, pause)
    plan = MergePlan()
    known = await _restore_conversations(backend, reader, pause, new_id, step, plan)
    local_checkpoints, highest = await _local_versions(backend, pause, per)
    plan_versions(versions, present=lambda v: v["checkpointId"] in local_checkpoints, highest=highest, plan=plan)
    plan_threads(reader.threads, local_thread, plan)
    plan_heads(reader.heads, known.__contains__, plan)
    newest = await _write_versions(backend, plan, pause, per)
    last = Writes()
    for version, here in zip(newest.values(), await held_artifacts(backend, list(newest))):
        if not here:
            last.current_version(version)
    for stage_id, task_id in plan.heads.items():
        last.make_head(stage_id, task_id, int(plan.threads[stage_id].get("updatedAt") or 0))
    if last:
        await backend.write(last.ops)
    return plan


async def _chunks(reader: BackupReader, pause: Pause, step: int):
    """The file's conversations in lists of ``step`` (the last one shorter), each member parsed a
    piece (``PIECE_CHARS``) per task; no more than one piece and one list are held."""
    held: list[dict] = []
    for kind, items in reader.slices(PIECE_CHARS):
        if kind != "conversations":
            continue
        held += items
        del items
        await pause()
        while len(held) >= step:
            chunk, held = held[:step], held[step:]
            yield chunk
    if held:
        yield held


async def _restore_conversations(backend: RecordBackend, reader, pause: Pause, new_id: Callable[[dict], str],
                                 step: int, plan: MergePlan) -> set[str]:
    """``restore``'s first step: the conversations ``step`` at a time (``_chunks``), planned against
    what the store holds (``plan_merge``) and written in one transaction each, a pause after each.
    Returns the task ids here or written by this restore (``plan.stages`` gets their courses,
    ``plan.written`` the ids written in each)."""
    taken: set[str] = set()
    known: set[str] = set()  # task ids here or written by this restore

    def fresh(meta: dict) -> str:
        while (task_id := new_id(meta)) in taken:
            pass
        taken.add(task_id)
        return task_id

    async for chunk in _chunks(reader, pause, step):
        local = await held_conversations(backend, [c["meta"]["taskId"] for c in chunk])
        taken.update(local)
        known.update(local)
        plan_merge(chunk, local.get, new_id=fresh, plan=plan)
        writes = Writes()
        for item in plan.conversations:
            writes.keep(TaskMeta.model_validate(item["meta"]), item["messages"],
                        [TurnMeta.model_validate(t) for t in item["turns"]], branches=item.get("branches"),
                        shown=item.get("shown"))
            known.add(item["meta"]["taskId"])
            plan.stages.add(item["meta"]["stageId"])
            plan.written.setdefault(item["meta"]["stageId"], []).append(item["meta"]["taskId"])
        plan.conversations.clear()
        del chunk
        if writes:
            await backend.write(writes.ops)
        await pause()
    return known


async def _local_versions(backend: RecordBackend, pause: Pause, per: int) -> tuple[set[str], dict[str, int]]:
    """The checkpoint ids of the versions stored here and each artifact's highest version number,
    read a page of ``per`` at a time."""
    local_checkpoints: set[str] = set()
    highest: dict[str, int] = {}
    async for rows in version_records(backend, per):
        for row in rows:
            local_checkpoints.add(row.get("checkpointId"))
            highest[row["artifactId"]] = max(highest.get(row["artifactId"], 0), row.get("versionNo", 0))
        await pause()
    return local_checkpoints, highest


async def _write_versions(backend: RecordBackend, plan: MergePlan, pause: Pause, per: int) -> dict[str, dict]:
    """Write ``plan.versions`` with their snapshots, ``per`` a transaction; returns each artifact's
    last written version (by artifact id), whose artifact record ``restore`` writes when none is here."""
    newest: dict[str, dict] = {}
    for start in range(0, len(plan.versions), per):
        writes = Writes()
        for item in plan.versions[start:start + per]:
            version = item["version"]
            writes.put_version(version, BulkValue(_no_none(item["snapshot"].get("document") or {})))
            newest[version["artifactId"]] = version
        await backend.write(writes.ops)
        await pause()
    return newest
