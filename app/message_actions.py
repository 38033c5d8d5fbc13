"""A message's actions and its branch picker, decided once (DESIGN.md §6, §17).

Pure: what the panel (``app.browser.message_nodes``) draws under a message of the shown path:
Edit on a question, Regenerate on a reply, Copy on both, and, where the message has siblings, the
picker ‹ n / m › whose buttons are disabled at either end. Texts are in the reader's locale
(``t``: ``app.i18n.Translator`` or any ``(key, **params) -> str``). The picker's buttons follow the
text's direction (in right-to-left text "previous" is on the right) and its arrows are mirrored
there (``rtl``), so "previous" always points back to the start of the line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["ActionButton", "BranchPicker", "MessageActions", "message_actions"]


@dataclass(frozen=True)
class ActionButton:
    """One button: its ``data-testid``, visible ``text``, ``label`` (``aria-label`` and ``title``),
    and whether it is ``disabled``."""

    testid: str
    text: str
    label: str
    disabled: bool = False


@dataclass(frozen=True)
class BranchPicker:
    """The picker of a message with siblings: ``index`` (1-based) of ``count``, the ``position``
    shown between the buttons (``"2 / 3"``), its ``label`` (a group label) and ``version`` (the
    position said in words), and the ``previous``/``following`` buttons."""

    index: int
    count: int
    position: str
    label: str
    version: str
    previous: ActionButton
    following: ActionButton


@dataclass(frozen=True)
class MessageActions:
    """What a message shows under it: ``picker`` (``None`` without siblings) and ``buttons`` in order."""

    picker: BranchPicker | None
    buttons: tuple[ActionButton, ...]


def message_actions(role: str, siblings: tuple[int, int], t: Callable[..., str], *,
                    has_id: bool = True, rtl: bool = False) -> MessageActions:
    """The actions of a ``role`` message that is ``siblings[0]`` of ``siblings[1]`` at its fork.
    A message without an id (an old thread not adopted yet) can only be copied. ``rtl``: the page
    reads right to left (ar-SA): "previous" sits on the right and points right.

    >>> t = lambda key, **params: key
    >>> actions = message_actions("assistant", (1, 2), t)
    >>> actions.picker.position, actions.picker.previous.disabled, actions.picker.following.disabled
    ('1 / 2', True, False)
    >>> [b.testid for b in actions.buttons], message_actions("user", (1, 1), t).picker is None
    (['message-regenerate', 'message-copy'], True)
    """
    index, count = siblings
    picker = None
    if has_id and count > 1:
        picker = BranchPicker(
            index, count, f"{index} / {count}", t("message.picker"), t("message.version", index=index, count=count),
            ActionButton("branch-prev", "›" if rtl else "‹", t("message.previous"), disabled=index <= 1),
            ActionButton("branch-next", "‹" if rtl else "›", t("message.next"), disabled=index >= count))
    buttons: list[ActionButton] = []
    if has_id and role == "user":
        buttons.append(ActionButton("message-edit", t("message.edit"), t("message.editLabel")))
    elif has_id and role == "assistant":
        buttons.append(ActionButton("message-regenerate", t("message.regenerate"), t("message.regenerateLabel")))
    buttons.append(ActionButton("message-copy", t("message.copy"), t("message.copyLabel")))
    return MessageActions(picker, tuple(buttons))
