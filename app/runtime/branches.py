"""The rules of edit, regenerate and the branch picker on a course's live thread (DESIGN.md §17).

Pure and browser-free. The live thread (``Session.messages``) is always the *shown path* of the
course's conversation tree (``app.history.tree.Tree``); the tree itself is kept beside it
(``Session.tree``). These functions say:

- what the agent reads for an edit or a regenerate (``edit_request``, ``regenerate_request``): the
  shown path up to the message the new one answers, nothing of other branches;
- which tree the panel draws its pickers from (``adopted_tree``): history's tree of the course's
  conversation, when it is the conversation shown, grown by the shown path, so the branch shown is
  the one the thread store holds (a reload, another tab);
- a message's text for Copy (``message_text``).

The tree grows by the shown path with ``app.history.branching.grown`` (imported when first used:
history's modules load after ready, DESIGN.md §13).

Every function here takes and returns plain values; the runtime (``app.runtime.AgentRuntime``) holds
the state and refuses an action while a reply runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.continuity import derived_ids
from app.model import Message, TextPart

__all__ = ["TREE_WRITES", "adopted_tree", "edit_request", "message_text", "regenerate_request", "shared_prefix",
           "slim_path"]


def _index(path: Sequence[Message], message_id: str | None, role: str) -> int | None:
    if not message_id:
        return None
    for index, message in enumerate(path):
        if message.id == message_id:
            return index if message.role == role else None
    return None


def edit_request(path: Sequence[Message], message_id: str | None) -> list[Message] | None:
    """The messages the agent reads before the edited question (DESIGN.md §17): the shown ``path``
    up to, not including, user message ``message_id``. ``None`` when ``message_id`` is not a user
    message on the path (nothing to edit).

    >>> from app.model import TextPart
    >>> path = [Message(id="u1", role="user", content=[TextPart(text="a")]),
    ...         Message(id="a1", role="assistant", content=[TextPart(text="b")]),
    ...         Message(id="u2", role="user", content=[TextPart(text="c")])]
    >>> [m.id for m in edit_request(path, "u2")], edit_request(path, "u1"), edit_request(path, "a1")
    (['u1', 'a1'], [], None)
    """
    index = _index(path, message_id, "user")
    return None if index is None else list(path[:index])


def regenerate_request(path: Sequence[Message], message_id: str | None) -> tuple[list[Message], Message] | None:
    """``(messages before the question, the question)`` for another answer to assistant message
    ``message_id`` (DESIGN.md §17): the question is the user message the reply answers (the one
    before it on the shown ``path``); the agent reads the path before it and answers it anew.
    ``None`` when ``message_id`` is not an assistant reply on the path with a question before it.

    >>> from app.model import TextPart
    >>> path = [Message(id="u1", role="user", content=[TextPart(text="a")]),
    ...         Message(id="a1", role="assistant", content=[TextPart(text="b")])]
    >>> before, question = regenerate_request(path, "a1")
    >>> before, question.id, regenerate_request(path, "u1")
    ([], 'u1', None)
    """
    index = _index(path, message_id, "assistant")
    if index is None or index == 0 or path[index - 1].role != "user":
        return None
    return list(path[: index - 1]), path[index - 1]


def message_text(message: Message) -> str:
    """The text Copy puts on the clipboard: ``message``'s text parts, a blank line between them
    (tool calls are not text).

    >>> from app.model import TextPart
    >>> message_text(Message(role="assistant", content=[TextPart(text="a"), TextPart(text="b")]))
    'a\\n\\nb'
    """
    return "\n\n".join(part.text for part in message.content if isinstance(part, TextPart))


def shared_prefix(live: Sequence[Message], path: Sequence[dict[str, Any]]) -> int:
    """How many leading messages the live thread ``live`` and the shown ``path`` (slim) share, by id:
    after a picker move the messages above the fork are kept as they are (neither rebuilt from the
    stored form nor drawn again), only the path below it is read (DESIGN.md §17).

    >>> shared_prefix([Message(id="a", role="user"), Message(id="b", role="assistant")],
    ...               [{"id": "a"}, {"id": "c"}])
    1
    """
    count = 0
    for message, slim in zip(live, path):
        if not message.id or message.id != slim.get("id"):
            break
        count += 1
    return count


TREE_WRITES = frozenset({"record", "branch", "import", "sync", "undo"})
"""The kinds of history change (``app.history.changes.HistoryChange.kind``) that write a
conversation, so its tree may hold siblings another tab made (DESIGN.md §17)."""


def slim_path(tree: Any) -> list[dict[str, Any]]:
    """``tree``'s shown path as the thread store keeps it: slim messages with their ``id`` and no
    ``parentId`` (DESIGN.md §3, §17)."""
    return [{key: value for key, value in message.items() if key != "parentId"} for message in tree.path()]


def adopted_tree(history_tree: Any, local_tree: Any, path: list[dict[str, Any]]) -> Any:
    """The tree the panel draws once history answers (DESIGN.md §17): ``history_tree`` (the course's
    active conversation as history keeps it, or ``None``) joined with ``local_tree`` (what this tab
    grew meanwhile, or ``None``), then grown by the shown ``path`` (slim) so that the branch shown
    is the thread store's at every fork. History's tree is taken only when it holds the path's first
    message: another conversation's tree (a New conversation not yet recorded) is never mixed in."""
    from app.history.branching import grown  # history's modules load after ready (DESIGN.md §13)

    path = derived_ids(path)
    first = path[0].get("id") if path else None
    if history_tree is None or first is None or first not in history_tree:
        return grown(local_tree, path)
    tree = history_tree if local_tree is None else history_tree.merged(local_tree)
    return tree.grow(path)
