"""The tools a model may call, run locally in the page (DESIGN.md §12).

``TOOLS`` is the Chat Completions ``tools`` list; ``run_tool`` runs one call
and returns ``(live result, is_error)`` — the same live result the demo agent's
``regenerate_scene`` produces, so cards, slim projection and checkpoints are
the same for both agents. A call that cannot run (unknown tool, missing or
non-string or empty ``sceneId`` — each said in its own words, so the model
can correct the call —, the tool raising) gives an ``is_error`` result with
``details.content: None``, never an exception.

``regenerate`` is the one seam to the scene tool: it looks up
``app.agent.regenerate_result`` at call time, so whatever implements the
regenerate tool there (e.g. reading the scene's current document) is used.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from app.tool_texts import written

__all__ = ["REGENERATE_TOOL", "TOOLS", "error_result", "regenerate", "run_tool"]

_log = logging.getLogger(__name__)

REGENERATE_TOOL = "regenerate_scene"

TOOLS: list[dict[str, Any]] = [{
    "type": "function",
    "function": {
        "name": REGENERATE_TOOL,
        "description": "Regenerate one scene of the current course, optionally following an instruction. "
                       "Returns a summary of the new scene.",
        "parameters": {
            "type": "object",
            "properties": {
                "sceneId": {"type": "string", "description": "Id of the scene to regenerate, e.g. scene-1."},
                "instruction": {"type": "string", "description": "What to change; may be empty."},
            },
            "required": ["sceneId"],
            "additionalProperties": False,
        },
    },
}]


def regenerate(scene_id: str, instruction: str) -> dict[str, Any]:
    """Run the scene tool (``app.agent.regenerate_result``, looked up at call time) → live result."""
    from app import agent as demo

    return demo.regenerate_result(scene_id, instruction)


def error_result(text: str, scene_id: str | None = None) -> dict[str, Any]:
    """The live result of a failed call: ``{"content": [text], "details": {"sceneId"?, "content": None, "actions": []}}``."""
    details: dict[str, Any] = {"content": None, "actions": []}
    if scene_id is not None:
        details = {"sceneId": scene_id, **details}
    return {"content": [{"type": "text", "text": text}], "details": details}


def run_tool(name: str, args: dict[str, Any], *,
             scene_tool: Callable[[str, str], tuple[dict[str, Any], bool]] | None = None) -> tuple[dict[str, Any], bool]:
    """Run tool ``name`` with parsed ``args``; returns ``(live result, is_error)``.

    ``scene_tool(scene_id, instruction) -> (live result, is_error)`` runs
    ``regenerate_scene`` (in the page: ``DemoAgent.regenerate_scene``, which reads
    the course's current scene document and fails for a scene it does not have);
    without it, ``regenerate`` (no current document).
    """
    if name != REGENERATE_TOOL:
        return error_result(written("unknownTool", name=repr(name), tool=REGENERATE_TOOL)), True
    scene_id, instruction = args.get("sceneId"), args.get("instruction", "")
    if scene_id is None:
        return error_result(written("noSceneId")), True
    if not isinstance(scene_id, str):
        return error_result(written("sceneIdNotString", value=json.dumps(scene_id)[:40])), True
    if not scene_id.strip():
        return error_result(written("sceneIdEmpty")), True
    if not isinstance(instruction, str):
        instruction = ""
    try:
        if scene_tool is not None:
            return scene_tool(scene_id.strip(), instruction.strip())
        return regenerate(scene_id.strip(), instruction.strip()), False
    except Exception as error:  # noqa: BLE001 - a failing tool becomes an error card, not a failed turn
        _log.warning("regenerate_scene %r failed: %s", scene_id, error)
        return error_result(written("failed", sceneId=scene_id, error=error), scene_id), True
