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


def _demo_card(command: str, locale: str):
    """The card of the demo agent's one tool call for ``command``, its texts in ``locale``, and the
    stored (slim) tool-call part."""
    import asyncio

    from app.agent import DemoAgent, ToolCallFinished, ToolCallStarted
    from app.i18n import Translator
    from app.presentation import card_text
    from app.projection import serialize_thread
    from app.model import Message

    events = asyncio.run(_collect(DemoAgent(), command))
    started = next(e for e in events if isinstance(e, ToolCallStarted))
    finished = next(e for e in events if isinstance(e, ToolCallFinished))
    part = ToolCallPart(tool_call_id=started.tool_call_id, tool_name=started.tool_name, args=started.args,
                        result=finished.result, is_error=finished.is_error)
    stored = serialize_thread([Message(role="assistant", content=[part])])[0]["content"][0]
    return card_text(tool_card_view(part), Translator(locale)), stored


async def _collect(agent, text):
    return [e async for e in agent.run([], text)]


def test_the_demo_tool_cards_read_in_the_page_locale_and_the_stored_result_stays_as_written():
    from app.agent import action_count, element_count
    from app.i18n import LOCALES, Translator, catalogue

    for locale in LOCALES:
        t = Translator(locale)
        text, stored = _demo_card("/regenerate scene-2 brighter", locale)
        assert text.summary == t("edit.agent.tool.result.regenerated", sceneId="scene-2", count=element_count("scene-2"))
        names = catalogue(locale)["edit"]["agent"]["tool"]["actionType"]
        assert all(name in text.actions for name in list(names.values())[:action_count("scene-2")]), locale
        assert "update_element" not in text.actions
        # what is stored is the contract's (§3): the tool's own words, whatever the locale
        assert stored["result"]["content"] == [{"type": "text", "text": f"Regenerated scene scene-2 with {element_count('scene-2')} elements."}]
        assert [a["type"] for a in stored["result"]["details"]["actions"]][0] == "update_element"

        failed, stored = _demo_card("/fail scene-1", locale)
        assert failed.summary == t("edit.agent.tool.result.toldToFail", sceneId="scene-1")
        assert failed.badge == t("edit.agent.tool.failed") and failed.actions is None
        assert stored["result"]["content"][0]["text"] == "Regenerating scene scene-1 failed: the demo agent was told to fail."
    ar = _demo_card("/regenerate scene-2", "ar-SA")[0]
    assert ar.summary.startswith("أُعيد إنشاء المشهد scene-2") and "Regenerated" not in ar.summary


def test_a_tool_text_the_app_did_not_write_is_shown_as_stored():
    from app.i18n import Translator
    from app.presentation import card_text

    view = card(result={"content": [{"type": "text", "text": "Scene rebuilt by hand."},
                                    {"type": "text", "text": "Regenerated scene s1 with 3 elements."}],
                        "details": {"actions": [{"type": "zoom"}, {}]}})
    text = card_text(view, Translator("zh-CN"))
    assert text.summary == "Scene rebuilt by hand.\n已重新生成场景 s1，共 3 个元素。"
    assert text.actions == "2 项操作：zoom、?"


def test_every_tool_text_the_app_writes_has_a_localised_form():
    """Each of ``app.tool_texts.TEMPLATES`` is recognised in the text it writes (model back end errors
    included: ``app.agents.tools.run_tool``)."""
    from app.agents.tools import run_tool
    from app.i18n import Translator
    from app.tool_texts import shown

    t = Translator("ja-JP")
    for name, args in [("zoom", {}), ("regenerate_scene", {}), ("regenerate_scene", {"sceneId": 5}),
                       ("regenerate_scene", {"sceneId": " "})]:
        result, is_error = run_tool(name, args)
        written_text = result["content"][0]["text"]
        assert is_error and shown(written_text, t) != written_text and shown(written_text, t).isascii() is False

    def broken(scene_id, instruction):
        raise RuntimeError("disk full")

    result, _ = run_tool("regenerate_scene", {"sceneId": "scene-1"}, scene_tool=broken)
    assert shown(result["content"][0]["text"], t) == "シーン scene-1 の再生成に失敗しました：disk full"
