"""The paint record and the message sent before ready (DESIGN.md §13): what a record holds, how it
is validated, when it matches the stored thread, and what is sent once ready."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from app import paint
from app.i18n import Translator
from app.paint import (
    MAX_DEPTH, MAX_NODES, PAINT_ATTRS, PAINT_TAGS, PendingSend, build_record, encode_record,
    paint_cache_key, parse_pending, pending_to_send, picker_positions, record_due, validate_record,
)
from app.presentation import COLLAPSED_CHARS, RENDER_WINDOW
from app.projection import deserialize_thread

ROOT = Path(__file__).resolve().parents[2]
PAINT_JS = (ROOT / "static" / "paint.js").read_text()


def thread(turns: int, *, long_at: int | None = None) -> list:
    saved = []
    for i in range(turns):
        saved.append({"role": "user", "content": [{"type": "text", "text": f"question {i}"}]})
        text = ("word " * 1200) if i == long_at else f"answer {i} 学习"
        saved.append({"role": "assistant", "content": [{"type": "text", "text": text}]})
    return deserialize_thread(saved)


def record_of(messages, locale="en-US", **kw):
    t = Translator(locale)
    return build_record("intro-ml", 1_780_000_000_000, messages, t, locale=t.locale, rtl=t.rtl, title="Course",
                        label_keys=["edit.agent.send", "edit.agent.send", "app.title"], **kw)


def texts(node) -> list[str]:
    out = [node.x] if node.x else []
    for child in node.c:
        out += texts(child)
    return out


def test_a_record_holds_the_newest_window_of_rows_in_order_after_a_show_earlier_button():
    record = record_of(thread(30))
    assert len(record.rows) == RENDER_WINDOW + 1
    earlier, first, last = record.rows[0], record.rows[1], record.rows[-1]
    assert earlier.a["data-testid"] == "agent-load-earlier" and "disabled" in earlier.a
    assert first.a["data-role"] == "user" and texts(first) == ["question 10"]
    assert last.a["data-role"] == "assistant" and texts(last) == ["answer 29 学习"]
    assert all(row.a["data-painted"] == "true" for row in record.rows)


def test_a_short_thread_has_no_show_earlier_button():
    record = record_of(thread(3))
    assert [row.a["data-role"] for row in record.rows] == ["user", "assistant"] * 3


def test_a_long_message_is_painted_collapsed_with_its_show_all_control():
    record = record_of(thread(2, long_at=1))
    bubble = record.rows[-1].c[0]
    assert bubble.a["data-long"] == "collapsed"
    chunk, control = bubble.c
    assert chunk.x.endswith("…") and len(chunk.x) <= COLLAPSED_CHARS + 1
    assert control.a["data-testid"] == "agent-message-expand" and control.a["aria-expanded"] == "false"
    assert control.x == Translator("en-US")("longText.showAll")


def test_a_tool_card_is_painted_with_its_status_count_and_localized_name():
    saved = [{"role": "user", "content": [{"type": "text", "text": "/regenerate scene-1"}]},
             {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c1", "toolName": "regenerate_scene",
                                                "args": {"sceneId": "scene-1"},
                                                "result": {"content": [{"type": "text", "text": "done"}],
                                                           "details": {"content": {"elements": [{}, {}, {}]}}}}]}]
    record = record_of(deserialize_thread(saved), locale="ar-SA")
    card = record.rows[-1].c[0]
    assert card.a["data-testid"] == "tool-card" and card.a["data-status"] == "ok"
    assert card.a["data-element-count"] == "3"
    t = Translator("ar-SA")
    assert t("edit.agent.tool.regenerateScene", sceneId="scene-1") in texts(card)
    assert record.dir == "rtl" and record.locale == "ar-SA"


def test_the_painted_status_line_is_the_summary_and_a_closed_menu_button_with_no_action_shown():
    """The panel's chrome is one line (app.browser.checkpoint_view): the summary and the ⋯ menu
    button, named in the record's locale; the actions live in the menu Python draws."""
    (bar,) = record_of(thread(1), locale="ar-SA", bar_summary="ملخص").bar
    summary, menu = bar.c
    assert (summary.a["class"], summary.x) == ("checkpoint-summary-text", "ملخص")
    (button,) = menu.c
    assert menu.a["class"] == "panel-menu" and button.a["class"] == "panel-menu-button"
    assert button.a["aria-label"] == Translator("ar-SA")("edit.agent.menu") != Translator("en-US")("edit.agent.menu")
    assert button.a["aria-expanded"] == "false" and "disabled" in button.a
    assert validate_record(encode_record(record_of(thread(1), bar_summary="x"))) is not None


def test_labels_are_the_shell_keys_in_the_records_locale():
    record = record_of(thread(1), locale="ja-JP")
    assert record.labels == {"edit.agent.send": Translator("ja-JP")("edit.agent.send"),
                             "app.title": Translator("ja-JP")("app.title")}


def test_an_encoded_record_reads_back_the_same_and_keeps_non_ascii_literal():
    record = record_of(thread(5))
    text = encode_record(record)
    assert "学习" in text and "\\u" not in text
    assert validate_record(text) == record


def test_a_text_holding_a_lone_surrogate_is_encoded_as_json_stringify_writes_it_and_reads_back_the_same():
    # A stored thread may hold one (the store keeps it exactly); pydantic's own encoder refuses it,
    # which made every paint-record write raise.
    saved = [{"role": "user", "content": [{"type": "text", "text": "half \ud800 pair 😀"}]}]
    record = record_of(deserialize_thread(saved))
    text = encode_record(record)
    assert "half \\ud800 pair 😀" in text
    assert validate_record(text) == record and texts(record.rows[0]) == ["half \ud800 pair 😀"]


@pytest.mark.parametrize("text", [
    "", "not json", "[]", "null", '{"v": 2}',
    json.dumps({"v": 1, "stageId": "a", "updatedAt": 1, "locale": "en-US", "dir": "ltr", "title": "", "rows": [
        {"t": "script", "x": "alert(1)"}]}),
    json.dumps({"v": 1, "stageId": "a", "updatedAt": 1, "locale": "en-US", "dir": "ltr", "title": "", "rows": [
        {"t": "div", "a": {"onclick": "alert(1)"}}]}),
    json.dumps({"v": 1, "stageId": "a", "updatedAt": 1, "locale": "en-US", "dir": "ltr", "title": "", "rows": [
        {"t": "div", "a": {"class": 3}}]}),
    json.dumps({"v": 1, "stageId": "a", "updatedAt": "1", "locale": "en-US", "dir": "ltr", "title": "", "rows": []}),
    json.dumps({"v": 1, "stageId": "a", "updatedAt": 1, "locale": "en-US", "dir": "sideways", "title": "", "rows": []}),
])
def test_a_damaged_or_hostile_record_is_refused(text):
    assert validate_record(text) is None


def test_a_record_too_deep_or_too_big_is_refused():
    node = {"t": "div"}
    for _ in range(MAX_DEPTH):
        node = {"t": "div", "c": [node]}
    base = {"v": 1, "stageId": "a", "updatedAt": 1, "locale": "en-US", "dir": "ltr", "title": ""}
    assert validate_record(json.dumps({**base, "rows": [node]})) is None
    assert validate_record(json.dumps({**base, "rows": [{"t": "p"}] * (MAX_NODES + 1)})) is None
    assert validate_record(json.dumps({**base, "rows": [{"t": "p"}] * 10})) is not None


def test_text_that_looks_like_html_is_kept_as_text():
    saved = [{"role": "user", "content": [{"type": "text", "text": "<script>alert(1)</script><img src=x>"}]}]
    record = validate_record(encode_record(record_of(deserialize_thread(saved))))
    assert texts(record.rows[0]) == ["<script>alert(1)</script><img src=x>"]


RECORD_MATCHES_JS = """
globalThis.document = { documentElement: { dataset: {} } };  // all paint.js reads on import
const source = require("fs").readFileSync(process.argv[1], "utf8");
import("data:text/javascript," + encodeURIComponent(source)).then(({ recordMatches }) => {
  const cases = JSON.parse(require("fs").readFileSync(0, "utf8"));
  console.log(JSON.stringify(cases.map((args) => recordMatches(...args))));
});
"""


def js_record_matches(cases: list[list]) -> list[bool]:
    """``recordMatches(record, stageId, locale, storedUpdatedAt)`` of ``static/paint.js`` (the match
    rule's one place: it decides before Python loads) for each case, run by Node (the build tools'
    runtime, ``tools/precompile.py``)."""
    node = shutil.which("node")
    assert node, "Node.js runs static/paint.js's rule (bash tools/dev.sh test installs it)"
    run = subprocess.run([node, "-e", RECORD_MATCHES_JS, str(ROOT / "static" / "paint.js")],
                         input=json.dumps(cases), capture_output=True, text=True, check=True)
    return json.loads(run.stdout)


def test_a_record_matches_only_its_course_locale_and_stored_updated_at():
    """The rule static/paint.js draws by (DESIGN.md §13), run as the page runs it."""
    record = json.loads(encode_record(record_of(thread(1))))
    at = record["updatedAt"]
    assert js_record_matches([
        [record, "intro-ml", "en-US", at],
        [record, "intro-ml", "en-US", at + 1],  # another tab saved since
        [record, "intro-ml", "en-US", None],  # the thread is gone
        [record, "other", "en-US", at],
        [record, "intro-ml", "ar-SA", at],
        [{**record, "updatedAt": str(at)}, "intro-ml", "en-US", at],  # the same number, as text
        [None, "intro-ml", "en-US", at],
    ]) == [True, False, False, False, False, False, False]


def test_the_drawing_script_never_parses_html():
    """static/paint.js draws stored text with ``textContent`` and ``setAttribute`` only: no call that
    parses a string as HTML (the record comes from storage; DESIGN.md §13), which nothing but an
    end-to-end run would notice."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", PAINT_JS, flags=re.S)  # what runs, not what comments say
    assert "textContent" in code and "createElement" in code
    assert re.findall(r"innerHTML|outerHTML|insertAdjacentHTML|document\s*\.\s*write|DOMParser|"
                      r"createContextualFragment|setHTML|parseHTML|srcdoc|\[\s*[\"'`]innerHTML", code) == []


def _js_list(name: str) -> list:
    body = re.search(rf"const {name} = \[(.*?)\];", PAINT_JS, re.S).group(1)
    return re.findall(r'"([^"]+)"', body)


def _js_number(name: str) -> int:
    return int(re.search(rf"const {name} = (\d+);", PAINT_JS).group(1))


def test_the_drawing_script_checks_the_same_allow_lists_and_limits():
    assert _js_list("TAGS") == list(PAINT_TAGS)
    assert _js_list("ATTRS") == list(PAINT_ATTRS)
    assert (_js_number("MAX_NODES"), _js_number("MAX_DEPTH"), _js_number("MAX_TEXT"), _js_number("VERSION")) == (
        paint.MAX_NODES, paint.MAX_DEPTH, paint.MAX_TEXT, paint.PAINT_VERSION)
    assert f'const PENDING_KEY = "{paint.PENDING_KEY}";' in PAINT_JS
    assert 'encodeURIComponent(stageId)' in PAINT_JS and paint_cache_key("a b/c") == "paint/a%20b%2Fc"


def test_the_page_names_the_same_default_course():
    from app.courses import DEFAULT_COURSE_ID

    html = (ROOT / "index.html").read_text()
    assert f'data-default-course="{DEFAULT_COURSE_ID}"' in html


def test_a_queued_message_of_the_shown_course_is_sent_and_a_draft_is_not():
    queued = PendingSend(stageId="intro-ml", text="  hello  ", state="queued")
    assert pending_to_send(queued, "intro-ml") == "  hello  "
    assert pending_to_send(queued, "other") is None
    assert pending_to_send(queued.model_copy(update={"state": "draft"}), "intro-ml") is None
    assert pending_to_send(queued.model_copy(update={"text": " \n "}), "intro-ml") is None
    assert pending_to_send(None, "intro-ml") is None


@pytest.mark.parametrize("raw", [None, "", "{", "[]", '{"stageId": "a", "text": 1, "state": "queued"}',
                                 '{"stageId": "a", "text": "x", "state": "sent"}'])
def test_a_damaged_pending_entry_is_ignored(raw):
    assert parse_pending(raw) is None


def test_a_pending_entry_reads_back():
    assert parse_pending('{"stageId":"a","text":"hi","state":"queued"}') == PendingSend(
        stageId="a", text="hi", state="queued")
    # JSON.stringify of a draft typed with a lone surrogate: pydantic's parser refuses the escape
    assert parse_pending('{"stageId":"a","text":"x\\ud800","state":"draft"}') == PendingSend(
        stageId="a", text="x\ud800", state="draft")


def test_the_in_flight_text_is_the_last_user_message_a_running_turn_answers():
    saved = [{"role": "user", "content": [{"type": "text", "text": "first"}]},
             {"role": "assistant", "content": [{"type": "text", "text": "reply"}]},
             {"role": "user", "content": [{"type": "text", "text": "the one in flight"}]},
             {"role": "assistant", "content": [{"type": "text", "text": "partial"}]}]
    messages = deserialize_thread(saved)
    assert paint.in_flight_text(messages) == "the one in flight"
    assert paint.in_flight_text(messages[:3]) == "the one in flight"
    assert paint.in_flight_text(messages[:2]) == "first"
    assert paint.in_flight_text([]) is None
    assert paint.in_flight_text(deserialize_thread([{"role": "user", "content": [{"type": "text", "text": " "}]}])) is None


def test_a_regenerated_answers_question_already_stored_is_no_draft():
    """A reload while a regenerated answer streams shows the question as stored; its draft, sent again,
    asked it a second time as a new turn. Only a question the store does not hold yet is kept as a
    draft; a stored message without an id never matches one."""
    saved = [{"id": "u-1", "role": "user", "content": [{"type": "text", "text": "why?"}]},
             {"id": "a-1", "role": "assistant", "content": [{"type": "text", "text": "because"}]}]
    regenerating = deserialize_thread(saved[:1])
    assert paint.in_flight_text(regenerating, saved) is None
    asked = deserialize_thread(saved + [{"id": "u-2", "role": "user", "content": [{"type": "text", "text": "and?"}]}])
    assert paint.in_flight_text(asked, saved) == "and?"
    unnamed = deserialize_thread([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    assert paint.in_flight_text(unnamed, [{"role": "user", "content": []}]) == "hi"


def test_a_reply_cut_at_the_length_limit_is_painted_cut_as_the_panel_draws_it_not_stopped():
    """A reply the server cut at its length limit (DESIGN.md §12 ``turn-cut``) is painted with its
    note, as the live panel draws it: painted as "stopped", Python redrew it at ready (a flash, §13)."""
    from app.projection import CUT, serialize_thread
    from app.model import Message, TextPart

    messages = [Message(role="user", content=[TextPart(text="q")]),
                Message(role="assistant", content=[TextPart(text="half an answer")], status=CUT),
                Message(role="user", content=[TextPart(text="again")]),
                Message(role="assistant", content=[], status=CUT)]
    record = record_of(deserialize_thread(serialize_thread(messages)))
    for row in (record.rows[1], record.rows[3]):
        testids = [child.a.get("data-testid") for child in row.c if child.a.get("data-testid") != "message-actions"]
        assert "agent-stopped" not in testids and testids[-1] == "turn-cut"
        note = row.c[-2]  # the actions come last (DESIGN.md §17)
        assert note.x == Translator("en-US")("model.turnCut") and note.a["role"] == "note"
        assert row.c[-1].a["data-testid"] == "message-actions"


def test_a_row_is_painted_with_its_actions_and_branch_picker_every_button_disabled():
    """DESIGN.md §17: the paint record draws the shown path's pickers and actions, inert until ready,
    as the live panel draws them (``app.message_actions``)."""
    messages = thread(1)
    messages[0].id, messages[1].id = "q1", "a1"
    record = record_of(messages, siblings=lambda ident: (2, 3) if ident == "q1" else (1, 1))
    question, reply = record.rows
    (q_actions,), (r_actions,) = ([c for c in row.c if c.a.get("data-testid") == "message-actions"]
                                  for row in (question, reply))
    picker = q_actions.c[0]
    assert (picker.a["data-testid"], picker.a["data-index"], picker.a["data-count"]) == ("branch-picker", "2", "3")
    assert [b.a["data-testid"] for b in picker.c if b.t == "button"] == ["branch-prev", "branch-next"]
    assert [c.a["data-testid"] for c in q_actions.c[1:]] == ["message-edit", "message-copy"]
    assert [c.a["data-testid"] for c in r_actions.c] == ["message-regenerate", "message-copy"]
    buttons = [b for node in (picker, q_actions, r_actions) for b in node.c if b.t == "button"]
    assert buttons and all("disabled" in b.a for b in buttons)
    assert validate_record(encode_record(record)) == record  # within the allow-lists paint.js checks


def test_the_pickers_of_a_record_are_those_of_its_window_that_have_siblings():
    """``picker_positions`` names exactly the pickers ``build_record`` draws: the newest window's
    messages with more than one sibling, in order, with their position (DESIGN.md §17)."""
    messages = thread(RENDER_WINDOW)  # twice the window: the older half is not drawn
    for n, message in enumerate(messages):
        message.id = f"m{n}"
    forks = {"m0": (1, 2), f"m{RENDER_WINDOW}": (2, 2), f"m{2 * RENDER_WINDOW - 1}": (3, 4), "m5": (1, 1)}
    siblings = lambda ident: forks.get(ident, (1, 1))  # noqa: E731
    assert picker_positions(messages, siblings) == ((f"m{RENDER_WINDOW}", 2, 2), (f"m{2 * RENDER_WINDOW - 1}", 3, 4))
    drawn = [(row.a["data-message-id"], node.a["data-index"], node.a["data-count"])
             for row in record_of(messages, siblings=siblings).rows if "data-message-id" in row.a
             for actions in row.c if actions.a.get("data-testid") == "message-actions"
             for node in actions.c if node.a.get("data-testid") == "branch-picker"]
    assert [(ident, int(index), int(count)) for ident, index, count in drawn] == list(picker_positions(messages, siblings))


def test_a_record_is_written_again_when_its_pickers_change_though_its_thread_did_not():
    """DESIGN.md §13, §17: the record written at ready, before history's tree brought the pickers,
    is written again once they arrive, so the next load paints them; nothing changed, nothing due."""
    fork = (("q1", 1, 2),)
    assert record_due(None, 5, ())  # never written
    assert record_due((4, ()), 5, ())  # the thread changed
    assert record_due((5, ()), 5, fork)  # the tree arrived: a picker the record lacks
    assert record_due((5, fork), 5, (("q1", 2, 2),))  # another sibling shown elsewhere
    assert not record_due((5, fork), 5, fork)
    assert record_due((5, fork), None, ())  # no stored thread any more: the record goes
    assert not record_due((None, ()), None, fork)  # gone already; pickers of an unsaved thread write nothing
