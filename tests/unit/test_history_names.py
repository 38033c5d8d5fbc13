"""Naming and pinning conversations (DESIGN.md §18): the pure rules of app/history/names.py, the
order of a course's list, storage, export and import, sync's merge and search by title."""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest

from app.history.changes import HistoryChange
from app.history.names import NAME_GRAPHEMES, named, merged_names, pinned_meta, renamed_meta
from app.history.records import TaskMeta

T0 = 1_780_000_000_000
TASK = "task_20260601_abcdef"


def meta(**kw):
    fields = {"taskId": TASK, "taskName": "First question", "stageId": "s", "createdAt": T0, "updatedAt": T0}
    return TaskMeta(**{**fields, **kw})


def user(text, id="u"):
    return {"role": "user", "id": id, "content": [{"type": "text", "text": text}]}


# -- the rule of a name ----------------------------------------------------------
def test_a_name_is_collapsed_and_kept_whole_up_to_200_clusters():
    assert named("  My   plan\n for  exams ", [user("q")]) == "My plan for exams"
    assert named("x" * NAME_GRAPHEMES, []) == "x" * NAME_GRAPHEMES
    assert NAME_GRAPHEMES == 200


def test_an_empty_name_gives_back_the_first_question_title():
    messages = [user("What is   photosynthesis?")]
    assert named("", messages) == "What is photosynthesis?"
    assert named(" \n\t ", messages) == "What is photosynthesis?"
    assert named("", []) == ""  # no user text: the view says "Untitled conversation"
    # a name of invisible characters only (zero-width, soft hyphen, bidi controls) shows nothing: blank too
    assert named("\u200b\u2066\u2069\u00ad \u200d\u202e", messages) == "What is photosynthesis?"
    # bidi controls are not kept in a name (the list drops them; an export's Markdown heading would not)
    assert named("report\u202egnp.exe", messages) == "reportgnp.exe"


def test_a_name_over_200_clusters_is_cut_like_titles_never_half_an_emoji():
    thumbs = "👍🏽"  # two code points, one cluster
    cut = named(thumbs * 250, [])
    assert cut == thumbs * NAME_GRAPHEMES + "…"
    family = "👨‍👩‍👧"
    cut = named("a" * 199 + family + "b", [])
    assert cut == "a" * 199 + family + "…"


def test_a_name_cut_once_is_kept_as_it_is():
    once = named("é" * 300, [])
    assert named(once, []) == once


# -- meta changes ----------------------------------------------------------------
def test_rename_sets_the_name_and_its_change_time_not_updated_at():
    renamed = renamed_meta(meta(), "New  name", [user("q")], now=T0 + 50)
    assert renamed.taskName == "New name"
    assert renamed.changedAt.taskName == T0 + 50
    assert renamed.updatedAt == T0  # the list's recency is the conversation's, not its name's


def test_pin_records_when_and_unpin_clears_it():
    pinned = pinned_meta(meta(), True, now=T0 + 7)
    assert pinned.pinnedAt == T0 + 7 and pinned.pinned
    assert pinned.changedAt.pinned == T0 + 7
    again = pinned_meta(pinned, True, now=T0 + 9)
    assert again.pinnedAt == T0 + 7  # pinning a pinned one keeps its place
    unpinned = pinned_meta(pinned, False, now=T0 + 11)
    assert unpinned.pinnedAt is None and not unpinned.pinned
    assert unpinned.changedAt.pinned == T0 + 11


def test_a_meta_without_names_reads_with_defaults():
    old = TaskMeta.model_validate({"taskId": TASK, "taskName": "t", "stageId": "s", "createdAt": 1, "updatedAt": 2})
    assert old.pinnedAt is None and old.changedAt.taskName == 0 and old.changedAt.pinned == 0


# -- merging two devices' metas ------------------------------------------------------
def test_each_field_takes_its_later_change():
    base = meta()
    here = renamed_meta(base, "Renamed here", [], now=T0 + 10)
    there = pinned_meta(base, True, now=T0 + 20)
    for a, b in ((here, there), (there, here)):
        both = merged_names(a, b)
        assert both.taskName == "Renamed here" and both.pinnedAt == T0 + 20
        assert both.changedAt.taskName == T0 + 10 and both.changedAt.pinned == T0 + 20


def test_a_later_unpin_wins_over_an_earlier_pin():
    pinned = pinned_meta(meta(), True, now=T0 + 10)
    unpinned = pinned_meta(pinned, False, now=T0 + 30)
    assert merged_names(pinned, unpinned).pinnedAt is None
    assert merged_names(unpinned, pinned).pinnedAt is None


def test_the_later_of_two_renames_wins():
    a = renamed_meta(meta(), "A", [], now=T0 + 10)
    b = renamed_meta(meta(), "B", [], now=T0 + 12)
    assert merged_names(a, b).taskName == "B" and merged_names(b, a).taskName == "B"


def test_a_meta_never_named_nor_pinned_is_stored_as_before():
    assert set(meta().model_dump()) == {"taskId", "taskName", "stageId", "createdAt", "updatedAt", "stats",
                                        "turnCount", "durationMs"}
    pinned = pinned_meta(meta(), True, now=T0 + 1)
    assert TaskMeta.model_validate(pinned.model_dump()) == pinned


# -- the service: rename, pin, the list's order, search ------------------------------
from app.history import HistoryService  # noqa: E402
from tests.unit.test_history import Clock  # noqa: E402
from tests.unit.turn_events import ended  # noqa: E402
from tests.unit.held_writes import WriteHeld  # noqa: E402
from tests.unit.test_sync import _delete_goes_out  # noqa: E402
from app.history.export import export_json, parse_export  # noqa: E402
from app.records import SCHEMA, MemoryBackend  # noqa: E402


def service(backend=None):
    counter = itertools.count()
    clock = Clock()
    changes = []
    svc = HistoryService(backend or MemoryBackend(), clock=clock, random_bytes=lambda n: bytes([next(counter) % 256] * n))
    svc.changes.subscribe(lambda c: changes.append((c.kind, c.task_id, c.stage_id)))
    return svc, clock, changes


async def add(svc, stage, text):
    msgs = [user(text, f"u-{text}"), {"role": "assistant", "id": f"a-{text}", "content": [{"type": "text", "text": "ok"}]}]
    await svc.record_turn(ended(stage, msgs, usage={"inputTokens": 1, "outputTokens": 2, "totalTokens": 3},
                                model="demo", duration_ms=10, message_id=f"a-{text}"), 1)
    return await svc.archive(stage, msgs, 1)


async def exported(question):
    """A service holding one conversation that asks ``question``, its task id and its JSON export (parsed)."""
    svc, _, _ = service()
    task = await add(svc, "s", question)
    return svc, task, json.loads(export_json(*await svc.bundle(task)))


def run(coro):
    return asyncio.run(coro)


def test_a_rename_is_kept_and_said_and_empty_gives_back_the_first_question():
    async def go():
        svc, _, changes = service()
        task = await add(svc, "s", "How do plants eat?")
        meta = await svc.rename(task, "  Botany   notes ")
        assert meta.taskName == "Botany notes" and (await svc.get(task)).taskName == "Botany notes"
        assert changes[-1] == ("rename", task, "s")
        back = await svc.rename(task, "")
        assert back.taskName == "How do plants eat?" and (await svc.get(task)).taskName == "How do plants eat?"
        assert await svc.rename("task_20990101_zzzzzz", "x") is None
    run(go())


def test_of_two_tabs_renaming_at_once_the_later_rename_wins_whichever_is_written_last():
    """Two tabs of one course rename the same conversation at nearly the same time: the later Enter
    (by time) is the name on both, even when the earlier one's write reaches the store after it
    (DESIGN.md §18: the later change of each field wins; §5: nothing is lost silently)."""
    async def go():
        backend = MemoryBackend(SCHEMA)
        first, first_clock, _ = service(backend)
        task = await add(first, "s", "How do plants eat?")
        second, second_clock, _ = service(backend)
        first_clock.now = second_clock.now = T0 + 10_000
        earlier = first.rename(task, "Earlier name")  # pressed first: its clock reads T0 + 10_001 when it runs
        second_clock.now += 5  # the other tab's Enter, a few ms later
        assert (await second.rename(task, "Later name")).taskName == "Later name"  # stored first
        await earlier  # the earlier rename's write comes last: it does not undo the later one
        assert (await first.get(task)).taskName == "Later name"
        assert (await second.get(task)).taskName == "Later name"
        first_clock.now = second_clock.now + 10  # a rename made after both still wins
        assert (await first.rename(task, "Latest name")).taskName == "Latest name"
        second_clock.now = first_clock.now + 10  # the same for a pin: a later pin stored first stays
        earlier_unpin = first.pin(task, False)
        assert (await second.pin(task, True)).pinned
        await earlier_unpin
        assert (await first.get(task)).pinned
    run(go())


class _HeldWrite:
    """A backend whose next write waits for ``gate`` (another tab's write lands in between)."""

    def __init__(self, inner):
        self.inner, self.gate = inner, None

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def write(self, ops):
        if self.gate is not None:
            gate, self.gate = self.gate, None
            await gate.wait()
        await self.inner.write(ops)


def test_an_earlier_rename_written_over_a_later_one_is_undone_by_the_tab_that_made_the_later():
    """Both tabs read the conversation, the later rename is written, then the earlier one's write
    (read before it) lands over it: the tab of the later rename hears that change and writes its
    name again; the other tab, hearing that, leaves it (DESIGN.md §18: the later change wins, §5)."""
    async def go():
        backend = MemoryBackend(SCHEMA)
        held = _HeldWrite(backend)
        first, first_clock, first_changes = service(held)
        second, second_clock, _ = service(backend)
        task = await add(second, "s", "How do plants eat?")
        first_clock.now = T0 + 10_000
        second_clock.now = T0 + 10_005
        held.gate = gate = asyncio.Event()
        earlier = asyncio.ensure_future(first.rename(task, "Earlier name"))
        while held.gate is not None:  # read, and waiting at its write
            await asyncio.sleep(0)
        assert (await second.rename(task, "Later name")).taskName == "Later name"
        gate.set()
        await earlier
        assert (await second.get(task)).taskName == "Earlier name"  # the earlier write landed last
        second.changes.publish(HistoryChange("rename", task, "s", "other-tab"))  # the other tab's change heard
        for _ in range(20):
            await asyncio.sleep(0)
        assert (await second.get(task)).taskName == "Later name"
        told = len(first_changes)
        first.changes.publish(HistoryChange("rename", task, "s", "other-tab"))
        for _ in range(20):
            await asyncio.sleep(0)
        assert (await first.get(task)).taskName == "Later name" and len(first_changes) == told + 1  # heard, no write
    run(go())


def test_pinned_conversations_come_first_most_recently_pinned_first_then_the_chosen_sort():
    async def go():
        svc, _, changes = service()
        tasks = [await add(svc, "s", f"question {n}") for n in range(14)]  # newest last
        await svc.pin(tasks[2], True)
        await svc.pin(tasks[5], True)
        assert changes[-1] == ("pin", tasks[5], "s")
        first = await svc.page("s")
        ids = [m.taskId for m in first.items]
        assert ids[:2] == [tasks[5], tasks[2]]
        rest = [t for t in reversed(tasks) if t not in (tasks[2], tasks[5])]
        ids += [m.taskId for m in (await svc.page("s", first.cursor)).items]
        assert ids == [tasks[5], tasks[2], *rest]  # each once, the pinned ones not again further down
        oldest = await svc.page("s", sort="oldest")
        assert [m.taskId for m in oldest.items][:3] == [tasks[5], tasks[2], tasks[0]]
        tokens = await svc.page("s", sort="tokens")
        assert [m.taskId for m in tokens.items][:2] == [tasks[5], tasks[2]]
        await svc.pin(tasks[5], False)
        assert [m.taskId for m in (await svc.page("s")).items][:2] == [tasks[2], tasks[13]]
    run(go())


def test_search_finds_a_conversation_by_a_word_of_its_new_title_and_does_not_reorder_by_pins():
    async def go():
        svc, _, _ = service()
        old = await add(svc, "s", "alpha first")
        new = await add(svc, "s", "alpha second")
        assert (await svc.search("s", "zoology")).items == []
        await svc.rename(old, "Zoology revision")
        hits = (await svc.search("s", "zoology")).items
        assert [h.meta.taskId for h in hits] == [old]
        await svc.rename(old, "Botany")
        assert (await svc.search("s", "zoology")).items == []  # the old title's words are gone
        assert [h.meta.taskId for h in (await svc.search("s", "botany")).items] == [old]
        assert [h.meta.taskId for h in (await svc.search("s", "first")).items] == [old]  # message words stay
        await svc.pin(old, True)
        assert [h.meta.taskId for h in (await svc.search("s", "alpha")).items] == [new, old]
    run(go())


def test_a_word_in_both_title_and_text_stays_found_after_the_title_changes():
    async def go():
        svc, _, _ = service()
        task = await add(svc, "s", "alpha first")
        await svc.rename(task, "alpha plan")
        await svc.rename(task, "other")
        assert [h.meta.taskId for h in (await svc.search("s", "alpha")).items] == [task]
    run(go())


def test_names_and_pins_survive_a_reopen_of_the_store():
    async def go():
        backend = MemoryBackend(SCHEMA)
        svc, _, _ = service(backend)
        task = await add(svc, "s", "q one")
        await svc.rename(task, "Kept name")
        await svc.pin(task, True)
        again, _, _ = service(backend)
        meta = await again.get(task)
        assert meta.taskName == "Kept name" and meta.pinned
    run(go())


def test_export_carries_name_and_pin_and_imports_them_back():
    async def go():
        svc, _, _ = service()
        task = await add(svc, "s", "q one")
        await svc.rename(task, "é" * 150 + " long name kept whole")
        await svc.pin(task, True)
        bundle = await svc.bundle(task)
        text = export_json(*bundle)
        data = json.loads(text)
        assert data["meta"]["pinned"] is True and data["meta"]["taskName"] == bundle.meta.taskName
        meta, _, _ = parse_export(text, T0 + 10_000)
        assert meta == bundle.meta
        other, _, _ = service()
        assert await other.import_bundle("t", *parse_export(text, T0 + 10_000)) == "ok"
        kept = await other.get(task)
        assert kept.taskName == bundle.meta.taskName and kept.pinned  # 171 clusters: not cut to 50
    run(go())


def test_a_file_with_a_blank_title_is_titled_by_its_first_question():
    async def go():
        _, task, data = await exported("one first topic")
        data["meta"]["taskName"] = "  "
        other, _, _ = service()
        meta, messages, turns = parse_export(json.dumps(data), T0 + 10_000)
        assert await other.import_bundle("s", meta, messages, turns) == "ok"
        assert (await other.get(task)).taskName == "one first topic"
    run(go())


def test_a_file_without_pinned_still_imports_unpinned():
    async def go():
        _, _, data = await exported("q one")
        assert "pinned" not in data["meta"]  # never pinned: the file is as before §18
        meta, _, _ = parse_export(json.dumps(data), T0 + 10_000)
        assert not meta.pinned
    run(go())


def test_a_name_or_pin_dated_more_than_a_day_ahead_is_refused_like_any_future_date():
    """A file (or a synced document: the same checks) whose ``changedAt`` or ``pinnedAt`` lies more
    than a day ahead would win every later rename or pin on every device (the later change of each
    field wins, §18): refused as ``dates``, as a future ``updatedAt`` is (§14)."""
    from app.history.export import ImportRefused
    from app.sync.documents import conversation_doc, conversation_of

    async def go():
        svc, _, _ = service()
        task = await add(svc, "s", "q one")
        await svc.pin(task, True)
        await svc.rename(task, "named")
        data = json.loads(export_json(*await svc.bundle(task)))
        now = T0 + 10_000
        assert parse_export(json.dumps(data), now)[0].pinned  # as exported: accepted
        far = "9999-12-31T00:00:00.000Z"
        for change in ({"changedAt": {"taskName": far}}, {"changedAt": {"pinned": far}}, {"pinnedAt": far}):
            with pytest.raises(ImportRefused) as refused:
                parse_export(json.dumps({**data, "meta": {**data["meta"], **change}}), now)
            assert refused.value.reason == "dates"
        doc = conversation_doc(*await svc.bundle(task))
        doc["meta"]["changedAt"] = {"taskName": 253402214400000, "pinned": 0}
        with pytest.raises(ValueError):
            conversation_of(doc, now)
    run(go())


def test_a_synced_rename_and_a_pin_made_on_two_devices_both_arrive():
    from app.sync.documents import conversation_doc, conversation_of

    async def go():
        a, clock_a, _ = service()
        task = await add(a, "s", "shared question")
        b, clock_b, _ = service()
        bundle = await a.bundle(task)
        assert await b.apply_synced(*conversation_of(conversation_doc(*bundle), T0 + 10_000)) == "added"
        clock_b.now = clock_a.now + 100
        await a.rename(task, "Renamed on A")
        await b.pin(task, True)
        from_a = conversation_of(conversation_doc(*await a.bundle(task)), T0 + 10_000)
        from_b = conversation_of(conversation_doc(*await b.bundle(task)), T0 + 10_000)
        await b.apply_synced(*from_a)
        await a.apply_synced(*from_b)
        for svc in (a, b):
            meta = await svc.get(task)
            assert meta.taskName == "Renamed on A" and meta.pinned
        assert [h.meta.taskId for h in (await b.search("s", "renamed")).items] == [task]
    run(go())


async def test_a_rename_of_a_conversation_deleted_on_another_device_does_not_bring_it_back():
    from app.sync.documents import doc_id_of_task
    from app.sync.engine import SyncEngine
    from app.storage import MemoryStorage

    class Replica:
        def __init__(self):
            self.docs, self.resolved = {}, []

        async def put(self, doc):
            self.docs[doc["_id"]] = json.loads(json.dumps(doc))

        async def remove(self, doc_id, body=None):
            self.docs[doc_id] = {"_id": doc_id, "_deleted": True, **(body or {})}

        async def resolve(self, docs):
            self.resolved.append(json.loads(json.dumps(docs)))

    a, _, _ = service()
    b, _, _ = service()
    replica_a, replica_b = Replica(), Replica()
    engine_a, engine_b = SyncEngine(a, replica_a, MemoryStorage()), SyncEngine(b, replica_b, MemoryStorage())
    task = await add(a, "s", "shared question")
    await engine_a.push(task)
    doc_id = doc_id_of_task(task)
    assert await engine_b.remote_changed({**replica_a.docs[doc_id], "_rev": "1-s"}) == "added"
    await b.rename(task, "Renamed on B")
    await b.pin(task, True)
    await engine_b.push(task)
    renamed = {**replica_b.docs[doc_id], "_rev": "2-b"}
    assert renamed["meta"]["taskName"] == "Renamed on B"
    assert await a.delete(task)
    await _delete_goes_out(engine_a, task)
    deletion = {**replica_a.docs[doc_id], "_rev": "2-a"}
    # B: its renamed revision and A's deletion are two leaves; the deletion wins, nothing is kept apart
    assert await engine_b.remote_changed({**renamed, "_leaves": [renamed, deletion]}) == "deleted"
    assert await b.bundle(task) is None and await b.total("s") == 0
    # A: B's rename arrives beside its deletion: deleted again, not brought back
    assert await engine_a.remote_changed({**renamed, "_leaves": [renamed, deletion]}) == "redeleted"
    assert await a.bundle(task) is None and await a.total("s") == 0
    assert await engine_a.remote_changed(renamed) != "added" and await a.total("s") == 0


async def test_a_backup_round_trip_keeps_names_and_pins_and_finds_them_by_title():
    from app.backup.tables import restore, write_backup

    async def pause():
        await asyncio.sleep(0)

    source = MemoryBackend(SCHEMA)
    svc, _, _ = service(source)
    tasks = [await add(svc, "s", f"question {n}") for n in range(3)]
    await svc.rename(tasks[0], "Herbarium catalogue")
    await svc.pin(tasks[0], True)
    data = await write_backup(source, {"state": {"threads": {}}, "version": 1}, T0, pause)
    target = MemoryBackend(SCHEMA)
    await target.open()
    plan = await restore(target, data, pause, local_thread=lambda s: False, new_id=lambda m: "x")
    assert plan.added == 3
    other, _, _ = service(target)
    assert await other.get(tasks[0]) == await svc.get(tasks[0])
    assert [m.taskId for m in (await other.page("s")).items][0] == tasks[0]
    assert [h.meta.taskId for h in (await other.search("s", "herbarium")).items] == [tasks[0]]


# -- the open list ------------------------------------------------------------------
def test_a_rename_or_pin_draws_the_open_list_afresh():
    from app.history.list_model import HistoryList

    shown = HistoryList()
    shown.open, shown.stage = True, "s"
    assert shown.effect(HistoryChange("rename", TASK, "s")) == "reload"
    assert shown.effect(HistoryChange("pin", TASK, "s", "other-tab")) == "reload"
    assert shown.effect(HistoryChange("record", TASK, "s")) == "top"


def test_what_arrives_above_the_top_is_not_drawn_over_pinned_items():
    from app.history.list_model import HistoryList

    shown = HistoryList()
    shown.open, shown.stage = True, "s"
    shown.place([meta()], "replace")
    assert shown.tops_by_prepending("")
    shown.place([pinned_meta(meta(), True, now=T0)], "replace")
    assert not shown.tops_by_prepending("")  # drawn afresh: the new item goes below the pinned ones


def test_a_hit_found_by_its_title_alone_marks_the_title():
    async def go():
        svc, _, _ = service()
        task = await add(svc, "s", "alpha first")
        await svc.rename(task, "Zoology revision")
        (hit,) = (await svc.search("s", "zoology")).items
        assert hit.snippet == ("", "Zoology", " revision")  # the whole title: no cut mark
    run(go())


def test_a_synced_rename_of_an_unchanged_conversation_is_announced_as_a_rename():
    from app.sync.documents import conversation_doc, conversation_of

    async def go():
        a, _, _ = service()
        b, _, heard = service()
        task = await add(a, "s", "shared question")
        await b.apply_synced(*await a.bundle(task))
        await a.rename(task, "New name")
        assert await b.apply_synced(*conversation_of(conversation_doc(*await a.bundle(task)), T0 + 10_000)) == "same"
        assert heard[-1] == ("rename", task, "s")
    run(go())


def test_item_rows_say_the_pin_state_and_label_rename_and_pin_in_every_locale():
    from app.history.list_model import item_rows
    from app.i18n import Translator

    pinned = pinned_meta(renamed_meta(meta(), "Plan ‮x", [], now=T0), True, now=T0)
    for locale in ("en-US", "ar-SA", "ja-JP", "ko-KR", "pt-BR", "ru-RU", "zh-CN", "zh-TW"):
        t = Translator(locale)
        row, plain = item_rows(t, [(pinned, None), (meta(taskId="task_20260601_other1", taskName=""), None)], T0, None)
        assert row["pinned"] and not plain["pinned"]
        assert row["name"] == "Plan x" and plain["name"] == ""  # what the rename field starts from (bidi controls out)
        for key, label in (("history.rename", row["renameLabel"]), ("history.pin", row["pinLabel"]),
                           ("history.renameField", row["renameFieldLabel"])):
            assert label == t(key, title="\u2068Plan x\u2069") and label != key and "\u2068Plan x\u2069" in label
        if locale != "en-US":
            assert row["renameLabel"] != Translator("en-US")("history.rename", title="\u2068Plan x\u2069")


def test_a_chinese_title_is_found_by_a_keyword_inside_it():
    async def go():
        svc, _, _ = service()
        task = await add(svc, "s", "alpha first")
        await svc.rename(task, "量子纠缠复习笔记")
        assert [h.meta.taskId for h in (await svc.search("s", "纠缠复习")).items] == [task]
        assert (await svc.search("s", "纠缠笔记")).items == []  # not a run of the title
    run(go())


def test_a_list_drawn_afresh_by_a_pin_reads_pages_again_until_it_holds_the_rows_it_showed():
    from app.history.list_model import HistoryList

    def draw(shown, page, mode):
        shown.place(page.items, mode)
        shown.paged(page.cursor, page.has_more)

    async def go():
        svc, _, _ = service()
        tasks = [await add(svc, "s", f"question {n:02d}") for n in range(14)]
        shown = HistoryList()
        shown.open, shown.stage = True, "s"
        draw(shown, await svc.page("s"), "replace")
        draw(shown, await svc.page("s", shown.cursor), "append")  # the second page, read by scrolling
        assert shown.count == 14 and not shown.has_more
        await svc.pin(tasks[1], True)  # an item of the second page
        assert shown.effect(HistoryChange("pin", tasks[1], "s")) == "reload"
        before = shown.count
        shown.restart("s")
        draw(shown, await svc.page("s"), "replace")
        assert shown.short_of(before)  # the first page alone would drop rows read by scrolling
        draw(shown, await svc.page("s", shown.cursor), "append")
        assert not shown.short_of(before) and shown.count == 14
        shown.loading = True  # a page being read (scrolled to the end): none is read beside it
        assert not shown.short_of(before + 1)
    run(go())


async def test_a_title_stored_before_the_index_is_found_by_its_words_once_indexed():
    backend = MemoryBackend(SCHEMA)
    svc, _, _ = service(backend)
    task = await add(svc, "s", "question one")
    await add(svc, "s", "question two")
    await svc.rename(task, "Herbarium catalogue")  # a title no message holds, as an imported file's
    for record in backend.raw("search").values():  # as version 1 stored them: no index
        record.pop("terms")
        record.pop("titleOnly", None)
        backend.put_raw("search", record)
    reloaded, _, _ = service(backend)
    assert [h.meta.taskId for h in (await reloaded.search("s", "herbarium")).items] == [task]
    assert [h.meta.taskId for h in (await reloaded.search("s", "one")).items] == [task]


def test_a_name_drops_control_characters_and_noncharacters():
    """A rename to ``a\\u0000b\\uFFFEc`` was stored as is (DESIGN.md §18): a title holds no C0/C1
    control character (a NUL, an escape) and no noncharacter; control characters that are white space
    (a newline, a tab) collapse to one space as any white space."""
    assert named("a\u0000b\ufffec", []) == "abc"
    assert named("x\u001b[31my\u0085z\u009b\ufdd0\U0010ffff\U0001fffe", []) == "x[31my z"
    assert named("line1\nline2\r\n\tline3\u007f", []) == "line1 line2 line3"
    assert named("\u0000\ufffe\u0007", [user("Why?")]) == "Why?"  # nothing left: the first question


def test_an_imported_title_drops_control_characters_and_noncharacters_too():
    async def go():
        _, task, data = await exported("one first topic")
        data["meta"]["taskName"] = "Plan\u0000 for\ufffe exams\u0001"
        meta, messages, turns = parse_export(json.dumps(data), T0 + 10_000)
        assert meta.taskName == "Plan for exams"
        other, _, _ = service()
        assert await other.import_bundle("s", meta, messages, turns) == "ok"
        assert (await other.get(task)).taskName == "Plan for exams"
    run(go())


def test_a_rename_while_another_tab_records_a_turn_keeps_that_turn_in_the_meta():
    """Tab B reads the conversation to rename it; tab A's second turn lands before B's write: B's
    write is made again of what A wrote, so the stored meta keeps A's turn (its count, its tokens and
    its time) beside B's name (DESIGN.md §9: two tabs never lose each other's turns; §18)."""
    async def go():
        backend = MemoryBackend(SCHEMA)
        held = WriteHeld(backend)
        tab_a, clock, _ = service(backend)
        tab_b, _, _ = service(held)
        usage = {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}
        first = [user("How do plants eat?", "u1"), {"role": "assistant", "id": "a1", "content": [{"type": "text", "text": "ok"}]}]
        await tab_a.record_turn(ended("s", first, usage=usage, model="demo", duration_ms=10, message_id="a1"), 1)
        task = (await tab_a.active("s"))[0].taskId
        second = first + [user("And drink?", "u2"), {"role": "assistant", "id": "a2", "content": [{"type": "text", "text": "ok"}]}]

        async def a_records():
            clock.now += 1000
            await tab_a.record_turn(ended("s", second, usage=usage, model="demo", duration_ms=10, message_id="a2",
                                          conversation_id=task), 2)
        held.before = a_records
        assert (await tab_b.rename(task, "Botany")).taskName == "Botany"
        stored = await tab_a.get(task)
        assert (stored.taskName, stored.turnCount, stored.stats.totalTokens) == ("Botany", 2, 6)
        assert stored.updatedAt == (await tab_a.active("s"))[0].updatedAt
    run(go())
