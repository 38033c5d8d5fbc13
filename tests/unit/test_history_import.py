"""Imports checked to the exact record shapes, before anything is written (DESIGN.md §14)."""

from __future__ import annotations

import json

import pytest

from app.history.export import (MAX_IMPORT_BYTES, ImportRefused, check_size, export_json, parse_export,
                                parse_export_sliced)
from app.history.records import MAX_SAFE_INTEGER, TaskMeta, parse_iso
from tests.unit.test_history import T0, reply, service, user
from tests.unit.turn_events import ended

NOW = T0 + 86_400_000 * 30
DAY = 86_400_000


def document(meta=None, turns=None, text="hello"):
    base = {"taskId": "task_20260101_abcdef", "taskName": "t", "stageId": "s",
            "createdAt": "2026-05-01T00:00:00.000Z", "updatedAt": "2026-05-02T00:00:00.000Z",
            "stats": {"credits": 0, "totalTokens": 3, "inputTokens": 1, "outputTokens": 2}}
    return {"format": "agentbar-conversation", "version": 1, "meta": {**base, **(meta or {})},
            "messages": [user(text), reply("ok")],
            "turns": turns if turns is not None else [
                {"turnId": 1, "timestamp": "2026-05-02T00:00:00.000Z", "model": "demo", "duration": 5,
                 "usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}, "messageId": "a"}]}


def refused(doc, now=NOW) -> str:
    with pytest.raises(ImportRefused) as info:
        parse_export(json.dumps(doc), now)
    return info.value.reason


def test_a_file_over_50_mb_is_refused_before_it_is_read():
    check_size(MAX_IMPORT_BYTES)
    with pytest.raises(ImportRefused) as info:
        check_size(MAX_IMPORT_BYTES + 1)
    assert info.value.reason == "size"


@pytest.mark.parametrize("field,value", [("totalTokens", 10**22), ("inputTokens", -1_000_000),
                                         ("outputTokens", MAX_SAFE_INTEGER + 1), ("credits", 1e30)])
def test_counts_negative_or_past_2_53_are_refused(field, value):
    assert refused(document({"stats": {"credits": 0, "totalTokens": 3, "inputTokens": 1, "outputTokens": 2,
                                       field: value}})) == "numbers"


@pytest.mark.parametrize("turn", [{"usage": {"inputTokens": 0, "outputTokens": 0, "totalTokens": 10**22}},
                                  {"duration": -5}, {"turnId": 2**60}])
def test_a_turns_numbers_are_checked_too(turn):
    good = document()["turns"][0]
    assert refused(document(turns=[{**good, **turn}])) == "numbers"


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity"])
def test_nan_or_an_infinite_count_is_refused_for_what_it_is_not_as_negative_or_too_large(text):
    """``"totalTokens": NaN`` (or an infinity, which Python's parser reads): neither negative nor too
    large, so it has a reason of its own, ``not-finite``, said in every locale (DESIGN.md §14)."""
    from app.history.labels import import_refusal
    from app.i18n import Translator

    for number in ('"totalTokens": 3', '"duration": 5'):  # the meta's stats, a turn's duration
        raw = json.dumps(document()).replace(number, number.split(":")[0] + ": " + text, 1)
        assert raw != json.dumps(document())
        with pytest.raises(ImportRefused) as info:
            parse_export(raw, NOW)
        assert info.value.reason == "not-finite"
    for locale in ("en-US", "ar-SA", "ja-JP", "ko-KR", "pt-BR", "ru-RU", "zh-CN", "zh-TW"):
        t = Translator(locale)
        key, said = import_refusal(t, "not-finite")
        assert key == "not-finite" and said != t("history.importError.numbers") and "importError" not in said


def test_the_largest_exact_integer_is_kept():
    meta, _, _ = parse_export(json.dumps(document({"stats": {"totalTokens": MAX_SAFE_INTEGER}})), NOW)
    assert meta.stats.totalTokens == MAX_SAFE_INTEGER


def test_impossible_dates_are_refused():
    assert refused(document({"createdAt": "2026-05-03T00:00:00.000Z"})) == "dates"  # created after updated
    assert refused(document({"updatedAt": "9999-12-31T23:59:59.999Z"})) == "dates"
    late = {**document()["turns"][0], "timestamp": "9999-01-01T00:00:00.000Z"}
    assert refused(document(turns=[late])) == "dates"
    updated = parse_iso("2026-05-02T00:00:00.000Z")
    later = parse_export(json.dumps(document()), updated - DAY // 2)  # another device's clock, hours ahead
    assert later[0].updatedAt == updated
    assert refused(document(), now=updated - DAY - 1) == "dates"


def test_stored_records_cannot_hold_impossible_values_either():
    base = dict(taskId="task_20260101_abcdef", taskName="t", stageId="s", createdAt=5, updatedAt=9)
    TaskMeta.model_validate(base)
    for bad in ({"createdAt": 10}, {"turnCount": -1}, {"stats": {"totalTokens": 10**22}},
                {"updatedAt": MAX_SAFE_INTEGER + 1}):
        with pytest.raises(ValueError):
            TaskMeta.model_validate({**base, **bad})


_HEAP_SCRIPT = f"""
import json, resource
resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000))
from app.history.export import ImportRefused, parse_export
from tests.unit.test_history_import import document
text = 'a"b\\\\c\\n' * 6_000_000  # escapes everywhere: the worst case for skipping strings
try:  # checked for depth and decoded whole, then refused for its length (app.history.limits)
    parse_export(json.dumps(document(text=text)), {NOW})
except ImportRefused as refused:
    assert refused.reason == "too-long", refused
else:
    raise AssertionError("a message past the limit was accepted")
print("ok", len(text))
"""
_HEAP_CHILD: list = []


def _start_heap_child():
    """The bounded-heap child interpreter (~1.5 s), started when this module is collected so it runs
    beside the rest of the suite; its test waits for it."""
    import os
    import subprocess
    import sys

    if not _HEAP_CHILD and os.environ.get("AGENTBAR_HEAP_CHILD") != "1":
        env = {**os.environ, "AGENTBAR_HEAP_CHILD": "1"}  # the child imports this module: it starts no child
        _HEAP_CHILD.append(subprocess.Popen([sys.executable, "-c", _HEAP_SCRIPT], stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, text=True, env=env))


_start_heap_child()


def test_a_big_message_parses_within_a_bounded_heap():
    """The nesting check used to run a regex over the whole text whose backtracking stack grew with
    every character (``MemoryError`` in the browser's bounded wasm heap); it now removes strings with
    linear passes and walks only the brackets. Modelled here by a 1.5 GB address-space limit on a
    child interpreter, about what Pyodide's heap holds."""
    stdout, stderr = _HEAP_CHILD[0].communicate(timeout=300)
    assert stdout.startswith("ok 36000000"), stderr[-2000:]


async def test_sliced_parsing_gives_the_event_loop_its_turn_and_matches_the_plain_parse(monkeypatch):
    import asyncio

    doc = document()
    doc["messages"] = [m for i in range(200) for m in (user(f"q{i}", f"u{i}"), reply(f"r{i}", f"a{i}"))]
    text = json.dumps(doc)
    pauses = []
    real_sleep = asyncio.sleep

    async def sleep(delay):
        pauses.append(delay)
        await real_sleep(delay)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    ticks = iter(range(10**6))
    result = await parse_export_sliced(text, NOW, budget_s=5, clock=lambda: next(ticks))
    assert result == parse_export(text, NOW)
    assert len(pauses) >= 400 // 5  # one pause per 5 slices of this clock: one slice per message at least


async def test_a_corrected_reimport_replaces_a_record_that_can_no_longer_be_read():
    """A record an older version wrote with a count IndexedDB could not keep exactly (read back as a
    float) is damaged: it is still listed (as damaged) and deletable, and importing the corrected
    file over it works."""
    from app.records import MemoryBackend

    backend = MemoryBackend()
    svc, notices, _ = service(backend=backend)
    text = json.dumps(document())
    meta, messages, turns = parse_export(text, NOW)
    backend.put_raw("conversations", {**meta.model_dump(), "stats": {**meta.stats.model_dump(), "totalTokens": 1e22}})
    backend.put_raw("messages", {"taskId": meta.taskId, "messages": messages})
    page = await svc.page("s")
    assert [(i.taskId, i.damaged) for i in page.items] == [(meta.taskId, True)] and page.total == 1
    assert await svc.import_bundle("s", meta, messages, turns) == "ok"
    page = await svc.page("s")
    assert [(i.taskId, i.damaged) for i in page.items] == [(meta.taskId, False)]
    assert export_json(*await svc.bundle(meta.taskId)) == export_json(meta.model_copy(update={"stageId": "s"}),
                                                                      messages, turns)
    assert await svc.import_bundle("s", meta, messages, turns) == "exists"  # a readable one is kept


async def test_a_damaged_record_is_deletable():
    from app.records import MemoryBackend

    backend = MemoryBackend()
    svc, _, _ = service(backend=backend)
    backend.put_raw("conversations", {"taskId": "task_20260101_zzzzzz", "stageId": "s", "updatedAt": T0,
                                      "createdAt": T0, "taskName": "x", "stats": {"totalTokens": 1e22}})
    assert [i.taskId for i in (await svc.page("s")).items] == ["task_20260101_zzzzzz"]
    assert await svc.delete("task_20260101_zzzzzz") is True
    assert (await svc.page("s")).items == [] and await svc.total("s") == 0


# -- archive and reload keep one copy of each conversation (DESIGN.md §5, §9) -----------------------

def two_turns():
    first = [user("one", "u1"), reply("r1", "a1")]
    return first, first + [user("two", "u2"), reply("r2 " + "x" * 1000, "a2")]


async def test_an_archive_over_an_older_copy_keeps_the_later_turns_and_the_stored_turn_meta():
    """History holds an older copy of the thread (its later turn was never recorded) and this tab's
    cache is empty (a reload): New conversation keeps the thread as shown, with the turn meta that
    history had, in the same conversation."""
    from app.records import MemoryBackend

    backend = MemoryBackend()
    svc, _, clock = service(backend=backend)
    first, both = two_turns()
    await svc.record_turn(ended("s", first, usage={"inputTokens": 1, "outputTokens": 2, "totalTokens": 3},
                                model="demo", duration_ms=10, message_id="a1"), 1)
    reloaded, _, _ = service(backend=backend, clock=clock)
    task_id = await reloaded.archive("s", both, 2)
    assert backend.raw("messages")[task_id]["messages"] == both
    assert [t["messageId"] for t in backend.raw("turns")[task_id]["turns"]] == ["a1"]
    assert await reloaded.total("s") == 1 and backend.raw("heads") == {}


async def test_a_reload_after_a_turn_too_big_for_local_storage_keeps_one_conversation():
    """localStorage kept the first turn only (the second did not fit); history recorded both. The
    reload's reconcile finds localStorage's thread at the start of the head: the same conversation,
    nothing copied (it used to be adopted again as "0 turns · 0 tokens" with the same message ids)."""
    from app.records import MemoryBackend

    backend = MemoryBackend()
    svc, _, clock = service(backend=backend)
    first, both = two_turns()
    for messages, synced, message_id in ((first, 1, "a1"), (both, 2, "a2")):
        await svc.record_turn(ended("s", messages, usage={"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                                    model="demo", duration_ms=5, message_id=message_id), synced)
    reloaded, _, _ = service(backend=backend, clock=clock)
    await reloaded.reconcile({"s": (first, 1)})
    assert await reloaded.total("s") == 1
    (task_id,) = backend.raw("conversations")
    assert backend.raw("messages")[task_id]["messages"] == both and backend.raw("heads")["s"]["taskId"] == task_id
    meta, turns = await reloaded.active("s")
    assert meta.turnCount == 2 and [t.messageId for t in turns] == ["a1", "a2"]
    assert await reloaded.reconcile({"s": (first, 1)}) == []  # in line now: not read again


# -- one set of limits for every way data comes in (DESIGN.md §14; app/history/limits.py) ----------

def test_the_text_counted_against_the_limit_is_the_searchable_text_without_building_it():
    from app.history.limits import text_chars
    from app.history.text import plain_text

    messages = [user("héllo 中文"), reply("ok"), {"role": "assistant", "content": [
        {"type": "text", "text": "partial"}, {"type": "text", "text": "[stopped]", "status": "stopped"}]},
        {"role": "user", "content": []}, user("\ud800 lone")]
    assert text_chars(messages) == len(plain_text(messages))
    assert text_chars([]) == len(plain_text([])) == 0


def test_a_json_export_whose_text_passes_the_conversation_limit_is_refused_as_too_long():
    """Sync intake and the ChatGPT import refuse a conversation of more than ``MAX_CONVERSATION_CHARS``
    characters of text; the JSON import keeps to the same limit (it accepted a 2,000,001-character
    message)."""
    from app.history.limits import MAX_CONVERSATION_CHARS

    at_limit = MAX_CONVERSATION_CHARS - len("\nok")  # the question, a newline, the reply "ok"
    meta, messages, _ = parse_export(json.dumps(document(text="x" * at_limit)), NOW)
    assert messages[0]["content"][0]["text"] == "x" * at_limit
    assert refused(document(text="x" * (at_limit + 1))) == "too-long"


def test_a_maic_agent_threads_value_skips_a_thread_past_the_limit_as_too_long():
    from app.history.limits import MAX_CONVERSATION_CHARS
    from app.history.original import read_original

    value = {"state": {"threads": {
        "big": {"messages": [user("x" * (MAX_CONVERSATION_CHARS + 1)), reply("ok")], "updatedAt": T0},
        "small": {"messages": [user("hi"), reply("ok")], "updatedAt": T0}}}, "version": 1}
    read = read_original(json.dumps(value), NOW)
    assert [(s.title, s.code) for s in read.skipped] == [("big", "too-long")]
    assert [meta.stageId for meta, _ in read.documents] == ["small"]


def test_the_refusal_of_a_too_long_conversation_says_the_limit_in_every_locale():
    from app.history.labels import import_refusal
    from app.history.limits import MAX_CONVERSATION_CHARS
    from app.i18n import LOCALES, Translator

    for locale in LOCALES:
        t = Translator(locale)
        key, said = import_refusal(t, "too-long")
        assert key == "too-long" and said == t("history.importError.too-long", count=MAX_CONVERSATION_CHARS), locale
        assert said != "history.importError.too-long" and "{count}" not in said, locale
        assert "000" in said.replace("\u202f", "").replace("\u00a0", "").replace(" ", "").replace(",", "")\
            .replace(".", ""), locale


def test_every_way_in_reads_the_one_limit():
    import app.history.chatgpt as chatgpt
    import app.sync.documents as documents
    from app.history import limits

    assert limits.MAX_CONVERSATION_CHARS == 2_000_000
    assert chatgpt.MAX_CONVERSATION_CHARS is limits.MAX_CONVERSATION_CHARS
    assert documents.MAX_CONVERSATION_CHARS is limits.MAX_CONVERSATION_CHARS


def test_one_message_far_past_the_limit_is_refused_as_too_long_before_it_is_decoded(monkeypatch):
    """A 40 MB file of one 40,000,000-character message ran the page out of memory (``MemoryError``
    said as "could not be imported") where it must be named too long: a string that cannot decode to
    fewer than ``MAX_CONVERSATION_CHARS`` characters is refused while the nesting check walks it,
    before ``json`` builds it."""
    from app.history import export
    from app.history.limits import MAX_CONVERSATION_CHARS

    decoded = []
    real = export.decode_at

    def spy(text, at, name=""):
        value, end = real(text, at, name)
        decoded.append(end - at)
        return value, end

    monkeypatch.setattr(export, "decode_at", spy)
    big = json.dumps(document(text="z" * (3 * MAX_CONVERSATION_CHARS)))
    assert refused(document(text="z" * (3 * MAX_CONVERSATION_CHARS))) == "too-long"
    assert max(decoded, default=0) < MAX_CONVERSATION_CHARS, "the long message was decoded before its refusal"
    decoded.clear()  # escapes shorten a string when decoded: one that may fit is decoded and counted
    escaped = "\\u0041" * (MAX_CONVERSATION_CHARS // 3)
    kept = parse_export(big.replace("z" * (3 * MAX_CONVERSATION_CHARS), escaped), NOW)
    assert kept[1][0]["content"][0]["text"] == "A" * (MAX_CONVERSATION_CHARS // 3)
    assert max(decoded) > MAX_CONVERSATION_CHARS  # its 4,000,000 characters of JSON were decoded


def test_a_conversation_with_no_messages_is_not_an_export():
    doc = document()
    doc["messages"], doc["turns"] = [], []
    assert refused(doc) == "messages"


@pytest.mark.parametrize("bad_id", ["a\u0000b", "\u001b[2J", "x\u0085", "\u009b", "\u007f"])
def test_a_message_id_holding_a_control_character_is_refused(bad_id):
    doc = document()
    doc["messages"][0]["id"] = bad_id
    assert refused(doc) == "messages"
    doc["messages"][0]["id"] = "8a371ae3-é"  # any other text stays an id
    assert parse_export(json.dumps(doc), NOW)[1][0]["id"] == "8a371ae3-é"


# -- a conversation as a tree (DESIGN.md §17 "Moving data") -------------------------------------

def _forked():
    """u1 a1 u2 a2, then u2 edited (u2b, a2b), then the first branch shown again: the fork at a1
    shows u2, not its newest child."""
    from app.history.tree import Tree

    first = [user("q1", "u1"), reply("r1", "a1"), user("q2", "u2"), reply("r2", "a2")]
    tree = Tree.chain(first).grow(first[:2] + [user("q2 edited", "u2b"), reply("r2b", "a2b")])
    return tree.show("a2")


def _tree_turns():
    return [{"turnId": n, "timestamp": "2026-05-02T00:00:00.000Z", "model": "demo", "duration": 5,
             "usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}, "messageId": ident}
            for n, ident in enumerate(["a1", "a2", "a2b"], 1)]


async def _stored_tree():
    """A history holding ``_forked()`` in the stored form; returns ``(service, backend, task id)``."""
    from app.records import MemoryBackend

    backend = MemoryBackend()
    svc, _, _ = service(backend=backend)
    meta, _, turns = parse_export(json.dumps(document(turns=_tree_turns())), NOW)
    path, branches, shown = _forked().record()
    backend.put_raw("conversations", {**meta.model_dump(), "stageId": "s"})
    backend.put_raw("messages", {"taskId": meta.taskId, "messages": path, "branches": branches, "shown": shown})
    backend.put_raw("turns", {"taskId": meta.taskId, "turns": [t.record() for t in turns]})
    return svc, backend, meta.taskId


async def test_a_tree_exports_as_version_2_every_message_with_its_parent_and_each_forks_shown_child():
    svc, _, task_id = await _stored_tree()
    bundle = await svc.bundle(task_id)
    assert [m["id"] for m in bundle.messages] == ["u1", "a1", "u2", "a2"]  # the shown path, as stored
    exported = json.loads(export_json(*bundle, tree=bundle.tree))
    assert exported["version"] == 2
    pairs = [(m["id"], m["parentId"]) for m in exported["messages"]]
    assert sorted(pairs, key=str) == sorted([("u1", None), ("a1", "u1"), ("u2", "a1"), ("a2", "u2"), ("u2b", "a1"),
                                             ("a2b", "u2b")], key=str)
    order = [ident for ident, _ in pairs]
    assert all(parent is None or order.index(parent) < order.index(ident) for ident, parent in pairs)
    assert order.index("u2") < order.index("u2b")  # siblings in the order made
    assert exported["shown"] == {"a1": "u2"}
    assert [t["messageId"] for t in exported["turns"]] == ["a1", "a2", "a2b"]
    edited = next(m for m in exported["messages"] if m["id"] == "u2b")
    assert {k: v for k, v in edited.items() if k != "parentId"} == user("q2 edited", "u2b")


async def test_a_version_2_import_stores_the_tree_showing_the_same_branch_and_exports_the_same_document():
    svc, backend, task_id = await _stored_tree()
    bundle = await svc.bundle(task_id)
    text = export_json(*bundle, tree=bundle.tree)
    await svc.delete(task_id)
    parsed = parse_export(text, NOW)
    assert [m["id"] for m in parsed.messages] == ["u1", "a1", "u2", "a2"]  # the stored form: the shown path
    assert await svc.import_bundle("s", *parsed, branches=parsed.branches, shown=parsed.shown) == "ok"
    stored = await backend.get("messages", task_id)
    assert [m["id"] for m in stored["messages"]] == ["u1", "a1", "u2", "a2"]
    assert {b["id"] for b in stored["branches"]} >= {"u2b", "a2b"}
    again = await svc.bundle(task_id)
    assert export_json(*again, tree=again.tree) == text


def test_a_version_1_file_still_imports_as_a_chain():
    parsed = parse_export(json.dumps(document()), NOW)
    assert parsed.messages == document()["messages"] and parsed.branches == [] and parsed.shown == {}
    assert len(parsed.tree) == 2


def test_a_chain_exports_as_version_2_and_reads_back_the_same():
    meta, messages, turns = parse_export(json.dumps(document()), NOW)
    text = export_json(meta, messages, turns)
    assert json.loads(text)["version"] == 2 and json.loads(text)["shown"] == {}
    assert tuple(parse_export(text, NOW)) == (meta, messages, turns)


def _v2(messages, shown=None, **extra):
    doc = document()
    return {**doc, "version": 2, "messages": messages, "shown": {} if shown is None else shown, **extra}


def _tree_messages():
    return json.loads(export_json(*parse_export(json.dumps(document(turns=_tree_turns())), NOW),
                                  tree=_forked()))["messages"]


@pytest.mark.parametrize("change", [
    lambda ms: ms + [{**reply("x", "a9"), "parentId": "nowhere"}],  # a parent that is no earlier message
    lambda ms: ms + [{**reply("x", "a2b"), "parentId": "u2b"}],  # an id twice
    lambda ms: [ms[1], ms[0]] + ms[2:],  # a child before its parent
    lambda ms: ms + [{**reply("x", "a9"), "parentId": 7}],  # a parent of the wrong type
    lambda ms: ms + [{**reply("x", "a\x07"), "parentId": "u2b"}],  # a control character in a branch's id
    lambda ms: ms + [{"role": "assistant", "id": "a9", "parentId": "u2b", "content": [{"type": "nope"}]}],
    lambda ms: ms + [{"role": "user", "parentId": "a2b", "content": [{"type": "text", "text": "no id"}]}],
])
def test_a_bad_tree_is_refused(change):
    assert refused(_v2(change(_tree_messages()))) == "messages"


def test_a_shown_that_is_no_object_is_refused():
    assert refused(_v2(_tree_messages(), shown=["u2"])) == "messages"


def test_the_one_text_limit_counts_every_branch():
    from app.history.limits import MAX_CONVERSATION_CHARS

    half = "y" * (MAX_CONVERSATION_CHARS // 2 + 1)
    messages = [{**user(half, "u1"), "parentId": None}, {**user(half, "u1b"), "parentId": None}]
    assert refused(_v2(messages)) == "too-long"
    assert len(parse_export(json.dumps(_v2(messages[:1])), NOW).messages) == 1


def test_markdown_prints_the_shown_path_and_says_how_many_branches_it_leaves_out():
    from app.history.export import export_markdown

    meta, _, turns = parse_export(json.dumps(document(turns=_tree_turns())), NOW)
    tree = _forked()
    labels = {"you": "You", "assistant": "Assistant", "tool": "Tool", "meta": "", "leftOut": "LEFT-OUT 1"}
    markdown = export_markdown(meta, tree.path(), turns, labels, tree=tree)
    assert "q2" in markdown and "r2" in markdown and "q2 edited" not in markdown and "r2b" not in markdown
    assert "LEFT-OUT 1" in markdown
    chain = export_markdown(meta, tree.path(), turns, labels)
    assert "LEFT-OUT" not in chain


@pytest.mark.parametrize("locale,count,expected", [("en-US", 1, "1 other branch"), ("en-US", 3, "3 other branches"),
                                                   ("ru-RU", 5, "5 других веток"), ("ja-JP", 2, "2 件の分岐")])
def test_the_left_out_line_is_phrased_with_its_plural_form(locale, count, expected):
    from app.history.labels import markdown_left_out
    from app.i18n import Translator

    assert expected in markdown_left_out(Translator(locale), count)


def test_a_chain_without_ids_exports_with_derived_ids_and_a_damaged_entry_is_left_out():
    """A thread the TS original wrote has no ids: its export gives each message the id derived from it
    (the one the panel shows it with, ``derived_ids``), so the file is a version-2 tree that reads
    back the same; a stored entry that is no message is left out."""
    from app.continuity import derived_ids
    from app.history.repository import Conversation

    meta, _, turns = parse_export(json.dumps(document()), NOW)
    bare = [{k: v for k, v in m.items() if k != "id"} for m in document()["messages"]]
    held = Conversation(meta, [bare[0], "not a message", bare[1]], turns)
    text = export_json(*held, tree=held.tree)
    first, second = (m["id"] for m in derived_ids(bare))
    assert [(m["id"], m["parentId"]) for m in json.loads(text)["messages"]] == [(first, None), (second, first)]
    back = parse_export(text, NOW)
    assert back.messages == [{**bare[0], "id": first}, {**bare[1], "id": second}]
    assert export_json(*back, tree=back.tree) == text


def _outcome(check) -> str:
    """``"ok"`` or the reason ``check()`` refused with."""
    try:
        check()
    except ImportRefused as error:
        return error.reason
    return "ok"


def _fed(text: str, cuts: list[int], longest: int, slice_chars: int) -> str:
    from app.history.export import PieceCheck

    def check():
        piece_check = PieceCheck(longest, slice_chars=slice_chars)
        for start, end in zip([0, *cuts], [*cuts, len(text)]):
            piece_check.feed(text[start:end])
        piece_check.end()
    return _outcome(check)


def test_the_check_fed_piece_by_piece_refuses_what_the_depth_check_of_the_whole_text_refuses():
    """``PieceCheck`` (the check an import runs on each piece of the file as it is read, so a file
    refused as too long or too deep is never joined into one string, DESIGN.md §14) gives the outcome
    ``depth_steps`` gives for the whole text, however the text is cut: strings with escaped quotes
    and runs of backslashes across the cuts, brackets in and out of strings, strings past ``longest``
    closed and unterminated, a deep nesting before or after a long string."""
    import random

    from app.history.export import depth_steps
    from app.json_steps import run_steps

    rng = random.Random(7)
    atoms = ['"', "\\", "\\\\", '\\"', "[", "]", "{", "}", "a", "é", " ", ",", ":", "z" * 30]
    seen = set()
    for _ in range(3000):
        text = "".join(rng.choice(atoms) for _ in range(rng.randint(0, 60)))
        if rng.random() < 0.3:
            text = "[" * rng.randint(60, 70) + text
        if rng.random() < 0.3:
            text += '"' + "y" * rng.randint(60, 90) + rng.choice(['"', "\\\\\"", ""]) + "]" * rng.randint(0, 5)
        cuts = sorted(rng.sample(range(len(text) + 1), rng.randint(0, min(6, len(text) + 1))))
        whole = _outcome(lambda: run_steps(depth_steps(text, slice_chars=8, longest=70)))
        assert _fed(text, cuts, 70, 8) == whole, (text, cuts)
        seen.add(whole)
    assert seen == {"ok", "depth", "too-long"}


def test_the_check_fed_piece_by_piece_refuses_a_message_past_the_limit_without_the_whole_text():
    """The 40,000,000-character message of the benchmark, scaled: fed in pieces of 1 MB as read, the
    check refuses it as ``too-long`` at its closing quote; an export at the limit passes."""
    from app.history.export import PieceCheck
    from app.history.limits import MAX_CONVERSATION_CHARS

    for length, expected in ((MAX_CONVERSATION_CHARS + 1, "too-long"), (MAX_CONVERSATION_CHARS, "ok")):
        text = json.dumps(document(text="z" * length))

        def check():
            piece_check = PieceCheck(MAX_CONVERSATION_CHARS)
            for start in range(0, len(text), 1 << 20):
                piece_check.feed(text[start:start + (1 << 20)])
            piece_check.end()
        assert _outcome(check) == expected


def test_the_read_check_refuses_an_export_past_the_limit_and_leaves_a_maic_agent_threads_value_to_its_reader():
    """``ReadCheck`` (the "Import JSON" file checked while read): an export whose message passes
    ``MAX_CONVERSATION_CHARS`` is refused as ``too-long`` from its pieces, however small the opening
    piece; a ``maic-agent-threads`` value with the same long text is not refused there (its reader
    skips that thread); an export within the limit is checked to its end."""
    from app.history.limits import MAX_CONVERSATION_CHARS
    from app.history.original import ReadCheck

    def fed(text: str, first: int) -> ReadCheck:
        read = ReadCheck()
        pieces = [text[:first]] + [text[at:at + (1 << 20)] for at in range(first, len(text), 1 << 20)]
        for index, piece in enumerate(pieces):
            read.each(piece, index == len(pieces) - 1)
        return read

    long_text = "z" * (MAX_CONVERSATION_CHARS + 1)
    export_text = json.dumps(document(text=long_text))
    original = json.dumps({"state": {"threads": {"s1": [{"role": "user", "content": long_text}]}}, "version": 0})
    for first in (0, 5, 199, 200, 4096):
        assert _outcome(lambda: fed(export_text, first)) == "too-long", first
        assert not fed(original, first).checked, first
    assert fed(json.dumps(document(text="fits")), 3).checked
