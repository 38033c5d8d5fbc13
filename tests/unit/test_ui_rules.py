"""Pure rules behind the panel's hardening: the bounded render window, long text, bidi isolation in
notices, localised placeholder scenes, the course picker."""

import pytest

from app.agent import QUOTE_LIMIT, reply_text
from app.courses import COURSES, find_course, picker_courses, scene_text
from app.i18n import LOCALES, Translator
from app.presentation import (
    CHUNK_CHARS, COLLAPSED_CHARS, LONG_TEXT_CHARS, RENDER_SLACK, RENDER_WINDOW, collapsed_prefix,
    Segment, command_segments, isolated_segments, notice_segments, text_chunks, window_start,
)
from app.storage import MemoryStorage
from app.store import ThreadStore


# ---- render window, bounded during a session as after a reload ------------------------------

def test_window_grows_up_to_the_slack_then_is_cut_back_to_the_newest_window():
    start = window_start(50, 99, grew=False)  # a start past the end: afresh, at the newest window
    assert start == 50 - RENDER_WINDOW
    total = 50
    for _ in range(200):  # a long session, one message at a time
        total += 1
        start = window_start(total, start, grew=True)
        assert RENDER_WINDOW <= total - start <= RENDER_WINDOW + RENDER_SLACK
    assert window_start(total, start, grew=True) == start  # stable without growth


def test_window_keeps_requested_earlier_messages_until_the_thread_grows_past_the_bound():
    assert window_start(100, 0, grew=False) == 0  # "show earlier" down to the first: kept while reading
    assert window_start(101, 0, grew=True) == 101 - RENDER_WINDOW
    assert window_start(10, 0, grew=True) == 0
    assert window_start(5, 30, grew=False) == 0  # the thread shrank (New conversation, other tab)


# ---- long text (a long paragraph never freezes the page) ------------------------------------

def test_short_text_is_shown_whole_and_long_text_collapsed_at_a_word_boundary():
    assert collapsed_prefix("x" * LONG_TEXT_CHARS) is None
    text = ("lorem ipsum dolor sit amet 中文 " * 7000)[:200_000]
    prefix = collapsed_prefix(text)
    assert text.startswith(prefix) and COLLAPSED_CHARS - 200 <= len(prefix) <= COLLAPSED_CHARS
    assert prefix[-1].isspace()
    assert len(collapsed_prefix("中" * 10_000)) == COLLAPSED_CHARS  # no whitespace: cut at the limit


@pytest.mark.parametrize("text", [
    ("lorem ipsum dolor sit amet 中文 " * 7000)[:200_000],
    "中" * 9_999,
    "a" * CHUNK_CHARS,
    "",
    "word " * 3000 + "https://example.org/" + "p" * 150 + " end",
])
def test_chunks_rebuild_the_text_and_respect_the_size(text):
    chunks = text_chunks(text)
    assert "".join(chunks) == text
    assert all(0 < len(c) <= CHUNK_CHARS for c in chunks) or chunks == [""]
    assert all(c[-1].isspace() for c in chunks[:-1] if " " in text)  # cut after a space when one is near


def test_a_url_is_not_split_between_chunks():
    url = "https://example.org/" + "p" * 150
    text = "word " * 399 + url + " tail"
    assert any(url in chunk for chunk in text_chunks(text))


def test_demo_reply_quotes_the_start_of_long_input_like_the_whole_split():
    text = "  lorem   ipsum\tdolor 中文 " * 50_000
    expected = " ".join(text.split())[:QUOTE_LIMIT].rstrip() + "…"
    assert f"“{expected}”" in reply_text(text)
    assert "“hi there”" in reply_text("  hi \n there ")


# ---- notices: bidi isolation -------------------------------------------------------------------

def test_backup_key_is_a_separate_segment_in_every_locale():
    key = "maic-agent-threads.backup.1780000000000"
    for locale in LOCALES:
        t = Translator(locale)
        segments = isolated_segments(t, "notice.storage-corrupt", {"backup_key": key}, ("backup_key",))
        assert [s.text for s in segments if s.kind == "isolate"] == [key], locale
        assert "".join(s.text for s in segments) == t("notice.storage-corrupt", backup_key=key)


def test_notices_without_the_param_are_one_text_segment():
    t = Translator("ar-SA")
    segments = isolated_segments(t, "notice.storage-full", {}, ("backup_key",))
    assert [(s.kind, s.text) for s in segments] == [("text", t("notice.storage-full"))]


def test_a_notice_names_a_course_by_its_title_where_one_is_known():
    for locale in LOCALES:
        t = Translator(locale)
        for code in ("storage-full", "storage-full-kept", "storage-pruned-elsewhere"):
            segments = notice_segments(t, code, {"stage_id": "intro-ml"})
            text = "".join(s.text for s in segments)
            assert "Introduction to Machine Learning" in text and "intro-ml" not in text, (locale, code)
            assert [s.text for s in segments if s.kind == "isolate"] == ["Introduction to Machine Learning"]
    # a course opened by URL has no title of its own: its id names it, isolated as well
    segments = notice_segments(Translator("ar-SA"), "storage-full", {"stage_id": "my-course"})
    assert [s.text for s in segments if s.kind == "isolate"] == ["my-course"]
    key = "maic-agent-threads.backup.1"
    assert [s.text for s in notice_segments(Translator("en-US"), "storage-corrupt", {"backup_key": key})
            if s.kind == "isolate"] == [key]


def test_the_demo_command_in_the_empty_state_is_its_own_left_to_right_run_in_every_locale():
    """ar-SA drew ``/regenerate scene-1`` broken over two lines, read right to left: the view draws
    the command segment as ``<bdi dir=ltr>`` kept on one line; the catalogue's own isolates are not
    drawn twice."""
    for locale in LOCALES:
        text = Translator(locale)("edit.agent.emptyHint")
        segments = command_segments(text)
        assert [s.text for s in segments if s.kind == "isolate"] == ["/regenerate scene-1"], locale
        assert "".join(s.text for s in segments) == text.replace("\u2066", "").replace("\u2069", "")
        # the placeholder is an attribute (no element in it): the command is isolated and unbreakable there
        placeholder = Translator(locale)("edit.agent.inputPlaceholder")
        assert "\u2066/regenerate\u00a0scene-1\u2069" in placeholder, locale
    assert command_segments("no command here") == [Segment("text", "no command here")]


# ---- placeholder scenes, localised (DESIGN.md §7) ----------------------------------------------

def test_placeholder_scene_titles_and_bodies_are_localised():
    course = find_course("my-course")
    for locale in LOCALES:
        t = Translator(locale)
        shown = [scene_text(course, scene, t) for scene in course.scenes]
        assert [title for title, _ in shown] == [t("course.scene", index=i) for i in (1, 2, 3)]
        assert {body for _, body in shown} == {t("placeholderScene.body")}
    assert scene_text(course, course.scenes[0], Translator("zh-CN")) == ("场景 1", "空白场景，等待生成。")


def test_demo_course_scenes_stay_as_written():
    for course in COURSES:
        for scene in course.scenes:
            assert scene_text(course, scene, Translator("ja-JP")) == (scene.title, scene.body)


# ---- course picker: a course opened by URL stays reachable -------------------------------------

def test_picker_lists_demo_courses_then_every_stored_and_the_current_course_once():
    ids = [c.id for c in picker_courses(["b-stored", "intro-ml", "a-stored", "b-stored"], current="my-course")]
    assert ids == [c.id for c in COURSES] + ["a-stored", "b-stored", "my-course"]
    assert [c.id for c in picker_courses([], current="intro-ml")] == [c.id for c in COURSES]
    assert all(c.is_placeholder for c in picker_courses(["x"])[len(COURSES):])


def test_store_lists_the_stage_ids_it_holds():
    store = ThreadStore(MemoryStorage())
    store.hydrate(1)
    assert store.stage_ids() == []
    message = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    store.save("my-course", message, 2)
    store.save("intro-ml", message, 3)
    assert sorted(store.stage_ids()) == ["intro-ml", "my-course"]
    store.clear("my-course")
    assert store.stage_ids() == ["intro-ml"]
