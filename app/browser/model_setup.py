"""Wiring of the model back end into the page (DESIGN.md §12): which agent answers, the settings dialog.

``ModelSetup`` reads the settings (``app.agents.settings``: the key from
``sessionStorage``, or ``localStorage`` when remembered), and gives the
runtime ``agent``: a ``SelectedAgent`` that runs each turn on the demo agent
or on an ``OpenAIAgent`` over ``FetchTransport``, as the settings say at that
moment. ``install_dialog`` builds the settings dialog and starts the
background install of Markdown rendering.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import js

from app.agent import Agent
from app.agents.switch import SelectedAgent
from app.courses import find_course
from app.i18n import Translator

if TYPE_CHECKING:  # imported when first used: nothing of the model back end is loaded at start-up
    from app.agents.openai import AgentConfig, OpenAIAgent
    from app.agents.settings import ModelSettings
    from app.browser.model_transport import FetchTransport

__all__ = ["ModelSetup", "WebStorage", "system_prompt"]


class WebStorage:
    """``get_item``/``set_item``/``remove_item`` over ``window.localStorage`` or ``sessionStorage``
    (looked up on each call: access itself throws where storage is blocked)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def _area(self):
        return getattr(js.window, self.name)

    def get_item(self, key: str) -> str | None:
        value = self._area().getItem(key)
        return value if isinstance(value, str) else None

    def set_item(self, key: str, value: str) -> None:
        self._area().setItem(key, value)

    def remove_item(self, key: str) -> None:
        self._area().removeItem(key)


def system_prompt(stage_id: str | None) -> str | None:
    """The system message for a turn on course ``stage_id``: the course, its scene ids, the tool."""
    if stage_id is None:
        return None
    course = find_course(stage_id)
    scenes = "; ".join(f"{scene.id}: {scene.title}" for scene in course.scenes)
    return (f"You are the assistant of the AgentBar on a course page. Course: {course.title} (id {course.id}). "
            f"Scenes: {scenes}. To rebuild a scene, call the regenerate_scene tool with its sceneId and an "
            "instruction. Answer in the user's language; you may use Markdown.")


class ModelSetup:
    """The agent choice of this tab. ``demo``: the built-in agent; ``stage``: the shown course id."""

    def __init__(self, demo: Agent, stage: Callable[[], str | None]) -> None:
        self.local, self.session = WebStorage("localStorage"), WebStorage("sessionStorage")
        self.demo = demo
        self.stage = stage
        self._settings: tuple[ModelSettings, str] | None = None  # read at first use (``settings``)
        self.transport: Any = None
        self.agent = SelectedAgent(self.choose)
        self.dialog = None
        self._agent: Any = None
        self._tools_refused: set[tuple[str, str]] = set()  # (base URL, model) Test connection found refusing tools

    def _stored(self) -> tuple[ModelSettings, str]:
        # The settings' module (pydantic models) and the stored settings are read at first use (the
        # first turn, the dialog after ready), not before ready: nothing of it restores the thread (§13).
        if self._settings is None:
            from app.agents.settings import load_settings

            self._settings = load_settings(self.local, self.session)
        return self._settings

    @property
    def settings(self) -> ModelSettings:
        """This tab's model settings (``app.agents.settings.ModelSettings``), read at first use."""
        return self._stored()[0]

    @property
    def _key(self) -> str:
        return self._stored()[1]

    def _transport(self) -> "FetchTransport":
        if self.transport is None:
            from app.browser.model_transport import FetchTransport

            self.transport = FetchTransport()
        return self.transport

    def _config(self, settings: ModelSettings, key: str) -> "AgentConfig":
        from app.agents.openai import AgentConfig

        return AgentConfig(base_url=settings.base_url, model=settings.model, api_key=key.strip(),
                           max_turns=settings.max_turns)

    def choose(self) -> Agent:
        """The agent for a turn starting now."""
        if self.settings.agent != "openai":
            return self.demo
        from app.agents.openai import OpenAIAgent

        config = self._config(self.settings, self._key)
        if self._agent is None or self._agent.config != config:  # kept while the settings stay (tool support learnt)
            from app.agents.tools import run_tool
            from app.browser.tasks import next_task

            scene_tool = getattr(self.demo, "regenerate_scene", None)  # the course's current documents (§10)
            self._agent = OpenAIAgent(self._transport(), config, system=lambda: system_prompt(self.stage()),
                                      tool_runner=lambda name, args: run_tool(name, args, scene_tool=scene_tool),
                                      offer_tools=(config.base_url, config.model) not in self._tools_refused,
                                      pause=next_task)  # a huge read is parsed in slices, the page drawn between
        return self._agent

    def save(self, settings: ModelSettings, key: str) -> bool:
        """Apply ``settings`` and ``key`` to this tab and store them; False when storage refused."""
        from app.agents.settings import save_settings

        self._settings = (settings, key.strip())
        js.document.documentElement.dataset.agent = settings.agent
        return save_settings(self.local, self.session, settings, key)

    def load(self) -> tuple[ModelSettings, str]:
        """What the dialog shows: this tab's settings and key."""
        return self.settings, self._key

    async def check_connection(self, settings: ModelSettings, key: str) -> Any:
        """The dialog's test button: the server's models and whether it takes tools
        (``app.agents.openai.check_connection``); a refusal of tools is remembered for this tab."""
        from app.agents.openai import check_connection

        config = self._config(settings, key)
        check = await check_connection(self._transport(), config)
        if check.tools is False:
            self._tools_refused.add((config.base_url, check.model or (check.models[0] if check.models else "")))
        return check

    def install_dialog(self, translator: Translator, redraw: Callable[[], None], sections: tuple = ()) -> None:
        """Build the settings dialog (with further ``sections`` of settings, e.g. sync's) and start
        installing Markdown rendering in the background."""
        from app.browser import markdown_view
        from app.browser.settings_view import SettingsDialog

        js.document.documentElement.dataset.agent = self.settings.agent
        self.dialog = SettingsDialog(translator, load=self.load, on_save=self.save,
                                     check_connection=self.check_connection, sections=sections)
        markdown_view.start_install(redraw, (translator("model.markdown.copy"), translator("model.markdown.copied")))
