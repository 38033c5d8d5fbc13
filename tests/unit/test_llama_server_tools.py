"""``tools/llama_server.py`` (cache keys, pins, idempotence) and the tiny models' recipe
(``tools/tiny_gguf.py``): what the real-server end-to-end tests rely on (DESIGN.md §12)."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from app.agents.tools import TOOLS
from tools import llama_server, tiny_gguf


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTBAR_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_cache_lives_outside_the_work_tree_and_follows_the_environment(cache, monkeypatch):
    assert llama_server.cache_root() == cache
    monkeypatch.delenv("AGENTBAR_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere")
    assert str(llama_server.cache_root()) == "/somewhere/agentbar"
    assert not llama_server.cache_root().is_relative_to(llama_server.ROOT)


def test_the_binary_is_keyed_by_the_sdist_hash_and_the_build_options(cache):
    lock = llama_server.load_lock()
    base = llama_server.server_dir(lock)
    other_sdist = {**lock, "sdist": {**lock["sdist"], "sha256": "0" * 64}}
    other_options = {**lock, "cmake": [*lock["cmake"], "-DGGML_AVX2=ON"]}
    assert len({base, llama_server.server_dir(other_sdist), llama_server.server_dir(other_options)}) == 3
    assert base == llama_server.server_dir(json.loads(json.dumps(lock)))  # stable


def test_lock_pins_versions_and_hashes_and_builds_only_the_server_on_cpu():
    lock = llama_server.load_lock()
    assert re.fullmatch(r"[0-9a-f]{64}", lock["sdist"]["sha256"])
    assert re.fullmatch(r"[0-9a-f]{64}", lock["gguf"]["sha256"])
    assert all(re.fullmatch(r"[\w.-]+==[\w.]+", pin) for pin in lock["gguf"]["with"])
    assert lock["target"] == "llama-server"
    options = set(lock["cmake"])
    assert {"-DLLAMA_OPENSSL=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF", "-DGGML_NATIVE=OFF"} <= options


def test_an_sdist_with_another_hash_is_refused_and_removed(cache):
    lock = llama_server.load_lock()
    path = cache / "sdist" / lock["sdist"]["file"]
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not the pinned sdist")
    with pytest.raises(SystemExit, match="sha256"):
        llama_server.fetch_sdist(lock)
    assert not path.exists()


def test_a_cached_binary_is_reused_without_building(cache, monkeypatch):
    binary = llama_server.server_binary()
    binary.parent.mkdir(parents=True)
    binary.write_bytes(b"\x7fELF")

    def no_build(*args, **kwargs):
        raise AssertionError(f"nothing may run: {args}")
    monkeypatch.setattr(subprocess, "run", no_build)
    assert llama_server.build_server() == binary


def test_start_without_a_build_says_how_to_make_one(cache):
    with pytest.raises(SystemExit, match="tools/llama_server.py"):
        llama_server.start("plain")


def spelled(variant: str, start: str | None = None, limit: int = 50) -> tuple[str, bool]:
    """The text a variant's lookup table yields from ``start`` (default: any other token), and whether it ended."""
    default, rules = tiny_gguf.successors(variant)
    token, text = start and rules[start] or default, ""
    for _ in range(limit):
        if token == "<|im_end|>":
            return text, True
        text += token
        token = rules.get(token, default)
    return text, False


def test_plain_model_says_its_sentence_and_ends():
    assert spelled("plain") == (tiny_gguf.PLAIN_TEXT, True)


def test_tool_model_calls_regenerate_scene_with_valid_arguments_then_answers_after_the_result():
    text, ended = spelled("tool")
    assert ended and text == tiny_gguf.TOOL_CALL_TEXT
    inner = re.fullmatch(r"<tool_call>\s*(.*?)\s*</tool_call>", text, re.S)
    call = json.loads(inner.group(1))
    schema = TOOLS[0]["function"]
    assert call["name"] == schema["name"]
    args = call["arguments"]
    assert set(schema["parameters"]["required"]) <= set(args) <= set(schema["parameters"]["properties"])
    assert all(isinstance(value, str) for value in args.values())
    assert spelled("tool", "<|after_tool|>") == (tiny_gguf.ANSWER_TEXT, True)
    assert "<|after_tool|>" in tiny_gguf.CHAT_TEMPLATE and "<tool_call>" in tiny_gguf.CHAT_TEMPLATE


def test_endless_model_never_ends():
    text, ended = spelled("endless", limit=200)
    assert not ended and text.startswith("On and on and on")


def test_vocabulary_holds_every_piece_once_and_the_rules_fit_the_embedding():
    tokens, scores, types = tiny_gguf.vocabulary()
    assert len(tokens) == len(set(tokens)) == len(scores) == len(types)
    for variant in llama_server.MODEL_VARIANTS:
        default, rules = tiny_gguf.successors(variant)
        assert {default, *rules, *rules.values()} <= set(tokens)
        assert len(rules) < tiny_gguf.N_EMBD
    assert sum(kind == tiny_gguf.BYTE for kind in types) == 256  # byte fallback: any text can be tokenized
    with pytest.raises(SystemExit):
        tiny_gguf.successors("chatty")


def test_start_runs_one_thread_on_loopback_and_waits_for_health(cache, monkeypatch, tmp_path):
    for path in (llama_server.server_binary(), llama_server.model_path("plain")):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    started, asked = [], []

    class Process:
        def __init__(self, command, **kwargs):
            started.append(command)

        def poll(self):
            return None

    class Health:
        status = 200

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(subprocess, "Popen", Process)
    monkeypatch.setattr(llama_server.urllib.request, "urlopen", lambda url, timeout: asked.append(url) or Health())
    server = llama_server.start("plain", "--no-jinja", log_dir=tmp_path)
    (command,) = started
    assert command[command.index("-t") + 1] == "1" and command[command.index("--host") + 1] == "127.0.0.1"
    assert command[command.index("--port") + 1] == str(server.port) and command[-1] == "--no-jinja"
    assert command[command.index("-a") + 1] == server.alias == "tiny-plain"
    assert asked == [f"http://127.0.0.1:{server.port}/health"] and server.base_url.endswith("/v1")
