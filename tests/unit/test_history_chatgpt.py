"""ChatGPT's data export read into history documents (app/history/chatgpt.py, DESIGN.md §14)."""

from __future__ import annotations

import json
import math
import random

import pytest

from app.history.chatgpt import conversations_of, import_chatgpt, thread_path, utf8_steps
from app.history.export import ImportRefused, export_json, parse_export, run_steps
from app.history.records import TASK_ID, iso
from tests.archives import zip_bytes as zipped
from tests.unit.steps import driven

NOW_MS = 1_790_000_000_000  # 2026-09-21
T0 = 1_780_000_000.25  # epoch seconds, as the export writes them


def node(node_id, parent, role=None, parts=None, *, t=None, content=None, metadata=None, children=()):
    message = None
    if role is not None:
        message = {"id": node_id, "author": {"role": role}, "create_time": t,
                   "content": content or {"content_type": "text", "parts": parts or []}, "metadata": metadata or {}}
    return node_id, {"id": node_id, "message": message, "parent": parent, "children": list(children)}


def conversation(cid, title, nodes, current, *, create=T0, update=T0 + 60):
    return {"id": cid, "title": title, "create_time": create, "update_time": update,
            "current_node": current, "mapping": dict(nodes), "default_model_slug": "gpt-4o"}


def texts(messages):
    return [(m["role"], [p["text"] for p in m["content"]]) for m in messages]


def edited():
    """A conversation whose first question was edited: two branches under the root; the edit is current."""
    return conversation("c-edit", "Gradients", [
        node("root", None, children=["sys"]),
        node("sys", "root", "system", ["You are ChatGPT."], children=["q1", "q1b"]),
        node("q1", "sys", "user", ["What is a gradient?"], t=T0 + 1, children=["a1"]),
        node("a1", "q1", "assistant", ["A vector of partial derivatives."], t=T0 + 2),
        node("q1b", "sys", "user", ["What is a gradient, simply?"], t=T0 + 10, children=["a1b"]),
        node("a1b", "q1b", "assistant", ["The direction of steepest ascent."], t=T0 + 11, children=["q2"]),
        node("q2", "a1b", "user", ["And the learning rate?"], t=T0 + 20, children=["a2"]),
        node("a2", "q2", "assistant", ["The step size."], t=T0 + 21),
    ], "a2")


def as_bytes(conversations):
    return json.dumps(conversations).encode()


def test_an_edited_conversation_imports_the_current_branch_root_first_without_the_system_message():
    outcome = import_chatgpt(as_bytes([edited()]), "course-1", NOW_MS)
    assert outcome.skipped == []
    [(meta, messages)] = outcome.documents
    assert texts(messages) == [
        ("user", ["What is a gradient, simply?"]), ("assistant", ["The direction of steepest ascent."]),
        ("user", ["And the learning rate?"]), ("assistant", ["The step size."])]
    assert (meta.taskName, meta.stageId) == ("Gradients", "course-1")
    assert (meta.createdAt, meta.updatedAt) == (round(T0 * 1000), round((T0 + 60) * 1000))
    assert TASK_ID.match(meta.taskId) and meta.taskId.startswith("task_20260528_")


def test_each_document_is_an_export_the_ordinary_import_accepts_unchanged():
    outcome = import_chatgpt(as_bytes([edited()]), "course-1", NOW_MS)
    for (meta, messages), turns in zip(outcome.documents, outcome.turns, strict=True):
        assert parse_export(export_json(meta, messages, turns), NOW_MS) == (meta, messages, turns)


def test_the_same_file_twice_gives_the_same_task_ids_and_two_conversations_two_ids():
    other = edited() | {"id": "c-other", "title": "Other"}
    first = import_chatgpt(as_bytes([edited(), other]), "s", NOW_MS)
    second = import_chatgpt(as_bytes([edited(), other]), "s", NOW_MS)
    ids = [meta.taskId for meta, _ in first.documents]
    assert ids == [meta.taskId for meta, _ in second.documents]
    assert len(set(ids)) == 2


def test_conversations_without_an_id_are_told_apart_by_what_they_hold_and_the_same_one_keeps_its_id():
    # two of them with the same time and node names were one task id: the second was "already in history"
    def without_id(title, text):
        return {k: v for k, v in conversation(None, title, [
            node("root", None, children=["u"]), node("u", "root", "user", [text], t=T0 + 1)], "u").items() if k != "id"}

    pair = [without_id("Same time A", "alpha text"), without_id("Same time B", "beta text")]
    first = import_chatgpt(as_bytes(pair), "s", NOW_MS)
    ids = [meta.taskId for meta, _ in first.documents]
    assert len(first.documents) == 2 and len(set(ids)) == 2
    assert ids == [meta.taskId for meta, _ in import_chatgpt(as_bytes(pair), "s", NOW_MS).documents]


def test_hidden_notes_are_passed_over_and_non_text_parts_are_kept_as_text_saying_what_they_were():
    image = {"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-1", "width": 8}
    chat = conversation("c-parts", "Parts", [
        node("root", None, children=["ctx"]),
        node("ctx", "root", "user", content={"content_type": "user_editable_context", "user_profile": "x"},
             children=["hidden"]),
        node("hidden", "ctx", "user", ["hidden"], metadata={"is_visually_hidden_from_conversation": True},
             children=["q"]),
        node("q", "hidden", "user", content={"content_type": "multimodal_text", "parts": [image, "What is this?"]},
             t=T0, children=["think"]),
        node("think", "q", "assistant", content={"content_type": "thoughts", "thoughts": []}, children=["code"]),
        node("code", "think", "assistant", content={"content_type": "code", "language": "python", "text": "1+1"},
             children=["out"]),
        node("out", "code", "tool", content={"content_type": "execution_output", "text": "2"}, children=["voice"]),
        node("voice", "out", "assistant", content={"content_type": "multimodal_text", "parts": [
            {"content_type": "audio_transcription", "text": "Here it is."},
            {"content_type": "audio_asset_pointer", "asset_pointer": "sediment://file-2"}]}, children=["web"]),
        node("web", "voice", "tool", content={"content_type": "tether_browsing_display", "summary": None},
             children=["a"]),
        node("a", "web", "assistant", ["A plot."], t=T0 + 5),
    ], "a")
    outcome = import_chatgpt(as_bytes([chat]), "s", NOW_MS)
    [(_, messages)] = outcome.documents
    assert texts(messages) == [("user", ["[image]", "What is this?"]), ("assistant", ["1+1"]), ("assistant", ["2"]),
                               ("assistant", ["Here it is.", "[audio]"]), ("assistant", ["[tether_browsing_display]"]),
                               ("assistant", ["A plot."])]
    assert outcome.parts_as_text == 3


def test_an_export_missing_metadata_imports_what_it_has_and_names_the_rest():
    no_times = edited() | {"id": "c-nt", "create_time": None, "update_time": None}
    nothing_dated = conversation("c-nd", "Undated", [node("r", None, children=["q"]), node("q", "r", "user", ["hi"])],
                                 "q", create=None, update=None)
    no_mapping = {"id": "c-nm", "title": "Broken"}
    dangling = conversation("c-dg", "Dangling", [node("q", "gone", "user", ["hi"], t=T0)], "q")
    outcome = import_chatgpt(as_bytes([no_times, nothing_dated, no_mapping, dangling, 7]), "s", NOW_MS)
    [(meta, _)] = outcome.documents
    # its messages', on every branch: the first question asked before it was edited
    assert (meta.createdAt, meta.updatedAt) == (round((T0 + 1) * 1000), round((T0 + 21) * 1000))
    assert [(s.title, s.reason.split(" ")[0]) for s in outcome.skipped] == [
        ("Undated", "no"), ("Broken", "not"), ("Dangling", "node"), ("#5", "not")]


def test_a_conversation_in_the_future_or_with_looping_links_is_skipped_with_its_reason():
    future = edited() | {"id": "c-f", "title": "Future", "update_time": NOW_MS / 1000 + 2 * 86_400}
    loop = conversation("c-l", "Loop", [node("a", "b", "user", ["x"], t=T0), node("b", "a", "assistant", ["y"])], "a")
    outcome = import_chatgpt(as_bytes([future, loop]), "s", NOW_MS)
    assert outcome.documents == []
    assert [s.title for s in outcome.skipped] == ["Future", "Loop"]
    assert "future" in outcome.skipped[0].reason and "loop" in outcome.skipped[1].reason


def test_thread_path_follows_parents_from_the_current_node():
    mapping = dict([node("r", None), node("a", "r"), node("b", "a"), node("c", "r")])
    assert [n["id"] for n in thread_path(mapping, "b")] == ["r", "a", "b"]
    with pytest.raises(ValueError):
        thread_path(mapping, "missing")


def test_the_newer_zip_of_several_conversation_files_imports_every_file_in_name_order():
    chats = [edited() | {"id": f"c{i}", "title": f"Chat {i}"} for i in range(5)]
    data = zipped({"export_manifest.json": b"{}", "chat.html": b"<html></html>", "user.json": b"{}",
                   "conversations-001.json": as_bytes(chats[3:]), "conversations-000.json": as_bytes(chats[:3]),
                   "file-abc.png": b"\x89PNG"})
    outcome = import_chatgpt(data, "s", NOW_MS)
    assert [meta.taskName for meta, _ in outcome.documents] == [f"Chat {i}" for i in range(5)]
    assert len(conversations_of(zipped({"conversations.json": as_bytes(chats)}))) == 5


@pytest.mark.parametrize("data, reason", [
    (b'{"format": "agentbar-conversation"}', "format"),
    (b"not json", "not-json"),
    (b"\xff\xfe", "not-json"),
    (b"[" * 100 + b"]" * 100, "depth"),
    (zipped({"chat.html": b"<html></html>"}), "members"),
    (zipped({}), "members"),
    (zipped({"export_manifest.json": b"{}", "user.json": b"{}"}), "members"),
    (b"PK\x03\x04 truncated", "format"),
    (zipped({"conversations-000.json": b'{"a": 1}'}), "format"),
])
def test_a_file_of_another_shape_is_refused_naming_what_was_expected(data, reason):
    with pytest.raises(ImportRefused) as refused:
        import_chatgpt(data, "s", NOW_MS)
    assert refused.value.reason == reason
    if reason in ("format", "members"):
        assert "conversations.json" in str(refused.value)


def test_a_zip_whose_conversations_unpack_past_the_bound_is_refused_before_they_are_read(monkeypatch):
    import app.history.export as export

    monkeypatch.setattr(export, "MAX_IMPORT_BYTES", 10_000)
    data = zipped({"conversations.json": b"[" + b" " * 20_000 + b"]"})
    assert len(data) < 10_000
    with pytest.raises(ImportRefused) as refused:
        import_chatgpt(data, "s", NOW_MS)
    assert refused.value.reason == "unpacked"
    with pytest.raises(ImportRefused) as refused:  # the file itself too large: still "size"
        import_chatgpt(b"[" + b" " * 10_000 + b"]", "s", NOW_MS)
    assert refused.value.reason == "size"


def test_times_are_written_at_millisecond_precision():
    outcome = import_chatgpt(as_bytes([edited()]), "s", NOW_MS)
    [(meta, _)] = outcome.documents
    assert iso(meta.createdAt).endswith(".250Z")


# -- the TS original's maic-agent-threads value (app/history/original.py) ---------------------------

def original_value(threads: dict) -> str:
    return json.dumps({"state": {"threads": threads}, "version": 1})


def test_the_originals_value_becomes_one_conversation_per_course_in_its_own_course_titled_and_dated():
    from app.history.original import looks_original, read_original

    updated = 1_780_000_000_123
    text = original_value({
        "intro-ml": {"messages": [
            {"role": "user", "content": [{"type": "text", "text": "  What   is a gradient?"}]},
            {"role": "assistant", "id": "a1", "content": [{"type": "text", "text": "A slope."},
                                                          {"type": "tool-call", "toolCallId": "t1",
                                                           "toolName": "regenerate", "args": {}, "result": "ok"}]}],
            "updatedAt": updated},
        "empty-course": {"messages": [], "updatedAt": updated},
        "broken-course": {"messages": "not a list"},
    })
    assert looks_original(text) and looks_original('\n{"version": 0, "state": {}}')
    assert not looks_original(export_json(*parse_export(export_json(
        *import_chatgpt(as_bytes([edited()]), "s", NOW_MS).documents[0], []), NOW_MS)))
    read = read_original(text, NOW_MS)
    [(meta, messages)] = read.documents
    assert (meta.stageId, meta.taskName, meta.createdAt, meta.updatedAt) == (
        "intro-ml", "What is a gradient?", updated, updated)
    assert texts(messages[:1]) == [("user", ["  What   is a gradient?"])]
    assert messages[1]["content"][1]["toolName"] == "regenerate"
    assert sorted(s.title for s in read.skipped) == ["broken-course", "empty-course"]
    assert [m.taskId for m, _ in read_original(text, NOW_MS).documents] == [meta.taskId]  # twice: same id


async def test_the_same_thread_under_two_courses_imports_as_two_conversations():
    """The original keeps one thread per course; the same messages under two courses (a question
    asked in both) are two conversations, each in its course: neither is taken for the other and
    left out as already in history."""
    from app.history import HistoryService
    from app.history.original import read_original
    from app.records import MemoryBackend

    messages = [{"role": "user", "content": [{"type": "text", "text": "What is a gradient?"}]},
                {"role": "assistant", "id": "a1", "content": [{"type": "text", "text": "A slope."}]}]
    thread = {"messages": messages, "updatedAt": 1_780_000_000_123}
    read = read_original(original_value({"intro-ml": thread, "calculus": thread}), NOW_MS)
    assert sorted(meta.stageId for meta, _ in read.documents) == ["calculus", "intro-ml"]
    assert len({meta.taskId for meta, _ in read.documents}) == 2
    history = HistoryService(MemoryBackend(), clock=lambda: NOW_MS)
    added = [await history.import_bundle(meta.stageId, meta, kept, turns)
             for (meta, kept), turns in zip(read.documents, read.turns, strict=True)]
    assert added == ["ok", "ok"] and [await history.total(c) for c in ("intro-ml", "calculus")] == [1, 1]


def test_a_value_of_another_shape_is_refused_as_not_the_originals():
    from app.history.original import read_original

    for text in ('{"state": {"nothreads": 1}}', "[1, 2]", '{"format": "agentbar-conversation"}'):
        with pytest.raises(ImportRefused) as refused:
            read_original(text, NOW_MS)
        assert refused.value.reason == "format", text
    with pytest.raises(ImportRefused) as refused:
        read_original('{"state": {"threads": ' + "[" * 100 + "]" * 100 + "}}", NOW_MS)
    assert refused.value.reason == "depth"


# -- what a refused file is told (app/history/labels.py import_refusal) ---------------------------

DEEP_ARRAYS = "[" * 200_000 + "]" * 200_000
DEEP_MESSAGES = ('{"format":"agentbar-conversation","version":1,"meta":{},"messages":'
                 + "[" * 50_000 + "]" * 50_000 + ',"turns":[]}')


@pytest.mark.parametrize("locale", ["zh-CN", "zh-TW", "en-US", "ja-JP", "ru-RU", "ar-SA", "pt-BR", "ko-KR"])
def test_valid_json_nested_too_deep_is_refused_as_too_deep_naming_what_was_expected_not_as_not_json(locale):
    """200,000 nested arrays, or an export whose messages nest 50,000 deep, are JSON: the refusal
    says they nest deeper than the expected file ever does (and names it), in every locale."""
    from app.history.export import MAX_DEPTH
    from app.history.labels import import_refusal
    from app.history.original import read_original
    from app.i18n import Translator

    reasons = []
    for attempt in (lambda: parse_export(DEEP_ARRAYS, NOW_MS), lambda: parse_export(DEEP_MESSAGES, NOW_MS),
                    lambda: read_original('{"state":{"threads":{"s":{"messages":' + "[" * 50_000 + "]" * 50_000
                                          + "}}},\"version\":1}", NOW_MS),
                    lambda: import_chatgpt(DEEP_ARRAYS.encode(), "s", NOW_MS)):
        with pytest.raises(ImportRefused) as refused:
            attempt()
        reasons.append(refused.value.reason)
    assert reasons == ["depth"] * 4
    t = Translator(locale)
    not_json = t("history.importError.not-json")
    key, said = import_refusal(t, "depth")
    assert key == "depth" and said != not_json and str(MAX_DEPTH) in said
    assert "AgentBar" in said and "maic-agent-threads" in said
    key, said = import_refusal(t, "depth", "chatgpt")
    assert key == "chatgpt-depth" and said != not_json and str(MAX_DEPTH) in said
    assert "ChatGPT" in said and "conversations.json" in said
    assert import_refusal(t, "format", "chatgpt") == ("chatgpt-format", t("history.importError.chatgpt-format"))
    assert import_refusal(t, "size", "chatgpt") == ("size", t("history.importError.size"))


@pytest.mark.parametrize("locale", ["zh-CN", "zh-TW", "en-US", "ja-JP", "ru-RU", "ar-SA", "pt-BR", "ko-KR"])
def test_a_zip_without_the_expected_members_is_told_which_members_were_expected_not_that_it_is_not_json(locale):
    """An empty zip, or one without conversations.json / conversations-<n>.json, names the members
    expected."""
    from app.history.labels import import_refusal
    from app.i18n import Translator

    t = Translator(locale)
    others = {t(f"history.importError.{k}") for k in ("not-json", "format", "chatgpt-format", "size")}
    key, said = import_refusal(t, "members", "chatgpt")
    assert key == "chatgpt-members" and said not in others
    assert "conversations.json" in said and "conversations-000.json" in said


@pytest.mark.parametrize("locale", ["zh-CN", "zh-TW", "en-US", "ja-JP", "ru-RU", "ar-SA", "pt-BR", "ko-KR"])
def test_a_small_zip_that_unpacks_huge_is_told_its_contents_unpack_too_large_not_that_it_is_over_50_mb(locale):
    """A 583 KB zip that unpacks to 600 MB is refused with its own words (a zip bomb guard): "larger
    than 50 MB" read as wrong to the user who chose a small file."""
    from app.history.labels import import_refusal
    from app.i18n import Translator

    t = Translator(locale)
    key, said = import_refusal(t, "unpacked", "chatgpt")
    assert key == "unpacked" and "zip" in said and "50" in said
    assert said not in {t(f"history.importError.{k}") for k in ("not-json", "format", "chatgpt-format", "size")}
    assert t("backup.refused.unpacked") not in (t("backup.refused.size"), t("backup.refused.damaged"))


@pytest.mark.parametrize("locale", ["en-US", "ru-RU", "ar-SA", "ja-JP"])
def test_imported_conversations_count_their_user_assistant_turns_with_tokens_not_reported(locale):
    """Each question answered is a turn (DESIGN.md §9 stats), on every branch (§17): the edited
    conversation lists 3 turns (one before the edit), not 0; ChatGPT's export has no token counts, so its turns report none (``usage: null``) and the
    list says the tokens are not reported instead of "0 tokens"."""
    from app.history.labels import item_stats_text, stats_text
    from app.history.service import ConversationStats
    from app.i18n import Translator

    outcome = import_chatgpt(as_bytes([edited()]), "s", NOW_MS)
    [(meta, _)], [turns] = outcome.documents, outcome.turns
    assert meta.turnCount == 3 and meta.stats.totalTokens == 0
    assert [(t.turnId, t.usage, t.model, t.duration) for t in turns] == [(1, None, "gpt-4o", 1000),
                                                                          (2, None, "gpt-4o", 1000),
                                                                          (3, None, "gpt-4o", 1000)]
    assert turns[2].timestamp == iso(round((T0 + 21) * 1000))
    t = Translator(locale)
    stats = ConversationStats.of(meta)
    line = item_stats_text(t, stats)
    assert line.startswith(t("history.turns", count=3)) and t("history.tokensNotReported") in line
    assert t("history.tokens", count=0) not in line
    assert t("history.tokensNotReported") in stats_text(t, stats)
    reported = meta.model_copy(update={"stats": meta.stats.model_copy(update={"totalTokens": 7})})
    assert item_stats_text(t, ConversationStats.of(reported)).endswith(t("history.tokens", count=7))
    assert t("history.tokens", count=0) in item_stats_text(t, ConversationStats())  # no turn yet: 0 tokens


def test_a_question_without_an_answer_or_a_reply_before_any_question_is_no_turn():
    chat = conversation("c-t", "Turns", [
        node("root", None, children=["hello"]),
        node("hello", "root", "assistant", ["Hi, ask me anything."], t=T0, children=["q1"]),
        node("q1", "hello", "user", ["one"], t=T0 + 1, children=["a1"]),
        node("a1", "q1", "assistant", ["searching"], t=T0 + 2, children=["tool"],
             metadata={"model_slug": "o3"}),
        node("tool", "a1", "tool", ["result"], t=T0 + 3, children=["a1b"]),
        node("a1b", "tool", "assistant", ["answer"], t=T0 + 4, children=["q2"]),
        node("q2", "a1b", "user", ["unanswered"], t=T0 + 5),
    ], "q2")
    [turns] = import_chatgpt(as_bytes([chat]), "s", NOW_MS).turns
    assert [(t.turnId, t.model, t.duration) for t in turns] == [(1, "o3", 3000)]


def test_a_conversation_that_cannot_be_read_is_named_with_its_reason_in_the_page_locale():
    """The reason an import gives for each conversation it skipped is the catalogue's, in every locale
    (the English detail stays in ``Skipped.reason`` for logs); the title keeps its own bidi run."""
    from app.history.labels import SKIP_REASONS, skipped_names
    from app.history.original import read_original
    from app.i18n import LOCALES, Translator, catalogue

    future = edited() | {"id": "c-f", "title": "Future", "update_time": NOW_MS / 1000 + 2 * 86_400}
    loop = conversation("c-l", "Loop", [node("a", "b", "user", ["x"], t=T0), node("b", "a", "assistant", ["y"])], "a")
    empty = conversation("c-e", "Empty", [node("r", None)], "r")
    outcome = import_chatgpt(as_bytes([future, loop, empty, {"id": "c-nm", "title": "Broken"}]), "s", NOW_MS)
    assert [(s.title, s.code) for s in outcome.skipped] == [
        ("Future", "times"), ("Loop", "loop"), ("Empty", "no-message"), ("Broken", "no-mapping")]
    original = read_original('{"state":{"threads":{"k":{"messages":[],"updatedAt":1}}},"version":1}', NOW_MS)
    assert [(s.title, s.code) for s in original.skipped] == [("k", "no-message")]
    for locale in LOCALES:
        t = Translator(locale)
        said = skipped_names(t, outcome.skipped)
        reasons = catalogue(locale)["history"]["skipReason"]
        assert set(reasons) == SKIP_REASONS
        assert said == t("app.listSeparator").join(
            f"\u2068{title}\u2069 ({reasons[code]})" for title, code in
            [("Future", "times"), ("Loop", "loop"), ("Empty", "no-message"), ("Broken", "no-mapping")]), locale
        if locale != "en-US":
            assert not any(s.reason in said for s in outcome.skipped), locale
    many = skipped_names(Translator("ja-JP"), outcome.skipped * 2)
    assert many.count("\u2068") == 5 and many.endswith("、…")


# -- hostile files: a conversation that cannot be read never fails the import --------------------------
@pytest.mark.parametrize("times", [{"create_time": 1e20}, {"update_time": 1e20}, {"create_time": -1e12},
                                   {"create_time": 1e20, "update_time": 1e20}, {"update_time": 4_102_444_800},
                                   {"create_time": math.nan}, {"update_time": math.inf},
                                   {"create_time": -math.inf, "update_time": math.nan}])
def test_times_out_of_any_calendar_skip_that_conversation_with_impossible_dates_and_the_rest_import(times):
    """A ``create_time`` of 1e20 s raised OverflowError out of the whole import (after earlier ones
    were written, in the page); now it is one more conversation named with its reason. A year-2100
    time and a time that is no number (``NaN``, ``Infinity``: JSON as Python writes it) are refused
    the same way, never replaced by the messages' times."""
    chats = [edited() | {"id": f"c{i}", "title": f"Chat {i}"} for i in range(5)]
    chats[3] |= times
    outcome = import_chatgpt(as_bytes(chats), "s", NOW_MS)
    assert [meta.taskName for meta, _ in outcome.documents] == ["Chat 0", "Chat 1", "Chat 2", "Chat 4"]
    assert [(s.title, s.code) for s in outcome.skipped] == [("Chat 3", "times")]
    assert "year" not in outcome.skipped[0].reason


@pytest.mark.parametrize("moment", [math.nan, math.inf, -math.inf])
def test_a_message_time_that_is_no_number_skips_its_conversation_as_impossible_dates(moment):
    """A message's ``create_time`` of ``NaN`` or ``Infinity`` was taken as a missing one (its turn
    dated by the conversation's time); it is refused as an out-of-range time is."""
    chats = [edited() | {"id": f"c{i}", "title": f"Chat {i}"} for i in range(3)]
    chats[1]["mapping"]["a2"]["message"]["create_time"] = moment
    outcome = import_chatgpt(as_bytes(chats), "s", NOW_MS)
    assert [meta.taskName for meta, _ in outcome.documents] == ["Chat 0", "Chat 2"]
    assert [(s.title, s.code) for s in outcome.skipped] == [("Chat 1", "times")]


@pytest.mark.parametrize("title", [42, 3.5, None, True, ["Gradients"], {"text": "Gradients"}, "   "])
def test_a_title_that_is_no_text_is_taken_as_absent_and_the_first_question_titles_it(title):
    """A numeric (or any non-text) title named the conversation by its ChatGPT id; it is absent, and
    the rule of every title applies: the first question (DESIGN.md §9)."""
    outcome = import_chatgpt(as_bytes([edited() | {"title": title}]), "s", NOW_MS)
    [(meta, _)] = outcome.documents
    assert meta.taskName == "What is a gradient, simply?"
    untitled = {k: v for k, v in edited().items() if k != "title"}
    assert import_chatgpt(as_bytes([untitled]), "s", NOW_MS).documents[0][0].taskName == meta.taskName


def test_parts_that_are_not_text_nor_a_known_kind_are_passed_over_never_named_by_a_python_type():
    """Parts of the wrong type (null, numbers, lists, objects without a content type) became texts
    like ``[NoneType]``, ``[int]``, ``[dict]``; they are passed over (a message of nothing else is not
    shown), as is a content of no type; a part of a named kind is still said (``[image]``)."""
    image = {"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-1"}
    chat = conversation("c-odd", "Odd parts", [
        node("root", None, children=["q"]),
        node("q", "root", "user", content={"content_type": "multimodal_text",
                                           "parts": [None, 7, 2.5, True, ["x"], {"width": 8}, image, "Real question"]},
             t=T0, children=["junk"]),
        node("junk", "q", "assistant", content={"content_type": "text", "parts": [None, {}, 0]}, children=["untyped"]),
        node("untyped", "junk", "assistant", content={"content_type": 5}, children=["blank"]),
        node("blank", "untyped", "assistant", content={"parts": None}, children=["a"]),
        node("a", "blank", "assistant", ["Real answer"], t=T0 + 5),
    ], "a")
    outcome = import_chatgpt(as_bytes([chat]), "s", NOW_MS)
    [(_, messages)] = outcome.documents
    assert texts(messages) == [("user", ["[image]", "Real question"]), ("assistant", ["Real answer"])]
    assert outcome.parts_as_text == 1


def test_any_other_error_reading_one_conversation_names_it_as_unreadable():
    """A value of an unexpected type (an ``author`` that is a string) raised out of the whole import."""
    odd = conversation("c-o", "Odd", [node("q", None, "user", ["x"], t=T0)], "q")
    odd["mapping"]["q"]["message"]["author"] = "user"
    outcome = import_chatgpt(as_bytes([odd, edited()]), "s", NOW_MS)
    assert [(s.title, s.code) for s in outcome.skipped] == [("Odd", "unreadable")]
    assert [meta.taskName for meta, _ in outcome.documents] == ["Gradients"]


@pytest.mark.parametrize("parts", [{"0": "x"}, 5, "x"])
def test_a_message_whose_parts_are_no_list_names_its_conversation_as_unreadable(parts):
    """``parts`` as an object (``{"0": "x"}``), a number or a string: the question was imported as
    ``[text]`` with no turn, what it said dropped without a word; now its conversation is named as
    unreadable, as other conversations that cannot be read are, and the others import."""
    odd = conversation("c-p", "Parts dict", [
        node("r", None, children=["q"]),
        node("q", "r", "user", content={"content_type": "text", "parts": parts}, t=T0)], "q")
    outcome = import_chatgpt(as_bytes([odd, edited()]), "s", NOW_MS)
    assert [(s.title, s.code) for s in outcome.skipped] == [("Parts dict", "unreadable")]
    assert [meta.taskName for meta, _ in outcome.documents] == ["Gradients"]


def test_a_conversation_whose_text_passes_the_limit_is_skipped_as_too_long_before_its_messages_are_built(monkeypatch):
    import app.history.chatgpt as chatgpt
    import app.model

    built, real = [], app.model.Message
    monkeypatch.setattr(chatgpt, "MAX_CONVERSATION_CHARS", 1000)
    monkeypatch.setattr(app.model, "Message", lambda **kw: built.append(kw) or real(**kw))
    giant = conversation("c-g", "Giant", [node("r", None, children=["q"]), node("q", "r", "user", ["x" * 600], t=T0,
                                                                                   children=["a"]),
                                          node("a", "q", "assistant", ["y" * 401], t=T0)], "a")
    assert [(s.title, s.code) for s in import_chatgpt(as_bytes([giant]), "s", NOW_MS).skipped] == [("Giant", "too-long")]
    assert built == []
    outcome = import_chatgpt(as_bytes([giant, edited()]), "s", NOW_MS)
    assert [meta.taskName for meta, _ in outcome.documents] == ["Gradients"]


def test_the_conversation_limit_is_said_with_its_reason_in_every_locale():
    from app.history.chatgpt import MAX_CONVERSATION_CHARS, Skipped
    from app.history.labels import skipped_names
    from app.i18n import LOCALES, Translator

    assert MAX_CONVERSATION_CHARS == 2_000_000
    for locale in LOCALES:
        t = Translator(locale)
        said = skipped_names(t, [Skipped("Giant", "", "too-long")])
        assert t("history.skipReason.too-long", count=MAX_CONVERSATION_CHARS) in said, locale
        assert "000" in said.replace("\u202f", "").replace(" ", "").replace(",", "").replace(".", ""), locale


def test_a_long_conversation_is_read_in_slices_with_pauses_between_them():
    """``read_conversations`` yields ``None`` between slices of one conversation (the page's turn):
    a conversation of 2,000 turns is many slices, not one."""
    from app.history.chatgpt import read_conversations

    nodes, parent = [node("r", None)], "r"
    for i in range(2000):
        nodes += [node(f"q{i}", parent, "user", [f"q{i}"], t=T0 + i), node(f"a{i}", f"q{i}", "assistant", [f"a{i}"], t=T0 + i)]
        parent = f"a{i}"
    chat = conversation("c-long", "Long", nodes, parent, update=T0 + 3000)
    reads = list(read_conversations([chat], "s", NOW_MS))
    assert reads.count(None) >= 20
    [(meta, messages, turns, _, branches, _)] = [r for r in reads if r is not None]
    assert branches == []  # one branch: a chain, stored as before
    assert (len(messages), len(turns), meta.turnCount) == (4000, 2000, 2000)


def test_a_zip_with_one_broken_member_imports_the_others_and_names_the_broken_one_with_why():
    chats = [edited() | {"id": f"c{i}", "title": f"Chat {i}"} for i in range(3)]
    data = zipped({"conversations-000.json": as_bytes(chats[:1]), "conversations-001.json": b"{broken",
                   "conversations-002.json": as_bytes(chats[1:]), "conversations-003.json": b'{"a": 1}'})
    outcome = import_chatgpt(data, "s", NOW_MS)
    assert [meta.taskName for meta, _ in outcome.documents] == ["Chat 0", "Chat 1", "Chat 2"]
    assert [(s.title, s.code) for s in outcome.skipped] == [
        ("conversations-001.json", "not-json"), ("conversations-003.json", "not-conversations")]
    with pytest.raises(ImportRefused) as refused:  # none can be read: the file is refused, as before
        import_chatgpt(zipped({"conversations-000.json": b"{", "conversations-001.json": b"{"}), "s", NOW_MS)
    assert refused.value.reason == "not-json"


@pytest.mark.parametrize("locale", ["en-US", "ja-JP", "ru-RU"])
def test_an_import_that_stops_after_adding_some_says_what_it_added_never_that_nothing_changed(locale):
    from app.history.labels import import_outcome, import_refusal
    from app.i18n import Translator

    t = Translator(locale)
    result, said = import_outcome(t, 2, 1, [], "failed")
    assert result == "error"
    assert t("history.importedCount", count=2) in said and t("history.importExisting", count=1) in said
    assert t("history.importStopped") in said
    assert import_refusal(t, "failed")[1] not in said
    assert import_outcome(t, 2, 0, [], None) == ("ok", t("history.importedCount", count=2))


def test_a_file_is_decoded_in_slices_node_by_node_with_the_values_and_refusals_of_json_loads():
    """A 13 MB file of one conversation was one ``json.loads`` task; ``conversations_steps`` reads it
    conversation by conversation and its mapping node by node, pausing between slices."""
    import random

    from app.history.chatgpt import conversations_steps

    def run(data):
        steps, pauses = conversations_steps(data), 0
        while True:
            try:
                next(steps)
                pauses += 1
            except StopIteration as done:
                return done.value, pauses
            except ImportRefused as refused:
                return refused.reason, pauses

    def expected(text):
        try:
            value = json.loads(text)
        except ValueError:
            return "not-json"
        return value if isinstance(value, list) else "format"

    nodes, parent = [node("r", None)], "r"
    for i in range(3000):
        nodes.append(node(f"n{i}", parent, "user", [f"q{i} \"quoted\" ]}}"], t=T0))
        parent = f"n{i}"
    chats = [conversation("c-big", "Big", nodes, parent), 5, "s", {"mapping": 3}, {}, edited()]
    value, pauses = run(as_bytes(chats))
    assert value == json.loads(as_bytes(chats)) and pauses >= 2
    base = json.dumps([edited(), {"mapping": {"a": [1, {"b": None}]}, "t": "x"}])
    rng = random.Random(1)
    for _ in range(1500):
        at = rng.randrange(len(base))
        text = rng.choice([base[:at], base[:at] + rng.choice('{}[],:" 1') + base[at:], base[:at] + base[at + 1:]])
        assert run(text.encode())[0] == expected(text), text


def test_a_zip_member_that_unpacks_past_its_declared_size_is_unpacked_in_bounded_pieces_and_refused(monkeypatch):
    """A member whose headers declare 1,000 bytes but whose data unpack to 5 MB passes the size
    guard; it is unpacked a bounded piece per slice (DESIGN.md §14: no long task; it was unpacked
    whole in one), stops at its declared size and is refused as damaged."""
    import struct
    import zipfile as zf

    from app.history.chatgpt import conversations_steps

    data = bytearray(zipped({"conversations.json": b"[" + b" " * 5_000_000 + b"]"}))
    struct.pack_into("<I", data, 22, 1000)  # the local header's uncompressed size
    central = data.index(b"PK\x01\x02")
    struct.pack_into("<I", data, central + 24, 1000)  # the central directory's
    outputs = []
    original = zf._get_decompressor

    class Counted:
        def __init__(self, inner):
            self.inner = inner

        def decompress(self, chunk, *limit):
            out = self.inner.decompress(chunk, *limit)
            outputs.append(len(out))
            return out

        def __getattr__(self, name):
            return getattr(self.inner, name)
    monkeypatch.setattr(zf, "_get_decompressor", lambda kind: Counted(original(kind)))
    with pytest.raises(ImportRefused) as refused:
        run_steps(conversations_steps(bytes(data)))
    assert refused.value.reason == "format"
    assert outputs and max(outputs) <= 1 << 20


# -- every branch of the mapping (DESIGN.md §17 "Moving data") ----------------------------------

def _tree_of(outcome, index=0):
    from app.history.tree import Tree

    branches, shown = outcome.trees[index]
    return Tree.from_record(outcome.documents[index][1], branches, shown)


def test_every_branch_of_the_mapping_is_kept_and_current_nodes_path_is_shown():
    outcome = import_chatgpt(as_bytes([edited()]), "course-1", NOW_MS)
    [(meta, messages)] = outcome.documents
    assert [m["id"] for m in messages] == ["q1b", "a1b", "q2", "a2"]  # the shown path: current_node's
    tree = _tree_of(outcome)
    assert set(tree.ids) == {"q1", "a1", "q1b", "a1b", "q2", "a2"}  # the system message is passed over
    assert tree.parent("q1") is None and tree.parent("q1b") is None  # attached past it, to the root
    assert tree.parent("a1") == "q1" and tree.siblings("q1b") == (2, 2)  # in the order of sys's children
    assert [m["id"] for m in tree.path()] == ["q1b", "a1b", "q2", "a2"]
    [turns] = outcome.turns
    assert [(t.turnId, t.messageId, t.duration) for t in turns] == [(1, "a1", 1000), (2, "a1b", 1000), (3, "a2", 1000)]
    assert meta.turnCount == 3


def test_an_older_current_node_shows_its_branch_and_hidden_nodes_children_attach_to_the_nearest_kept_ancestor():
    chat = conversation("c-regen", "Regenerated", [
        node("root", None, children=["q"]),
        node("q", "root", "user", ["Why?"], t=T0, children=["think"]),
        node("think", "q", "assistant", content={"content_type": "thoughts", "thoughts": []}, children=["a", "a2"]),
        node("a", "think", "assistant", ["Because."], t=T0 + 1),
        node("a2", "think", "assistant", ["Since."], t=T0 + 2, children=["q3"]),
        node("q3", "a2", "user", ["And?"], t=T0 + 3),
        node("lost", "nowhere", "user", ["a node whose parent is missing, off the path"], t=T0),
        node("x", "y", "user", ["looping"], t=T0), node("y", "x", "assistant", ["links"], t=T0),
    ], "a")
    outcome = import_chatgpt(as_bytes([chat]), "s", NOW_MS)
    assert outcome.skipped == []
    [(_, messages)] = outcome.documents
    assert texts(messages) == [("user", ["Why?"]), ("assistant", ["Because."])]
    tree = _tree_of(outcome)
    assert tree.parent("a") == "q" and tree.parent("a2") == "q" and tree.parent("q3") == "a2"
    assert set(tree.ids) == {"q", "a", "a2", "q3"} and tree.left_out() == 1
    assert [t.messageId for t in outcome.turns[0]] == ["a", "a2"]


def test_each_tree_is_an_export_the_ordinary_import_accepts_unchanged():
    outcome = import_chatgpt(as_bytes([edited()]), "course-1", NOW_MS)
    meta, messages = outcome.documents[0]
    tree = _tree_of(outcome)
    back = parse_export(export_json(meta, messages, outcome.turns[0], tree=tree), NOW_MS)
    assert tuple(back) == (meta, messages, outcome.turns[0])
    assert back.tree.export() == tree.export()


def test_the_text_limit_counts_the_other_branches_too(monkeypatch):
    import app.history.chatgpt as chatgpt

    monkeypatch.setattr(chatgpt, "MAX_CONVERSATION_CHARS", 1000)
    chat = conversation("c-wide", "Wide", [
        node("r", None, children=["q", "q2"]), node("q", "r", "user", ["x" * 600], t=T0),
        node("q2", "r", "user", ["y" * 401], t=T0 + 1)], "q2")
    assert [(s.title, s.code) for s in import_chatgpt(as_bytes([chat]), "s", NOW_MS).skipped] == [("Wide", "too-long")]


def _decoded(raw: bytes, piece: int):
    """The text ``utf8_steps`` decodes (or ``"error: …"``) and its pauses (None when refused)."""
    try:
        return driven(utf8_steps(raw, piece))
    except UnicodeDecodeError as error:
        return f"error: {error}", None


def _whole(raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        return f"error: {error}"


def test_a_file_decoded_in_pieces_is_the_whole_decode_its_errors_too():
    """Pieces never cut a character, and an invalid byte is refused with whole decoding's position
    (after a byte order mark) and reason, wherever the pieces fall."""
    alphabet = [b"a", b"{", b"\xef\xbb\xbf", "é".encode(), "我".encode(), "😀".encode(), b"\xff", b"\x80",
                b"\xe4\xb8", b"\xf0\x9f", b"\xed\xa0\x80", b"\xc0\xaf"]
    rng = random.Random(14)
    for _ in range(3_000):
        raw = b"".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))
        if rng.random() < 0.3:
            raw = b"\xef\xbb\xbf" + raw
        for piece in (1, 2, 3, 5, 8):
            assert _decoded(raw, piece)[0] == _whole(raw), (raw, piece)


def test_a_file_is_decoded_a_piece_per_step():
    raw = ("我" * 10).encode()  # 30 bytes
    text, pauses = _decoded(raw, 6)
    assert text == "我" * 10 and pauses == 1 + 5  # the first pause, then one after each piece
    text, pauses = _decoded(raw, 4)  # a piece runs on to the end of its character
    assert text == "我" * 10 and pauses == 1 + 5
