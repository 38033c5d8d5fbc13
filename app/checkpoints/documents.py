"""Scene documents: what a scene *is*, as JSON (DESIGN.md §10, first rule).

A scene of a course is a ``SceneDocument``: a title, a background, and
elements, each with an id, a kind, a box on the 960 × 540 slide and its text or
image data. The course's own scenes (``app.courses``) are version 0 of each
document (``course_document``); every later version comes from a
``regenerate_scene`` call or a restore and lives in the version store
(``app.checkpoints.versions``).

Two serializations, both pure:

- ``document_json``: compact JSON as stored (pydantic's own encoder, fast even
  for a several-megabyte document with base64 images);
- ``canonical_json``: sorted keys, one value per line, base64 data longer than
  ``LONG_DATA`` characters replaced by its size and sha256 (what diffs and
  previews show, DESIGN.md §10 "long base64 values shown by size and hash").

Example::

    >>> from app.courses import find_course
    >>> doc = course_document(find_course("intro-ml"), "scene-1")
    >>> doc.title, [e.kind for e in doc.elements]
    ('What is learning?', ['text', 'text'])
    >>> course_document(find_course("intro-ml"), "scene-99") is None
    True
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import PydanticSerializationError

__all__ = [
    "abbreviated",
    "Background",
    "base_document",
    "Box",
    "CANVAS",
    "LONG_DATA",
    "SceneDocument",
    "SceneElement",
    "canonical_json",
    "course_document",
    "shown_base",
    "document_json",
    "parse_document",
    "preview_text",
    "validation_issues",
]

CANVAS = (960, 540)
"""Width and height of a slide, in slide units (the stage view scales them)."""

LONG_DATA = 120
"""Strings longer than this that look like base64 data are shown by size and hash."""

_LONE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
"""A surrogate written as a JSON escape (a pair or a lone one; only then is the slower parse tried)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Box(_Model):
    """Where an element sits on the slide: left ``x``, top ``y``, width ``w``, height ``h`` (slide units)."""

    x: float
    y: float
    w: float = Field(ge=0)
    h: float = Field(ge=0)


class SceneElement(_Model):
    """One element: ``id`` (unique in its document), ``kind``, ``box``; ``text`` for text and
    shapes, ``src`` (a ``data:`` URL) for images, ``color`` for shapes and text, ``size`` for
    text: its font size in slide units (the stage view makes it smaller when the text would not
    fit its box, ``app.checkpoints.slides.text_size``; absent: sized from the box's height)."""

    id: str
    kind: Literal["text", "image", "shape"]
    box: Box
    text: str | None = None
    src: str | None = None
    color: str | None = None
    size: float | None = Field(default=None, gt=0)


class Background(_Model):
    """The slide's background: ``kind`` ``color`` (``value`` a CSS hex colour) or ``image``
    (``value`` a ``data:`` URL)."""

    kind: Literal["color", "image"]
    value: str


class SceneDocument(_Model):
    """A scene as JSON: ``title``, ``background``, ``elements`` (DESIGN.md §10)."""

    title: str
    background: Background
    elements: tuple[SceneElement, ...] = ()


def course_document(course: Any, scene_id: str, translate: Any = None) -> SceneDocument | None:
    """Version 0 of scene ``scene_id`` of ``course`` (an ``app.courses.Course``); ``None`` when
    the course has no such scene (a regenerate of it must fail, like ``/fail``).

    ``translate`` (an ``app.i18n.Translator``): title and body as the page shows them
    (``app.courses.scene_text``: a placeholder course's scenes in the reader's locale);
    without it, as written in the course.
    """
    scene = next((s for s in course.scenes if s.id == scene_id), None)
    if scene is None:
        return None
    if translate is not None:
        from app.courses import scene_text

        title, body = scene_text(course, scene, translate)
    else:
        title, body = scene.title, scene.body
    return SceneDocument(
        title=title,
        background=Background(kind="color", value="#f4f6fb"),
        elements=(
            SceneElement(id=f"{scene_id}-title", kind="text", box=Box(x=60, y=48, w=840, h=112),
                         text=title, color="#1d2433", size=64),
            SceneElement(id=f"{scene_id}-body", kind="text", box=Box(x=60, y=184, w=840, h=308),
                         text=body, color="#3b4256", size=52),
        ),
    )


def base_document(stage_id: str, scene_id: str) -> SceneDocument | None:
    """Version 0 of scene ``scene_id`` of the demo course ``stage_id`` (``app.courses.find_course``:
    an unknown id gets the placeholder course's scenes); ``None`` when there is no such scene."""
    from app.courses import find_course

    return course_document(find_course(stage_id), scene_id)


def shown_base(translate: Any) -> Callable[[str, str], SceneDocument | None]:
    """``base(stage_id, scene_id)`` for ``SceneCheckpoints``: version 0 as the page shows it, a
    placeholder course's scenes in the reader's locale (``course_document`` with ``translate``,
    an ``app.i18n.Translator``; DESIGN.md §7, §10). A regenerate reads it, so the new version of
    a placeholder scene keeps the localised title ("المشهد 2" in ar-SA, not "Scene 2"), as do its
    checkpoint's title and the diff against version 0.

    >>> base = shown_base(lambda key, **p: f"シーン {p['index']}" if key == "course.scene" else "…")
    >>> base("my-course", "scene-2").title, base("intro-ml", "scene-2").title
    ('シーン 2', 'Supervised learning')
    """
    from app.courses import find_course

    return lambda stage_id, scene_id: course_document(find_course(stage_id), scene_id, translate)


def document_json(document: SceneDocument) -> str:
    """Compact JSON of ``document`` as stored (no ``null`` fields). A text holding a lone surrogate
    (pydantic's encoder refuses it) is written as ``JSON.stringify`` writes it (``\\ud800``)."""
    try:
        return document.model_dump_json(exclude_none=True)
    except PydanticSerializationError:
        from app.store.jsjson import js_json

        return js_json(document.model_dump(mode="json", exclude_none=True))


def parse_document(text: str | bytes) -> SceneDocument:
    """The document stored as ``text`` (``document_json``'s, lone surrogates included). Raises
    ``pydantic.ValidationError`` when it is not one."""
    try:
        return SceneDocument.model_validate_json(text)
    except ValidationError:
        if not isinstance(text, str) or _LONE_ESCAPE.search(text) is None:
            raise
        return SceneDocument.model_validate(json.loads(text))  # pydantic's parser refuses a lone surrogate


def _abbreviate(value: Any) -> Any:
    if isinstance(value, str):
        if len(value) > LONG_DATA and _looks_like_data(value):
            digest = hashlib.sha256(value.encode("utf-8")).hexdigest()[:16]
            return f"<data {len(value)} chars sha256:{digest}>"
        return value
    if isinstance(value, dict):
        return {k: _abbreviate(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_abbreviate(v) for v in value]
    return value


def _looks_like_data(value: str) -> bool:
    if value.startswith("data:"):
        return True
    head = value[:LONG_DATA]
    return " " not in head and all(c.isalnum() or c in "+/=" for c in head)


def abbreviated(document: SceneDocument) -> dict[str, Any]:
    """``document`` as JSON data (no ``null`` fields) with each base64 value longer than
    ``LONG_DATA`` characters replaced by ``"<data N chars sha256:…>"`` (its size and the first 16
    hex digits of its sha256): what diffs, previews and exported snapshots show (DESIGN.md §10).

    >>> doc = SceneDocument(title="t", background=Background(kind="image", value="data:image/png;base64," + "A" * 500))
    >>> abbreviated(doc)["background"]["value"][:15]
    '<data 522 chars'
    """
    return _abbreviate(document.model_dump(mode="json", exclude_none=True))


def canonical_json(document: SceneDocument) -> str:
    """Sorted-key, indented JSON of ``document`` with long base64 shown by size and hash.

    One line per scalar, so ``difflib`` compares element fields one by one.

    >>> doc = SceneDocument(title="t", background=Background(kind="image", value="data:image/png;base64," + "A" * 500))
    >>> "sha256:" in canonical_json(doc) and "AAAA" not in canonical_json(doc)
    True
    """
    return json.dumps(abbreviated(document), ensure_ascii=False, sort_keys=True, indent=1)


PREVIEW_LIMIT = 240
"""Characters of a checkpoint's ``preview_text`` at most (DESIGN.md §10)."""


def preview_text(document: SceneDocument) -> str:
    """The document's title and text, whitespace collapsed, cut at ``PREVIEW_LIMIT`` characters
    (an ellipsis marks a cut)."""
    words = " · ".join([document.title] + [e.text for e in document.elements if e.kind == "text" and e.text])
    text = " ".join(words.split())
    return text if len(text) <= PREVIEW_LIMIT else text[:PREVIEW_LIMIT - 1] + "…"


def validation_issues(document: SceneDocument) -> list[str]:
    """What is wrong with ``document`` as a slide (the checkpoint's ``validation_issue_count``):
    duplicate element ids, an image without ``src``, an element outside the slide."""
    issues: list[str] = []
    seen: set[str] = set()
    width, height = CANVAS
    for element in document.elements:
        if element.id in seen:
            issues.append(f"duplicate element id {element.id}")
        seen.add(element.id)
        if element.kind == "image" and not element.src:
            issues.append(f"image {element.id} has no src")
        box = element.box
        if box.x < 0 or box.y < 0 or box.x + box.w > width or box.y + box.h > height:
            issues.append(f"element {element.id} lies outside the slide")
    return issues
