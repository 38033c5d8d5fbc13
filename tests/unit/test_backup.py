"""The agentbar-backup format and its merge rules (app/backup/format.py, DESIGN.md §14 "Backup")."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from app.backup.format import (FORMAT, BackupRefused, BackupWriter, MergePlan, open_backup, plan_merge,
                               plan_threads, plan_versions)
from app.history.text import copy_title
from app.i18n import Translator
from tests.archives import zip_bytes

T0 = 1_780_000_000_000


def conversation(n: int, messages: int = 2) -> dict:
    return {"meta": {"taskId": f"task_20260601_{n:06d}", "taskName": f"Conversation {n} — Straße",
                     "stageId": "stage-a", "createdAt": T0 + n, "updatedAt": T0 + n + 5,
                     "stats": {"credits": 0, "totalTokens": 3, "inputTokens": 1, "outputTokens": 2},
                     "turnCount": 1, "durationMs": 40},
            "messages": [{"role": "user" if i % 2 == 0 else "assistant", "id": f"m{n}-{i}",
                          "content": [{"type": "text", "text": f"text {n} {i}"}]} for i in range(messages)],
            "turns": [{"turnId": 1, "timestamp": "2026-06-01T00:00:00.000Z", "usage": None, "model": "demo",
                       "duration": 40, "messageId": f"m{n}-1"}]}


def version(artifact: str, no: int, checkpoint: str) -> dict:
    vid = f"{artifact}:v{no}"
    return {"version": {"schema": 1, "versionId": vid, "artifactId": artifact, "stageId": "stage-a",
                        "sceneId": artifact.split("/")[1], "versionNo": no, "conversationId": "task_20260601_000001",
                        "checkpointId": checkpoint, "updatedAt": T0,
                        "item": {"id": checkpoint, "conversationId": "c", "updatedAt": T0, "path": "p",
                                 "source": "tool", "metadata": {"versionNo": no}}},
            "snapshot": {"versionId": vid, "document": {"title": "t", "elements": []}}}


THREADS = {"state": {"threads": {"stage-a": {"messages": [{"role": "user", "content": [
    {"type": "text", "text": "こんにちは"}]}], "updatedAt": T0}}}, "version": 1}


def build(conversations: list[dict], versions: list[dict], per: int = 3) -> bytes:
    writer = BackupWriter(T0)
    writer.add_threads(THREADS)
    for i in range(0, len(conversations), per):
        writer.add_conversations(conversations[i:i + per])
    for i in range(0, len(versions), per):
        writer.add_versions(versions[i:i + per])
    return writer.bytes()




MANIFEST = {"format": FORMAT, "formatVersion": 1, "appVersion": "0.1.0", "createdAt": T0,
            "counts": {"threads": 0, "conversations": 0, "versions": 0}}


def test_round_trip_keeps_every_record_exactly_and_in_slices():
    convs = [conversation(n) for n in range(10)]
    vers = [version("stage-a/s1", n, f"fc_{n}") for n in range(1, 5)]
    data = build(convs, vers)
    reader = open_backup(data)
    assert reader.manifest["counts"] == {"threads": 1, "conversations": 10, "versions": 4}
    assert reader.threads == THREADS
    kinds = [(kind, len(items)) for kind, items in reader.slices()]
    assert kinds == [("conversations", 3)] * 3 + [("conversations", 1), ("versions", 3), ("versions", 1)]
    got_convs, got_vers = reader.read_all()
    assert got_convs == convs and got_vers == vers
    # non-ASCII written literally, compact (DESIGN.md §3)
    assert "こんにちは".encode() in zipfile.ZipFile(io.BytesIO(data)).read("threads.json")


def test_half_overlap_adds_exactly_the_other_half():
    convs = [conversation(n) for n in range(10)]
    local = {c["meta"]["taskId"]: c for c in convs[:5]}
    _, incoming = None, open_backup(build(convs, [])).read_all()[0]
    plan = plan_merge(incoming, local.get, new_id=lambda meta: pytest.fail("no new id"))
    assert [c["meta"]["taskId"] for c in plan.conversations] == [c["meta"]["taskId"] for c in convs[5:]]
    assert (plan.added, plan.present, plan.renamed, plan.extended) == (5, 5, 0, 0)


def test_longer_side_is_kept_and_a_diverged_thread_is_kept_twice():
    longer, shorter = conversation(1, 4), conversation(1, 2)
    plan = plan_merge([longer], {longer["meta"]["taskId"]: shorter}.get, new_id=lambda m: "x")
    assert plan.extended == 1 and plan.conversations == [longer]
    plan = plan_merge([shorter], {longer["meta"]["taskId"]: longer}.get, new_id=lambda m: "x")
    assert plan.present == 1 and plan.conversations == []
    diverged = conversation(1, 2)
    diverged["messages"][1]["content"][0]["text"] = "another answer"
    plan = plan_merge([diverged], {diverged["meta"]["taskId"]: shorter}.get,
                      new_id=lambda m: "task_20260601_zzzzzz")
    assert (plan.added, plan.renamed) == (1, 1)
    assert plan.conversations[0]["meta"]["taskId"] == "task_20260601_zzzzzz"
    assert plan.conversations[0]["messages"] == diverged["messages"]
    # the copy is told apart from the original in the list (two rows, two titles)
    assert plan.conversations[0]["meta"]["taskName"] == copy_title(diverged["meta"]["taskName"])
    assert plan.conversations[0]["meta"]["taskName"] != diverged["meta"]["taskName"]


def test_versions_already_present_are_skipped_and_new_ones_renumbered_past_the_local_highest():
    incoming = [version("stage-a/s1", n, f"fc_{n}") for n in (1, 2, 3)] + [version("stage-a/s2", 1, "fc_b")]
    local_checkpoints = {"fc_1"}
    plan = plan_versions(incoming, present=lambda v: v["checkpointId"] in local_checkpoints,
                         highest={"stage-a/s1": 7})
    assert (plan.versions_added, plan.versions_present) == (3, 1)
    got = [(v["version"]["versionId"], v["version"]["checkpointId"], v["version"]["item"]["metadata"]["versionNo"],
            v["snapshot"]["versionId"]) for v in plan.versions]
    assert got == [("stage-a/s1:v8", "fc_2", 8, "stage-a/s1:v8"), ("stage-a/s1:v9", "fc_3", 9, "stage-a/s1:v9"),
                   ("stage-a/s2:v1", "fc_b", 1, "stage-a/s2:v1")]


def test_a_thread_is_restored_only_where_the_course_has_none():
    incoming = {"state": {"threads": {"a": {"messages": []}, "b": {"messages": []}}}, "version": 1}
    plan = plan_threads(incoming, lambda stage: stage == "a", MergePlan())
    assert list(plan.threads) == ["b"] and (plan.threads_restored, plan.threads_kept) == (1, 1)


@pytest.mark.parametrize("members, reason", [
    ({"threads.json": "{}"}, "not-backup"),
    ({"manifest.json": json.dumps({**MANIFEST, "format": "other"})}, "not-backup"),
    ({"manifest.json": json.dumps(MANIFEST), "../evil.jsonl": ""}, "not-backup"),
    ({"manifest.json": json.dumps(MANIFEST), "/abs/conversations/000001.jsonl": ""}, "not-backup"),
    ({"manifest.json": json.dumps(MANIFEST), "conversations/../000001.jsonl": ""}, "not-backup"),
    ({"manifest.json": json.dumps({**MANIFEST, "formatVersion": 2})}, "newer"),
    ({"manifest.json": json.dumps({**MANIFEST, "formatVersion": "1"})}, "damaged"),
    ({"manifest.json": "{not json"}, "damaged"),
    ({"manifest.json": json.dumps({**MANIFEST, "createdAt": 2**53})}, "damaged"),
    ({"manifest.json": json.dumps(MANIFEST), "threads.json": '{"state":{"threads":[]}}'}, "damaged"),
])
def test_hostile_or_foreign_files_are_refused_on_opening(members, reason):
    with pytest.raises(BackupRefused) as refused:
        open_backup(zip_bytes(members))
    assert refused.value.reason == reason


@pytest.mark.filterwarnings("ignore:Duplicate name")
def test_a_backup_with_a_member_twice_is_damaged_not_foreign():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("manifest.json", json.dumps(MANIFEST))
        for text in ('{"state":{"threads":{}},"version":1}', '{"state":{"threads":{"x":{}}},"version":1}'):
            archive.writestr("threads.json", text)  # which one is the backup's? neither can be trusted
    with pytest.raises(BackupRefused) as refused:
        open_backup(buffer.getvalue())
    assert refused.value.reason == "damaged"


def rezipped(data: bytes, *, extra: dict[str, str] | None = None, folders: bool = False) -> bytes:
    """``data``'s members written again (as an archiver does after unzipping): with an entry for
    each folder first when ``folders``, then ``extra`` (name → text) after them."""
    original = zipfile.ZipFile(io.BytesIO(data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        names = sorted(original.namelist())
        if folders:
            for folder in sorted({n.rsplit("/", 1)[0] + "/" for n in names if "/" in n}):
                archive.mkdir(folder)
        for name in names:
            archive.writestr(name, original.read(name))
        for name, text in (extra or {}).items():
            archive.writestr(name, text)
    return buffer.getvalue()


def test_a_rezipped_backup_with_folder_entries_restores_as_the_original():
    convs, vers = [conversation(n) for n in range(4)], [version("stage-a/s1", 1, "fc_1")]
    data = build(convs, vers)
    again = rezipped(data, folders=True)
    assert "conversations/" in zipfile.ZipFile(io.BytesIO(again)).namelist()
    reader = open_backup(again)
    assert reader.threads == THREADS and reader.read_all() == (convs, vers)
    # and a folder entry added to the file as it was written
    reader = open_backup(rezipped(data, extra={"conversations/": ""}))
    assert reader.read_all() == (convs, vers)


def test_unknown_members_beside_the_manifest_are_ignored():
    convs = [conversation(n) for n in range(2)]
    data = build(convs, [])
    for extra in ({"readme.txt": "my backup"}, {"notes/2026.jsonl": "not a record"},
                  {"conversations/old.jsonl": "{}"}):
        reader = open_backup(rezipped(data, extra=extra))
        assert reader.threads == THREADS and reader.read_all() == (convs, [])


def test_an_ignored_member_is_never_counted_toward_the_unpacked_limits():
    """Members outside the layout are never read (module docstring of ``app.backup.format``), so their
    declared sizes cannot make a backup too large to unpack: a backup with a big ``readme.txt`` beside it
    still restores whole."""
    convs = [conversation(n) for n in range(2)]
    data = rezipped(build(convs, []), extra={"readme.txt": b"x" * 2_000_000, "notes/big.bin": b"y" * 2_000_000})
    for limits in ({"max_unpacked": 1_000_000}, {"max_member": 1_000_000}):
        reader = open_backup(data, **limits)
        assert reader.threads == THREADS and reader.read_all() == (convs, [])


def test_a_dot_slash_prefix_is_read_as_the_plain_name():
    convs = [conversation(n) for n in range(2)]
    plain = zipfile.ZipFile(io.BytesIO(build(convs, [])))
    dotted = zip_bytes({f"./{name}": plain.read(name) for name in plain.namelist()})
    reader = open_backup(dotted)
    assert reader.threads == THREADS and reader.read_all() == (convs, [])
    # the original and ./manifest.json: the manifest twice, which one is the backup's is unknown
    with pytest.raises(BackupRefused) as refused:
        open_backup(rezipped(build(convs, []), extra={"./manifest.json": json.dumps(MANIFEST)}))
    assert refused.value.reason == "damaged"


def test_a_zip_without_a_manifest_stays_not_a_backup_even_with_the_layouts_folders():
    for members in ({"conversations/": "", "readme.txt": "x"}, {"./threads.json": "{}", "notes/manifest.json": "{}"}):
        with pytest.raises(BackupRefused) as refused:
            open_backup(zip_bytes(members))
        assert refused.value.reason == "not-backup"


def test_not_a_zip_and_over_the_size_limits_are_refused():
    with pytest.raises(BackupRefused, match="not-backup"):
        open_backup(b"PK\x03\x04 not really")
    with pytest.raises(BackupRefused, match="size"):
        open_backup(b"x" * 101, max_file=100)
    bomb = zip_bytes({"manifest.json": json.dumps(MANIFEST), "conversations/000001.jsonl": b"\n" * 2_000_000})
    assert len(bomb) < 50_000  # deflate packs it small; its declared unpacked size gives it away
    for limits in ({"max_unpacked": 1_000_000}, {"max_member": 1_000_000}):
        with pytest.raises(BackupRefused) as refused:  # a small file: its unpacking is what is too large
            open_backup(bomb, **limits)
        assert refused.value.reason == "unpacked"
    t = Translator("en-US")
    assert t("backup.refused.unpacked") != t("backup.refused.size") and "zip" in t("backup.refused.unpacked")


@pytest.mark.parametrize("where", ["data", "declared size"])
def test_damaged_bytes_or_a_lying_declared_size_are_caught_on_reading(where):
    data = bytearray(build([conversation(n) for n in range(3)], []))
    archive = zipfile.ZipFile(io.BytesIO(bytes(data)))
    info = archive.getinfo("conversations/000001.jsonl")
    if where == "data":
        start = info.header_offset + 30 + len(info.filename)
        data[start + info.compress_size // 2] ^= 0xFF
    else:  # the central directory says it unpacks smaller than it does
        name = info.filename.encode()
        central = bytes(data).index(name, info.header_offset + 30 + len(name)) - 46
        assert bytes(data[central:central + 4]) == b"PK\x01\x02"
        data[central + 24:central + 28] = (10).to_bytes(4, "little")
    with pytest.raises(BackupRefused) as refused:
        open_backup(bytes(data)).read_all()
    assert refused.value.reason == "damaged"


@pytest.mark.parametrize("mutate", [
    lambda c: c["meta"].update(createdAt=c["meta"]["updatedAt"] + 1),
    lambda c: c["meta"].update(turnCount=-1),
    lambda c: c["meta"].update(turnCount="1"),
    lambda c: c["meta"].update(durationMs=2**53),
    lambda c: c["meta"].update(taskId="../../x"),
    lambda c: c.update(messages={"not": "a list"}),
    lambda c: c["turns"][0].update(duration=1.5),
    lambda c: c["messages"][0].update(content=5),
    lambda c: c["messages"][0].update(content=[5]),
    lambda c: c.update(branches=[{"role": "user", "id": "b", "parentId": None, "content": 5}]),
])
def test_records_of_the_wrong_shape_refuse_the_whole_file(mutate):
    bad = conversation(2)
    mutate(bad)
    with pytest.raises(BackupRefused) as refused:
        open_backup(build([conversation(1), bad], [])).read_all()
    assert refused.value.reason == "damaged"


def test_a_version_of_the_wrong_shape_and_counts_that_disagree_are_refused():
    bad = version("stage-a/s1", 1, "fc_1")
    bad["version"]["versionNo"] = 0
    with pytest.raises(BackupRefused, match="damaged"):
        open_backup(build([], [bad])).read_all()
    lying = zip_bytes({"manifest.json": json.dumps({**MANIFEST, "counts": {**MANIFEST["counts"], "conversations": 2}}),
                    "conversations/000001.jsonl": json.dumps(conversation(1))})
    with pytest.raises(BackupRefused, match="damaged"):
        open_backup(lying).read_all()


# -- over the record store (app/backup/tables.py) ------------------------------------------------
import asyncio  # noqa: E402

from app.backup.tables import restore, write_backup  # noqa: E402
from app.records import SCHEMA, MemoryBackend  # noqa: E402
from app.history.repository import Writes  # noqa: E402
from app.history.records import TaskMeta, TurnMeta  # noqa: E402


async def _pause() -> None:
    await asyncio.sleep(0)


def _store(convs: list[dict], vers: list[dict]) -> MemoryBackend:
    backend = MemoryBackend(SCHEMA)
    asyncio.run(backend.open())
    writes = Writes()
    for c in convs:
        writes.keep(TaskMeta.model_validate(c["meta"]), c["messages"], [TurnMeta.model_validate(t) for t in c["turns"]],
                    branches=c.get("branches"), shown=c.get("shown"))
    ops = writes.ops
    for v in vers:
        ops += [("put", "versions", v["version"]), ("put", "snapshots", v["snapshot"])]
    asyncio.run(backend.write(ops))
    return backend


def _dump(backend: MemoryBackend) -> dict:
    return {table: backend.raw(table) for table in ("conversations", "messages", "turns", "versions", "snapshots")}


def test_backup_then_restore_into_an_empty_store_gives_identical_tables():
    convs = [conversation(n) for n in range(7)]
    vers = [version("stage-a/s1", n, f"fc_{n}") for n in (1, 2, 3)]
    source = _store(convs, vers)
    data = asyncio.run(write_backup(source, THREADS, T0, _pause, per=3))
    target = _store([], [])
    plan = asyncio.run(restore(target, data, _pause, local_thread=lambda s: False, new_id=lambda m: "x", per=3))
    assert (plan.added, plan.present, plan.versions_added, plan.threads_restored) == (7, 0, 3, 1)
    assert _dump(target) == _dump(source)
    artifact = asyncio.run(target.get("artifacts", "stage-a/s1"))
    assert artifact["versionId"] == "stage-a/s1:v3" and artifact["latest"]["id"] == "fc_3"
    again = asyncio.run(restore(target, data, _pause, local_thread=lambda s: True, new_id=lambda m: "x", per=3))
    assert (again.added, again.present, again.versions_added, again.versions_present, again.threads_kept) == (0, 7, 0, 3, 1)
    assert _dump(target) == _dump(source)


def test_a_lone_surrogate_in_a_thread_or_a_conversation_is_backed_up_and_restored_exactly():
    # the store and history keep one exactly; the backup's UTF-8 encode refused it, so no backup at all
    odd = conversation(1)
    odd["messages"][0]["content"][0]["text"] = "half \ud800 pair 😀"
    threads = {"state": {"threads": {"stage-a": {"messages": [{"role": "user", "content": [
        {"type": "text", "text": "x\udfff"}]}], "updatedAt": T0}}}, "version": 1}
    source = _store([odd, conversation(2)], [])
    data = asyncio.run(write_backup(source, threads, T0, _pause, per=3))
    target = _store([], [])
    plan = asyncio.run(restore(target, data, _pause, local_thread=lambda s: False, new_id=lambda m: "x", per=3))
    assert plan.added == 2 and _dump(target) == _dump(source)
    assert plan.threads["stage-a"]["messages"][0]["content"][0]["text"] == "x\udfff"


def test_restore_into_a_store_holding_half_adds_exactly_the_other_half():
    convs = [conversation(n) for n in range(8)]
    data = asyncio.run(write_backup(_store(convs, []), THREADS, T0, _pause, per=3))
    target = _store(convs[::2], [])
    plan = asyncio.run(restore(target, data, _pause, local_thread=lambda s: False, new_id=lambda m: "x", per=3))
    assert (plan.added, plan.present) == (4, 4)
    assert sorted(target.raw("conversations")) == sorted(c["meta"]["taskId"] for c in convs)


def test_a_message_whose_content_is_a_number_is_refused_as_damaged_before_anything_is_written():
    """A backup line whose message ``content`` is ``5``: the shape check names the file damaged
    (``BackupRefused``), where the restore failed with a ``TypeError`` as it wrote the line
    (docs/failures.md: none is left to the console); nothing is written."""
    bad = conversation(2)
    bad["messages"][0]["content"] = 5
    target = _store([conversation(1)], [])
    before = _dump(target)
    with pytest.raises(BackupRefused) as refused:
        asyncio.run(restore(target, build([conversation(3), bad], []), _pause, local_thread=lambda s: False,
                            new_id=lambda m: "x"))
    assert refused.value.reason == "damaged" and _dump(target) == before


def test_a_conversation_over_the_import_limit_is_left_out_and_counted_as_import_json_refuses_it():
    """One limit for every way in (app/history/limits.py, DESIGN.md §14): a backup conversation of more
    than ``MAX_CONVERSATION_CHARS`` characters of text was restored while Import JSON refused the same
    conversation; the restore leaves it out (``too_long``) and restores the rest; one at the limit is
    restored."""
    from app.history.export import ImportRefused, export_json, parse_export
    from app.history.limits import MAX_CONVERSATION_CHARS, text_chars

    over, at_limit = conversation(2), conversation(3)
    over["messages"][0]["content"][0]["text"] = "w" * MAX_CONVERSATION_CHARS
    at_limit["messages"][0]["content"][0]["text"] = "w" * (MAX_CONVERSATION_CHARS - text_chars(at_limit["messages"]) + 8)
    assert text_chars(over["messages"]) > MAX_CONVERSATION_CHARS == text_chars(at_limit["messages"])
    target = _store([conversation(1)], [])
    plan = asyncio.run(restore(target, build([over, at_limit], []), _pause, local_thread=lambda s: False,
                               new_id=lambda m: "x"))
    assert (plan.added, plan.too_long) == (1, 1)
    assert sorted(target.raw("conversations")) == [conversation(n)["meta"]["taskId"] for n in (1, 3)]
    meta = TaskMeta.model_validate(over["meta"])
    turns = [TurnMeta.model_validate(t) for t in over["turns"]]
    with pytest.raises(ImportRefused) as refused:
        parse_export(export_json(meta, over["messages"], turns), T0 + 10**9)
    assert refused.value.reason == "too-long"


def test_a_refused_file_writes_nothing():
    convs = [conversation(n) for n in range(4)]
    bad = conversation(9)
    bad["meta"]["turnCount"] = 2**60
    text = build(convs + [bad], [])
    target = _store([], [])
    with pytest.raises(BackupRefused):
        asyncio.run(restore(target, text, _pause, local_thread=lambda s: False, new_id=lambda m: "x"))
    assert _dump(target) == _dump(_store([], []))


def test_a_restored_thread_gets_its_head_so_it_continues_its_own_conversation():
    """DESIGN.md §9, §14: the head of each restored thread comes with it (``heads.json``), with the
    thread's ``updatedAt`` as ``syncedAt``; a course whose thread is kept here keeps its own head."""
    convs = [conversation(n) for n in range(3)]
    source = _store(convs, [])
    head = {"stageId": "stage-a", "taskId": convs[1]["meta"]["taskId"], "syncedAt": T0}
    asyncio.run(source.write([("put", "heads", head)]))
    data = asyncio.run(write_backup(source, THREADS, T0, _pause, per=2))
    assert open_backup(data).heads == {"stage-a": convs[1]["meta"]["taskId"]}
    target = _store([], [])
    plan = asyncio.run(restore(target, data, _pause, local_thread=lambda s: False, new_id=lambda m: "x", per=2))
    assert plan.heads == {"stage-a": convs[1]["meta"]["taskId"]}
    assert target.raw("heads") == source.raw("heads")
    kept = _store(convs, [])
    plan = asyncio.run(restore(kept, data, _pause, local_thread=lambda s: True, new_id=lambda m: "x", per=2))
    assert plan.heads == {} and kept.raw("heads") == {}


def test_the_head_of_a_diverged_conversation_names_its_fresh_id_and_a_missing_one_none():
    convs = [conversation(n) for n in range(2)]
    local = [dict(c) for c in convs]
    local[0] = {**convs[0], "messages": [{"role": "user", "id": "other", "content": [{"type": "text", "text": "x"}]}]}
    source = _store(convs, [])
    asyncio.run(source.write([("put", "heads", {"stageId": "stage-a", "taskId": convs[0]["meta"]["taskId"],
                                                "syncedAt": T0})]))
    data = asyncio.run(write_backup(source, THREADS, T0, _pause))
    target = _store(local, [])
    plan = asyncio.run(restore(target, data, _pause, local_thread=lambda s: False,
                               new_id=lambda m: "task_20260601_fresh1"))
    assert plan.renamed == 1 and plan.heads == {"stage-a": "task_20260601_fresh1"}
    assert target.raw("heads")["stage-a"]["taskId"] == "task_20260601_fresh1"
    members = {name: zipfile.ZipFile(io.BytesIO(data)).read(name) for name in zipfile.ZipFile(io.BytesIO(data)).namelist()}
    for bad in ('{"stage-a": 1}', '[{"stageId": "stage-a", "taskId": 3}]'):
        with pytest.raises(BackupRefused) as refused:
            open_backup(zip_bytes(members | {"heads.json": bad}))
        assert refused.value.reason == "damaged"
    nameless = zip_bytes({k: v for k, v in members.items() if k != "heads.json"})
    plan = asyncio.run(restore(_store([], []), nameless, _pause, local_thread=lambda s: False, new_id=lambda m: "x"))
    assert plan.threads_restored == 1 and plan.heads == {}  # adopted at the next start-up instead


class _Line(dict):
    """A parsed conversation line that counts how many of its kind are alive."""
    alive = 0

    def __init__(self, *args) -> None:
        super().__init__(*args)
        _Line.alive += 1

    def __del__(self) -> None:
        _Line.alive -= 1


def test_a_restore_holds_no_more_than_a_slice_of_parsed_conversations_at_once(monkeypatch):
    """Every record is checked before the first write, yet the parsed file is never held whole: a
    restore of 10,000 conversations would keep millions of objects alive, and each garbage
    collection of them is a long task (hundreds of ms in CPython, more in Pyodide)."""
    import app.backup.format as format_module

    checked = format_module._conversation
    monkeypatch.setattr(format_module, "_conversation", lambda line: _Line(checked(line)))
    convs = [conversation(n) for n in range(40)]
    data = asyncio.run(write_backup(_store(convs, []), THREADS, T0, _pause, per=4))
    target = _store(convs[::2], [])
    peaks: list[int] = []
    write = target.write

    async def counted(ops):
        peaks.append(_Line.alive)
        await write(ops)
    target.write = counted
    _Line.alive = 0
    plan = asyncio.run(restore(target, data, _pause, local_thread=lambda s: False, new_id=lambda m: "x", per=4,
                               step=4))
    assert (plan.added, plan.present, plan.stages) == (20, 20, {"stage-a"})
    assert sorted(target.raw("conversations")) == sorted(c["meta"]["taskId"] for c in convs)
    assert peaks and max(peaks) <= 2 * 4, peaks  # one member being written (and the one before it)


def _paced(monkeypatch, convs: list[dict]) -> tuple[list, MemoryBackend]:
    """A restore of ``convs`` (one member) into an empty store, with a log of what it does in order:
    ``"pause"``, ``("parse", 1)`` a conversation line checked, ``("keep", 1)`` a conversation's
    records built, ``("write", conversations)`` a transaction."""
    import app.backup.format as format_module
    import app.backup.tables as tables_module

    events: list = []
    checked, keep = format_module._conversation, Writes.keep
    monkeypatch.setattr(format_module, "_conversation", lambda line: (events.append(("parse", 1)), checked(line))[1])
    monkeypatch.setattr(Writes, "keep", lambda self, *a, **k: (events.append(("keep", 1)), keep(self, *a, **k))[1])
    data = build(convs, [], per=len(convs))
    target = _store([], [])
    write = target.write

    async def logged(ops):
        events.append(("write", sum(1 for _, table, _ in ops if table == "conversations")))
        await write(ops)

    async def pause():
        events.append("pause")
    target.write = logged
    monkeypatch.setattr(tables_module, "PIECE_CHARS", 2000)
    plan = asyncio.run(restore(target, data, pause, local_thread=lambda s: False, new_id=lambda m: "x", step=5))
    assert plan.added == len(convs) and sorted(target.raw("conversations")) == sorted(c["meta"]["taskId"] for c in convs)
    return events, target


def _between_pauses(events: list, kind: str) -> list[int]:
    runs, count = [], 0
    for event in events + ["pause"]:
        if event == "pause":
            runs.append(count)
            count = 0
        elif event[0] == kind:
            count += event[1]
    return runs


def test_a_restore_checks_a_member_in_pieces_with_a_pause_between(monkeypatch):
    """Issue 17: a member of 200 conversations parsed and checked in one go was a main-thread task of
    50–240 ms in the page (both passes, ``read_backup`` and the writing); pieces of about
    ``PIECE_CHARS`` of lines come a task each."""
    convs = [conversation(n, messages=6) for n in range(40)]
    events, _ = _paced(monkeypatch, convs)
    parsed = _between_pauses(events, "parse")
    assert sum(parsed) == 2 * 40  # checked first, then read again to write
    line = len(json.dumps(convs[0], ensure_ascii=False, separators=(",", ":")))
    assert max(parsed) <= 2000 // line + 1, parsed


def test_a_restore_writes_step_conversations_a_transaction_with_a_pause_between(monkeypatch):
    """Issue 17: building 200 conversations' search records, encoding their ops and parsing them in
    JavaScript was one main-thread task of 200–500 ms per member; ``step`` conversations are built
    and written per transaction, each followed by a pause."""
    events, _ = _paced(monkeypatch, [conversation(n) for n in range(23)])
    writes = [e[1] for e in events if e != "pause" and e[0] == "write"]
    assert writes == [5, 5, 5, 5, 3]
    assert max(_between_pauses(events, "keep")) <= 5
    kinds = ["pause" if e == "pause" else e[0] for e in events]
    at = [i for i, k in enumerate(kinds) if k == "write"]
    assert all("pause" in kinds[a + 1:b] for a, b in zip(at, at[1:])), kinds


def test_an_export_writes_members_of_export_per_records_a_task_each():
    """Issue 17: a member of 200 conversations (their messages parsed from the store's JSON, encoded
    and deflated) was a main-thread task of 45–100 ms in the page; members hold ``EXPORT_PER``."""
    from app.backup.tables import EXPORT_PER

    convs = [conversation(n) for n in range(2 * EXPORT_PER + 7)]
    vers = [version("stage-a/s1", n, f"fc_{n}") for n in range(1, EXPORT_PER + 3)]
    data = asyncio.run(write_backup(_store(convs, vers), THREADS, T0, _pause))
    sizes = [(kind, len(items)) for kind, items in open_backup(data).slices()]
    assert sizes == [("conversations", EXPORT_PER)] * 2 + [("conversations", 7), ("versions", EXPORT_PER),
                                                           ("versions", 2)]
    assert EXPORT_PER < 200


@pytest.mark.parametrize("locale, counts, expected", [
    ("en-US", {"conversations": 1, "versions": 1, "threads": 1},
     "Backup saved: 1 conversation, 1 scene version, 1 course thread."),
    ("en-US", {"conversations": 1209, "versions": 0, "threads": 2},
     "Backup saved: 1,209 conversations, 0 scene versions, 2 course threads."),
    ("ru-RU", {"conversations": 21, "versions": 3, "threads": 5},
     "Резервная копия сохранена: 21 разговор, 3 версии сцен, 5 потоков курсов."),
    ("pt-BR", {"conversations": 1, "versions": 2, "threads": 1},
     "Backup salvo: 1 conversa, 2 versões de cena, 1 thread de curso."),
    ("ar-SA", {"conversations": 1, "versions": 2, "threads": 0},
     "حُفظت النسخة الاحتياطية: محادثة واحدة، إصداران للمشاهد، لا سلاسل للدورات."),
])
def test_the_backup_saved_line_says_its_counts_with_the_locales_plural_forms(locale, counts, expected):
    """"1 conversations" is gone: each count takes its plural form (DESIGN.md §7)."""
    from app.history.labels import backup_saved_text

    assert backup_saved_text(Translator(locale), counts) == expected


def _with_tree(n: int) -> dict:
    """``conversation(n)`` whose reply was regenerated and its first answer shown again: a tree
    (DESIGN.md §17), in the stored form."""
    from app.history.tree import Tree

    base = conversation(n)
    other = {"role": "assistant", "id": f"m{n}-1b", "content": [{"type": "text", "text": f"again {n}"}]}
    tree = Tree.chain(base["messages"]).grow([base["messages"][0], other]).show(base["messages"][1]["id"])
    path, branches, shown = tree.record()
    assert path == base["messages"] and branches
    return {**base, "branches": branches, "shown": shown}


def test_a_backup_round_trip_keeps_every_tree():
    convs = [_with_tree(1), conversation(2)]
    source = _store(convs, [])
    held = asyncio.run(source.get("messages", convs[0]["meta"]["taskId"]))
    assert held["branches"] == convs[0]["branches"]
    data = asyncio.run(write_backup(source, THREADS, T0, _pause, per=3))
    assert open_backup(data).read_all()[0][0]["branches"] == convs[0]["branches"]
    target = _store([], [])
    plan = asyncio.run(restore(target, data, _pause, local_thread=lambda s: False, new_id=lambda m: "x", per=3))
    assert plan.added == 2 and _dump(target) == _dump(source)
    assert "branches" not in asyncio.run(target.get("messages", convs[1]["meta"]["taskId"]))  # a chain as before


def test_an_older_backup_without_trees_still_restores_and_a_tree_of_the_wrong_shape_is_damaged():
    plain = build([conversation(1)], [])
    assert "branches" not in open_backup(plain).read_all()[0][0]
    target = _store([], [])
    assert asyncio.run(restore(target, plain, _pause, local_thread=lambda s: False, new_id=lambda m: "x")).added == 1
    for bad in ({"branches": {"not": "a list"}}, {"branches": ["no dict"]}, {"shown": ["no", "object"]}):
        with pytest.raises(BackupRefused) as refused:
            open_backup(build([{**_with_tree(3), **bad}], [])).read_all()
        assert refused.value.reason == "damaged"


# -- a conversation kept here under the backup's id is compared as a tree (DESIGN.md §14, §17) -----

def _shown_on(item: dict, ident: str) -> dict:
    """``item`` (a conversation line) with message ``ident`` shown: only the choice differs."""
    from app.history.tree import Tree

    path, branches, shown = Tree.from_record(item["messages"], item.get("branches"), item.get("shown")).show(ident).record()
    return {**item, "messages": path, "branches": branches, "shown": shown}


def _reply(n: int, ident: str, text: str) -> dict:
    return {"role": "assistant", "id": ident, "content": [{"type": "text", "text": text}]}


def _stored_tree(backend: MemoryBackend, task_id: str):
    from app.history.branches import StoredForm

    return StoredForm.of(asyncio.run(backend.get("messages", task_id))).tree()


def _restored(local: list[dict], backup: list[dict]) -> tuple[MergePlan, MemoryBackend]:
    data = asyncio.run(write_backup(_store(backup, []), THREADS, T0, _pause))
    target = _store(local, [])
    plan = asyncio.run(restore(target, data, _pause, local_thread=lambda s: True,
                               new_id=lambda m: "task_20260601_copy01"))
    return plan, target


def test_the_same_tree_showing_another_branch_is_already_present_and_nothing_is_written():
    """A picker moved here after the backup: the same messages, another shown branch (a choice is
    not content, §17): already present, no copy conversation, nothing written."""
    backed_up = _with_tree(1)
    here = _shown_on(backed_up, "m1-1b")
    assert here["messages"] != backed_up["messages"]
    before = _dump(_store([here], []))
    plan, target = _restored([here], [backed_up])
    assert (plan.added, plan.renamed, plan.extended, plan.present) == (0, 0, 0, 1)
    assert _dump(target) == before


@pytest.mark.parametrize("shown", ["m1-1", "m1-1b"])
def test_a_backup_with_a_branch_this_browser_lacks_is_joined_into_one_tree(shown):
    """The backup's tree holds a regenerated reply the chain here lacks: both replies end up in the
    conversation here (the union of the trees), counted as updated, never a copy; whichever the
    backup showed."""
    here = conversation(1)
    backed_up = _shown_on(_with_tree(1), shown)
    plan, target = _restored([here], [backed_up])
    assert (plan.added, plan.renamed, plan.extended, plan.present) == (0, 0, 1, 0)
    assert list(target.raw("conversations")) == [here["meta"]["taskId"]]
    tree = _stored_tree(target, here["meta"]["taskId"])
    assert set(tree.ids) == {"m1-0", "m1-1", "m1-1b"} and tree.children("m1-0") == ["m1-1", "m1-1b"]


def test_a_branch_only_this_browser_has_is_kept_and_the_backup_counts_as_present():
    here = _shown_on(_with_tree(1), "m1-1b")
    before = _dump(_store([here], []))
    plan, target = _restored([here], [conversation(1)])
    assert (plan.added, plan.renamed, plan.extended, plan.present) == (0, 0, 0, 1)
    assert _dump(target) == before


def test_two_sides_that_went_on_apart_are_joined_with_the_turn_metas_of_both():
    """Here the first question got one reply, in the backup another (each with its turn meta): one
    conversation holding both replies as siblings, both turn metas (by ``messageId``), the meta's
    counts made from every turn (§17: stats count every turn on every branch)."""
    here = conversation(1)
    backed_up = conversation(1)
    backed_up["messages"][1] = _reply(1, "m1-1x", "the backup's answer")
    backed_up["turns"] = [{**backed_up["turns"][0], "messageId": "m1-1x", "timestamp": "2026-06-02T00:00:00.000Z",
                           "usage": {"inputTokens": 5, "outputTokens": 6, "totalTokens": 11}}]
    here["turns"][0]["usage"] = {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}
    plan, target = _restored([here], [backed_up])
    assert (plan.added, plan.renamed, plan.extended) == (0, 0, 1)
    task_id = here["meta"]["taskId"]
    tree = _stored_tree(target, task_id)
    assert sorted(tree.children("m1-0")) == ["m1-1", "m1-1x"]
    turns = target.raw("turns")[task_id]["turns"]
    assert sorted(t["messageId"] for t in turns) == ["m1-1", "m1-1x"]
    meta = target.raw("conversations")[task_id]
    assert meta["turnCount"] == 2 and meta["stats"]["totalTokens"] == 14


def test_a_chain_the_backup_continues_replaces_the_one_here_as_before():
    longer = conversation(1, 4)
    plan, target = _restored([conversation(1, 2)], [longer])
    assert (plan.added, plan.renamed, plan.extended) == (0, 0, 1)
    assert _dump(target) == _dump(_store([longer], []))


def test_a_conversation_that_shares_no_message_with_the_one_here_is_kept_as_a_copy():
    here = conversation(1)
    other = conversation(1)
    other["messages"] = [{**m, "id": m["id"] + "-other"} for m in other["messages"]]
    plan, target = _restored([here], [other])
    assert (plan.added, plan.renamed, plan.extended) == (1, 1, 0)
    assert sorted(target.raw("conversations")) == sorted([here["meta"]["taskId"], "task_20260601_copy01"])


def test_a_message_holding_a_line_or_paragraph_separator_is_restored_exactly():
    """JSON leaves U+2028, U+2029 and U+0085 unescaped in a line of a member: the lines are split at the
    writer's ``\\n`` alone, so such a message (pasted text often holds one) is restored, not refused."""
    odd = conversation(1)
    odd["messages"][0]["content"][0]["text"] = "line\u2028separator \x85 next \u2029 paragraph\r\nend"
    data = build([odd, conversation(2)], [])
    assert open_backup(data).read_all()[0] == [odd, conversation(2)]
    pieces = [items for _, items in open_backup(data).slices(32 * 1024)]
    assert [c for items in pieces for c in items] == [odd, conversation(2)]


def test_a_member_that_unpacks_to_one_endless_line_is_read_in_slices_and_refused(monkeypatch):
    """A small file whose member unpacks to one line of spaces (a zip bomb within the unpacked limits)
    is inflated ``READ_CHARS`` at a time, a piece handed back after each (the page's turn), and refused
    as damaged once the line passes ``MAX_LINE_CHARS``, never read whole in one go; a member of
    newlines alone hands back a piece as often."""
    import app.backup.format as fmt

    monkeypatch.setattr(fmt, "READ_CHARS", 4096)
    monkeypatch.setattr(fmt, "MAX_LINE_CHARS", 64 * 1024)
    manifest = json.dumps({**MANIFEST, "counts": {"threads": 0, "conversations": 1, "versions": 0}})
    for body, reason in ((" " * 1_000_000, "damaged"), ("\n" * 100_000, "damaged")):
        reader = open_backup(zip_bytes({"manifest.json": manifest, "conversations/000001.jsonl": body}))
        handed_back = 0
        with pytest.raises(BackupRefused) as refused:
            for _kind, items in reader.slices(32 * 1024):
                handed_back += 1
            fmt.check_counts(reader.manifest, 0, 0)  # newlines alone: no conversation, as the manifest lies
        assert refused.value.reason == reason
        assert handed_back >= min(len(body), 64 * 1024) // 4096  # one piece per READ_CHARS read at least


def test_a_restore_names_every_conversation_it_wrote_by_course_for_sync_and_one_change_per_course():
    """What sync sends after a restore (DESIGN.md §14, §16): the task ids written, by course, an
    extended one, one added under a fresh id and a new one; never one already present. The hub hears
    one change per course carrying them (``MergePlan.changes``)."""
    longer, present, new = conversation(1, messages=4), conversation(3), conversation(4)
    clash = {**conversation(5), "meta": {**conversation(5)["meta"], "taskId": conversation(2)["meta"]["taskId"]}}
    plan, _target = _restored([conversation(1), clash, present], [longer, conversation(2), present, new])
    assert (plan.added, plan.renamed, plan.extended, plan.present) == (2, 1, 1, 1)
    written = [longer["meta"]["taskId"], "task_20260601_copy01", new["meta"]["taskId"]]
    assert sorted(plan.written["stage-a"]) == sorted(written) and list(plan.written) == ["stage-a"]
    (change,) = plan.changes()
    assert (change.kind, change.task_id, change.stage_id, change.source) == ("import", "", "stage-a", "import")
    assert sorted(change.tasks) == sorted(written)
