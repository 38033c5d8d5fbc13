"""The runtime's collaborators fit its typed ports (app/ports.py, DESIGN.md §15): every method a
port names exists on the real thread store, history recorder and scene checkpoints with the same
parameters, so the runtime never needs to ask at run time what a collaborator has."""

from __future__ import annotations

import inspect

import pytest

from app.agent import Agent, DemoAgent
from app.agents.openai import OpenAIAgent
from app.agents.switch import SelectedAgent
from app.checkpoints import SceneCheckpoints
from app.history.recorder import HistoryRecorder
from app.ports import CheckpointsPort, HistoryPort, ThreadStorePort
from app.store import ThreadStore


def port_members(port) -> dict[str, object]:
    return {name: member for name, member in vars(port).items()
            if not name.startswith("_") and (callable(member) or isinstance(member, property))}


@pytest.mark.parametrize(("port", "implementation"), [
    (ThreadStorePort, ThreadStore), (HistoryPort, HistoryRecorder), (CheckpointsPort, SceneCheckpoints),
    (Agent, DemoAgent), (Agent, OpenAIAgent), (Agent, SelectedAgent),
])
def test_each_collaborator_has_every_member_of_its_port_with_the_same_parameters(port, implementation):
    members = port_members(port)
    assert members, port
    for name, member in members.items():
        if isinstance(member, property):  # a property, or an attribute set in __init__ (read_model)
            assert isinstance(getattr(implementation, name, None), property) or (
                implementation is SceneCheckpoints and name == "read_model"), f"{implementation.__name__}.{name}"
            continue
        actual = getattr(implementation, name, None)
        assert callable(actual), f"{implementation.__name__} lacks {name}"
        wanted = list(inspect.signature(member).parameters)
        assert list(inspect.signature(actual).parameters)[: len(wanted)] == wanted, f"{implementation.__name__}.{name}"
