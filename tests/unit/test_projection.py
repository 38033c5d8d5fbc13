"""The slim projection (DESIGN.md §3) and the interrupted-call rule (§4)."""

from __future__ import annotations

import json

import pytest

from app.model import COMPLETE, Message, TextPart, ToolCallPart
from app.projection import (
    FAILED, FAILED_PREFIX, STOPPED, STOPPED_MARKER, deserialize_thread, failed_marker, serialize_thread,
)

BASE64 = "data:image/png;base64," + "iVBORw0KGgo" * 50


def regenerate_result(n: int = 3) -> dict:
    """A heavy live result as the regenerate tool returns it."""
    return {
        "content": [
            {"type": "text", "text": "Regenerated scene s1"},
            {"type": "image", "data": BASE64, "mimeType": "image/png"},
        ],
        "details": {
            "sceneId": "s1",
            "content": {
                "elements": [{"id": f"e{i}", "type": "image", "src": BASE64} for i in range(n)],
                "background": {"type": "image", "src": BASE64},
            },
            "actions": [
                {"type": "spotlight", "elementId": "e0", "data": BASE64},
                {"type": "speech", "text": "long narration"},
                {"elementId": "no-type"},
            ],
            "previous": {"elements": [{"src": BASE64}]},
        },
    }


def tool_call(**fields) -> dict:
    return {"type": "tool-call", "toolCallId": "c1", "toolName": "regenerate_scene", "args": {}, **fields}


def assistant(*parts, **fields) -> dict:
    return {"role": "assistant", "content": list(parts), **fields}


def one_part(part: dict) -> dict:
    [message] = serialize_thread([assistant(part)])
    [slim] = message["content"]
    return slim


def test_text_messages_keep_role_id_and_text():
    live = [
        {"id": "u1", "role": "user", "content": [{"type": "text", "text": "你好 “hi” 😀"}]},
        {"id": "a1", "role": "assistant", "content": [{"type": "text", "text": "ok"}], "status": {"type": "running"}},
    ]
    assert serialize_thread(live) == [
        {"role": "user", "id": "u1", "content": [{"type": "text", "text": "你好 “hi” 😀"}]},
        {"role": "assistant", "id": "a1", "content": [{"type": "text", "text": "ok"}]},
    ]


def test_id_only_when_live_message_has_one():
    [no_id, int_id] = serialize_thread(
        [{"role": "user", "content": "a"}, {"role": "user", "id": 7, "content": "b"}]
    )
    assert "id" not in no_id and "id" not in int_id


def test_regenerate_result_with_n_elements_stores_n_empty_elements_and_no_base64():
    slim = one_part(tool_call(args={"sceneId": "s1", "instruction": "brighter"}, result=regenerate_result(7)))
    assert slim["result"]["details"]["content"] == {"elements": [{}] * 7}
    assert "base64" not in json.dumps(slim)
    assert "background" not in json.dumps(slim) and "previous" not in json.dumps(slim)


def test_slim_result_keeps_exactly_text_scene_null_marker_count_and_action_types():
    slim = one_part(tool_call(result=regenerate_result(2)))
    assert slim["result"] == {
        "content": [{"type": "text", "text": "Regenerated scene s1"}],
        "details": {
            "sceneId": "s1",
            "content": {"elements": [{}, {}]},
            "actions": [{"type": "spotlight"}, {"type": "speech"}, {}],
        },
    }


def test_details_content_null_stays_null():
    slim = one_part(tool_call(isError=True, result={"content": [], "details": {"sceneId": "s1", "content": None}}))
    assert slim["result"]["details"]["content"] is None


@pytest.mark.parametrize(
    ("details", "stored"),
    [({}, {}), ({"content": "x"}, {}), ({"content": []}, {}),
     # the TS original's output for a content object without an elements list, or with a non-list
     ({"content": {}}, {"content": {"elements": []}}),
     ({"content": {"elements": "many"}}, {"content": {"elements": []}}),
     ({"content": {"elements": None, "background": {"src": BASE64}}}, {"content": {"elements": []}}),
     ({"content": {"elements": {"0": {}}}}, {"content": {"elements": []}})],
)
def test_a_content_object_without_an_elements_list_gets_an_empty_one_as_the_ts_original_writes(details, stored):
    slim = one_part(tool_call(result={"content": [], "details": details}))
    assert slim["result"]["details"] == stored


def test_scene_id_only_when_string():
    assert "sceneId" not in one_part(tool_call(result={"details": {"sceneId": 3}}))["result"]["details"]
    assert one_part(tool_call(result={"details": {"sceneId": "s9"}}))["result"]["details"]["sceneId"] == "s9"


def test_actions_become_types_and_typeless_or_non_object_actions_become_empty():
    result = {"details": {"actions": [{"type": "a", "x": 1}, {"type": 5}, "str", None, {}]}}
    assert one_part(tool_call(result=result))["result"]["details"]["actions"] == [{"type": "a"}, {}, {}, {}, {}]
    assert one_part(tool_call(result={"details": {"actions": "nope"}}))["result"]["details"] == {}


def test_result_content_keeps_only_text_items():
    content = [{"type": "text", "text": "a"}, {"type": "image", "data": BASE64}, {"type": "text", "text": 3}, "x",
               {"type": "image", "data": BASE64, "text": "alt"}]  # an item of another type is dropped, text or not
    assert one_part(tool_call(result={"content": content}))["result"] == {"content": [{"type": "text", "text": "a"}]}


def test_details_only_when_live_details_is_an_object():
    assert one_part(tool_call(result={"content": [], "details": "heavy"}))["result"] == {"content": []}


@pytest.mark.parametrize("result", ["done", 42, ["x"], True, 0.5])
def test_non_object_result_is_dropped(result):
    slim = one_part(tool_call(result=result))
    assert "result" not in slim and "isError" not in slim


def test_empty_result_stays_empty():
    assert one_part(tool_call(result={}))["result"] == {}


def test_args_keep_only_string_scene_id_and_instruction():
    args = {"sceneId": "s1", "instruction": "make it blue", "elements": [BASE64], "extra": 1}
    assert one_part(tool_call(args=args, result={}))["args"] == {"sceneId": "s1", "instruction": "make it blue"}
    assert one_part(tool_call(args={"sceneId": 1, "instruction": None}, result={}))["args"] == {}
    assert one_part(tool_call(args="s1", result={}))["args"] == {}


def test_is_error_only_written_when_true():
    assert "isError" not in one_part(tool_call(isError=False, result={}))
    assert "isError" not in one_part(tool_call(isError="yes", result={}))
    assert one_part(tool_call(isError=True, result={}))["isError"] is True


def test_tool_call_without_result_gets_is_error_only_from_the_live_part():
    slim = one_part(tool_call())
    assert "isError" not in slim and "result" not in slim
    assert one_part(tool_call(isError=True)) == {**slim, "isError": True}


def test_missing_tool_name_becomes_tool():
    part = tool_call(result={})
    del part["toolName"]
    assert one_part(part)["toolName"] == "tool"
    assert one_part(tool_call(toolName=None, result={}))["toolName"] == "tool"


@pytest.mark.parametrize("call_id", [None, 12, ["c1"]])
def test_part_without_string_tool_call_id_dropped(call_id):
    thread = serialize_thread([assistant(tool_call(toolCallId=call_id), {"type": "text", "text": "kept"})])
    assert thread == [{"role": "assistant", "content": [{"type": "text", "text": "kept"}]}]


def test_unknown_part_dropped_next_to_good_ones():
    thread = serialize_thread([assistant({"type": "reasoning", "text": "hmm"}, {"type": "text", "text": "ok"})])
    assert thread[0]["content"] == [{"type": "text", "text": "ok"}]


def test_message_whose_parts_all_drop_out_is_dropped():
    live = [assistant({"type": "image", "image": BASE64}, {"type": "text"}), {"role": "user", "content": []}]
    assert serialize_thread(live) == []


def test_roles_other_than_user_and_assistant_not_stored():
    live = [{"role": r, "content": "x"} for r in ("system", "tool", None, "USER")]
    assert serialize_thread(live) == []


def test_keys_written_in_design_order():
    part = tool_call(result=regenerate_result(1), isError=True, args={"instruction": "i", "sceneId": "s"})
    live = [{"content": [part], "id": "a1", "role": "assistant"}]
    assert json.dumps(serialize_thread(live), separators=(",", ":")) == (
        '[{"role":"assistant","id":"a1","content":[{"type":"tool-call","toolCallId":"c1",'
        '"toolName":"regenerate_scene","args":{"sceneId":"s","instruction":"i"},"isError":true,'
        '"result":{"content":[{"type":"text","text":"Regenerated scene s1"}],'
        '"details":{"sceneId":"s1","content":{"elements":[{}]},'
        '"actions":[{"type":"spotlight"},{"type":"speech"},{}]}}}]}]'
    )


def test_message_models_and_wire_dicts_serialize_alike():
    model = Message(
        id="a1",
        role="assistant",
        content=[TextPart(text="t"), ToolCallPart(tool_call_id="c1", tool_name="x", result=regenerate_result(2))],
        status=COMPLETE,
    )
    assert serialize_thread([model]) == serialize_thread([model.to_wire()])
    assert serialize_thread([model])[0]["content"][1]["result"]["details"]["content"] == {"elements": [{}, {}]}


@pytest.mark.parametrize(
    "live",
    [
        None,
        "text",
        [None, 1, "x", [], {}],
        [{"role": "user", "content": None}],
        [{"role": "assistant", "content": [None, 1, {"type": None}, {"type": "tool-call", "toolCallId": "c"}]}],
        [assistant(tool_call(result={"content": None, "details": {"content": {"elements": None}, "actions": None}}))],
        [assistant(tool_call(result={"details": {"content": 5, "actions": [[], 1]}}))],
    ],
)
def test_arbitrary_json_never_raises(live):
    thread = serialize_thread(live)
    assert isinstance(thread, list) and serialize_thread(thread) == thread


def test_serialize_is_idempotent_on_slim_output():
    slim = serialize_thread([assistant(tool_call(result=regenerate_result(4)), tool_call(toolCallId="c2"))])
    assert serialize_thread(slim) == slim


def test_status_only_on_restored_assistant_messages():
    restored = deserialize_thread(
        [{"role": "user", "content": [{"type": "text", "text": "q"}]}, assistant({"type": "text", "text": "a"})]
    )
    assert restored[0].status is None and "status" not in restored[0].to_wire()
    assert restored[1].status == COMPLETE
    assert restored[1].to_wire()["status"] == {"type": "complete", "reason": "stop"}


def test_restored_assistant_messages_do_not_share_a_status_object():
    a, b = deserialize_thread([assistant({"type": "text", "text": "1"}), assistant({"type": "text", "text": "2"})])
    assert a.status is not b.status


def test_interrupted_call_restores_without_result_and_with_error():
    [message] = deserialize_thread(serialize_thread([assistant(tool_call(args={"sceneId": "s1"}, isError=True))]))
    part = message.content[0]
    assert isinstance(part, ToolCallPart)
    assert part.result is None and part.is_error is True and part.args == {"sceneId": "s1"}


def test_round_trip_keeps_everything_the_cards_render():
    live = [
        {"role": "user", "id": "u1", "content": [{"type": "text", "text": "/regenerate s1"}]},
        assistant(tool_call(result=regenerate_result(5)), {"type": "text", "text": "done"}, id="a1"),
        assistant(tool_call(toolCallId="c2", isError=True, result={"details": {"content": None}})),
    ]
    slim = serialize_thread(live)
    restored = deserialize_thread(slim)
    assert [m.role for m in restored] == ["user", "assistant", "assistant"]
    assert serialize_thread(restored) == slim
    card = restored[1].content[0]
    assert card.tool_call_id == "c1" and len(card.result["details"]["content"]["elements"]) == 5
    assert restored[2].content[0].is_error is True and restored[2].content[0].result["details"]["content"] is None


def test_deserialize_drops_invalid_items_instead_of_raising():
    saved = [{"role": "user"}, {"role": "bot", "content": "x"}, {"role": "user", "content": [{"type": "text", "text": 1}]}]
    assert deserialize_thread(saved) == []


# --- what the TS original writes is read as it is (DESIGN.md §3, last two rules) ---

FULL_RESULT = {
    "content": [{"type": "text", "text": "Regenerated"}],
    "details": {"sceneId": "s1", "content": {"elements": [{}, {}]}, "actions": [{"type": "spotlight"}]},
}
OPTIONAL_KEYS = [("content",), ("details",), ("details", "sceneId"), ("details", "content"),
                 ("details", "actions")]
"""Result keys the TS original leaves out when the live result lacks them (a content object always
gets its ``elements`` list, ``[]`` when the live one has none)."""


def without(value: dict, path: tuple[str, ...]) -> dict:
    value = json.loads(json.dumps(value))
    node = value
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return value


def ts_thread(result: dict | None, **call_fields) -> list[dict]:
    part = {"type": "tool-call", "toolCallId": "c1", "toolName": "regenerate_scene", "args": {"sceneId": "s1"},
            **call_fields}
    if result is not None:
        part["result"] = result
    return [{"role": "user", "content": [{"type": "text", "text": "/regenerate s1"}]},
            {"role": "assistant", "content": [part, {"type": "text", "text": "done"}]}]


@pytest.mark.parametrize("path", OPTIONAL_KEYS, ids=".".join)
def test_each_optional_result_key_absent_is_kept_as_stored(path):
    stored = ts_thread(without(FULL_RESULT, path))
    assert serialize_thread(stored) == stored
    assert serialize_thread(deserialize_thread(stored)) == stored


def test_every_optional_result_key_absent_together_is_kept_as_stored():
    bare = {"details": {"content": {"elements": []}}}
    for stored in (ts_thread({}), ts_thread(bare), ts_thread(None), ts_thread(None, isError=True)):
        assert serialize_thread(stored) == stored
        assert serialize_thread(deserialize_thread(stored)) == stored


def test_live_result_without_optional_keys_gets_none_invented():
    live = Message(role="assistant", content=[ToolCallPart(tool_call_id="c1", tool_name="x", result={"details": {}})],
                   status=COMPLETE)
    part = serialize_thread([live])[0]["content"][0]
    assert part == {"type": "tool-call", "toolCallId": "c1", "toolName": "x", "args": {}, "result": {"details": {}}}


# --- stopped replies stay stopped after a reload (DESIGN.md §4) -------------------------------


def stopped(*parts) -> Message:
    return Message(role="assistant", content=list(parts), status=STOPPED)


def test_reply_stopped_before_any_output_is_stored_as_the_marker_and_restored_as_stopped():
    live = [Message(role="user", content=[TextPart(text="q")]), stopped()]
    slim = serialize_thread(live)
    assert slim[1] == {"role": "assistant", "content": [STOPPED_MARKER]}
    restored = deserialize_thread(slim)
    assert [m.role for m in restored] == ["user", "assistant"]
    assert restored[1].status == STOPPED and restored[1].content == []
    assert serialize_thread(restored) == slim


def test_partly_stopped_reply_restores_as_stopped_with_its_text():
    slim = serialize_thread([stopped(TextPart(text="half an ans"))])
    assert slim[0]["content"] == [{"type": "text", "text": "half an ans"}, STOPPED_MARKER]
    [restored] = deserialize_thread(slim)
    assert restored.status == STOPPED and [p.text for p in restored.content] == ["half an ans"]
    assert serialize_thread([restored]) == slim


def test_completed_reply_carries_no_marker():
    [restored] = deserialize_thread(serialize_thread([Message(role="assistant", content=[TextPart(text="a")],
                                                              status=COMPLETE)]))
    assert restored.status == COMPLETE and [p.text for p in restored.content] == ["a"]


# --- failed replies (DESIGN.md §5, §12) -------------------------------------------------------

SERVER_ERROR = {"code": "server", "params": {"status": 500, "detail": "upstream “down” 服务"}}


def failed(*parts, error=SERVER_ERROR) -> Message:
    status = FAILED if error is None else FAILED.model_copy(update={"error": error})
    return Message(role="assistant", id="r1", content=list(parts), status=status)


def test_reply_failed_before_any_output_is_stored_with_its_error_and_restored_failed():
    live = [Message(role="user", content=[TextPart(text="q")]), failed()]
    slim = serialize_thread(live)
    marker = failed_marker(SERVER_ERROR)
    assert slim[1] == {"role": "assistant", "id": "r1", "content": [marker]}
    assert marker["text"].startswith(FAILED_PREFIX)
    assert json.loads(marker["text"][len(FAILED_PREFIX):]) == SERVER_ERROR  # the error, written down
    restored = deserialize_thread(json.loads(json.dumps(slim)))
    assert [m.role for m in restored] == ["user", "assistant"]
    assert restored[1].status == FAILED.model_copy(update={"error": SERVER_ERROR}) and restored[1].content == []
    assert serialize_thread(restored) == slim


def test_partly_failed_reply_keeps_its_text_and_tool_calls_before_the_marker():
    call = ToolCallPart(tool_call_id="c1", tool_name="regenerate_scene", args={"sceneId": "s1"}, is_error=True)
    slim = serialize_thread([failed(TextPart(text="half"), call)])
    assert slim[0]["content"][0] == {"type": "text", "text": "half"}
    assert slim[0]["content"][1]["isError"] is True and "result" not in slim[0]["content"][1]
    assert slim[0]["content"][2] == failed_marker(SERVER_ERROR)
    [restored] = deserialize_thread(slim)
    assert restored.status.error == SERVER_ERROR and len(restored.content) == 2
    assert serialize_thread([restored]) == slim


def test_failure_without_a_reason_is_stored_as_unknown_and_restored_as_plain_failed():
    slim = serialize_thread([failed(error=None)])
    assert slim[0]["content"] == [failed_marker(None)]
    assert json.loads(slim[0]["content"][0]["text"][len(FAILED_PREFIX):]) == {"code": "unknown", "params": {}}
    [restored] = deserialize_thread(slim)
    assert restored.status == FAILED and restored.content == []


@pytest.mark.parametrize("text", [
    FAILED_PREFIX + "not json",
    FAILED_PREFIX + '{"code": "server", "params": {}}',  # not the canonical form written
    FAILED_PREFIX + '{"code":5,"params":{}}',
    FAILED_PREFIX + '{"code":"server","params":[]}',
    "turn-error {\"code\":\"server\",\"params\":{}}",  # without the invisible separator
])
def test_text_that_only_resembles_the_marker_stays_text(text):
    stored = [{"role": "assistant", "content": [{"type": "text", "text": text}]}]
    [restored] = deserialize_thread(stored)
    assert restored.status == COMPLETE and [p.text for p in restored.content] == [text]
    assert serialize_thread([restored]) == stored


def test_the_marker_is_an_ordinary_v1_text_part():
    marker = failed_marker(SERVER_ERROR)
    assert set(marker) == {"type", "text"} and marker["type"] == "text"
    assert serialize_thread([{"role": "assistant", "content": [marker]}]) == [
        {"role": "assistant", "content": [marker]}]
