"""The message row model (DESIGN.md §13, §15): one message's row decided once, for the paint record
and the live panel alike: its state, its pieces (text, tool cards, status notes) and their labels."""

from __future__ import annotations

import pytest

from app.i18n import Translator
from app.message_row import CardPiece, NotePiece, TextPiece, message_row
from app.model import Message, MessageStatus, TextPart, ToolCallPart
from app.presentation import COLLAPSED_CHARS
from app.projection import CUT, FAILED, STOPPED, deserialize_thread, serialize_thread

T = Translator("en-US")


def reply(*parts, status: MessageStatus | None = None) -> Message:
    return Message(id="m1", role="assistant", content=list(parts), status=status)


def card(call_id: str, result=None, *, is_error: bool = False) -> ToolCallPart:
    return ToolCallPart(tool_call_id=call_id, tool_name="regenerate_scene", args={"sceneId": "scene-1"},
                        result=result, is_error=is_error)


def notes(row) -> list[tuple[str, str]]:
    return [(piece.kind, piece.text) for piece in row.pieces if isinstance(piece, NotePiece)]


def test_a_reply_cut_at_the_length_limit_keeps_its_text_and_says_it_was_cut_not_stopped():
    row = message_row(reply(TextPart(text="half an answer"), status=CUT), T)
    assert row.state == "cut"
    assert [type(p) for p in row.pieces] == [TextPiece, NotePiece]
    assert notes(row) == [("cut", T("model.turnCut"))]
    assert row.pieces[-1].testid == "turn-cut" and row.pieces[-1].attrs == {"role": "note"}


def test_a_reply_cut_before_any_text_shows_only_that_it_was_cut():
    row = message_row(reply(status=CUT), T)
    assert notes(row) == [("cut", T("model.turnCut"))]


@pytest.mark.parametrize("content", [[], [TextPart(text="partial")]])
def test_a_stopped_reply_says_stopped_once(content):
    row = message_row(reply(*content, status=STOPPED), T)
    assert row.state == "stopped" and notes(row) == [("stopped", T("edit.agent.stopped"))]
    assert row.pieces[-1].testid == "agent-stopped"


def test_a_failed_reply_says_why_in_the_readers_language_and_is_not_also_stopped():
    failed = FAILED.model_copy(update={"error": {"code": "server", "params": {"status": 500}}})
    row = message_row(reply(TextPart(text="so far"), status=failed), Translator("ja-JP"))
    assert row.state == "failed"
    ((kind, text),) = notes(row)
    assert kind == "failed" and text and text != notes(message_row(reply(status=failed), T))[0][1]
    assert row.pieces[-1].testid == "turn-error"
    assert row.pieces[-1].attrs == {"role": "alert", "data-code": "server"}


def test_a_running_reply_with_nothing_yet_is_thinking_and_a_complete_one_has_no_note():
    assert notes(message_row(reply(status=MessageStatus(type="running")), T)) == [
        ("thinking", T("edit.agent.thinking"))]
    assert message_row(reply(status=MessageStatus(type="running")), T).pieces[0].testid is None
    complete = message_row(reply(TextPart(text="done"), status=MessageStatus(type="complete", reason="stop")), T)
    assert complete.state == "complete" and notes(complete) == []


def test_tool_cards_of_each_status_carry_their_badge_and_attributes():
    ok = card("c-ok", {"content": [{"type": "text", "text": "Scene regenerated"}],
                       "details": {"content": {"elements": [{}, {}]}}})
    error = card("c-error", {"content": [{"type": "text", "text": "no such scene"}]}, is_error=True)
    row = message_row(reply(ok, error, card("c-none"), status=STOPPED), T)
    cards = [p for p in row.pieces if isinstance(p, CardPiece)]
    assert [(c.attrs["data-status"], c.badge) for c in cards] == [
        ("ok", T("edit.agent.tool.done")), ("error", T("edit.agent.tool.failed")),
        ("interrupted", T("edit.agent.tool.interrupted"))]
    assert cards[0].attrs["data-element-count"] == "2" and "data-element-count" not in cards[1].attrs
    assert [line.testid for line in cards[0].lines] == ["tool-card-elements", "tool-card-summary"]
    assert cards[0].name == T("edit.agent.tool.regenerateScene", sceneId="scene-1")
    running = message_row(reply(card("c-run"), status=MessageStatus(type="running")), T)
    assert [p.attrs["data-status"] for p in running.pieces] == ["running"]


def test_text_pieces_say_when_they_are_markdown_and_when_they_are_collapsed():
    long = "word " * 1200
    row = message_row(reply(TextPart(text="**hi**"), TextPart(text=long), status=MessageStatus(type="complete")), T)
    short, collapsed = row.pieces
    assert short.markdown and short.collapsed is None
    assert not collapsed.markdown and len(collapsed.collapsed) <= COLLAPSED_CHARS
    user = message_row(Message(role="user", content=[TextPart(text="**hi**")]), T)
    assert not user.pieces[0].markdown and user.state == "complete"
    running = message_row(reply(TextPart(text="**hi**"), status=MessageStatus(type="running")), T)
    assert not running.pieces[0].markdown


def test_the_row_attributes_name_role_status_id_and_label():
    row = message_row(reply(TextPart(text="x"), status=CUT), Translator("ar-SA"))
    assert row.attrs == {"class": "message", "data-testid": "agent-message", "data-role": "assistant",
                         "data-message-id": "m1", "data-status": "incomplete", "tabindex": "-1",
                         "role": "article", "aria-label": Translator("ar-SA")("edit.agent.assistant")}
    user = message_row(Message(role="user", content=[TextPart(text="q")]), T)
    assert user.attrs["aria-label"] == T("edit.agent.you") and "data-status" not in user.attrs
    # who said it reaches assistive technology: a named article (a generic div's name is not exposed)
    assert user.attrs["role"] == "article"


def test_a_stored_thread_reads_back_as_the_same_rows():
    """Each status survives the store: the rows of a reloaded thread are the live ones."""
    messages = [Message(role="user", content=[TextPart(text="q")]),
                reply(TextPart(text="a"), status=CUT), reply(TextPart(text="b"), status=STOPPED),
                reply(TextPart(text="c"), status=FAILED.model_copy(update={"error": {"code": "network", "params": {}}}))]
    again = deserialize_thread(serialize_thread(messages))
    assert [message_row(m, T).state for m in again] == ["complete", "cut", "stopped", "failed"]
    assert [notes(message_row(m, T)) for m in again] == [notes(message_row(m, T)) for m in messages]
