"""What the scene tool's results say: in the words stored, and in the reader's locale (DESIGN.md §3, §6, §7).

The text items of a tool call's result are data: the slim projection keeps them as
they are (§3), the model back end sends them back to the model (§12), exports
carry them. They are written in English from ``TEMPLATES``, one per thing the
app's own tools can say (``written``). A tool card shows them in the page's
locale: ``shown`` recognises a text written from a template and gives the
catalogue's ``edit.agent.tool.result.<key>`` with the same values; any other
text (another tool's, the TS original's, a hand-edited value) is shown as stored.
The stored text never changes.

Example::

    >>> text = written("regenerated", sceneId="scene-2", count=37)
    >>> text
    'Regenerated scene scene-2 with 37 elements.'
    >>> shown(text, lambda key, **p: f"{key} {p}")
    "edit.agent.tool.result.regenerated {'sceneId': 'scene-2', 'count': 37}"
    >>> shown("Something else.", lambda key, **p: key)
    'Something else.'
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Any

__all__ = ["ACTION_TYPES", "TEMPLATES", "action_names", "shown", "written"]

TEMPLATES: dict[str, str] = {
    "regenerated": "Regenerated scene {sceneId} with {count} elements.",
    "toldToFail": "Regenerating scene {sceneId} failed: the demo agent was told to fail.",
    "noSuchScene": "Regenerating scene {sceneId} failed: there is no such scene in this course.",
    "failed": "Regenerating scene {sceneId} failed: {error}",
    "unknownTool": "Unknown tool {name}; the only tool is {tool}.",
    "noSceneId": "regenerate_scene needs a sceneId (the id of one of the course's scenes, e.g. scene-1); "
                 "the call gave none.",
    "sceneIdNotString": "regenerate_scene's sceneId must be a string such as scene-1; the call gave {value}.",
    "sceneIdEmpty": "regenerate_scene's sceneId is empty: give the id of one of the course's scenes, e.g. scene-1.",
}
"""Key → the English text a tool result says (``{name}`` placeholders). Matched in this order, so
a template whose text another one's ``{error}`` would also take comes before it."""

ACTION_TYPES = ("update_element", "add_element", "remove_element", "set_background", "reorder_elements")
"""The action types a regenerate result lists (``details.actions[].type``); each has a name in
the catalogue, ``edit.agent.tool.actionType.<type>``."""

_FIELD = re.compile(r"\\\{(\w+)\\\}")


def written(key: str, **values: Any) -> str:
    """The stored (English) text of ``TEMPLATES[key]`` with ``values`` filled in. Raises ``KeyError``
    for an unknown key."""
    return TEMPLATES[key].format(**values)


@cache
def _patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    def field(match: re.Match[str]) -> str:
        return rf"(?P<{match[1]}>[0-9]+)" if match[1] == "count" else rf"(?P<{match[1]}>.+?)"

    return tuple((key, re.compile(_FIELD.sub(field, re.escape(text)), re.DOTALL)) for key, text in TEMPLATES.items())


def shown(text: str, translate: Callable[..., str]) -> str:
    """``text`` as a card shows it in the reader's locale: ``edit.agent.tool.result.<key>`` with the
    values read from it when it is one of ``TEMPLATES`` (``count`` as an integer, for plural forms),
    else ``text`` unchanged. ``translate``: an ``app.i18n.Translator`` or any ``(key, **params) -> str``."""
    for key, pattern in _patterns():
        match = pattern.fullmatch(text)
        if match is not None:
            values: dict[str, Any] = dict(match.groupdict())
            if "count" in values:
                values["count"] = int(values["count"])
            return translate(f"edit.agent.tool.result.{key}", **values)
    return text


def action_names(types: tuple[str, ...], translate: Callable[..., str]) -> str:
    """The action types of a card as one localised list: each known type by its catalogue name,
    another as stored, a missing one as ``?``; joined with the locale's list separator
    (``app.listSeparator``).

    >>> action_names(("add_element", "zoom", ""), lambda key, **p: {"app.listSeparator": ", "}.get(key, key[-11:]))
    'add_element, zoom, ?'
    """
    names = [translate(f"edit.agent.tool.actionType.{t}") if t in ACTION_TYPES else t or "?" for t in types]
    return translate("app.listSeparator").join(names)
