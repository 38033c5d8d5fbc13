"""A message's actions and branch picker (app/message_actions.py, DESIGN.md §17): Edit on a
question, Regenerate on a reply, Copy on both, the picker only where there are siblings, its
buttons disabled at either end, every text in the reader's locale."""

import pytest

from app.i18n import LOCALES, Translator
from app.message_actions import message_actions

T = Translator("en-US")


def test_a_question_offers_edit_and_copy_and_a_reply_regenerate_and_copy():
    assert [b.testid for b in message_actions("user", (1, 1), T).buttons] == ["message-edit", "message-copy"]
    assert [b.testid for b in message_actions("assistant", (1, 1), T).buttons] == ["message-regenerate",
                                                                                    "message-copy"]


def test_a_message_without_an_id_can_only_be_copied():
    actions = message_actions("user", (1, 2), T, has_id=False)
    assert actions.picker is None and [b.testid for b in actions.buttons] == ["message-copy"]


@pytest.mark.parametrize(("index", "count", "previous", "following"),
                         [(1, 2, True, False), (2, 2, False, True), (2, 3, False, False)])
def test_the_picker_shows_where_there_are_siblings_with_its_ends_disabled(index, count, previous, following):
    picker = message_actions("assistant", (index, count), T).picker
    assert (picker.index, picker.count, picker.position) == (index, count, f"{index} / {count}")
    assert (picker.previous.testid, picker.following.testid) == ("branch-prev", "branch-next")
    assert (picker.previous.disabled, picker.following.disabled) == (previous, following)
    assert message_actions("assistant", (1, 1), T).picker is None


@pytest.mark.parametrize("locale", LOCALES)
def test_every_label_is_in_the_readers_locale(locale):
    t = Translator(locale)
    actions = message_actions("user", (2, 3), t)
    texts = [actions.picker.label, actions.picker.version, actions.picker.previous.label,
             actions.picker.following.label] + [b.label for b in actions.buttons] + [b.text for b in actions.buttons]
    english = Translator("en-US")
    assert all(texts) and "{" not in actions.picker.version
    if locale != "en-US":
        assert not set(texts) & {english.t(f"message.{k}") for k in ("edit", "copy", "previous", "next", "picker")}


def test_in_right_to_left_text_the_arrows_point_the_other_way():
    ltr, rtl = (message_actions("user", (2, 3), T, rtl=flag).picker for flag in (False, True))
    assert (ltr.previous.text, ltr.following.text) == ("‹", "›")
    assert (rtl.previous.text, rtl.following.text) == ("›", "‹")
