"""History rules of DESIGN.md §9 on the in-memory backend (app/history)."""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest

from app.agent import DemoAgent
from app.history import HistoryService
from app.history.export import ImportRefused, export_json, export_markdown, fence_for, parse_export
from app.history.records import TASK_ID, TaskMeta, iso, new_task_id, parse_iso
from app.history.recorder import HistoryRecorder
from app.history.service import PAGE_SIZE, UNDO_MS, ConversationStats
from app.history.text import TITLE_GRAPHEMES, copy_title, cut_title, fold, relative_label, snippet, title_of
from app.records import MemoryBackend
from app.runtime import AgentRuntime
from app.storage import MemoryStorage
from app.store import ThreadStore
from tests.unit.turn_events import ended

T0 = 1_780_000_000_000


class Clock:
    def __init__(self, now=T0):
        self.now = now

    def __call__(self):
        self.now += 1
        return self.now


def user(text, id="u"):
    return {"role": "user", "id": id, "content": [{"type": "text", "text": text}]}


def reply(text, id="a"):
    return {"role": "assistant", "id": id, "content": [{"type": "text", "text": text}]}


def service(**kw):
    notices = []
    clock = kw.pop("clock", Clock())
    counter = itertools.count()
    svc = HistoryService(kw.pop("backend", MemoryBackend()), clock=clock,
                         random_bytes=lambda n: bytes([next(counter) % 256] * n), on_notice=notices.append, **kw)
    return svc, notices, clock


async def add(svc, stage, text, *, tokens=(1, 2)):
    msgs = [user(text, f"u-{text}"), reply("ok", f"a-{text}")]
    await svc.record_turn(ended(stage, msgs, usage={"inputTokens": tokens[0], "outputTokens": tokens[1],
                                                "totalTokens": sum(tokens)},
                                model="demo", duration_ms=100, message_id=f"a-{text}"), 1)
    return await svc.archive(stage, msgs, 1)


# -- records -------------------------------------------------------------------

def test_task_id_shape_and_iso_times_round_trip():
    task_id = new_task_id(T0)
    assert TASK_ID.fullmatch(task_id) and task_id.startswith("task_20260528_")
    assert parse_iso(iso(T0 + 7)) == T0 + 7 and iso(T0).endswith(".000Z")
    with pytest.raises(ValueError):
        parse_iso("2026-05-28T20:26:40Z")


def test_titles_cut_at_50_grapheme_clusters_whitespace_collapsed_none_without_user_text():
    family = "👨‍👩‍👧‍👦"
    title = title_of([user(" \n " + family * 60)])
    assert title == family * 50 + "…"
    accented = "e\u0301" * 55
    assert title_of([user(accented)]) == "e\u0301" * 50 + "…"
    assert title_of([user("a \t\n b")]) == "a b"
    assert title_of([reply("only the assistant")]) is None and title_of([user("   ")]) is None
    long = title_of([user("字" * 10_000)])
    assert long == "字" * 50 + "…"
    assert title_of([user("bad \ud800 half")]) == "bad \ufffd half"


def test_a_copys_title_is_told_apart_and_keeps_the_title_rule():
    assert copy_title("Hello there") == "Hello there (2)"
    assert copy_title("Hello there (2)") == "Hello there (3)" and copy_title("Version (9)") == "Version (10)"
    assert copy_title("") == ""  # untitled stays untitled: the view names it
    family = "👨‍👩‍👧‍👦"
    for original in ("x" * 50, "x" * 50 + "…", family * 50 + "…", "字" * 48, "Version (49)" + "y" * 38):
        copied = copy_title(original)
        assert copied != original and copied.endswith(")")
        assert cut_title(copied) == copied  # within the 50 grapheme clusters every title keeps
    assert copy_title(family * 50 + "…") == family * (TITLE_GRAPHEMES - 5) + "… (2)"


def test_fold_and_snippets_mark_the_match():
    assert fold("İSTANBUL Ärger") == "istanbul arger"  # DESIGN.md §14 (tests/unit/test_history_search.py)
    assert snippet("…the QUICK fox", "quick", cut_before=True, cut_after=True) == ("……the ", "QUICK", " fox…")
    assert snippet("nothing", "x", cut_before=False, cut_after=False) is None


@pytest.mark.parametrize("age,label", [(-5_000_000, ("now", 0)), (59_999, ("now", 0)), (60_000, ("minute", 1)),
                                       (3_600_000 * 5, ("hour", 5)), (86_400_000 * 6, ("day", 6)),
                                       (86_400_000 * 7, ("date", 0))])
def test_relative_labels_future_is_just_now(age, label):
    assert relative_label(T0 - age, T0) == label


# -- service -------------------------------------------------------------------

async def test_turns_are_recorded_with_meta_and_stats():
    svc, _, _ = service()
    msgs = [user("Hello 世界"), reply("hi")]
    turn = await svc.record_turn(ended("s", msgs, usage={"inputTokens": 3, "outputTokens": 7, "totalTokens": 10},
                                       model="demo", duration_ms=250, message_id="a"), 5)
    await svc.record_turn(ended("s", msgs + [user("again", "u2"), reply("yes", "a2")],
                                usage={"inputTokens": 5, "outputTokens": 1, "totalTokens": 6}, model="demo",
                                duration_ms=50, message_id="a2"), 6)
    meta, turns = await svc.active("s")
    assert turn.turnId == 1 and [t.turnId for t in turns] == [1, 2] and turns[1].messageId == "a2"
    assert meta.taskName == "Hello 世界" and meta.stats.totalTokens == 16 and meta.stats.inputTokens == 8
    stats = ConversationStats.of(meta)
    assert (stats.turns, stats.output_tokens, stats.mean_duration_ms) == (2, 8, 150)


async def test_archive_keeps_the_conversation_and_resume_makes_it_active_again():
    backend = MemoryBackend()
    svc, _, _ = service(backend=backend)
    first = await add(svc, "s", "first")
    assert backend.raw("heads") == {} and first in backend.raw("conversations")
    await asyncio.sleep(0)  # the request is a task of its own, which no write waits for
    assert backend.persisted  # persistent storage asked at the first archive
    await svc.record_turn(ended("s", [user("second")], usage={}, model="demo", duration_ms=1, message_id=None), 9)
    messages = await svc.resume("s", first, [user("second")], 9, 10)
    assert messages == [user("first", "u-first"), reply("ok", "a-first")]
    assert backend.raw("heads")["s"]["taskId"] == first
    assert await svc.total("s") == 2  # "second" stays in history


async def test_archive_adopts_a_thread_history_lacks():
    svc, _, _ = service()
    task_id = await svc.archive("s", [user("never recorded")], 3)
    assert (await svc.get(task_id)).taskName == "never recorded"


async def test_reconcile_local_storage_wins_and_threads_only_there_are_adopted():
    backend = MemoryBackend()
    svc, _, _ = service(backend=backend)
    await svc.record_turn(ended("s", [user("a")], usage={}, model="demo", duration_ms=1, message_id=None), 1)
    longer = [user("a"), reply("b"), user("c", "u3")]
    changed = await svc.reconcile({"s": (longer, 2), "__proto__": ([user("old app")], 7), "same": ([], 1)})
    assert changed == ["s", "__proto__"]
    heads = backend.raw("heads")
    assert backend.raw("messages")[heads["s"]["taskId"]]["messages"] == longer  # continued, not a new one
    assert await svc.total("s") == 1 and await svc.total("__proto__") == 1
    assert await svc.reconcile({"s": (longer, 2)}) == []  # in sync: nothing read beyond the head
    other = [user("something else", "u-other")]
    await svc.reconcile({"s": (other, 3)})
    assert await svc.total("s") == 2  # a different thread (another first message): the old one stays archived


async def test_reconcile_announces_each_conversation_it_writes():
    """A thread adopted (or brought in line) at start-up is a change of history like a turn: the list
    drawn or opened while start-up still reconciled hears it and shows that conversation (DESIGN.md
    §9, §5: nothing lost silently). Before, a thread sent while another tab blocked history was
    adopted at the reload unannounced: the drawer said "No conversations yet" until the next turn."""
    svc, _, _ = service()
    heard = []
    svc.changes.subscribe(heard.append)
    thread = [user("sent while blocked"), reply("ok"), user("sent after", "u2"), reply("ok", "a2")]
    assert await svc.reconcile({"s": (thread, 5)}) == ["s"]
    [change] = heard
    task_id = (await svc.page("s")).items[0].taskId
    assert (change.kind, change.task_id, change.stage_id, change.what) == ("record", task_id, "s", "written")
    assert change.written.meta.taskId == task_id and change.written.messages == thread
    assert change.form is not None and change.form.messages == thread
    heard.clear()
    assert await svc.reconcile({"s": (thread, 5)}) == [] and heard == []  # in line: nothing written, nothing told
    longer = [*thread, user("one more", "u3")]
    assert await svc.reconcile({"s": (longer, 6)}) == ["s"]
    assert [(c.kind, c.task_id) for c in heard] == [("record", task_id)]  # the same conversation, grown
    assert heard[0].written.messages == longer


async def test_delete_and_undo_within_the_window():
    clock = Clock()
    svc, _, _ = service(clock=clock)
    task_id = await add(svc, "s", "x")
    assert await svc.delete(task_id) and await svc.total("s") == 0
    assert await svc.undo() == task_id and await svc.total("s") == 1
    await svc.delete(task_id)
    clock.now += UNDO_MS + 5
    assert not svc.can_undo() and await svc.undo() is None and await svc.total("s") == 0
    assert UNDO_MS >= 5000


async def test_cursor_pages_newest_first_never_duplicate_or_skip_when_items_arrive_or_move():
    svc, _, clock = service()
    ids = [await add(svc, "s", f"c{i}") for i in range(25)]
    first = await svc.page("s")
    assert len(first.items) == PAGE_SIZE and first.has_more
    assert [m.taskId for m in first.items] == ids[::-1][:10]
    top = (first.items[0].updatedAt, first.items[0].taskId)
    arrived = await add(svc, "s", "new")  # arrives while the list is open
    moved = ids[3]  # not shown yet; it moves to the top
    await svc.record_turn(ended("s", [user("c3", "u-c3")], usage={}, model="demo", duration_ms=1, message_id=None), 1)
    await svc.resume("s", moved, [], None, 99)
    meta = await svc.get(moved)
    await svc.record_turn(ended("s", [user("c3", "u-c3"), reply("ok", "a-c3"), user("more", "u-more"), reply("more")],
                                usage={}, model="demo", duration_ms=1, message_id=None), 100)  # goes on from it
    shown = [m.taskId for m in first.items]
    second = await svc.page("s", first.cursor)
    third = await svc.page("s", second.cursor)
    shown += [m.taskId for m in second.items + third.items]
    newer = [m.taskId for m in await svc.newer("s", top)]
    assert arrived in newer and moved in newer
    assert len(shown) == len(set(shown))
    everything = set(newer) | set(shown)
    assert set(ids) | {arrived} <= everything
    assert not third.has_more and meta is not None


async def test_search_is_case_insensitive_finds_cjk_inside_sentences_filters_and_sorts():
    clock = Clock()
    svc, _, _ = service(clock=clock)
    a = await add(svc, "s", "我们今天讨论机器学习的基本概念", tokens=(1, 1))
    clock.now += 10 * 86_400_000
    b = await add(svc, "s", "Machine LEARNING basics and 学习", tokens=(50, 50))
    await add(svc, "other", "学习 elsewhere")
    hits = (await svc.search("s", "学习")).items
    assert [h.meta.taskId for h in hits] == [b, a]
    assert hits[1].snippet[1] == "学习" and "机器" in hits[1].snippet[0]
    assert [h.meta.taskId for h in (await svc.search("s", "learning")).items] == [b]
    assert [h.meta.taskId for h in (await svc.search("s", "学习", sort="oldest")).items] == [a, b]
    assert [h.meta.taskId for h in (await svc.search("s", "学习", sort="tokens")).items] == [b, a]
    assert [h.meta.taskId for h in (await svc.search("s", "学习", since_ms=clock.now - 86_400_000)).items] == [b]
    assert (await svc.search("s", "   ")).items == []


async def test_damaged_records_are_listed_as_damaged_with_one_notice():
    backend = MemoryBackend()
    svc, notices, _ = service(backend=backend)
    await add(svc, "s", "good")
    backend.put_raw("conversations", {"taskId": "task_20260101_zzzzzz", "stageId": "s", "updatedAt": T0 + 999,
                                      "taskName": 5})
    backend.put_raw("conversations", {"taskId": "task_20260101_yyyyyy", "stageId": "s", "updatedAt": T0 + 998})
    page = await svc.page("s")
    assert [(m.taskName, m.damaged) for m in page.items] == [("", True), ("", True), ("good", False)]
    assert [n.code for n in notices] == ["history-damaged"]


@pytest.mark.parametrize("kind,code", [("unavailable", "history-unavailable"), ("blocked", "history-blocked")])
async def test_unavailable_history_says_so_once_and_returns_empty(kind, code):
    backend = MemoryBackend()
    backend.fail_open = kind
    svc, notices, _ = service(backend=backend)
    assert await svc.page("s") == type(await svc.page("s"))([], None, False)
    assert await svc.archive("s", [user("x")], 1) is None
    assert [n.code for n in notices] == [code]


async def test_history_blocked_by_another_tab_is_taken_back_up_once_the_block_lifts():
    """Another tab held an older version open (``blocked``); when it lets go, the page's open goes
    through and the backend says ``opened``: the page is told, and history opens again as if it had
    opened at once (no reload); a later block is said again (DESIGN.md §5, §9)."""
    backend = MemoryBackend()
    backend.fail_open = "blocked"
    opened = []
    svc, notices, _ = service(backend=backend, on_opened=lambda: opened.append(True))
    backend.on_event = svc.on_backend_event
    assert await svc.archive("s", [user("x")], 1) is None and svc.failure == "blocked"
    assert not await svc.reopen()  # still blocked: nothing changes
    assert svc.available is False and [n.code for n in notices] == ["history-blocked"]
    backend.fail_open = None
    backend.simulate_event("opened", "40")
    assert opened == [True] and svc.available is False  # not a failure: the page takes it up
    assert await svc.reopen() and svc.available is True and svc.failure is None
    assert await svc.archive("s", [user("kept now")], 2) is not None and await svc.total("s") == 1
    assert not await svc.reopen()  # open already
    assert [n.code for n in notices] == ["history-blocked"]


async def test_quota_and_versionchange_notices():
    backend = MemoryBackend()
    svc, notices, _ = service(backend=backend)
    await add(svc, "s", "x")
    backend.quota_chars = 10
    assert await svc.record_turn(ended("s", [user("big" * 100)], usage={}, model="demo", duration_ms=1,
                                       message_id=None), 1) is None
    backend.quota_chars = None
    backend.on_event = svc.on_backend_event
    backend.simulate_event("versionchange", "20")
    assert await svc.total("s") == 0
    assert [n.code for n in notices] == ["history-full", "history-version-change"]


# -- export / import -------------------------------------------------------------

async def test_json_export_round_trips_exactly_and_imports_back():
    svc, _, _ = service()
    msgs = [user("导出 `code` ```"), {"role": "assistant", "id": "a", "content": [
        {"type": "tool-call", "toolCallId": "c1", "toolName": "regenerate_scene", "args": {"sceneId": "s1"}, "isError": True}]}]
    await svc.record_turn(ended("s", msgs, usage={"inputTokens": 1, "outputTokens": 2, "totalTokens": 3},
                                model="demo", duration_ms=42, message_id="a"), 1)
    task_id = await svc.archive("s", msgs, 1)
    text = export_json(*await svc.bundle(task_id))
    document = json.loads(text)
    assert document["format"] == "agentbar-conversation" and document["version"] == 2  # DESIGN.md §17
    assert document["meta"]["createdAt"].endswith("Z") and document["shown"] == {}
    assert document["messages"] == [{**msgs[0], "parentId": None}, {**msgs[1], "parentId": msgs[0]["id"]}]
    assert set(document["meta"]) == {"taskId", "taskName", "stageId", "createdAt", "updatedAt", "stats"}
    await svc.delete(task_id)
    assert await svc.import_bundle("s", *parse_export(text)) == "ok"
    assert export_json(*await svc.bundle(task_id)) == text
    assert await svc.import_bundle("s", *parse_export(text)) == "exists"


def as_a_blob_writes(text: str) -> bytes:
    """``text`` as the page's ``Blob`` saves it: UTF-8, a lone surrogate as U+FFFD."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").encode("utf-8")


async def test_a_json_export_of_a_lone_surrogate_round_trips_exactly_and_markdown_shows_it_as_a_replacement():
    """DESIGN.md §9: the JSON export round-trips exactly. A thread may hold a lone surrogate (a JS
    string cut mid-pair, kept exactly by the store): the export writes it as ``\\udXXX`` as
    ``JSON.stringify`` does, so the saved file is valid UTF-8 and imports back to the same text (it
    was saved as U+FFFD, and its import, told "already in history", would have brought back another
    text). Markdown is text for people: the lone surrogate is U+FFFD there."""
    svc, _, _ = service()
    msgs = [user("cut \ud83d here"), {"role": "assistant", "id": "a", "content": [
        {"type": "text", "text": "tail \ude00 and a pair \U0001f600"}]}]
    await svc.record_turn(ended("s", msgs, usage={"inputTokens": 1, "outputTokens": 2, "totalTokens": 3},
                                model="demo", duration_ms=42, message_id="a"), 1)
    task_id = await svc.archive("s", msgs, 1)
    text = export_json(*await svc.bundle(task_id))
    assert "\\ud83d" in text and "\\ude00" in text and "\U0001f600" in text
    saved = as_a_blob_writes(text).decode("utf-8")
    assert saved == text
    assert parse_export(saved)[1] == msgs
    assert await svc.import_bundle("s", *parse_export(saved)) == "exists"  # the very same conversation
    await svc.delete(task_id)
    assert await svc.import_bundle("s", *parse_export(saved)) == "ok"
    assert (await svc.bundle(task_id))[1] == msgs and export_json(*await svc.bundle(task_id)) == text
    markdown = export_markdown(*await svc.bundle(task_id), {"you": "You", "assistant": "Assistant", "tool": "Tool",
                                                             "meta": ""})
    assert "cut \ufffd here" in markdown and "tail \ufffd and a pair \U0001f600" in markdown
    assert markdown.encode("utf-8").decode("utf-8") == markdown


@pytest.mark.parametrize("text,reason", [
    ("not json", "not-json"), ("[]", "format"), ('{"format":"other"}', "format"),
    ('{"format":"agentbar-conversation","version":3}', "version"),
    ('{"format":"agentbar-conversation","version":1,"meta":{"taskId":"x"},"messages":[],"turns":[]}', "meta"),
])
def test_import_refuses_bad_files_clearly(text, reason):
    with pytest.raises(ImportRefused) as refused:
        parse_export(text)
    assert refused.value.reason == reason


def test_import_refuses_messages_that_are_not_the_slim_projection():
    good = {"format": "agentbar-conversation", "version": 1, "meta": {
        "taskId": "task_20260101_abcdef", "taskName": "t", "stageId": "s", "createdAt": "2026-01-01T00:00:00.000Z",
        "updatedAt": "2026-01-01T00:00:00.000Z", "stats": {"credits": 0, "totalTokens": 0, "inputTokens": 0,
                                                            "outputTokens": 0}}, "messages": [user("x")], "turns": []}
    assert parse_export(json.dumps(good))[1] == [user("x")]
    for bad in ([{"role": "system", "content": []}], [{"role": "user", "content": [{"type": "image"}]}], "x"):
        with pytest.raises(ImportRefused) as refused:
            parse_export(json.dumps({**good, "messages": bad}))
        assert refused.value.reason == "messages"


def test_markdown_keeps_text_verbatim_and_fences_tool_calls_longer_than_any_backtick_run():
    assert fence_for("a ```` b") == "`````" and fence_for("plain") == "```"
    from app.history.records import TaskMeta
    meta = TaskMeta(taskId="task_20260101_abcdef", taskName="T", stageId="s", createdAt=T0, updatedAt=T0)
    text = "line *one*\n```python\nx\n```"
    part = {"type": "tool-call", "toolCallId": "c", "toolName": "regenerate_scene", "args": {"instruction": "use ````"}}
    md = export_markdown(meta, [user(text), {"role": "assistant", "content": [part]}], [],
                         {"you": "You", "assistant": "Assistant", "tool": "Tool", "meta": "{created} {turns} {tokens}"})
    assert text in md and "`````json\n" in md and md.count("`````") == 2


def test_a_failed_replys_marker_is_its_status_in_exports_and_never_search_text():
    from app.history.text import plain_text
    from app.projection import failed_marker
    meta = TaskMeta(taskId="task_20260101_abcdef", taskName="T", stageId="s", createdAt=T0, updatedAt=T0)
    error = {"code": "server", "params": {"status": 503}}
    reply = {"role": "assistant", "content": [{"type": "text", "text": "partial answer"}, failed_marker(error)]}
    assert plain_text([user("question"), reply]) == "question\npartial answer"
    said = []
    md = export_markdown(meta, [user("question"), reply], [],
                         {"you": "You", "assistant": "Assistant", "tool": "Tool", "meta": "{created}"},
                         lambda e: said.append(e) or f"failed with {e['params']['status']}")
    assert said == [error] and "> ⚠ failed with 503" in md and "turn-error" not in md
    lookalike = {"type": "text", "text": failed_marker(error)["text"] + " "}  # not the canonical form: plain text
    assert lookalike["text"] in plain_text([{"role": "assistant", "content": [lookalike]}])


# -- runtime wiring ----------------------------------------------------------------

async def test_runtime_records_turns_with_demo_usage_and_duration_and_new_conversation_archives():
    clock = Clock()
    svc, _, _ = service(clock=clock)
    recorder = HistoryRecorder(svc)
    store = ThreadStore(MemoryStorage())
    runtime = AgentRuntime(store, DemoAgent(), clock=clock, history=recorder)
    runtime.hydrate()
    runtime.set_stage("s")
    await runtime.send("hello there")
    await recorder.drain()
    meta, turns = await svc.active("s")
    assert turns[0].model == "demo" and turns[0].usage.outputTokens > 10
    assert turns[0].usage.totalTokens == turns[0].usage.inputTokens + turns[0].usage.outputTokens
    assert turns[0].duration > 0 and turns[0].messageId == runtime.messages[-1].id
    stored = store.load("s")
    runtime.clear_thread()
    await recorder.drain()
    assert store.load("s") is None and await svc.total("s") == 1
    page = await svc.page("s")
    assert (await svc.bundle(page.items[0].taskId))[1] == stored
    resumed = await svc.resume("s", page.items[0].taskId, [], None, clock())
    assert runtime.replace_thread("s", resumed) and store.load("s") == stored
    await runtime.send("more")
    await recorder.drain()
    assert len((await svc.active("s"))[1]) == 2 and await svc.total("s") == 1  # continuing appends


class UnansweredPrompt(MemoryBackend):
    """``persist()`` as Firefox answers it: a permission prompt that stays pending until the person
    answers, here never (an asyncio future never set)."""

    def __init__(self):
        super().__init__()
        self.prompts = []

    async def persist(self):
        self.prompts.append(asyncio.get_running_loop().create_future())
        return await self.prompts[-1]


async def test_a_persist_prompt_nobody_answers_holds_no_history_write(monkeypatch):
    """New conversation asks for persistent storage (DESIGN.md §9) but never waits for the answer: the
    archive, the head of the next conversation and its turns are written while the prompt stays
    open; the next New conversation does not ask again (once per page)."""
    import app.runtime as runtime_module
    monkeypatch.setattr(runtime_module, "RECORD_WAIT_S", 3600.0)  # the panel waits for history as long as it takes
    clock, backend = Clock(), UnansweredPrompt()
    svc, notices, _ = service(clock=clock, backend=backend)
    recorder = HistoryRecorder(svc)
    runtime = AgentRuntime(ThreadStore(MemoryStorage()), DemoAgent(), clock=clock, history=recorder)
    runtime.hydrate()
    runtime.set_stage("s")
    await runtime.send("first question")
    await recorder.drain()
    runtime.clear_thread()
    # a guard that turns a stalled queue into a failure rather than a hung suite; nothing here is timed
    sent, _ = await asyncio.wait({asyncio.ensure_future(runtime.send("second question"))}, timeout=10)
    drained, _ = await asyncio.wait({asyncio.ensure_future(recorder.drain())}, timeout=10)
    await asyncio.sleep(0)  # the turn ends once its record is written
    assert sent and drained and not runtime.is_running
    assert len(backend.prompts) == 1 and not backend.prompts[0].done()  # asked, and still unanswered
    page = await svc.page("s")
    assert sorted(item.taskName for item in page.items) == ["first question", "second question"]
    meta, turns = await svc.active("s")
    assert meta.taskName == "second question" and turns[0].model == "demo" and turns[0].usage.totalTokens > 0
    runtime.clear_thread()
    await asyncio.wait({asyncio.ensure_future(recorder.drain())}, timeout=10)
    assert len(backend.prompts) == 1 and await svc.active("s") == (None, []) and notices == []


async def test_a_failed_persist_request_is_logged_and_the_archive_stands(caplog):
    """However the request for persistent storage fails, the archive is written and the failure is
    logged, not raised (nor left as an unhandled task error)."""
    class Refusing(MemoryBackend):
        async def persist(self):
            raise RuntimeError("no storage manager")

    backend = Refusing()
    svc, notices, _ = service(backend=backend)
    first = await add(svc, "s", "first")
    await asyncio.sleep(0)
    assert first in backend.raw("conversations") and backend.raw("heads") == {} and notices == []
    assert "no storage manager" in caplog.text


async def test_a_turn_too_big_for_local_storage_is_not_lost_by_the_turn_after_a_reload():
    """A turn localStorage could not hold stays in history (the head, kept whole by reconcile); after
    a reload the page goes on from the shorter stored thread, and its next turn must not be written
    over the head's messages: it is a branch of that conversation (DESIGN.md §17: it starts with its
    first message and goes another way), shown, and the big turn stays on the other branch (§5, §9:
    nothing is deleted but by a delete)."""
    from app.history.reconcile import stored_threads
    from app.history.tree import Tree

    backend, storage, clock, counter = MemoryBackend(), MemoryStorage(quota=20_000), Clock(), itertools.count()

    def page():  # a (re)load of the page: its thread store, history and runtime over what is stored
        svc = HistoryService(backend, clock=clock, random_bytes=lambda n: bytes([next(counter) % 256] * n))
        recorder = HistoryRecorder(svc)
        store = ThreadStore(MemoryStorage.shared_with(storage))
        runtime = AgentRuntime(store, DemoAgent(), clock=clock, history=recorder)
        runtime.hydrate()
        runtime.set_stage("s")
        return svc, recorder, store, runtime

    svc, recorder, store, runtime = page()
    await runtime.send("a small first question")
    await recorder.drain()
    big = "big " + "x" * 30_000
    await runtime.send(big)
    await recorder.drain()
    stored = ThreadStore(MemoryStorage.shared_with(storage))
    stored.hydrate(clock())
    assert len(runtime.messages) == 4 and len(stored.load("s")) == 2  # localStorage kept the first turn only
    svc, recorder, store, runtime = page()
    await svc.reconcile(stored_threads(store))
    assert len(runtime.messages) == 2
    await runtime.send("after the reload")
    await recorder.drain()
    assert await svc.total("s") == 1  # one conversation, two branches
    record = backend.raw("messages")[(await svc.active("s"))[0].taskId]
    tree = Tree.from_record(record["messages"], record.get("branches"), record.get("shown"))
    texts = [part.get("text", "") for m in tree.texts() for part in m.get("content", [])]
    shown = [part.get("text", "") for m in tree.path() for part in m["content"]]
    assert big in texts and "after the reload" in shown and big not in shown
    assert tree.siblings(tree.path_ids()[2]) == (2, 2)  # the turn after the reload is the big one's sibling
    # the meta of every turn on every branch: tokens spent are spent (§17)
    kept = await svc.bundle((await svc.active("s"))[0].taskId)
    assert kept.meta.turnCount == 3 and [t.turnId for t in kept.turns] == [1, 2, 3]
    assert [t.messageId for t in kept.turns] == [i for i in tree.ids if tree.nodes[i]["role"] == "assistant"]
    assert kept.meta.durationMs == sum(t.duration for t in kept.turns)
    assert kept.meta.stats.totalTokens == sum(t.usage.totalTokens for t in kept.turns) > 0


def test_a_thread_that_leaves_its_conversation_takes_the_turn_meta_of_its_own_messages_only():
    from app.history.records import TurnMeta, Usage
    from app.history.writes import carried_over

    def turn(n, message_id, tokens):
        return TurnMeta(turnId=n, timestamp=iso(n), usage=Usage(inputTokens=tokens, totalTokens=tokens),
                        duration=10 * n, messageId=message_id)

    held = [turn(1, "a1", 5), turn(2, "a2", 7), turn(3, None, 11), turn(4, "a4", 13)]
    messages = [{"role": "user", "id": "u1"}, {"role": "assistant", "id": "a1"},
                {"role": "user", "id": "u4"}, {"role": "assistant", "id": "a4"}, {"role": "user", "id": "a2"}]
    fresh = TaskMeta(taskId="task_20260101_aaaaaa", taskName="t", stageId="s", createdAt=1, updatedAt=1)
    meta, turns = carried_over(fresh, held, messages)
    assert [(t.turnId, t.messageId) for t in turns] == [(1, "a1"), (2, "a4")]  # a user message's id is no turn's
    assert (meta.turnCount, meta.durationMs, meta.stats.totalTokens, meta.stats.inputTokens) == (2, 50, 18, 18)
    assert [t.turnId for t in held] == [1, 2, 3, 4]  # the conversation it left keeps its own


async def test_a_stopped_turn_records_what_it_had():
    import asyncio
    clock = Clock()
    svc, _, _ = service(clock=clock)
    recorder = HistoryRecorder(svc)
    runtime = AgentRuntime(ThreadStore(MemoryStorage()), DemoAgent(), clock=clock, history=recorder)
    runtime.hydrate()
    runtime.set_stage("s")
    task = runtime.send("stop me soon please")
    for _ in range(5):
        await asyncio.sleep(0)
    runtime.stop()
    await asyncio.gather(task, return_exceptions=True)
    await recorder.drain()
    _, turns = await svc.active("s")
    assert len(turns) == 1 and 0 < turns[0].usage.outputTokens < 10 and turns[0].model == "demo"


async def test_the_segmenter_is_loaded_only_for_a_title_that_needs_it():
    loads = []

    async def prepare():
        loads.append(1)
    svc, _, _ = service(prepare=prepare)
    await svc.record_turn(ended("s", [user("plain ascii and 中文 " * 10)], usage={}, model="demo", duration_ms=1,
                                message_id=None), 1)
    await svc.record_turn(ended("s", [user("plain ascii and 中文 " * 10), user("😀" * 60, "u2")], usage={}, model="demo",
                                duration_ms=1, message_id=None), 2)
    assert loads == []  # the title comes from the first user text, which needs no segmenter
    await svc.archive("s", [user("plain ascii and 中文 " * 10)], 2)
    await svc.record_turn(ended("s", [user("👍🏽" * 60)], usage={}, model="demo", duration_ms=1, message_id=None), 3)
    assert loads == [1]
    assert (await svc.active("s"))[0].taskName == "👍🏽" * 50 + "…"


async def test_a_turn_without_reported_usage_stays_not_reported_when_read_back_and_exported():
    """DESIGN.md §12: "not reported" survives storage and the JSON export (never zero counts)."""
    from app.history.export import export_json, parse_export

    svc, _, _ = service()
    msgs = [{"role": "user", "content": [{"type": "text", "text": "q"}]},
            {"role": "assistant", "id": "a1", "content": [{"type": "text", "text": "r"}]}]
    await svc.record_turn(ended("intro-ml", msgs, usage=None, model="m", duration_ms=5, message_id="a1"), 1)
    svc.forget_active("intro-ml")  # read back from the backend, as after a reload
    meta, turns = await svc.active("intro-ml")
    assert turns[0].usage is None and meta.stats.totalTokens == 0
    _, _, imported = parse_export(export_json(meta, msgs, turns))
    assert imported[0].usage is None


def test_an_import_nested_deeper_than_the_limit_is_refused_before_parsing():
    """A crafted file of 100,000 nested arrays would exhaust the browser's stack inside
    ``json.loads`` and kill Pyodide: it is refused like any file that is not an export."""
    from app.history.export import ImportRefused, parse_export

    for text in ("[" * 100_000 + "]" * 100_000, '{"a":' * 70 + "1" + "}" * 70):
        with pytest.raises(ImportRefused) as info:
            parse_export(text)
        assert info.value.reason == "depth"
    with pytest.raises(ImportRefused):  # brackets inside strings do not count as nesting
        parse_export('{"format":"x","s":"' + "[" * 500 + '"}')


class SlowWrites(MemoryBackend):
    """A backend whose writes wait for ``gate`` (an IndexedDB commit that takes its time)."""

    def __init__(self):
        super().__init__()
        import asyncio
        self.gate = asyncio.Event()

    async def write(self, ops):
        await self.gate.wait()
        return await super().write(ops)


def slow_history_runtime() -> tuple[AgentRuntime, SlowWrites, HistoryRecorder]:
    """A runtime on course ``s`` whose history writes wait for ``backend.gate``."""
    clock = Clock()
    backend = SlowWrites()
    svc, _, _ = service(clock=clock, backend=backend)
    recorder = HistoryRecorder(svc)
    runtime = AgentRuntime(ThreadStore(MemoryStorage()), DemoAgent(), clock=clock, history=recorder)
    runtime.hydrate()
    runtime.set_stage("s")
    return runtime, backend, recorder


async def test_a_turn_reads_as_running_until_its_history_record_is_written():
    """A reload once the panel says idle must find the turn's meta (DESIGN.md §9): the runtime
    reports idle only after the history write of the turn is done."""
    runtime, backend, recorder = slow_history_runtime()
    seen = []
    runtime.subscribe(lambda: seen.append(runtime.is_running))
    await runtime.send("hello there")
    for _ in range(5):
        await __import__("asyncio").sleep(0)
    assert runtime.is_running and seen[-1] is True  # saved to localStorage, history not written yet
    assert runtime.send("too early") is None
    assert backend.raw("turns") == {}
    backend.gate.set()
    await recorder.drain()
    await __import__("asyncio").sleep(0)
    assert not runtime.is_running and seen[-1] is False
    assert list(backend.raw("turns").values())[0]["turns"][0]["model"] == "demo"


async def test_a_history_write_that_hangs_holds_the_panel_only_for_a_bounded_time(monkeypatch):
    import asyncio

    import app.runtime as runtime_module
    monkeypatch.setattr(runtime_module, "RECORD_WAIT_S", 0.01)
    runtime, backend, recorder = slow_history_runtime()
    await runtime.send("hello there")
    assert runtime.is_running
    await asyncio.sleep(0.05)
    assert not runtime.is_running
    task = runtime.send("next")
    assert task is not None
    await task
    backend.gate.set()
    await recorder.drain()
    assert len((await recorder.service.active("s"))[1]) == 2  # both turns written, in order, once the store answered


# -- stats text with plural forms (DESIGN.md §7) -----------------------------------------

@pytest.mark.parametrize(("locale", "turns", "tokens", "expected"), [
    ("en-US", 1, 1, "1 turn · 1 token · 0.5 s mean response"),
    ("en-US", 2, 42, "2 turns · 42 tokens · 0.5 s mean response"),
    ("ru-RU", 21, 3, "21 ход · 3 токена · средний ответ 0,5 с"),
    ("ru-RU", 25, 11, "25 ходов · 11 токенов · средний ответ 0,5 с"),
    ("ar-SA", 1, 2, "دور واحد · رمزان · متوسط الاستجابة 0.5 ث"),
    ("pt-BR", 1, 5, "1 turno · 5 tokens usados · resposta média de 0,5 s"),
    ("ja-JP", 1, 1, "1 ターン · 1 トークン · 平均応答 0.5 秒"),
])
def test_stats_lines_use_the_plural_form_of_each_count(locale, turns, tokens, expected):
    from app.history.labels import stats_text
    from app.i18n import Translator

    stats = ConversationStats(turns=turns, total_tokens=tokens, mean_duration_ms=500)
    assert stats_text(Translator(locale), stats) == expected


def test_item_turn_and_markdown_lines_use_plural_forms_in_every_locale():
    from app.history.labels import item_stats_text, markdown_meta, turn_meta_text
    from app.history.records import TaskMeta, TurnMeta
    from app.i18n import LOCALES, Translator

    en = Translator("en-US")
    assert item_stats_text(en, ConversationStats(turns=1, total_tokens=1)) == "1 turn · 1 token"
    turn = TurnMeta(turnId=1, timestamp=iso(T0), usage={"inputTokens": 0, "outputTokens": 1, "totalTokens": 1},
                    model="demo", duration=1200)
    assert turn_meta_text(en, turn) == "demo · 1 token · 1.2 s"
    meta = TaskMeta(taskId=new_task_id(T0), taskName="t", stageId="s", createdAt=T0, updatedAt=T0, turnCount=1,
                    stats={"totalTokens": 1})
    line = markdown_meta(en, meta).format(created="C", updated="U")
    assert line == "Created C · updated U · 1 turn · 1 token"
    for locale in LOCALES:  # every locale phrases both counts (no placeholder left, no "{count}")
        t = Translator(locale)
        for text in (item_stats_text(t, ConversationStats(turns=1, total_tokens=5)), turn_meta_text(t, turn),
                     markdown_meta(t, meta).format(created="C", updated="U")):
            assert "{" not in text and "}" not in text, (locale, text)
        assert item_stats_text(t, ConversationStats(turns=1, total_tokens=5)) != item_stats_text(
            t, ConversationStats(turns=2, total_tokens=5)), locale


def test_seconds_use_the_locales_decimal_mark():
    from app.history.labels import turn_meta_text
    from app.history.records import TurnMeta
    from app.i18n import Translator

    turn = TurnMeta(turnId=1, timestamp=iso(T0), usage=None, model="demo", duration=400)
    assert "0,4" in turn_meta_text(Translator("ru-RU"), turn) and "0.4" not in turn_meta_text(Translator("ru-RU"), turn)
    assert "0,4" in turn_meta_text(Translator("pt-BR"), turn)
    assert "0.4" in turn_meta_text(Translator("en-US"), turn) and "0.4" in turn_meta_text(Translator("ja-JP"), turn)


async def test_start_up_reconciles_every_stored_thread_read_through_the_store():
    """The threads reconcile adopts come from ``ThreadStore.stage_ids()`` (no second parse of the
    stored value in the page, no ``eval``): each course with messages and its ``updatedAt``."""
    from pathlib import Path

    from app.history.reconcile import stored_threads
    from app.history.tree import Tree

    store = ThreadStore(MemoryStorage())
    store.hydrate(T0)
    store.save("a", [user("in a")], T0 + 1)
    store.save("__proto__", [user("odd id")], T0 + 2)
    store.save("empty", [], T0 + 3)
    threads = stored_threads(store)
    assert threads == {"a": ([user("in a")], T0 + 1), "__proto__": ([user("odd id")], T0 + 2)}
    svc, _, _ = service()
    assert sorted(await svc.reconcile(threads)) == ["__proto__", "a"]
    assert (await svc.active("a"))[0].taskName == "in a"
    view = (Path(__file__).parents[2] / "app" / "browser" / "history_view.py").read_text(encoding="utf-8")
    assert "js.eval" not in view and "stored_threads(self.store)" in view


async def _all_pages(svc, stage, **kw):
    shown, cursor, pages = [], None, 0
    while True:
        page = await svc.page(stage, cursor, **kw)
        shown += [m.taskId for m in page.items]
        cursor, pages = page.cursor, pages + 1
        assert len(page.items) <= PAGE_SIZE
        if not page.has_more:
            return shown, pages


async def test_sort_and_range_apply_to_the_plain_list_with_cursor_pages():
    """DESIGN.md §9: sort newest / oldest / most tokens and the time range hold for the list itself,
    not only for search results; pages come from a cursor: no duplicate, no skip."""
    clock = Clock()
    svc, _, _ = service(clock=clock)
    ids, tokens = [], [(i * 7) % 5 for i in range(23)]  # ties in tokens: newest first among equals
    for i in range(23):
        clock.now += 86_400_000  # one a day
        ids.append(await add(svc, "s", f"c{i}", tokens=(tokens[i], 0)))
    await add(svc, "other", "elsewhere")
    newest, pages = await _all_pages(svc, "s")
    assert newest == ids[::-1] and pages == 3
    oldest, _ = await _all_pages(svc, "s", sort="oldest")
    assert oldest == ids
    by_tokens, _ = await _all_pages(svc, "s", sort="tokens")
    assert by_tokens == [ids[i] for i in sorted(range(23), key=lambda i: (-tokens[i], -i))]
    assert len(set(by_tokens)) == 23
    since = clock.now - 12 * 86_400_000  # the last 12 days hold the 12 newest (plus the boundary one)
    recent = [i for i in ids if (await svc.get(i)).updatedAt >= since]
    assert len(recent) in (12, 13)
    for sort, expected in (("newest", recent[::-1]), ("oldest", recent),
                           ("tokens", sorted(recent, key=lambda t: (-tokens[ids.index(t)], -ids.index(t))))):
        shown, _ = await _all_pages(svc, "s", sort=sort, since_ms=since)
        assert shown == expected, sort
    assert await svc.total("s", since) == len(recent) and await svc.total("s") == 23
    for sort in ("newest", "oldest", "tokens"):  # each page carries the list's total, range included
        assert (await svc.page("s", sort=sort)).total == 23
        assert (await svc.page("s", sort=sort, since_ms=since)).total == len(recent)


async def test_oldest_first_pages_reach_what_arrives_or_moves_while_the_list_is_open():
    clock = Clock()
    svc, _, _ = service(clock=clock)
    ids = [await add(svc, "s", f"c{i}") for i in range(15)]
    first = await svc.page("s", sort="oldest")
    assert [m.taskId for m in first.items] == ids[:10]
    arrived = await add(svc, "s", "new")
    await svc.resume("s", ids[12], [], None, clock())  # not shown yet; moves to the end
    await svc.record_turn(ended("s",
                                [user("c12", "u-c12"), reply("ok", "a-c12"), user("more", "u-more"), reply("more")],
                                usage=None, model="demo", duration_ms=1, message_id=None), clock())
    rest = await svc.page("s", first.cursor, sort="oldest")
    shown = [m.taskId for m in first.items + rest.items]
    assert not rest.has_more and len(shown) == len(set(shown)) == 16
    assert shown[-2:] == [arrived, ids[12]]


@pytest.mark.parametrize(("name", "kept"), [
    ("x" * 80, "x" * 50 + "…"),
    ("👨‍👩‍👧‍👦" * 60, "👨‍👩‍👧‍👦" * 50 + "…"),
    ("e\u0301" * 51, "e\u0301" * 50 + "…"),
    ("  many \n\t spaces  ", "many spaces"),
    ("y" * 50 + "…", "y" * 50 + "…"),  # already cut by the rule: an export imports back unchanged
    ("👍🏽" * 50 + "…", "👍🏽" * 50 + "…"),
    ("bad \ud800", "bad \ufffd"),
    ("   ", "q"),  # a blank title: the first question titles it, as any title (DESIGN.md §9)
])
async def test_an_imported_title_obeys_the_50_grapheme_rule(name, kept):
    loads = []

    async def prepare():
        loads.append(1)
    svc, _, _ = service(prepare=prepare)
    msgs = [user("q"), reply("r")]
    meta = TaskMeta(taskId=new_task_id(T0), taskName=name, stageId="elsewhere", createdAt=T0, updatedAt=T0)
    text = export_json(meta, msgs, [])
    assert await svc.import_bundle("s", *parse_export(text)) == "ok"
    stored = await svc.get(meta.taskId)
    assert stored.taskName == kept and stored.stageId == "s"
    assert loads == ([1] if name[0] in "👨e👍" else [])  # the segmenter is installed only when a cut needs it
    again = export_json(*await svc.bundle(meta.taskId))
    await svc.delete(meta.taskId)
    assert await svc.import_bundle("s", *parse_export(again)) == "ok"
    assert export_json(*await svc.bundle(meta.taskId)) == again  # cutting twice changes nothing


async def test_a_thread_history_cannot_keep_exports_and_imports_back_unchanged():
    """Asked before New conversation without history (DESIGN.md §5): the download is a JSON export
    that imports back once history works, messages unchanged, title by the rule of every title."""
    from app.history.export import export_unkept

    msgs = [user("  keep   me " + "😀" * 60, "u1"), reply("answer", "a1")]
    task_id, text = export_unkept("intro-ml", msgs, T0, lambda n: b"\x01" * n)
    assert TASK_ID.fullmatch(task_id) and task_id.startswith("task_20260528_")
    meta, messages, turns = parse_export(text)
    assert meta.taskId == task_id and messages == msgs and turns == [] and meta.stageId == "intro-ml"
    assert meta.taskName == title_of(msgs) and meta.taskName.endswith("…")
    svc, _, _ = service()
    assert await svc.import_bundle("other", meta, messages, turns) == "ok"
    assert (await svc.bundle(task_id))[1] == msgs


async def test_new_conversation_must_ask_while_history_cannot_keep_the_thread():
    """``keeps_conversations``: False when history is unavailable, and while the last write failed
    for lack of space (DESIGN.md §5: nothing is lost silently); a write that works again clears it."""
    backend = MemoryBackend()
    svc, _, _ = service(backend=backend)
    assert svc.keeps_conversations
    await add(svc, "s", "x")
    backend.quota_chars = 10
    assert await svc.record_turn(ended("s", [user("big" * 100)], usage={}, model="demo", duration_ms=1,
                                       message_id=None), 1) is None
    assert not svc.keeps_conversations
    await svc.page("s")  # reading works on a full disk: it proves nothing about space
    assert not svc.keeps_conversations
    backend.quota_chars = None
    assert await svc.record_turn(ended("s", [user("small")], usage={}, model="demo", duration_ms=1,
                                       message_id=None), 2)
    assert svc.keeps_conversations
    failing = MemoryBackend()
    gone, _, _ = service(backend=failing)
    failing.fail_next = "unavailable"
    assert await gone.total("s") == 0 and not gone.keeps_conversations


# -- threads adopted without their turn meta (app/history/adopted.py) ----------------------------------

def three_turns(*, created=None):
    """A thread of 3 answered questions (slim, as maic-agent-threads holds it) and a last unanswered one."""
    messages = []
    for i in range(3):
        messages += [user(f"question {i}", f"u{i}"), reply(f"answer {i}", f"a{i}")]
    if created is not None:
        for i, message in enumerate(messages):
            message["createdAt"] = created + i * 1000
    return messages + [user("unanswered", "u9")]


async def test_a_thread_adopted_at_start_up_counts_its_turns_not_reported_and_takes_its_updated_at():
    """The TS original's thread, or one a wiped history lacks, listed "0 turns · 0 tokens", "just now";
    after one more turn it counted 1 turn."""
    from app.history.labels import item_stats_text
    from app.i18n import Translator

    svc, _, clock = service()
    updated = T0 - 3_600_000
    assert await svc.reconcile({"s": (three_turns(), updated)}) == ["s"]
    meta, turns = await svc.active("s")
    assert (meta.turnCount, meta.createdAt, meta.updatedAt) == (3, updated, updated)
    assert [(t.turnId, t.usage, t.timestamp) for t in turns] == [(n, None, iso(updated)) for n in (1, 2, 3)]
    stats = ConversationStats.of(meta)
    assert item_stats_text(Translator("en-US").t, stats) == "3 turns · tokens not reported"
    [item] = (await svc.page("s")).items
    assert (item.turnCount, item.updatedAt) == (3, updated)
    messages = three_turns() + [reply("answer 9", "a9")]
    await svc.record_turn(ended("s", messages, usage={"inputTokens": 1, "outputTokens": 2, "totalTokens": 3},
                                model="demo", duration_ms=10, message_id="a9"), updated + 1)
    meta, turns = await svc.active("s")
    assert meta.turnCount == 4 and [t.turnId for t in turns] == [1, 2, 3, 4] and meta.stats.totalTokens == 3


async def test_an_adopted_thread_takes_its_times_from_its_messages_created_at_where_present():
    svc, _, _ = service()
    created = T0 - 7_200_000
    await svc.reconcile({"s": (three_turns(created=created), T0 - 3_600_000)})
    meta, turns = await svc.active("s")
    assert (meta.createdAt, meta.updatedAt) == (created, T0 - 3_600_000)
    assert [(t.timestamp, t.duration) for t in turns] == [(iso(created + (2 * n + 1) * 1000), 1000) for n in range(3)]
    assert meta.durationMs == 3000


async def test_archive_and_resume_adopt_a_thread_history_lacks_with_its_turns():
    svc, _, _ = service()
    task_id = await svc.archive("s", three_turns(), T0 - 60_000)
    meta = await svc.get(task_id)
    assert (meta.turnCount, meta.updatedAt) == (3, T0 - 60_000)
    other, _, _ = service()
    first = await add(other, "s", "first")
    await other.resume("s", first, three_turns(), T0 - 50_000, T0)
    items = (await other.page("s")).items
    assert sorted((i.turnCount, i.updatedAt == T0 - 50_000) for i in items) == [(1, False), (3, True)]


def test_the_originals_value_imports_each_thread_with_its_turns_counted():
    from app.history.original import read_original

    value = json.dumps({"state": {"threads": {"k": {"messages": three_turns(), "updatedAt": T0}}}, "version": 1})
    read = read_original(value, T0 + 1000)
    [(meta, _)] = read.documents
    [turns] = read.turns
    assert meta.turnCount == 3 and [t.usage for t in turns] == [None] * 3 and meta.updatedAt == T0


@pytest.mark.parametrize("text,deep,sliced", [
    ('{"a":"' + "x" * 5000 + '","b":[' + '"[[[\\"\\\\",' * 300 + "1]}", False, True),
    ('["\\\\\\\\", "\\"", "]]]]", ' + "[" * 70 + "]" * 70 + "]", True, True),
    ('["' + "\\\\" * 3000 + '", ' + "[" * 63 + "]" * 63 + "]", False, False),  # one run: passed at C speed
    ('["' + "\\\\" * 3000 + '\\"]]", ' + "[" * 63 + "]" * 63 + '"]', False, False),
    ('["' + "z" * 3000 + '\\"]]", ' + "[" * 63 + "]" * 63 + '"]', False, True),
    ("[" * 65 + '"' + "y" * 20_000 + '"' + "]" * 65, True, True),
    ('["unterminated ' + "[" * 100, False, False),
])
def test_the_depth_check_walks_strings_in_slices_and_counts_only_brackets_outside_them(text, deep, sliced):
    """``depth_steps`` (DESIGN.md §14: an import is checked in slices) skips strings, escaped quotes
    and backslashes inside them included, and yields between windows of the text and inside a long
    string: a text of millions of characters is never one step over the whole of it."""
    from app.history.export import DEPTH_SLICE_CHARS, ImportRefused, depth_steps

    steps, yields = depth_steps(text, slice_chars=500), 0
    try:
        for _ in steps:
            yields += 1
        refused = False
    except ImportRefused as error:
        assert error.reason == "depth"
        refused = True
    assert refused is deep
    assert yields >= len(text) // 500 - 2 or refused or not sliced
    assert DEPTH_SLICE_CHARS >= 10_000  # a window is not a step per character


def _parse_iso_by_strptime(text):
    """``parse_iso`` as it was first written (``strptime``): the reference its faster reading keeps to."""
    import datetime as dt
    import re

    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", text):
        raise ValueError(text)
    moment = dt.datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.timezone.utc)
    return int(moment.timestamp()) * 1000 + int(text[20:23])


@pytest.mark.parametrize("text", [
    "2026-05-28T20:26:40.123Z", "1970-01-01T00:00:00.000Z", "1969-12-31T23:59:59.999Z", "0001-01-01T00:00:00.000Z",
    "9999-12-31T23:59:59.999Z", "2024-02-29T12:00:00.000Z", "2023-02-29T12:00:00.000Z", "2026-04-31T00:00:00.000Z",
    "2026-13-01T00:00:00.000Z", "2026-00-10T00:00:00.000Z", "2026-01-00T00:00:00.000Z", "2026-01-32T00:00:00.000Z",
    "2026-01-01T24:00:00.000Z", "2026-01-01T23:60:00.000Z", "2026-01-01T23:59:60.000Z", "2026-01-01T23:59:61.000Z",
    "0000-01-01T00:00:00.000Z", "2026-05-28T20:26:40Z", "2026-05-28T20:26:40.12Z", "2026-05-28T20:26:40.1234Z",
    "2026-05-28T20:26:40.123+00:00", "2026-05-28 20:26:40.123Z", "2026-05-28T20:26:40.123z", "2026-05-28T20:26:40.123Z\n",
    " 2026-05-28T20:26:40.123Z", "+2026-05-28T20:26:40.123Z", "2026-5-28T20:26:40.123Z", "", "Z",
    "٢٠٢٦-٠٥-٢٨T٢٠:٢٦:٤٠.١٢٣Z", "２０２６-０５-２８T２０:２６:４０.１２３Z", "2026-05-28T20:26:40.１２３Z",
])
def test_parse_iso_takes_and_refuses_exactly_what_strptime_did(text):
    try:
        expected = _parse_iso_by_strptime(text)
    except ValueError:
        with pytest.raises(ValueError):
            parse_iso(text)
    else:
        assert parse_iso(text) == expected


def test_parse_iso_reads_back_every_iso_time():
    import random

    rng = random.Random(7)
    for ms in [0, -1, 1, 951_782_400_000, 253_402_300_799_999, -30_610_224_000_000] + \
            [rng.randrange(-30_610_224_000_000, 253_402_300_800_000) for _ in range(2000)]:
        assert parse_iso(iso(ms)) == ms == _parse_iso_by_strptime(iso(ms))
    with pytest.raises(TypeError):
        parse_iso(None)
async def test_a_turn_of_a_long_message_is_indexed_in_slices_with_the_records_of_one_step():
    """DESIGN.md §13, §14: a turn's search record (folding, terms) of a 300,000-character message is
    built in slices with the page's pause awaited between them, not in one step; what is stored is
    what the service without pauses stores."""
    pauses = []

    async def pause():
        pauses.append(1)

    long_text = ("lorem ipsum dolor sit amet 中文 " * 12_000)[:300_000]
    msgs = [user(long_text, "u-long"), reply("ok", "a-long")]
    stored = []
    for kw in ({}, {"pause": pause}):
        backend = MemoryBackend()
        svc, _, _ = service(backend=backend, **kw)
        await svc.record_turn(ended("s", msgs, usage={}, model="demo", duration_ms=1, message_id="a-long"), 1)
        later = msgs + [user("again " + long_text, "u-2"), reply("ok", "a-2")]
        await svc.record_turn_in((await svc.active("s"))[0].taskId, ended("s", later, usage={}, model="demo",
                                                                          duration_ms=1, message_id="a-2"))
        stored.append({table: backend.raw(table) for table in ("conversations", "messages", "search", "texts")})
    assert len(pauses) >= 20  # each of the two turns: its text, folding and terms in many slices
    assert stored[0] == stored[1] and stored[0]["search"]


async def test_an_undo_after_the_conversation_came_back_by_an_import_keeps_both_never_writes_over_it():
    """Undo delete puts back what the delete removed; when that id came back meanwhile (its export
    imported with a turn more, made elsewhere), the undo keeps both as one conversation and never
    writes over what came back (DESIGN.md §5: nothing is lost silently); a shorter export imported
    meanwhile gets back what only the deleted one held, dated after it (``app.history.merge.join``)."""
    for extra in (True, False):
        svc, _, _ = service()
        task_id = await add(svc, "s", "first")
        whole = await svc.bundle(task_id)
        messages, turns = whole.messages, whole.turns
        if extra:  # continued on another machine, then exported
            messages = messages + [user("more", "u-more"), reply("yes", "a-more")]
            turns = turns + [turns[0].model_copy(update={"turnId": 2, "messageId": "a-more"})]
            meta = whole.meta.model_copy(update={"turnCount": 2, "updatedAt": whole.meta.updatedAt + 50})
        else:  # an older export: its first question only, unanswered
            messages, turns, meta = messages[:1], [], whole.meta.model_copy(update={"turnCount": 0})
        assert await svc.delete(task_id)
        assert await svc.import_bundle("s", meta, messages, turns) == "ok"
        came = await svc.bundle(task_id)
        assert await svc.undo() == task_id and await svc.total("s") == 1
        kept = await svc.bundle(task_id)
        if not extra:  # the undo wrote the join: dated after what came back, as a turn is (its place in the list)
            assert kept.meta.updatedAt > came.meta.updatedAt
        expected = whole.messages + ([user("more", "u-more"), reply("yes", "a-more")] if extra else [])
        assert [m["id"] for m in kept.messages] == [m["id"] for m in expected]
        assert kept.meta.turnCount == len(kept.turns) == (2 if extra else 1)


async def test_an_import_of_a_kept_conversation_continued_elsewhere_joins_it_and_another_under_its_id_is_a_copy():
    """Import JSON as a backup's restore compares (DESIGN.md §14): the same export again changes
    nothing (``exists``); an export of the conversation continued on another machine adds what it
    holds to the one kept (``extended``, one conversation, every turn counted); another conversation
    under a kept task id is added beside it under a new id and a copy's title (``copy``), never
    reported as already there while nothing of it was kept (DESIGN.md §5)."""
    svc, _, _ = service()
    task_id = await add(svc, "s", "first")
    whole = await svc.bundle(task_id)
    assert await svc.import_bundle("s", whole.meta, whole.messages, whole.turns) == "exists"
    more = whole.messages + [user("more", "u-more"), reply("yes", "a-more")]
    turns = whole.turns + [whole.turns[0].model_copy(update={"turnId": 2, "messageId": "a-more"})]
    later = whole.meta.model_copy(update={"turnCount": 2, "updatedAt": whole.meta.updatedAt + 50})
    assert await svc.import_bundle("s", later, more, turns) == "extended"
    kept = await svc.bundle(task_id)
    assert [m["id"] for m in kept.messages] == [m["id"] for m in more] and kept.meta.turnCount == 2
    other = [user("unrelated", "u-other"), reply("no", "a-other")]
    assert await svc.import_bundle("s", whole.meta, other, []) == "copy"
    items = (await svc.page("s")).items
    assert len(items) == 2 and (await svc.bundle(task_id)).messages == kept.messages
    [copy] = [m for m in items if m.taskId != task_id]
    assert copy.taskName == whole.meta.taskName + " (2)" and (await svc.bundle(copy.taskId)).messages == other


async def test_an_import_that_adds_to_the_active_conversation_is_shown_and_the_next_turn_never_writes_over_it():
    """A file adding a turn to the course's active conversation (its dates unchanged, its turn without a
    meta) joins it; the change carries the new shown path (the panel shows it, ``ActiveThread.follow``)
    and the next turn of a tab that still shows the path before keeps what the file added, as a branch
    (DESIGN.md §5: nothing lost silently; §17)."""
    svc, _, _ = service()
    heard = []
    svc.changes.subscribe(heard.append)
    thread = [user("q1", "u-1"), reply("a1", "a-1")]
    await svc.record_turn(ended("s", thread, message_id="a-1"), 1)
    task_id = (await svc.active("s"))[0].taskId
    await svc.record_turn(ended("s", thread + [user("q2", "u-2"), reply("a2", "a-2")], message_id="a-2",
                                conversation_id=task_id, base=thread), 2)
    whole = await svc.bundle(task_id)
    added = whole.messages + [user("from the file", "u-file"), reply("filed", "a-file")]
    assert await svc.import_bundle("s", whole.meta, added, whole.turns) == "extended"
    assert [m["id"] for m in heard[-1].head] == [m["id"] for m in added]
    shown_before = whole.messages  # another tab, or a panel not redrawn yet
    await svc.record_turn(ended("s", shown_before + [user("q3", "u-3"), reply("a3", "a-3")], message_id="a-3",
                                conversation_id=task_id, base=shown_before), 3)
    tree = await svc.branches("s")
    assert {"u-file", "a-file", "u-3", "a-3"} <= set(tree.ids) and (await svc.total("s")) == 1
