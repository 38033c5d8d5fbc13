"""What the page imports before ready (DESIGN.md §13): only what restoring the shown course's thread
needs. Standard-library modules the floor (bare Pyodide + pydantic + one model) does not import, and
the model settings' module, are imported where they are used, not at the top of a start-up module.

Read from the sources (``ast``), so it holds whatever CPython runs the tests: the page's modules
import ``js`` and ``pyscript``, which only the browser has.
"""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"

# Imported by app.browser.main before html[data-ready]: app.browser.page at the top, the rest inside
# Page's set-up steps (__init__, draw_first, drop_painted_bar, bind_history).
BEFORE_READY = ["app.browser.page", "app.browser.model_setup", "app.browser.signals", "app.history.recorder",
                "app.history.changes",
                "app.browser.paint", "app.browser.history_boot", "app.browser.tasks", "app.frames"]

# 10-90 ms each in a cold load's imports (bench.trace_startup --imports), none of it imported by the floor.
NOT_BEFORE_READY = {"email", "colorsys", "difflib", "hashlib", "urllib", "app.agents.settings", "app.agents.openai"}


def _path(module: str) -> Path | None:
    base = APP.parent.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.exists():
            return path
    return None


def _top_level_imports(module: str, path: Path) -> set[str]:
    """The modules ``module`` imports when it runs: its top-level statements, ``if TYPE_CHECKING`` left out."""
    names: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def visit(statements) -> None:
        for node in statements:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
            elif isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                names.add(base)
                names.update(f"{base}.{alias.name}" for alias in node.names if _path(f"{base}.{alias.name}"))

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return names


def imported_before_ready() -> dict[str, str]:
    """Every module reached from ``BEFORE_READY`` through top-level imports: ``{module: importer}``
    (an app package's ``__init__`` counts as imported with its submodules)."""
    seen: dict[str, str] = {}
    todo = [(name, "app.browser") for name in BEFORE_READY]
    while todo:
        module, importer = todo.pop()
        if module in seen:
            continue
        seen[module] = importer
        parts = module.split(".")
        todo.extend((".".join(parts[:i]), module) for i in range(1, len(parts)) if parts[0] == "app")
        path = _path(module) if parts[0] == "app" else None
        if path is not None:
            todo.extend((name, module) for name in _top_level_imports(module, path))
    return seen


def test_the_start_up_modules_import_nothing_the_thread_does_not_need():
    reached = imported_before_ready()
    assert "app.model" in reached and "app.runtime" in reached and "pydantic" in reached  # the walk works
    found = {name: importer for name, importer in reached.items()
             if name in NOT_BEFORE_READY or name.split(".")[0] in NOT_BEFORE_READY}
    assert found == {}  # module: the start-up module that imports it at its top


def test_the_lazily_imported_helpers_still_work():
    from app.agent import _hex
    from app.agents.errors import retry_after_seconds
    from app.agents.chat_completions import wire_call_id
    from app.checkpoints.paths import segment

    assert _hex(0.0, 0.5, 1.0) == "#ff0000"
    assert retry_after_seconds("Thu, 01 Jan 1970 00:01:00 GMT", 15.0) == 45
    assert len(wire_call_id("call_0a1b")) == 9
    assert "~" in segment("/" * 60)  # too long once escaped: shortened with a digest


def test_models_first_used_after_ready_build_their_schema_at_first_use():
    """The paint record's models (``PaintKeeper``, ``take_over``: after ready) and the version
    records' (read when a course has stored versions) are ``defer_build``: importing their modules
    before ready builds no validator; the first validation builds it and validates as before."""
    import subprocess
    import sys

    code = ("import app.paint as p, app.checkpoints.versions as v, app.checkpoints.timeline as t\n"
            "models = (p.PaintNode, p.PaintRecord, p.PendingSend, v._ArtifactRecord, v._VersionRecord, t.FileArtifact)\n"
            "print([m.__pydantic_complete__ for m in models])\n"
            "print(p.parse_pending('{\"stageId\": \"a\", \"text\": \"hi\", \"state\": \"queued\"}') is not None,"
            " p.parse_pending('{\"stageId\": 1, \"text\": \"hi\", \"state\": \"queued\"}') is None)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=APP.parent, capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["[False, False, False, False, False, False]", "True True"]


def test_a_thread_stored_as_written_now_is_not_walked_again(monkeypatch):
    """Hydrate validates every stored course before ready (DESIGN.md §5): a thread whose stored
    messages are what the projection writes now is compared as it is; only an older spelling
    (``"content": {}``) is rewritten by ``_as_written_now`` for the comparison, still not damage."""
    import app.store.decode as decode

    calls = []
    walk = decode._as_written_now
    monkeypatch.setattr(decode, "_as_written_now", lambda value: calls.append(value) or walk(value))
    call = {"type": "tool-call", "toolCallId": "call-1", "toolName": "regenerate_scene", "args": {"sceneId": "s1"},
            "result": {"details": {"sceneId": "s1", "content": {"elements": []}}}}
    messages = [{"role": "user", "content": [{"type": "text", "text": "go"}]}, {"role": "assistant", "content": [call]}]
    thread, damaged = decode.validate_thread({"messages": messages, "updatedAt": 5})
    assert thread is not None and not damaged and calls == []
    call["result"]["details"]["content"] = {}  # as earlier versions wrote it
    thread, damaged = decode.validate_thread({"messages": messages, "updatedAt": 6})
    assert thread is not None and not damaged and calls  # walked (it recurses), and still no damage
    thread, damaged = decode.validate_thread({"messages": messages + [{"role": "user"}], "updatedAt": 7})
    assert thread is not None and damaged  # a message dropped: damage, as before


def test_projecting_stored_messages_dumps_no_status_model_per_message(monkeypatch):
    """``serialize_thread`` of stored (dict) messages compares each assistant status with the
    stopped and cut statuses' wire form computed once, not dumped again per message (§13)."""
    from app.model import WireModel
    from app.projection import CUT_MARKER, serialize_thread

    dumps = []
    original = WireModel.to_wire
    monkeypatch.setattr(WireModel, "to_wire", lambda self: dumps.append(type(self).__name__) or original(self))
    stored = [{"role": "user", "content": [{"type": "text", "text": f"q{i}"}]} if i % 2 == 0 else
              {"role": "assistant", "content": [{"type": "text", "text": f"a{i}"}]} for i in range(100)]
    assert serialize_thread(stored) == stored and dumps == []
    cut = {"role": "assistant", "content": [{"type": "text", "text": "long"}], "status": {"type": "incomplete", "reason": "length"}}
    assert serialize_thread([cut])[0]["content"][-1] == CUT_MARKER and dumps == []
