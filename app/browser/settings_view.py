"""The model settings dialog (DESIGN.md §12 hooks), its own view module.

A native ``<dialog>`` opened modally from ``[data-testid=settings-open]`` in
the panel header: Escape or Cancel closes it without saving (the Escape press
does not reach the page's Stop shortcut), and focus returns to the button.
Fields: ``settings-agent`` (``demo``/``openai``), ``settings-base-url``,
``settings-model`` (suggestions from the last connection test),
``settings-api-key`` (a password field), ``settings-remember``,
``settings-max-turns``; ``settings-test`` lists the server's models into
``settings-test-result`` (``data-state``: ``pending``, ``ok``, ``warning``,
``error``; ``warning`` when a turn would trip on something the test found:
the model is not among the listed ones, the server refuses tools,
``app.agents.openai.ConnectionCheck``, codes in ``data-warnings``);
``settings-save`` validates, stores (``app.agents.settings``) and closes.
``settings-error`` says why a save was refused, and only while that still holds:
a field error goes as soon as an edit corrects it (each ``input``/``change``
re-reads the fields), any error goes on a save that stores.
Every text is the locale's, set as ``textContent``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import js
from pydantic import ValidationError
from pyodide.ffi import create_proxy

from app.agents.errors import ModelError, describe
from app.browser.dom import element as _make
from app.agents.settings import (EXAMPLE_URLS, MAX_TURNS_LIMIT, CredentialsInUrl, ModelSettings, parse_max_turns,
                                 validate_base_url)
from app.i18n import Translator, join_sentences
from app.presentation import isolated_segments

__all__ = ["SettingsDialog"]

NOT_STORED = "model.settings.notStored"
"""The one error that is no field's: the settings apply to this tab but could not be stored."""


class SettingsDialog:
    """The dialog; ``on_save(settings, api_key) -> bool`` stores and applies (False: not stored),
    ``check_connection(settings, api_key)`` awaits an ``app.agents.openai.ConnectionCheck`` (raising
    ``ModelError``)."""

    def __init__(self, t: Translator, *, load: Callable[[], tuple[ModelSettings, str]],
                 on_save: Callable[[ModelSettings, str], bool],
                 check_connection: Callable[[ModelSettings, str], Awaitable[Any]], sections: tuple = ()) -> None:
        self.t = t
        self.sections = tuple(sections)  # more settings in the same dialog (sync, §16): build, fill, read, save
        self._load = load
        self._on_save = on_save
        self._check_connection = check_connection
        self._proxies: list = []
        self._test_task: asyncio.Task | None = None
        self.opener = js.document.getElementById("settings-open")
        self.dialog = self._build()
        js.document.body.append(self.dialog)
        self._on(self.opener, "click", lambda _e: self.open())

    # -- building --------------------------------------------------------
    def _on(self, node, event: str, handler) -> None:
        proxy = create_proxy(handler)
        self._proxies.append(proxy)
        node.addEventListener(event, proxy)

    def _field(self, label_key: str, control, hint_key: str | None = None, hint_values: dict[str, str] | None = None):
        """A labelled ``control``, with the hint ``hint_key`` under it: each of ``hint_values`` (an
        address, say) in its own left-to-right run (``<bdi dir=ltr>``), so that right-to-left text around
        it leaves it whole (ar-SA read "(LM http://…/v1" then ".Studio)" on the next line)."""
        label = _make("label", classes="settings-field", children=[_make("span", text=self.t(label_key)), control])
        if hint_key:
            values = hint_values or {}
            label.append(_make("small", classes="settings-hint", testid=f"{control.getAttribute('data-testid')}-hint",
                               children=[_make("bdi", text=piece.text, attrs={"dir": "ltr"})
                                         if piece.kind == "isolate" else piece.text
                                         for piece in isolated_segments(self.t, hint_key, values, tuple(values))]))
        return label

    def _build(self):
        t = self.t
        self.agent = _make("select", testid="settings-agent", attrs={"id": "settings-agent"}, children=[
            _make("option", text=t("model.settings.agentDemo"), attrs={"value": "demo"}),
            _make("option", text=t("model.settings.agentOpenai"), attrs={"value": "openai"})])
        self.base_url = _make("input", testid="settings-base-url", attrs={
            "type": "url", "placeholder": EXAMPLE_URLS["ollamaUrl"], "spellcheck": "false", "dir": "ltr"})
        self.model = _make("input", testid="settings-model", attrs={
            "type": "text", "list": "settings-model-list", "spellcheck": "false", "dir": "ltr", "autocomplete": "off"})
        self.models_list = _make("datalist", attrs={"id": "settings-model-list"})
        self.api_key = _make("input", testid="settings-api-key", attrs={
            "type": "password", "autocomplete": "off", "spellcheck": "false", "dir": "ltr"})
        self.remember = _make("input", testid="settings-remember", attrs={"type": "checkbox"})
        self.max_turns = _make("input", testid="settings-max-turns", attrs={"type": "number", "min": "0", "max": str(MAX_TURNS_LIMIT), "step": "1"})
        self.test_button = _make("button", text=t("model.settings.test"), testid="settings-test",
                                 attrs={"type": "button"})
        self.test_result = _make("p", testid="settings-test-result", classes="settings-test-result",
                                 attrs={"role": "status", "aria-live": "polite"})
        self.error = _make("p", testid="settings-error", classes="settings-error", attrs={"role": "alert"})
        self.error.hidden = True
        self._error_key: str | None = None  # the locale key shown in ``error``, None when hidden
        cancel = _make("button", text=t("model.settings.cancel"), testid="settings-cancel", attrs={"type": "button"})
        save = _make("button", text=t("model.settings.save"), testid="settings-save", classes="primary",
                     attrs={"type": "submit"})
        self.model_fields = _make("div", classes="settings-model-fields", children=[
            self._field("model.settings.baseUrl", self.base_url, "model.settings.baseUrlHint", EXAMPLE_URLS),
            self._field("model.settings.model", self.model), self.models_list,
            self._field("model.settings.apiKey", self.api_key),
            _make("label", classes="settings-check", children=[self.remember, _make("span", text=t("model.settings.remember"))]),
            _make("small", text=t("model.settings.keyHint"), classes="settings-hint"),
            self._field("model.settings.maxTurns", self.max_turns),
            _make("div", classes="settings-test", children=[self.test_button, self.test_result]),
        ])
        form = _make("form", classes="settings-form", attrs={"method": "dialog"}, children=[
            _make("h2", text=t("model.settings.title"), attrs={"id": "settings-title"}),
            self._field("model.settings.agent", self.agent), self.model_fields,
            *[section.build() for section in self.sections], self.error,
            _make("div", classes="settings-actions", children=[cancel, save])])
        dialog = _make("dialog", testid="settings-dialog", classes="settings-dialog",
                       attrs={"id": "settings-dialog", "aria-labelledby": "settings-title"}, children=[form])
        self._on(form, "submit", self._submit)
        self._on(cancel, "click", lambda _e: dialog.close())
        self._on(self.test_button, "click", lambda _e: self._start_test())
        self._on(self.agent, "change", lambda _e: self._sync_agent())
        self._on(form, "input", lambda _e: self._recheck_error())
        self._on(form, "change", lambda _e: self._recheck_error())
        self._on(dialog, "keydown", self._keydown)
        self._on(dialog, "close", lambda _e: self.opener.focus())
        return dialog

    # -- behaviour -------------------------------------------------------
    def _keydown(self, event) -> None:
        if event.key == "Escape":
            event.stopPropagation()  # Escape closes the dialog; it must not also stop a running turn

    def _sync_agent(self) -> None:
        self.model_fields.dataset.disabled = "true" if self.agent.value == "demo" else "false"

    def open(self) -> None:
        """Fill the fields from what is stored and show the dialog modally."""
        settings, key = self._load()
        self.agent.value = settings.agent
        self.base_url.value = settings.base_url
        self.model.value = settings.model
        self.api_key.value = key
        self.remember.checked = settings.remember
        self.max_turns.value = str(settings.max_turns)
        self._hide_error()
        self.test_result.textContent = ""
        self.test_result.removeAttribute("data-state")
        self._sync_agent()
        for section in self.sections:
            section.fill()
        self.dialog.showModal()
        (self.base_url if settings.agent == "openai" else self.agent).focus()

    @property
    def is_open(self) -> bool:
        """True while the dialog is shown."""
        return bool(self.dialog.open)

    def _read(self) -> ModelSettings:
        """The settings in the fields; raises ``ValueError`` with a locale key as its message."""
        try:
            base_url = validate_base_url(str(self.base_url.value))
        except CredentialsInUrl:
            raise ValueError("model.settings.credentialsInUrl") from None
        except ValueError:
            raise ValueError("model.settings.invalidUrl") from None
        try:
            if self.max_turns.validity.badInput:  # a number field reads "" for text it cannot parse
                raise ValueError("not a number")
            turns = parse_max_turns(str(self.max_turns.value))
        except ValueError:
            raise ValueError("model.settings.invalidMaxTurns") from None
        try:
            settings = ModelSettings(agent=str(self.agent.value), base_url=base_url, model=str(self.model.value),
                                     max_turns=turns, remember=bool(self.remember.checked))
        except ValidationError:
            raise ValueError("model.settings.invalidUrl") from None
        if settings.agent == "openai" and not settings.base_url:
            raise ValueError("model.settings.needBaseUrl")
        if settings.agent == "openai" and not settings.model:
            raise ValueError("model.settings.needModel")
        return settings

    def _show_error(self, key: str) -> None:
        self._error_key = key
        self.error.textContent = self.t(key)
        self.error.hidden = False

    def _hide_error(self) -> None:
        self._error_key = None
        self.error.hidden = True
        self.error.textContent = ""
        self.error.removeAttribute("data-applied")

    def _recheck_error(self) -> None:
        """After an edit: a field error the fields no longer have goes (another one waits for Save)."""
        if self._error_key is None or self._error_key == NOT_STORED:
            return
        try:
            self._read()
            for section in self.sections:
                section.read()
        except ValueError as error:
            if str(error) == self._error_key:
                return
        self._hide_error()

    def _submit(self, event) -> None:
        event.preventDefault()
        try:
            settings = self._read()
            values = [(section, section.read()) for section in self.sections]
        except ValueError as error:
            self._show_error(str(error))
            return
        stored = [section.save(value) for section, value in values]
        if not self._on_save(settings, str(self.api_key.value)) or not all(stored):
            self._show_error(NOT_STORED)  # applied to this tab; the dialog says so once
            self.error.dataset.applied = "true"
            return
        self._hide_error()
        self.dialog.close()

    def _start_test(self) -> None:
        if self._test_task is not None and not self._test_task.done():
            return
        self._test_task = asyncio.ensure_future(self._test())

    async def _test(self) -> None:
        result = self.test_result
        try:
            base_url = validate_base_url(str(self.base_url.value))
        except ValueError:
            base_url = ""
        if not base_url:
            result.dataset.state = "error"
            result.textContent = self.t("model.settings.invalidUrl" if str(self.base_url.value).strip()
                                        else "model.settings.needBaseUrl")
            return
        result.dataset.state = "pending"
        result.textContent = self.t("model.settings.testing")
        settings = ModelSettings(agent="openai", base_url=base_url, model=str(self.model.value))
        try:
            check = await self._check_connection(settings, str(self.api_key.value))
        except ModelError as error:
            result.dataset.state = "error"
            result.dataset.code = error.code
            result.textContent = describe(self.t, {"code": error.code, "params": error.params})
            return
        models, warnings = check.models, check.warnings()
        result.dataset.state = "warning" if warnings else "ok"
        result.dataset.code = warnings[0][0] if warnings else ""
        result.dataset.warnings = " ".join(code for code, _, _ in warnings)
        result.dataset.count = str(len(models))
        shown = ", ".join(models[:8]) + (" …" if len(models) > 8 else "")
        result.textContent = join_sentences([self.t("model.settings.testOk", count=len(models), models=shown)]
                                            + [self.t(key, **params) for _, key, params in warnings])
        self.models_list.replaceChildren(*[_make("option", attrs={"value": m}) for m in models])
        if not str(self.model.value).strip() and models:
            self.model.value = models[0]
