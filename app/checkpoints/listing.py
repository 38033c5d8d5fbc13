"""The rows of a scene's checkpoint list, every text and attribute decided here (DESIGN.md §10
UI hooks); ``static/checkpoint-view.js`` only turns them into DOM nodes, in one call.

``list_rows(t, checkpoints, current)`` → a list of JSON-able dicts:

- ``{"kind": "empty", "text"}`` when there are no checkpoints;
- one ``{"kind": "item", "version", "id", "source", "current", "versionText", "sourceText",
  "iso", "currentText", "preview", "diffText"[, "restoreText", "restoreLabel"]}`` per
  checkpoint, in the order given (newest first); the restore pair is left out on the
  version shown (``current``), ``preview`` is ``None`` when the checkpoint has none;
- then, when there are checkpoints, the course's own version 0 ``{"kind": "original",
  "current", "versionText", "sourceText", "currentText"[, "restoreText", "restoreLabel"]}``,
  last, restorable unless it is shown.

``t``: an ``app.i18n.Translator`` (``t(key, **values)``); ``checkpoints``: list items of
``CheckpointReadModel.list_scene``; ``current``: the version number shown (0: the course's own).
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["TRANSLATED_SOURCES", "list_rows"]

TRANSLATED_SOURCES = frozenset({"regenerate_scene", "restore"})
"""Sources with a translated badge (``checkpoints.source.<source>``); any other is shown as it is."""


def list_rows(t: Callable[..., str], checkpoints: list[dict[str, Any]], current: int) -> list[dict[str, Any]]:
    """The rows ``static/checkpoint-view.js`` draws for one scene (module docstring)."""
    if not checkpoints:
        return [{"kind": "empty", "text": t("checkpoints.empty")}]
    restore_text, diff_text, current_text = t("checkpoints.restore"), t("checkpoints.diff"), t("checkpoints.current")
    sources = {source: t(f"checkpoints.source.{source}") for source in TRANSLATED_SOURCES}
    rows: list[dict[str, Any]] = []
    for checkpoint in checkpoints:
        number = checkpoint["version_no"] or 0
        source = checkpoint["source"]
        row = {"kind": "item", "version": number, "id": checkpoint["checkpoint_id"], "source": source,
               "current": number == current, "versionText": t("checkpoints.version", version=number),
               "sourceText": sources.get(source, source), "iso": checkpoint["updated_at"],
               "currentText": current_text, "preview": checkpoint["preview_text"] or None, "diffText": diff_text}
        if number != current:
            row["restoreText"] = restore_text
            row["restoreLabel"] = t("checkpoints.restoreLabel", version=number)
        rows.append(row)
    original = {"kind": "original", "current": current == 0, "versionText": t("checkpoints.version", version=0),
                "sourceText": t("checkpoints.original"), "currentText": current_text}
    if current != 0:
        original["restoreText"] = restore_text
        original["restoreLabel"] = t("checkpoints.restoreOriginalLabel")
    rows.append(original)
    return rows
