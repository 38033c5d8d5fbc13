"""The stage view's slides: each scene's current version drawn as a small slide (DESIGN.md §10).

For every ``[data-testid=scene]`` the course view (``app.browser.view``) made,
this draws the scene's current document from ``SceneCheckpoints.current``:
the background, and each element in its box (text as text, images from safe
``data:`` URLs only, shapes as filled boxes; ``app.checkpoints.slides``). It
sets the hooks ``data-version`` (0 = the course's own) and
``data-element-count`` on the scene. A slide is redrawn only when its scene's
document or version changed.

A slide of many elements (a 500-element scene, or a document of megabytes of
images) is drawn in slices of at most ``SLICE_MS`` of work, each in its own
task, so the page keeps drawing frames and answering input meanwhile (no
main-thread task over 50 ms); ``data-drawn="false"`` marks a slide still
being drawn. A newer document stops the drawing of an older one.
"""

from __future__ import annotations

import js
from pyscript import document
from pyscript.ffi import is_none

from app.browser.tasks import later
from app.checkpoints.slides import element_style, safe_color, safe_image

__all__ = ["SLICE_MS", "StageView"]

SLICE_MS = 8.0
"""Milliseconds of element drawing per task at most (then the rest follows in the next task)."""
CHECK_EVERY = 4
"""Elements drawn between two looks at the clock."""


class StageView:
    """Draws slides for ``runtime.stage_id`` from ``checkpoints`` (an ``app.checkpoints.SceneCheckpoints``)."""

    def __init__(self, runtime, checkpoints, translator) -> None:
        self.runtime = runtime
        self.checkpoints = checkpoints
        self.t = translator
        self._drawn: dict[str, tuple] = {}  # slide token → (document, version_no, pending)
        self._tokens = 0

    def render(self) -> None:
        """Bring every scene's slide and hooks in line with its current version."""
        stage_id = self.runtime.stage_id
        if stage_id is None:
            return
        kept: dict[str, tuple] = {}
        for node in document.querySelectorAll("#stage [data-testid=scene]"):
            state = self.checkpoints.current(stage_id, node.dataset.sceneId)
            token = node.getAttribute("data-slide-token")
            drawn = None if is_none(token) else self._drawn.get(str(token))
            if drawn is not None and drawn[0] is state.document:
                kept[str(token)] = (state.document, state.version_no, state.pending)
                if drawn[1:] != (state.version_no, state.pending):  # same document, now stored: no redraw
                    self._mark(node, state)
                continue
            self._tokens += 1
            token = str(self._tokens)
            kept[token] = (state.document, state.version_no, state.pending)
            node.setAttribute("data-slide-token", token)
            self._mark(node, state)
            self._draw(node, state)
        self._drawn = kept  # slides of scenes no longer shown are forgotten

    def _mark(self, node, state) -> None:
        node.setAttribute("data-version", str(state.version_no))
        node.setAttribute("data-pending", "true" if state.pending else "false")
        count = len(state.document.elements) if state.document is not None else 0
        node.setAttribute("data-element-count", str(count))
        slide = node.querySelector(".slide")
        if not is_none(slide) and state.document is not None:
            slide.setAttribute("aria-label", self._label(node, state))

    def _label(self, node, state) -> str:
        """The slide's accessible name: a version's own title and number, or for version 0 the scene's
        title as the page shows it (a placeholder course's scenes are localised, ``app.courses.scene_text``;
        the document keeps the course's own words)."""
        doc = state.document
        if state.version_no:
            return self.t("checkpoints.slideLabel", title=doc.title, version=state.version_no)
        shown = node.querySelector("[data-testid=scene-title]")
        title = doc.title if is_none(shown) else str(shown.textContent)
        return f"{title} — {self.t('checkpoints.original')}"

    def _draw(self, node, state) -> None:
        slide = node.querySelector(".slide")
        if is_none(slide):
            slide = document.createElement("div")
            slide.className = "slide"
            slide.setAttribute("role", "img")
            slide.setAttribute("data-testid", "scene-slide")
            body = node.querySelector("p")
            node.insertBefore(slide, None if is_none(body) else body.nextSibling)
        doc = state.document
        if doc is None:
            slide.replaceChildren()
            return
        slide.setAttribute("aria-label", self._label(node, state))
        background = doc.background
        style = ""
        if background.kind == "color" and safe_color(background.value):
            style = f"background:{background.value}"
        elif background.kind == "image" and safe_image(background.value):
            style = f'background:#eef1f7 center/cover no-repeat url("{background.value}")'
        slide.style.cssText = style
        slide.replaceChildren()
        self._draw_slice(slide, node.getAttribute("data-slide-token"), doc.elements, 0)

    def _draw_slice(self, slide, token, elements, start: int) -> None:
        """Append ``elements[start:]`` to ``slide`` for at most ``SLICE_MS``; the rest in a later task,
        unless the slide was given another document meanwhile (its token changed)."""
        scene = slide.parentNode
        if is_none(scene) or str(scene.getAttribute("data-slide-token")) != str(token):
            return
        fragment = document.createDocumentFragment()
        create = document.createElement
        clock = js.performance.now
        deadline = clock() + SLICE_MS
        end = start
        for element in elements[start:]:
            end += 1
            if element.kind == "image":
                src = safe_image(element.src)
                box = create("img") if src else create("div")
                if src:
                    box.src = src
                    box.alt = ""
                    box.decoding = "async"
            else:
                box = create("div")
                if element.text:
                    box.textContent = element.text
                    box.dir = "auto"
            box.className = f"slide-el slide-{element.kind}"
            box.style.cssText = element_style(element)
            fragment.append(box)
            if (end - start) % CHECK_EVERY == 0 and clock() >= deadline:
                break
        slide.append(fragment)
        drawn = end >= len(elements)
        slide.setAttribute("data-drawn", "true" if drawn else "false")
        if not drawn:
            later(lambda: self._draw_slice(slide, token, elements, end))
