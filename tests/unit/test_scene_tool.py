"""One scene tool for every agent: the model back end's ``regenerate_scene`` reads the
course's current document and fails for a missing scene, exactly like the demo's
(DESIGN.md §10, §12)."""

from __future__ import annotations

from app.agent import RUN_STAGE, DemoAgent, regenerate_result
from app.agents.tools import run_tool
from app.checkpoints.documents import base_document


def _in_course(stage_id, call):
    token = RUN_STAGE.set(stage_id)
    try:
        return call()
    finally:
        RUN_STAGE.reset(token)


def test_model_tool_on_a_missing_scene_fails_like_the_demo():
    demo = DemoAgent()
    result, is_error = _in_course("intro-ml", lambda: run_tool(
        "regenerate_scene", {"sceneId": "scene-99"}, scene_tool=demo.regenerate_scene))
    assert is_error and result["details"]["content"] is None
    assert result == _in_course("intro-ml", lambda: demo.regenerate_scene("scene-99"))[0]


def test_model_tool_regenerates_from_the_current_document():
    seen = []

    def scenes(stage_id, scene_id):
        seen.append((stage_id, scene_id))
        return base_document(stage_id, scene_id)

    demo = DemoAgent(scenes=scenes)
    result, is_error = _in_course("intro-ml", lambda: run_tool(
        "regenerate_scene", {"sceneId": "scene-1", "instruction": "more"}, scene_tool=demo.regenerate_scene))
    assert not is_error and seen == [("intro-ml", "scene-1")]
    assert result == regenerate_result("scene-1", "more", base_document("intro-ml", "scene-1"))


def test_a_regenerated_placeholder_scene_keeps_its_title_in_the_page_locale():
    """Version 0 as the page shows it (``shown_base``) is what the tool reads: a placeholder course's
    scene 2 regenerated in an ar-SA page is titled like its heading, not the English "Scene 2"."""
    from app.checkpoints import SceneCheckpoints
    from app.checkpoints.documents import shown_base
    from app.i18n import Translator

    translator = Translator("ar-SA")
    checkpoints = SceneCheckpoints(base=shown_base(translator))
    demo = DemoAgent(scenes=checkpoints.document)
    result, is_error = _in_course("a-course-of-its-own", lambda: demo.regenerate_scene("scene-2"))
    title = translator.t("course.scene", index=2)
    assert not is_error and title != "Scene 2"
    assert result["details"]["content"]["title"] == title
    assert result["details"]["content"]["elements"][0]["text"] == title
    assert checkpoints.original("a-course-of-its-own", "scene-2").title == title
    assert shown_base(translator)("intro-ml", "scene-2").title == "Supervised learning"  # a demo course's own words
