"""The rows of a scene's checkpoint list (``app.checkpoints.listing.list_rows``), which
``static/checkpoint-view.js`` draws as they are (DESIGN.md §10 UI hooks)."""

from __future__ import annotations

from app.checkpoints import ArtifactSnapshot, MemoryVersionBackend, SceneCheckpoints
from app.checkpoints.documents import Background, Box, SceneDocument, SceneElement
from app.checkpoints.listing import list_rows
from app.i18n import Translator


def doc(title, text):
    return SceneDocument(title=title, background=Background(kind="color", value="#fff"),
                         elements=(SceneElement(id="a", kind="text", box=Box(x=0, y=0, w=10, h=10), text=text),))


async def listed(sources):
    checkpoints = SceneCheckpoints(MemoryVersionBackend(), base=lambda stage, scene: doc("base", "x"))
    for n, source in enumerate(sources, 1):
        await checkpoints.submit(ArtifactSnapshot(stage_id="s", scene_id="scene-1", document=doc(f"take {n}", f"نص {n}"),
                                                  source=source, conversation_id="c", turn_id=None,
                                                  tool_call_id=None, at=1_780_000_000_000 + n))
    return (await checkpoints.read_model.list_scene("s", "scene-1"))["checkpoints"]


async def test_each_checkpoint_is_one_item_row_newest_first_then_the_course_version():
    t = Translator("ja-JP")
    checkpoints = await listed(["regenerate_scene", "restore", "agent_tool"])
    rows = list_rows(t, checkpoints, 2)
    assert [r["kind"] for r in rows] == ["item", "item", "item", "original"]
    assert [(r["version"], r["id"], r["source"], r["iso"]) for r in rows[:3]] == [
        (c["version_no"], c["checkpoint_id"], c["source"], c["updated_at"]) for c in checkpoints]
    assert [r["version"] for r in rows[:3]] == [3, 2, 1]
    assert [r["sourceText"] for r in rows[:3]] == ["agent_tool", t("checkpoints.source.restore"),
                                                   t("checkpoints.source.regenerate_scene")]
    assert [r["versionText"] for r in rows] == [t("checkpoints.version", version=n) for n in (3, 2, 1, 0)]
    assert [r["preview"] for r in rows[:3]] == [c["preview_text"] for c in checkpoints]
    assert all(r["diffText"] == t("checkpoints.diff") for r in rows[:3])


async def test_the_shown_version_is_current_and_offers_no_restore():
    t = Translator("en-US")
    rows = list_rows(t, await listed(["regenerate_scene", "regenerate_scene"]), 1)
    assert [r["current"] for r in rows] == [False, True, False]
    assert rows[0]["restoreText"] == t("checkpoints.restore")
    assert rows[0]["restoreLabel"] == t("checkpoints.restoreLabel", version=2)
    assert "restoreText" not in rows[1] and "restoreLabel" not in rows[1]
    assert rows[2]["restoreLabel"] == t("checkpoints.restoreOriginalLabel")
    shown_original = list_rows(t, await listed(["regenerate_scene"]), 0)
    assert [r["current"] for r in shown_original] == [False, True]
    assert "restoreText" not in shown_original[1] and shown_original[0]["restoreText"] == t("checkpoints.restore")


def test_no_checkpoints_is_one_empty_row_without_the_course_version():
    t = Translator("ar-SA")
    assert list_rows(t, [], 0) == [{"kind": "empty", "text": t("checkpoints.empty")}]


def test_the_versions_buttons_name_starts_with_its_visible_text_in_every_locale():
    """WCAG 2.5.3 (axe ``label-content-name-mismatch``): the scene Versions button's accessible name
    holds its visible text as a word of its own at its start ("シーン scene-1 のバージョン" fused it in
    ja-JP and zh-CN), then a space or a bracket, in every locale file."""
    from pathlib import Path

    from app.i18n import Translator

    files = sorted((Path(__file__).resolve().parents[2] / "app" / "locales").glob("*.json"))
    assert len(files) == 8
    for path in files:
        t = Translator(path.stem)
        shown, label = t("checkpoints.versions"), t("checkpoints.versionsLabel", sceneId="scene-1")
        assert label.startswith(shown) and label[len(shown)] in " (（", (path.stem, shown, label)
        assert "scene-1" in label, path.stem
