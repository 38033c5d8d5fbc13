"""Demo courses (DESIGN.md §6): a few listed courses, and any URL id opens a course of its own."""

import pytest

from app.courses import COURSES, DEFAULT_COURSE_ID, course_from_url, course_id_allowed, find_course, picker_courses


def test_demo_courses_have_distinct_ids_and_scenes():
    ids = [course.id for course in COURSES]
    assert 3 <= len(ids) <= 4 and len(set(ids)) == len(ids)
    assert {"intro-ml", "linear-algebra", "poetry-tang"} <= set(ids)
    for course in COURSES:
        assert course.scenes and len({s.id for s in course.scenes}) == len(course.scenes)
        assert all(s.title and s.body for s in course.scenes)
        assert not course.is_placeholder


def test_find_course_returns_the_listed_course():
    for course in COURSES:
        assert find_course(course.id) is course
    assert find_course(DEFAULT_COURSE_ID) is COURSES[0]


@pytest.mark.parametrize("stage_id", ["42", "__proto__", "constructor", "x" * 500, "课程-α", "a b/c?d=<e>"])
def test_any_unknown_id_opens_a_placeholder_course_with_that_id(stage_id):
    course = find_course(stage_id)
    assert course.id == stage_id and course.is_placeholder
    assert course.scenes and stage_id in course.title


@pytest.mark.parametrize("raw", ["\x00", "a\x00b", "\x1b[31m", "tab\there", "line\nbreak", "del\x7f", "c1\x85", "",
                                 "\u202egpj.exe", "\u202e", "a\u2066b\u2069", "zero\u200bwidth", " ", "\u3000",
                                 "\u2028", "para\u2029", "\ufffe", "\ue000", "\U0010ffff"])
def test_a_course_id_with_a_control_character_is_refused_for_the_default_course(raw):
    """A course id no one can read, tell apart or type again (control, bidi and zero-width format
    characters, separators, blanks only, noncharacters, private use) opens the default course."""
    assert not course_id_allowed(raw)
    assert course_from_url(raw) == DEFAULT_COURSE_ID
    ids = [c.id for c in picker_courses([raw, "kept"], current=raw)]
    assert raw not in ids and "kept" in ids  # a course stored before the rule is no longer listed


@pytest.mark.parametrize("stage_id", ["42", "__proto__", "x" * 500, "课程-α", "a b/c?d=<e>", "intro-ml"])
def test_any_other_course_id_opens_as_named(stage_id):
    assert course_id_allowed(stage_id) and course_from_url(stage_id) == stage_id
    assert course_from_url(None) == DEFAULT_COURSE_ID
