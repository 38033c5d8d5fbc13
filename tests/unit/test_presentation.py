"""Tool-card derivations and safe link splitting (DESIGN.md §5, §6)."""

from app.model import ToolCallPart
from app.presentation import link_segments, tool_card_view


def card(**fields):
    return tool_card_view(ToolCallPart(tool_call_id="c1", tool_name="regenerate_scene", **fields))


def test_card_with_result_and_no_error_is_ok_and_counts_elements():
    view = card(result={"content": [{"type": "text", "text": "done"}, {"type": "image", "data": "AAAA"}],
                        "details": {"sceneId": "s1", "content": {"elements": [{}, {}, {}]},
                                    "actions": [{"type": "update"}, {}]}})
    assert (view.status, view.element_count, view.action_types, view.summary, view.scene_id) == (
        "ok", 3, ("update", ""), "done", "s1")


def test_card_with_error_and_null_content_is_error_without_count():
    view = card(result={"content": [], "details": {"content": None}}, is_error=True)
    assert (view.status, view.element_count) == ("error", None)


def test_card_without_result_is_interrupted_once_the_turn_is_over_and_running_during_it():
    assert card().status == "interrupted"
    assert tool_card_view(ToolCallPart(tool_call_id="c"), turn_running=True).status == "running"


def test_card_survives_odd_live_data():
    view = card(result="not a dict", args={"sceneId": 5})
    assert (view.status, view.element_count, view.action_types, view.scene_id) == ("ok", None, (), None)
    assert card(result={"details": {"content": {"elements": "x"}}}).element_count == 0


def test_only_http_and_https_become_links():
    segments = link_segments("a https://x.org/p?q=1, b javascript:alert(1) c http://y.cn。")
    assert [(s.kind, s.text) for s in segments] == [
        ("text", "a "), ("link", "https://x.org/p?q=1"), ("text", ", b javascript:alert(1) c "),
        ("link", "http://y.cn"), ("text", "。")]
    assert "".join(s.text for s in segments) == "a https://x.org/p?q=1, b javascript:alert(1) c http://y.cn。"


def test_html_stays_text():
    assert [(s.kind, s.text) for s in link_segments("<img src=x onerror=alert(1)>")] == [
        ("text", "<img src=x onerror=alert(1)>")]


def test_a_streamed_token_appends_or_only_recounts_a_collapsed_text_and_rebuilds_at_the_limit():
    from app.presentation import LONG_TEXT_CHARS, streamed_text_update

    assert streamed_text_update(10, 15) == "append"
    assert streamed_text_update(LONG_TEXT_CHARS - 5, LONG_TEXT_CHARS) == "append"
    assert streamed_text_update(LONG_TEXT_CHARS - 5, LONG_TEXT_CHARS + 5) is None  # now collapsed: rebuilt once
    assert streamed_text_update(LONG_TEXT_CHARS + 5, LONG_TEXT_CHARS + 900) == "length"  # the shown start stays
    assert streamed_text_update(LONG_TEXT_CHARS + 5, LONG_TEXT_CHARS + 900, expanded=True) is None
    assert streamed_text_update(20, 20) is None and streamed_text_update(20, 10) is None
    from app.presentation import collapsed_prefix

    text = ("word " * 900)[:LONG_TEXT_CHARS + 1]
    assert collapsed_prefix(text) == collapsed_prefix(text + " more" * 500)  # why "length" may skip the redraw
