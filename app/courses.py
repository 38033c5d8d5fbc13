"""Demo courses (stages) the page can show, DESIGN.md §6.

A course is a stage with scenes. The course picker lists ``COURSES``; the URL
``?course=<stageId>`` opens any id at all: ids not in the list get a generic
placeholder course that carries the id unchanged (``42``, ``__proto__``, long or
non-ASCII ids included), so each still has its own thread. An id holding a
control character (``?course=%00``) is refused: the URL opens the default course
instead, and the picker does not list a course stored under such an id.

Titles are plain text in the course's own language; the page renders them as
text, never as HTML.

Example::

    >>> find_course("intro-ml").title
    'Introduction to Machine Learning'
    >>> c = find_course("__proto__")
    >>> (c.id, c.is_placeholder, len(c.scenes))
    ('__proto__', True, 3)
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = ["COURSES", "DEFAULT_COURSE_ID", "Course", "Scene", "course_from_url", "course_id_allowed", "find_course",
           "scene_text", "picker_courses"]


@dataclass(frozen=True)
class Scene:
    """One scene of a course: ``id`` (what ``/regenerate <sceneId>`` names), ``title``, one ``body`` line."""

    id: str
    title: str
    body: str


@dataclass(frozen=True)
class Course:
    """A stage: ``id`` (the thread key), ``title``, ``scenes``; ``is_placeholder`` for ids not in ``COURSES``."""

    id: str
    title: str
    scenes: tuple[Scene, ...]
    is_placeholder: bool = False


COURSES: tuple[Course, ...] = (
    Course(
        "intro-ml",
        "Introduction to Machine Learning",
        (
            Scene("scene-1", "What is learning?", "A program learns when its performance improves with experience."),
            Scene("scene-2", "Supervised learning", "Labelled examples teach a model to map inputs to outputs."),
            Scene("scene-3", "Overfitting", "A model that memorises its training data fails on new data."),
        ),
    ),
    Course(
        "linear-algebra",
        "Linear Algebra Essentials",
        (
            Scene("scene-1", "Vectors", "A vector has a direction and a length."),
            Scene("scene-2", "Matrices", "A matrix is a linear map written as a grid of numbers."),
            Scene("scene-3", "Eigenvalues", "An eigenvector keeps its direction under the map."),
        ),
    ),
    Course(
        "poetry-tang",
        "唐诗选读",
        (
            Scene("scene-1", "静夜思", "床前明月光，疑是地上霜。"),
            Scene("scene-2", "春晓", "春眠不觉晓，处处闻啼鸟。"),
            Scene("scene-3", "登鹳雀楼", "白日依山尽，黄河入海流。"),
        ),
    ),
)

DEFAULT_COURSE_ID = COURSES[0].id
"""The course shown when the URL names none."""

_BY_ID = {course.id: course for course in COURSES}

_PLACEHOLDER_SCENES = (
    Scene("scene-1", "Scene 1", "An empty scene, ready to be generated."),
    Scene("scene-2", "Scene 2", "An empty scene, ready to be generated."),
    Scene("scene-3", "Scene 3", "An empty scene, ready to be generated."),
)


def course_id_allowed(stage_id: str) -> bool:
    """True when ``stage_id`` may name a course: it has a visible character, and no character that
    would make a course no one can read, tell apart or type again: control characters (Unicode
    category ``Cc``: C0, DEL, C1), format characters (``Cf``: the bidirectional overrides, embeddings
    and isolates that draw U+202E "gpj.exe" as "exe.jpg", zero-width characters), line and paragraph
    separators (``Zl``, ``Zp``), surrogates (``Cs``), private use (``Co``) and unassigned code points or
    noncharacters (``Cn``, such as U+FFFE).

    >>> course_id_allowed("课程-α"), course_id_allowed("a" + chr(0)), course_id_allowed(""), course_id_allowed(" ")
    (True, False, False, False)
    >>> course_id_allowed(chr(0x202E) + "gpj.exe"), course_id_allowed("a b")
    (False, True)
    """
    return bool(stage_id.strip()) and not any(unicodedata.category(ch) in _UNREADABLE for ch in stage_id)


_UNREADABLE = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
"""Unicode categories no course id may hold (``course_id_allowed``)."""


def course_from_url(value: str | None) -> str:
    """The course the URL's ``course`` parameter opens: ``value`` when allowed
    (``course_id_allowed``), else ``DEFAULT_COURSE_ID``.

    >>> course_from_url("42"), course_from_url(chr(0)) == DEFAULT_COURSE_ID
    ('42', True)
    """
    return value if isinstance(value, str) and course_id_allowed(value) else DEFAULT_COURSE_ID


def find_course(stage_id: str) -> Course:
    """Return the demo course ``stage_id``, or a placeholder course with that id (never raises).

    >>> find_course("42").title
    'Course 42'
    """
    return _BY_ID.get(stage_id) or Course(stage_id, f"Course {stage_id}", _PLACEHOLDER_SCENES, is_placeholder=True)


def scene_text(course: Course, scene: Scene, translate: Callable[..., str]) -> tuple[str, str]:
    """``(title, body)`` of ``scene`` as the page shows it in the reader's locale.

    Demo course content stays as written (it is the course's own language); a
    placeholder course's scenes are localised: ``course.scene`` with the
    scene's 1-based ``index`` and ``placeholderScene.body`` (DESIGN.md §7).
    ``translate``: ``app.i18n.Translator`` or any ``(key, **params) -> str``.

    >>> scene_text(find_course("42"), find_course("42").scenes[1], lambda key, **p: f"{key}{p}")
    ("course.scene{'index': 2}", 'placeholderScene.body{}')
    """
    if not course.is_placeholder:
        return scene.title, scene.body
    index = next((i for i, s in enumerate(course.scenes) if s.id == scene.id), 0) + 1
    return translate("course.scene", index=index), translate("placeholderScene.body")


def picker_courses(stored_ids: Iterable[str], current: str | None = None) -> list[Course]:
    """The courses the course picker lists (DESIGN.md §6; a course opened by URL stays reachable):
    every demo course, then a placeholder course for each id in ``stored_ids`` (courses with a
    stored thread) or ``current`` that is not a demo course, sorted by id, each once; ids refused by
    ``course_id_allowed`` are left out.

    >>> [c.id for c in picker_courses(["zeta", "intro-ml", "42"], current="my-course")][3:]
    ['42', 'my-course', 'zeta']
    """
    extra = {i for i in stored_ids if i not in _BY_ID}
    if current is not None and current not in _BY_ID:
        extra.add(current)
    extra = {i for i in extra if course_id_allowed(i)}
    return list(COURSES) + [find_course(i) for i in sorted(extra)]
