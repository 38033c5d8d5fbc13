"""Scene documents and file checkpoints, every rule of DESIGN.md §10 in CPython (in-memory backend):
events → timeline → versions → read model → exports."""

from __future__ import annotations

import asyncio
import io
import json
import re
import zipfile

import pytest

from app.agent import RUN_STAGE, DemoAgent, ToolCallFinished, element_count, regenerate_document
from app.checkpoints import (ArtifactSnapshot, BackendUnavailable, CheckpointNotFound, CheckpointReadModel,
                             MemoryVersionBackend,
                             SceneCheckpoints, VersionStore)
from app.checkpoints.documents import (LONG_DATA, Background, Box, SceneDocument, SceneElement, base_document,
                                       canonical_json, course_document, document_json, parse_document, preview_text,
                                       validation_issues)
from app.checkpoints.exports import EVIDENCE_FILES, REPLAY_FILES, evidence_pack, replay_case
from app.checkpoints.paths import MAX_SEGMENT, artifact_id, scene_path, segment, snapshot_path
from app.courses import find_course
from app.checkpoints.record_backend import RecordVersionBackend
from app.records import MemoryBackend
from app.runtime import AgentRuntime
from app.storage import MemoryStorage
from app.store import ThreadStore

LIST_FIELDS = {"checkpoint_id", "turn_id", "path", "source", "updated_at", "validation_issue_count", "version_no",
               "version_id", "request_id", "title", "kind", "status", "preview_text", "snapshot_path"}
ODD_IDS = ["../x", "__proto__", "s" * 300, "场景一", "a/b", "..", ".", "%2F", "a b?c#d"]


@pytest.fixture(params=["memory-twin", "record-store"])
def new_backend(request):
    """Makes backends: the version store's in-memory twin, or the record-store adapter over the
    app's ``MemoryBackend`` (the same queries and atomic writes as IndexedDB)."""
    def make():
        if request.param == "memory-twin":
            return MemoryVersionBackend()
        records = MemoryBackend()
        records.is_open = True  # opened (MemoryBackend.open only sets this)
        return RecordVersionBackend(records)
    return make


class Clock:
    def __init__(self, start=1_780_000_000_000):
        self.now = start

    def __call__(self):
        self.now += 1000
        return self.now


def make_runtime(backend=None, clock=None):
    store = ThreadStore(MemoryStorage())
    store.hydrate(0)
    checkpoints = SceneCheckpoints(backend if backend is not None else MemoryVersionBackend())
    agent = DemoAgent(scenes=checkpoints.document)
    runtime = AgentRuntime(store, agent, clock=clock or Clock(), checkpoints=checkpoints)
    return runtime, checkpoints


async def settle(checkpoints):
    while checkpoints.busy:
        await asyncio.sleep(0)


async def regenerate(runtime, text):
    await runtime.send(text)
    await settle(runtime.checkpoints)
    return runtime.messages[-1].content[0]


def snapshot(stage, scene, document, *, source="regenerate_scene", at=1, conversation="conv", call="call"):
    return ArtifactSnapshot(stage_id=stage, scene_id=scene, document=document, source=source,
                            conversation_id=conversation, turn_id="turn", tool_call_id=call, at=at)


def doc(title="T", *elements):
    return SceneDocument(title=title, background=Background(kind="color", value="#fff"), elements=tuple(elements))


def el(ident, text="x", kind="text", **box):
    return SceneElement(id=ident, kind=kind, box=Box(**({"x": 0, "y": 0, "w": 10, "h": 10} | box)), text=text)


# -- documents ---------------------------------------------------------------

def test_each_demo_scene_is_a_version_0_document_with_title_and_body_elements():
    course = find_course("poetry-tang")
    for scene in course.scenes:
        document = course_document(course, scene.id)
        assert document.title == scene.title
        assert [e.text for e in document.elements] == [scene.title, scene.body]
        assert len({e.id for e in document.elements}) == 2
    assert course_document(course, "scene-99") is None
    assert base_document("no-such-course", "scene-1").title == "Scene 1"


def test_a_scene_text_holding_a_lone_surrogate_is_regenerated_again_stored_and_read_back():
    # The instruction comes from the model's (or the user's) text; pydantic's encoder and UTF-8 refuse
    # a lone surrogate, which made the next regenerate of that scene raise.
    first = regenerate_document("scene-1", "half \ud800 pair")
    assert any("\ud800" in (e.text or "") for e in first.elements)
    assert regenerate_document("scene-1", "again", first) == regenerate_document("scene-1", "again", first)
    text = document_json(first)
    assert "\\ud800" in text and parse_document(text) == first


def test_canonical_json_shows_long_base64_by_size_and_hash_only():
    data = "data:image/png;base64," + "QUJD" * 400
    document = doc("T", SceneElement(id="i", kind="image", box=Box(x=0, y=0, w=1, h=1), src=data))
    text = canonical_json(document)
    assert "QUJDQUJD" not in text
    match = re.search(r"<data (\d+) chars sha256:([0-9a-f]{16})>", text)
    assert match and int(match.group(1)) == len(data)
    other = doc("T", SceneElement(id="i", kind="image", box=Box(x=0, y=0, w=1, h=1), src=data[:-4] + "QUJE"))
    assert canonical_json(other) != text  # a different image shows a different hash
    short = doc("T", el("e", text="word " * (LONG_DATA // 4)))
    assert "word word" in canonical_json(short)  # prose is never abbreviated


def test_preview_text_is_at_most_240_characters():
    long = doc("Title", *[el(f"e{i}", text="中文 text " * 20) for i in range(5)])
    assert len(preview_text(long)) == 240 and preview_text(long).endswith("…")
    assert preview_text(doc("Short")) == "Short"


# -- paths -------------------------------------------------------------------

@pytest.mark.parametrize("raw", ODD_IDS)
def test_odd_ids_become_safe_distinct_segments(raw):
    part = segment(raw)
    assert "/" not in part and "\\" not in part and part not in (".", "..") and len(part) <= MAX_SEGMENT
    assert scene_path(raw).count("/") == 1 and snapshot_path(raw, 3).count("/") == 2
    assert snapshot_path(raw, 3).endswith("/v0003.artifact.json")
    others = [segment(o) for o in ODD_IDS if o != raw]
    assert part not in others
    assert artifact_id("c", raw) != artifact_id("c/" + raw.split("/")[0], "x")


def test_chinese_and_word_ids_stay_readable():
    assert segment("场景一") == "场景一" and segment("__proto__") == "__proto__"
    assert segment("s" * 300) != segment("s" * 299)


@pytest.mark.parametrize("raw", ODD_IDS)
async def test_odd_scene_ids_go_through_the_whole_chain(raw):
    backend = MemoryVersionBackend()
    checkpoints = SceneCheckpoints(backend, base=lambda stage, scene: doc(scene))
    item = await checkpoints.submit(snapshot("__proto__", raw, doc("new " + raw)))
    listed = await checkpoints.read_model.list_scene("__proto__", raw)
    assert [c["checkpoint_id"] for c in listed["checkpoints"]] == [item.id]
    assert listed["checkpoints"][0]["path"] == scene_path(raw)
    assert (await checkpoints.read_model.diff(item.id))["diff"]["title_changed"]
    archive = zipfile.ZipFile(io.BytesIO(await evidence_pack(checkpoints.read_model, stage_id="__proto__",
                                                             conversation_id="conv", exported_at=0)))
    assert json.loads(archive.read("runtime.json"))["fileCheckpointCount"] == 1


# -- events → timeline → versions → read model --------------------------------

async def test_a_regenerate_becomes_one_timeline_item_version_and_list_item(new_backend):
    runtime, checkpoints = make_runtime(new_backend())
    runtime.set_stage("intro-ml")
    await checkpoints.load_stage("intro-ml")
    part = await regenerate(runtime, "/regenerate scene-1 brighter")
    assert checkpoints.current("intro-ml", "scene-1").version_no == 1
    listed = await checkpoints.read_model.list_scene("intro-ml", "scene-1")
    assert listed["checkpoint_count"] == 1
    item = listed["checkpoints"][0]
    assert LIST_FIELDS <= set(item)
    assert item["path"] == "scenes/scene-1.json" and item["source"] == "regenerate_scene"
    assert item["version_no"] == 1 and item["version_id"] == "intro-ml/scene-1:v1"
    assert item["request_id"] == part.tool_call_id and item["turn_id"] == runtime.messages[-1].id
    assert item["snapshot_path"] == "versions/scene-1/v0001.artifact.json"
    assert item["title"] == "What is learning?" and item["kind"] == "scene" and item["status"] == "ready"
    assert item["validation_issue_count"] == 0 and len(item["preview_text"]) <= 240
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", item["updated_at"])
    timeline = await checkpoints.read_model.timeline(runtime.conversation_id("intro-ml"))
    assert [(t.id, t.path, t.source, t.tool_call_id, t.turn_id) for t in timeline] == [
        (item["checkpoint_id"], "scenes/scene-1.json", "regenerate_scene", part.tool_call_id, item["turn_id"])]
    got = await checkpoints.read_model.get(item["checkpoint_id"])
    assert got["checkpoint_document"] == part.result["details"]["content"]
    assert got["live_document"] == part.result["details"]["content"]
    summary = await checkpoints.read_model.summary(runtime.conversation_id("intro-ml"))
    assert summary == {"count": 1, "latest_checkpoint": item}


async def test_failed_and_missing_scene_regenerates_write_no_version_and_offer_no_restore():
    runtime, checkpoints = make_runtime()
    runtime.set_stage("intro-ml")
    for text in ("/fail scene-1", "/regenerate scene-99"):
        part = await regenerate(runtime, text)
        assert part.is_error is True and part.result["details"]["content"] is None
        assert not runtime.stage_edits.has_snapshot(part.tool_call_id)
    assert (await checkpoints.read_model.summary("intro-ml"))["count"] == 0
    assert checkpoints.current("intro-ml", "scene-99").document is None


async def test_versions_are_numbered_per_scene_and_restore_is_a_new_version(new_backend):
    runtime, checkpoints = make_runtime(new_backend())
    runtime.set_stage("linear-algebra")
    first = await regenerate(runtime, "/regenerate scene-2 one")
    await regenerate(runtime, "/regenerate scene-3")
    second = await regenerate(runtime, "/regenerate scene-2 two")
    model = checkpoints.read_model
    listed = (await model.list_scene("linear-algebra", "scene-2"))["checkpoints"]
    assert [c["version_no"] for c in listed] == [2, 1]  # newest first
    v1 = listed[1]
    restored = await runtime.restore_checkpoint(v1["checkpoint_id"])
    listed = (await model.list_scene("linear-algebra", "scene-2"))["checkpoints"]
    assert [(c["version_no"], c["source"]) for c in listed] == [(3, "restore"), (2, "regenerate_scene"),
                                                                 (1, "regenerate_scene")]
    assert restored.metadata["artifactRestoredFrom"] == "linear-algebra/scene-2:v1"
    assert checkpoints.current("linear-algebra", "scene-2").document.model_dump(mode="json", exclude_none=True) \
        == first.result["details"]["content"]
    # never rewritten: v2 is still what the second regenerate made
    v2 = (await model.get(listed[1]["checkpoint_id"]))["checkpoint_document"]
    assert v2 == second.result["details"]["content"]
    assert (await model.list_scene("linear-algebra", "scene-3"))["checkpoint_count"] == 1


async def test_the_course_version_is_restored_as_a_new_version_and_an_unknown_scene_makes_none(new_backend):
    runtime, checkpoints = make_runtime(new_backend())
    runtime.set_stage("linear-algebra")
    await regenerate(runtime, "/regenerate scene-2 one")
    restored = await runtime.restore_original("linear-algebra", "scene-2")
    assert restored.metadata["artifactRestoredFrom"] == "linear-algebra/scene-2:v0"
    listed = (await checkpoints.read_model.list_scene("linear-algebra", "scene-2"))["checkpoints"]
    assert [(c["version_no"], c["source"]) for c in listed] == [(2, "restore"), (1, "regenerate_scene")]
    assert checkpoints.current("linear-algebra", "scene-2").document == base_document("linear-algebra", "scene-2")
    assert await runtime.restore_original("linear-algebra", "scene-99") is None
    assert (await checkpoints.read_model.list_scene("linear-algebra", "scene-99"))["checkpoint_count"] == 0


async def test_regenerate_reads_the_current_document_and_is_deterministic():
    runtime, checkpoints = make_runtime()
    runtime.set_stage("poetry-tang")
    first = await regenerate(runtime, "/regenerate scene-1 x")
    again = await regenerate(runtime, "/regenerate scene-1 x")
    assert first.result["details"]["content"]["title"] == "静夜思"  # read from the course's own document
    assert first.result["details"]["content"] != again.result["details"]["content"]  # built on v1, not v0
    v1 = SceneDocument.model_validate(first.result["details"]["content"])
    assert regenerate_document("scene-1", "x", v1).model_dump(mode="json", exclude_none=True) \
        == again.result["details"]["content"]
    assert len(v1.elements) == element_count("scene-1")


async def test_a_run_reads_the_scenes_of_the_course_it_started_on():
    seen = []
    agent = DemoAgent(scenes=lambda stage, scene: seen.append(stage) or base_document(stage, scene))

    async def run(stage):
        RUN_STAGE.set(stage)
        return [e async for e in agent.run([], "/regenerate scene-1")]

    events = await asyncio.create_task(run("linear-algebra"))
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert seen == ["linear-algebra"] and finished[0].result["details"]["content"]["title"] == "Vectors"


async def test_card_restore_keeps_the_memory_rule_and_writes_a_restore_version():
    runtime, checkpoints = make_runtime()
    runtime.set_stage("intro-ml")
    part = await regenerate(runtime, "/regenerate scene-2")
    assert runtime.restore_snapshot(part.tool_call_id)
    await settle(checkpoints)
    state = checkpoints.current("intro-ml", "scene-2")
    assert state.version_no == 2 and state.document == base_document("intro-ml", "scene-2")
    listed = (await checkpoints.read_model.list_scene("intro-ml", "scene-2"))["checkpoints"]
    assert [c["source"] for c in listed] == ["restore", "regenerate_scene"]
    assert not runtime.restore_snapshot(part.tool_call_id)


async def test_restore_works_after_a_reload(new_backend):
    backend = new_backend()
    runtime, _ = make_runtime(backend)
    runtime.set_stage("intro-ml")
    await regenerate(runtime, "/regenerate scene-3")
    await regenerate(runtime, "/regenerate scene-3 again")

    reloaded, checkpoints = make_runtime(backend)  # a new page over the same database
    reloaded.set_stage("intro-ml")
    await checkpoints.load_stage("intro-ml")
    assert checkpoints.current("intro-ml", "scene-3").version_no == 2
    listed = (await checkpoints.read_model.list_scene("intro-ml", "scene-3"))["checkpoints"]
    await reloaded.restore_checkpoint(listed[-1]["checkpoint_id"])
    assert checkpoints.current("intro-ml", "scene-3").version_no == 3
    assert not any(reloaded.stage_edits.has_snapshot(m) for m in ("x",))


async def test_two_tabs_never_lose_each_others_versions(new_backend):
    backend = new_backend()
    tab_a = SceneCheckpoints(backend)
    tab_b = SceneCheckpoints(backend)
    await tab_a.load_stage("intro-ml")
    await tab_b.load_stage("intro-ml")
    base = base_document("intro-ml", "scene-1")
    made_in_a = await tab_a.submit(snapshot("intro-ml", "scene-1", doc("from A"), at=10))
    # tab B still believes the scene is at version 0; its restore must not overwrite A's v1
    made_in_b = await tab_b.submit(snapshot("intro-ml", "scene-1", base, source="restore", at=11))
    assert made_in_a.metadata["artifactVersionNo"] == 1 and made_in_b.metadata["artifactVersionNo"] == 2
    for tab in (tab_a, tab_b):
        listed = (await tab.read_model.list_scene("intro-ml", "scene-1"))["checkpoints"]
        assert [c["checkpoint_id"] for c in listed] == [made_in_b.id, made_in_a.id]
    assert (await tab_a.read_model.get(made_in_a.id))["checkpoint_document"]["title"] == "from A"
    await tab_a.load_stage("intro-ml")
    assert tab_a.current("intro-ml", "scene-1").version_no == 2


class CommitLog:
    """A backend that notes each commit's version id and answer (``None``: written; a number: refused)."""

    def __init__(self, backend):
        self._backend = backend
        self.commits = []

    def __getattr__(self, name):
        return getattr(self._backend, name)

    async def commit(self, artifact, version, document, expected_version_no):
        answer = await self._backend.commit(artifact, version, document, expected_version_no)
        self.commits.append((version["versionId"], answer))
        return answer


async def test_a_commit_refused_because_another_tab_took_the_number_is_renumbered_never_treated_as_written(
        new_backend):
    backend = CommitLog(new_backend())
    tab_a = VersionStore(backend, new_id=iter(["a-1", "a-2"]).__next__)
    tab_b = VersionStore(backend, new_id=iter(["b-1", "b-2"]).__next__)
    b1 = await tab_b.record(snapshot("intro-ml", "scene-1", doc("b1"), at=1))
    a2 = await tab_a.record(snapshot("intro-ml", "scene-1", doc("a2"), at=2))  # A reads the stored v1: v2
    # B never heard of a2: it still believes the scene is at its own v1, so its v2 is refused
    b3 = await tab_b.record(snapshot("intro-ml", "scene-1", doc("b3"), at=3))
    assert backend.commits == [("intro-ml/scene-1:v1", None), ("intro-ml/scene-1:v2", None),
                               ("intro-ml/scene-1:v2", 2), ("intro-ml/scene-1:v3", None)]
    assert [i.metadata["artifactVersionNo"] for i in (b1, a2, b3)] == [1, 2, 3]
    for tab in (tab_a, tab_b):
        listed = (await CheckpointReadModel(tab).list_scene("intro-ml", "scene-1"))["checkpoints"]
        assert [c["checkpoint_id"] for c in listed] == [b3.id, a2.id, b1.id]
        titles = [(await tab.document(c["version_id"])).title for c in listed]
        assert titles == ["b3", "a2", "b1"]  # no version lost, none overwritten
    assert (tab_b.cached("intro-ml/scene-1").version_no, tab_b.cached("intro-ml/scene-1").document.title) == (3, "b3")
    reloaded = VersionStore(backend)
    assert (await reloaded.load_stage("intro-ml"))["scene-1"].version_no == 3


async def test_concurrent_writes_of_one_tab_are_numbered_in_order(new_backend):
    checkpoints = SceneCheckpoints(new_backend())
    tasks = [checkpoints.submit(snapshot("s", "scene-1", doc(f"t{i}"), at=i)) for i in range(5)]
    items = await asyncio.gather(*tasks)
    assert [i.metadata["artifactVersionNo"] for i in items] == [1, 2, 3, 4, 5]
    assert checkpoints.current("s", "scene-1").document.title == "t4"


# -- diff ----------------------------------------------------------------------

async def test_diff_against_the_version_before_names_added_removed_and_changed_elements(new_backend):
    checkpoints = SceneCheckpoints(new_backend(), base=lambda stage, scene: doc("T", el("keep"), el("edit", "old"), el("gone")))
    image = "data:image/png;base64," + "iVBORw0K" * 300
    new = doc("T", el("keep"), el("edit", "new"),
              SceneElement(id="pic", kind="image", box=Box(x=1, y=1, w=5, h=5), src=image))
    first = await checkpoints.submit(snapshot("s", "scene-1", new))
    result = await checkpoints.read_model.diff(first.id)
    assert result["previous_version_id"] == "s/scene-1:v0" and result["current_version_id"] == "s/scene-1:v1"
    diff = result["diff"]
    assert diff["elements"] == {"added": ["pic"], "removed": ["gone"], "changed": ["edit"]}
    lines = diff["lines"]
    assert lines[0] == "--- s/scene-1:v0" and lines[1] == "+++ s/scene-1:v1"
    assert '-   "text": "old"' in lines and '+   "text": "new"' in lines
    assert "iVBORw0KiVBORw0K" not in diff["unified"] and "sha256:" in diff["unified"]
    second = await checkpoints.submit(snapshot("s", "scene-1", new.model_copy(update={"title": "T2"})))
    result = await checkpoints.read_model.diff(second.id)
    assert result["previous_version_id"] == "s/scene-1:v1" and result["diff"]["title_changed"]
    assert result["diff"]["elements"] == {"added": [], "removed": [], "changed": []}
    with pytest.raises(CheckpointNotFound):
        await checkpoints.read_model.diff("fc_missing")


# -- bad records, unavailable backend ------------------------------------------

async def test_damaged_and_unknown_version_records_are_skipped_with_one_notice():
    backend = MemoryVersionBackend()
    checkpoints = SceneCheckpoints(backend)
    good = await checkpoints.submit(snapshot("intro-ml", "scene-1", doc("good"), at=5))
    backend.version_records["junk"] = {"artifactId": "intro-ml/scene-1", "versionNo": "three"}
    newer = dict(backend.version_records["intro-ml/scene-1:v1"], schema=99, versionId="intro-ml/scene-1:v9",
                 checkpointId="fc_newer")
    backend.version_records["intro-ml/scene-1:v9"] = newer
    backend.artifact_records["intro-ml/scene-2"] = {"schema": 1, "stageId": "intro-ml", "current": "{not json"}
    fresh = SceneCheckpoints(backend)
    await fresh.load_stage("intro-ml")
    listed = await fresh.read_model.list_scene("intro-ml", "scene-1")
    assert [c["checkpoint_id"] for c in listed["checkpoints"]] == [good.id]
    assert fresh.current("intro-ml", "scene-2").version_no == 0  # damaged current: the course's own
    assert fresh.notices == ("checkpoint-damaged",)
    assert "junk" in backend.version_records  # skipped, never rewritten or removed


class FailingBackend(MemoryVersionBackend):
    async def commit(self, *args):
        raise BackendUnavailable("blocked")

    async def artifacts(self, stage_id):
        raise BackendUnavailable("blocked")


async def test_unavailable_backend_keeps_versions_in_memory_and_says_so_once():
    runtime, checkpoints = make_runtime(FailingBackend())
    runtime.set_stage("intro-ml")
    await checkpoints.load_stage("intro-ml")
    await regenerate(runtime, "/regenerate scene-1")
    await regenerate(runtime, "/regenerate scene-2")
    assert checkpoints.current("intro-ml", "scene-1").version_no == 1
    assert not checkpoints.kept and checkpoints.notices == ("checkpoint-unavailable",)
    assert (await checkpoints.read_model.summary(runtime.conversation_id("intro-ml")))["count"] == 2


async def test_a_large_document_is_stored_whole(new_backend):
    images = [SceneElement(id=f"i{n}", kind="image", box=Box(x=0, y=0, w=1, h=1),
                           src="data:image/png;base64," + "A" * 60_000) for n in range(100)]
    big = doc("big", *images)
    checkpoints = SceneCheckpoints(new_backend())
    item = await checkpoints.submit(snapshot("s", "scene-1", big))
    got = await checkpoints.read_model.get(item.id)
    assert len(json.dumps(got["checkpoint_document"])) > 5_000_000
    assert got["checkpoint_document"]["elements"][99]["src"] == images[99].src


# -- exports ---------------------------------------------------------------------

async def _exports(checkpoints, conversation):
    kwargs = {"stage_id": "intro-ml", "conversation_id": conversation, "exported_at": 1_780_000_000_000}
    evidence = zipfile.ZipFile(io.BytesIO(await evidence_pack(checkpoints.read_model, **kwargs)))
    replay = zipfile.ZipFile(io.BytesIO(await replay_case(checkpoints.read_model, **kwargs)))
    return evidence, replay


async def test_evidence_pack_and_replay_case_carry_the_read_models_checkpoints(new_backend):
    runtime, checkpoints = make_runtime(new_backend())
    runtime.set_stage("intro-ml")
    await regenerate(runtime, "/regenerate scene-1")
    await regenerate(runtime, "/regenerate scene-2 兼容")
    listed = (await checkpoints.read_model.list_scene("intro-ml", "scene-1"))["checkpoints"]
    await runtime.restore_checkpoint(listed[0]["checkpoint_id"])
    conversation = runtime.conversation_id("intro-ml")
    expected = await checkpoints.read_model.list_conversation(conversation)
    evidence, replay = await _exports(checkpoints, conversation)
    documents = {"scenes/scene-1.json", "scenes/scene-2.json", "versions/scene-1/v0001.artifact.json",
                 "versions/scene-1/v0002.artifact.json", "versions/scene-2/v0001.artifact.json"}
    assert sorted(evidence.namelist()) == sorted({*EVIDENCE_FILES, *documents})
    assert sorted(replay.namelist()) == sorted({*REPLAY_FILES, *documents})

    runtime_json = json.loads(evidence.read("runtime.json"))
    artifacts_json = json.loads(evidence.read("artifacts.json"))
    for payload in (runtime_json, artifacts_json):
        assert payload["schemaVersion"] == 1
        assert payload["fileCheckpoints"] == expected["checkpoints"]
        assert payload["fileCheckpointCount"] == 3
    assert runtime_json["fileCheckpointSummary"]["latest_checkpoint"]["source"] == "restore"
    assert {a["path"] for a in artifacts_json["recentArtifacts"]} == {"scenes/scene-1.json", "scenes/scene-2.json"}
    timeline = json.loads(evidence.read("timeline.json"))
    assert {"schemaVersion", "exportedAt", "turns", "items"} <= set(timeline)
    assert [i["id"] for i in timeline["items"]] == [c["checkpoint_id"] for c in reversed(expected["checkpoints"])]
    assert all({"path", "source", "content", "metadata"} <= set(i) for i in timeline["items"])
    assert sum(len(t["itemIds"]) for t in timeline["turns"]) == 3
    summary_md = evidence.read("summary.md").decode()
    assert all(c["checkpoint_id"] in summary_md for c in expected["checkpoints"])

    replay_input = json.loads(replay.read("input.json"))
    assert replay_input["replayCaseVersion"] == 1
    assert replay_input["runtimeContext"]["fileCheckpoints"] == expected["checkpoints"]
    assert replay_input["runtimeContext"]["fileCheckpointCount"] == 3
    criteria = json.loads(replay.read("expected.json"))["successCriteria"]
    assert {(c["path"], c["version_no"], c["source"]) for c in criteria} == {
        ("scenes/scene-1.json", 2, "restore"), ("scenes/scene-2.json", 1, "regenerate_scene")}
    links = json.loads(replay.read("evidence-links.json"))["links"]
    assert [l["snapshot_path"] for l in links] == [c["snapshot_path"] for c in expected["checkpoints"]]
    assert "expected.json" in replay.read("grader.md").decode()


def named_paths(value, key=""):
    """Every string a JSON value holds under a key ending in ``path`` (``path``, ``snapshot_path``,
    ``snapshotPath``…), at any depth."""
    if isinstance(value, dict):
        return {p for k, v in value.items() for p in named_paths(v, k)}
    if isinstance(value, list):
        return {p for v in value for p in named_paths(v, key)}
    return {value} if isinstance(value, str) and key.lower().endswith("path") else set()


async def test_every_path_the_zips_json_names_is_a_file_in_it_with_images_by_size_and_hash(new_backend):
    runtime, checkpoints = make_runtime(new_backend())
    runtime.set_stage("intro-ml")
    await checkpoints.load_stage("intro-ml")
    for text in ("/regenerate scene-1", "/regenerate scene-1 again", "/regenerate scene-3 图表"):
        await regenerate(runtime, text)
    conversation = runtime.conversation_id("intro-ml")
    listed = (await checkpoints.read_model.list_conversation(conversation))["checkpoints"]
    for archive in await _exports(checkpoints, conversation):
        names = set(archive.namelist())
        json_files = [n for n in names if n.endswith(".json")]
        named = set().union(*(named_paths(json.loads(archive.read(n))) for n in json_files))
        assert {c["snapshot_path"] for c in listed} <= named
        assert named and named <= names, named - names
        for checkpoint in listed:  # each snapshot is that version's document, its images by size and hash
            text = archive.read(checkpoint["snapshot_path"]).decode()
            assert "base64," not in text and "sha256:" in text
            stored = json.loads(text)
            whole = (await checkpoints.read_model.get(checkpoint["checkpoint_id"]))["checkpoint_document"]
            assert stored["versionId"] == checkpoint["version_id"]
            assert stored["document"]["title"] == whole["title"]
            assert [e["id"] for e in stored["document"]["elements"]] == [e["id"] for e in whole["elements"]]
        live = json.loads(archive.read("scenes/scene-1.json"))
        assert live["versionId"] == "intro-ml/scene-1:v2"
        assert live["document"] == json.loads(archive.read("versions/scene-1/v0002.artifact.json"))["document"]


async def test_an_export_names_a_snapshot_it_cannot_read_as_a_file_without_a_document():
    records = MemoryBackend()
    await records.open()
    checkpoints = SceneCheckpoints(RecordVersionBackend(records))
    item = await checkpoints.submit(snapshot("intro-ml", "scene-1", doc("lost"), conversation="c"))
    records.put_raw("snapshots", {"versionId": "intro-ml/scene-1:v1", "document": {"title": 3}})
    evidence, replay = await _exports(checkpoints, "c")
    for archive in (evidence, replay):
        assert json.loads(archive.read("versions/scene-1/v0001.artifact.json")) == {
            "versionId": item.metadata["artifactVersionId"], "document": None}
    assert checkpoints.notices == ("checkpoint-damaged",)


async def test_exports_of_a_conversation_without_checkpoints_are_empty_but_complete():
    evidence, replay = await _exports(SceneCheckpoints(), "nothing")
    assert json.loads(evidence.read("runtime.json"))["fileCheckpointCount"] == 0
    assert json.loads(replay.read("input.json"))["runtimeContext"] == {"fileCheckpoints": [], "fileCheckpointCount": 0}


async def test_version_store_used_directly_allocates_from_the_stored_numbers():
    backend = MemoryVersionBackend()
    store = VersionStore(backend, new_id=iter(f"fc_{i}" for i in range(10)).__next__)
    a = await store.record(snapshot("s", "x", doc("1")))
    b = await store.record(snapshot("s", "x", doc("2")))
    assert (a.id, b.id) == ("fc_0", "fc_1")
    assert sorted(backend.version_records) == ["s/x:v1", "s/x:v2"]
    assert backend.artifact_records["s/x"]["versionNo"] == 2


async def test_a_damaged_record_in_the_record_store_is_skipped_with_one_notice():
    records = MemoryBackend()
    await records.open()
    checkpoints = SceneCheckpoints(RecordVersionBackend(records))
    good = await checkpoints.submit(snapshot("intro-ml", "scene-1", doc("good"), conversation="c"))
    records.put_raw("versions", {"versionId": "intro-ml/scene-1:v7", "artifactId": "intro-ml/scene-1",
                                 "versionNo": 7, "conversationId": "c", "updatedAt": 9, "item": "garbage"})
    records.put_raw("versions", {"versionId": "intro-ml/scene-1:v8", "schema": 2, "artifactId": "intro-ml/scene-1",
                                 "versionNo": 8, "conversationId": "c", "updatedAt": 9, "checkpointId": "x",
                                 "item": good.wire()})
    fresh = SceneCheckpoints(RecordVersionBackend(records))
    listed = await fresh.read_model.list_conversation("c")
    assert [c["checkpoint_id"] for c in listed["checkpoints"]] == [good.id]
    assert fresh.notices == ("checkpoint-damaged",)
    # writing goes on; the skipped records are never rewritten or removed
    nxt = await fresh.submit(snapshot("intro-ml", "scene-1", doc("next"), conversation="c"))
    assert nxt.metadata["artifactVersionNo"] == 2
    stored = records.raw("versions")
    assert stored["intro-ml/scene-1:v8"]["schema"] == 2 and stored["intro-ml/scene-1:v7"]["item"] == "garbage"


async def test_record_store_failures_fall_back_to_memory():
    records = MemoryBackend()
    await records.open()
    checkpoints = SceneCheckpoints(RecordVersionBackend(records))
    records.fail_next = "quota"
    item = await checkpoints.submit(snapshot("intro-ml", "scene-1", doc("kept in memory")))
    assert item.metadata["artifactVersionNo"] == 1 and not checkpoints.kept
    assert checkpoints.notices == ("checkpoint-unavailable",)
    assert records.raw("versions") == {}


# -- slides (what the stage view may put in a style or src) ----------------------

@pytest.mark.parametrize("src", ["javascript:alert(1)", "data:text/html;base64,PHNjcmlwdD4=", "http://x/y.png",
                                 'data:image/png;base64,AAA")', "data:image/svg+xml;base64,PHN2Zz4="])
def test_only_raster_base64_data_urls_become_image_sources(src):
    from app.checkpoints.slides import safe_image

    assert safe_image(src) is None


def test_element_styles_place_boxes_in_percent_and_drop_unsafe_colours():
    from app.checkpoints.slides import element_style

    shape = SceneElement(id="s", kind="shape", box=Box(x=480, y=270, w=96, h=54), color="red;background:url(x)")
    assert element_style(shape) == "left:50%;top:50%;width:10%;height:10%"
    text = SceneElement(id="t", kind="text", box=Box(x=0, y=0, w=960, h=40), text="hi", color="#123456")
    assert element_style(text).endswith(";color:#123456") and "cqw" in element_style(text)


def test_text_keeps_its_size_when_it_fits_and_is_made_smaller_until_it_does():
    from app.checkpoints.slides import LINE_HEIGHT, text_size

    box = {"x": 0, "y": 0, "w": 840, "h": 200}
    short = SceneElement(id="t", kind="text", box=Box(**box), text="Short", size=40)
    assert text_size(short) == 40
    body = "A program learns when its performance improves with experience."
    unsized = SceneElement(id="b", kind="text", box=Box(**box), text=body)  # was drawn at 72: three lines cut at two
    assert text_size(unsized) < 72 and 3 * LINE_HEIGHT * 72 > 200
    long = SceneElement(id="l", kind="text", box=Box(x=0, y=0, w=300, h=60), text="word " * 200, size=30)
    chinese = SceneElement(id="c", kind="text", box=Box(x=0, y=0, w=300, h=60), text="床前明月光" * 20, size=30)
    unbroken = SceneElement(id="u", kind="text", box=Box(x=0, y=0, w=300, h=60), text="x" * 400, size=30)
    for element in (long, chinese, unbroken):
        assert 0 < text_size(element) < 15  # many lines: smaller, never cut
    assert text_size(SceneElement(id="e", kind="text", box=Box(**box), text="  ", size=40)) == 40


@pytest.mark.parametrize("locale", ["en-US", "zh-CN", "ru-RU", "ar-SA", "ja-JP"])
def test_the_courses_own_slides_title_is_larger_than_its_body_and_both_keep_their_size(locale):
    from app.checkpoints.slides import text_size
    from app.courses import COURSES
    from app.i18n import Translator

    translate = Translator(locale)
    for course in [*COURSES, find_course("a-course-of-my-own")]:
        for scene in course.scenes:
            title, body = course_document(course, scene.id, translate).elements
            assert text_size(title) > text_size(body) >= 40, (course.id, scene.id)


def test_a_regenerated_scene_is_a_slide_title_bullets_chart_and_pictures():
    import base64
    import struct

    current = base_document("intro-ml", "scene-1")
    document = regenerate_document("scene-1", "make it clearer, add a chart; compare curves", current)
    texts = [e for e in document.elements if e.kind == "text"]
    assert document.elements[0].id == "scene-1-title" and document.elements[0].text == "What is learning?"
    bullets = [e.text for e in texts if e.text.startswith("• ")]
    assert bullets == ["• make it clearer", "• add a chart", "• compare curves"]  # the instruction's phrases
    values = [e for e in texts[1 + len(bullets):]]
    assert values and all(e.text.isdigit() for e in values)  # the chart's bars, each with its value
    shapes = [e for e in document.elements if e.kind == "shape"]
    assert len(shapes) >= len(values) + 5  # accent, panel, baseline, three grid lines and a bar per value
    pictures = [e for e in document.elements if e.kind == "image"]
    assert len(pictures) == 4
    for picture in pictures:
        png = base64.b64decode(picture.src.partition(",")[2])
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == (72, 48)
        assert len(picture.src) > 2000  # still a heavy result
    assert validation_issues(document) == []  # every box on the slide, ids unique

    def overlap(a, b):
        return a.x < b.x + b.w and b.x < a.x + a.w and a.y < b.y + b.h and b.y < a.y + a.h

    placed = [e for e in document.elements if e.kind != "shape"]
    assert not [(a.id, b.id) for i, a in enumerate(placed) for b in placed[i + 1:] if overlap(a.box, b.box)]
    # without an instruction: the current slide's own bullet points, else its body text
    assert [e.text for e in regenerate_document("scene-1", "", document).elements if e.text and e.text.startswith("• ")] \
        == bullets
    plain = regenerate_document("scene-1", "", current)
    assert [e.text for e in plain.elements if e.text and e.text.startswith("• ")] == \
        ["• A program learns when its performance improves with experience"]


@pytest.mark.parametrize("scene_id", ["scene-1", "scene-2", "scene-3", "s", "场景"])
@pytest.mark.parametrize("instruction", ["", "x", "一，二，三，四，五", "word " * 60])
def test_every_regenerated_slide_has_its_element_count_within_the_slide(scene_id, instruction):
    document = regenerate_document(scene_id, instruction, base_document("intro-ml", "scene-2"))
    assert len(document.elements) == element_count(scene_id)
    assert validation_issues(document) == []
    bullets = [e.text for e in document.elements if e.text and e.text.startswith("• ")]
    assert 1 <= len(bullets) <= 4 and all(len(b) <= 92 for b in bullets)


class SlowBackend(MemoryVersionBackend):
    """Commits take a few turns of the event loop, as an IndexedDB write does."""

    async def commit(self, *args):
        for _ in range(20):
            await asyncio.sleep(0)
        return await super().commit(*args)


async def test_a_turn_ends_once_its_version_is_stored_so_the_stage_shows_it_at_idle():
    runtime, checkpoints = make_runtime(SlowBackend())
    runtime.set_stage("intro-ml")
    seen = []
    runtime.subscribe(lambda: seen.append((runtime.is_running, checkpoints.current("intro-ml", "scene-1"))))
    await runtime.send("/regenerate scene-1")  # the turn's task, no settle
    state = checkpoints.current("intro-ml", "scene-1")
    assert not runtime.is_running and (state.version_no, state.pending) == (1, False)
    assert not checkpoints.busy
    assert any(running and s.pending for running, s in seen)  # drawn at once, while the turn still ran
    idle = [s for running, s in seen if not running]
    assert idle and all((s.version_no, s.pending) == (1, False) for s in idle)


async def test_stop_while_the_version_is_written_still_stores_it():
    runtime, checkpoints = make_runtime(SlowBackend())
    runtime.set_stage("intro-ml")
    task = runtime.send("/regenerate scene-1")
    while not checkpoints.busy:
        await asyncio.sleep(0)
    runtime.stop()
    await asyncio.gather(task, return_exceptions=True)
    await settle(checkpoints)
    assert checkpoints.current("intro-ml", "scene-1").version_no == 1
    listed = await checkpoints.read_model.list_scene("intro-ml", "scene-1")
    assert listed["checkpoint_count"] == 1


def _record_store():
    records = MemoryBackend()
    records.is_open = True
    return records


async def test_a_version_is_written_once_and_start_up_reads_it_from_its_snapshot():
    records = _record_store()
    checkpoints = SceneCheckpoints(RecordVersionBackend(records))
    big = doc("Big", *[el(f"e{i}", "x" * 2000) for i in range(30)])
    item = await checkpoints.submit(snapshot("intro-ml", "scene-1", big))
    artifact = records.raw("artifacts")["intro-ml/scene-1"]
    assert "current" not in artifact and artifact["versionId"] == "intro-ml/scene-1:v1"  # the document once, not twice
    assert records.raw("snapshots")["intro-ml/scene-1:v1"]["document"] == big.model_dump(mode="json", exclude_none=True)
    fresh = SceneCheckpoints(RecordVersionBackend(records))
    await fresh.load_stage("intro-ml")
    state = fresh.current("intro-ml", "scene-1")
    assert (state.version_no, state.document) == (1, big) and fresh.notices == ()
    assert (await fresh.read_model.get(item.id))["checkpoint_document"]["title"] == "Big"


async def test_artifact_records_written_before_with_their_current_document_still_load_and_a_lost_snapshot_is_damage():
    records = _record_store()
    writer = SceneCheckpoints(RecordVersionBackend(records))
    await writer.submit(snapshot("intro-ml", "scene-1", doc("one")))
    await writer.submit(snapshot("intro-ml", "scene-2", doc("two")))
    old = records.raw("artifacts")["intro-ml/scene-1"]
    records.put_raw("artifacts", {**old, "current": doc("as stored before").model_dump(mode="json")})
    await records.write([("delete", "snapshots", "intro-ml/scene-2:v1")])
    fresh = SceneCheckpoints(RecordVersionBackend(records))
    await fresh.load_stage("intro-ml")
    assert fresh.current("intro-ml", "scene-1").document.title == "as stored before"
    assert fresh.current("intro-ml", "scene-2").version_no == 0  # its document is gone: skipped
    assert fresh.notices == ("checkpoint-damaged",)


def test_two_regenerates_of_a_scene_diff_as_changed_elements_not_as_removed_and_added():
    from app.agent import regenerate_document
    from app.checkpoints.diff import document_diff

    first = regenerate_document("scene-1", "pictures")
    second = regenerate_document("scene-1", "a calmer layout", first)
    summary = document_diff(first, second, before_label="v1", after_label="v2")["elements"]
    assert summary["added"] == [] and summary["removed"] == []
    assert len(summary["changed"]) == len(second.elements) - 1  # every element but the kept title was redone
    assert regenerate_document("scene-1", "a calmer layout", first) == second  # still deterministic


async def test_a_version_whose_turn_was_never_saved_stays_in_the_timeline_naming_no_turn(new_backend):
    """A reload while ``/regenerate`` streams: the version was written when the tool call's result
    arrived, the reply never saved (DESIGN.md §4). It stays in the course's timeline and the
    conversation's exports (§10: the slide did change; §5: nothing lost silently) but names no turn
    the conversation does not hold: ``turn_id`` null, the id it was made under kept as
    ``unsavedTurnId``; a version of a saved turn keeps its turn."""
    checkpoints = SceneCheckpoints(new_backend())
    kept = ArtifactSnapshot(stage_id="intro-ml", scene_id="scene-1", document=doc("kept"), source="regenerate_scene",
                            conversation_id="conv", turn_id="m2", tool_call_id="c1", at=1)
    cut = ArtifactSnapshot(stage_id="intro-ml", scene_id="scene-1", document=doc("cut"), source="regenerate_scene",
                           conversation_id="conv", turn_id="m9", tool_call_id="c2", at=2)
    first, second = await checkpoints.submit(kept), await checkpoints.submit(cut)
    kwargs = {"stage_id": "intro-ml", "conversation_id": "conv", "exported_at": 1_780_000_000_000,
              "saved_turns": {"m1", "m2"}}
    evidence = zipfile.ZipFile(io.BytesIO(await evidence_pack(checkpoints.read_model, **kwargs)))
    replay = zipfile.ZipFile(io.BytesIO(await replay_case(checkpoints.read_model, **kwargs)))
    runtime_json = json.loads(evidence.read("runtime.json"))
    assert {c["checkpoint_id"]: c["turn_id"] for c in runtime_json["fileCheckpoints"]} == {first.id: "m2",
                                                                                          second.id: None}
    assert runtime_json["fileCheckpointCount"] == 2
    timeline = json.loads(evidence.read("timeline.json"))
    items = {i["id"]: i for i in timeline["items"]}
    assert items[second.id]["turnId"] is None and items[second.id]["metadata"]["unsavedTurnId"] == "m9"
    assert items[first.id]["turnId"] == "m2" and "unsavedTurnId" not in items[first.id]["metadata"]
    assert {(t["turnId"], tuple(t["itemIds"])) for t in timeline["turns"]} == {("m2", (first.id,)),
                                                                             (None, (second.id,))}
    replay_input = json.loads(replay.read("input.json"))
    assert [c["turn_id"] for c in replay_input["runtimeContext"]["fileCheckpoints"]] == [None, "m2"]
    listed = await checkpoints.read_model.list_scene("intro-ml", "scene-1")  # the course's timeline: both
    assert [c["checkpoint_id"] for c in listed["checkpoints"]] == [second.id, first.id]
    stored = await checkpoints.read_model.timeline("conv")  # as stored: never rewritten
    assert [i.turn_id for i in stored] == ["m2", "m9"]


async def test_the_summary_of_a_conversation_is_read_again_only_when_a_version_was_made_since():
    """Issue #33: after a turn, the panel's checkpoint summary asks again (its conversation became known,
    its key changed); when no scene version was recorded since it was read for that conversation
    (``seen``: the scenes' versions as drawn and the versions kept from another device, unchanged) the
    summary read before is given back with no read; a turn that made a version reads again and counts it."""

    class Counting(MemoryVersionBackend):
        reads = 0

        async def conversation_versions(self, conversation_id):
            self.reads += 1
            return await super().conversation_versions(conversation_id)

    backend = Counting()
    checkpoints = SceneCheckpoints(backend)
    model = checkpoints.read_model
    await checkpoints.submit(snapshot("intro-ml", "scene-1", doc("A"), at=1))
    seen = (("1",), 0)
    first = await model.summary("conv", seen=seen)
    assert first["count"] == 1 and backend.reads == 1
    assert await model.summary("conv", seen=seen) == first and backend.reads == 1  # a turn with no version
    assert (await model.summary("other", seen=seen))["count"] == 0 and backend.reads == 2  # another conversation
    await checkpoints.submit(snapshot("intro-ml", "scene-1", doc("B"), at=2))
    after = await model.summary("conv", seen=(("2",), 0))  # a turn that made a version
    assert after["count"] == 2 and backend.reads == 3
    assert (await model.summary("conv", seen=(("2",), 1)))["count"] == 2 and backend.reads == 4  # adopted
    assert (await model.summary("conv"))["count"] == 2 and backend.reads == 5  # nothing seen given: read
