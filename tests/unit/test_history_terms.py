"""The search index's terms, posting keys and query rules (app/history/terms.py, DESIGN.md §14)."""

from __future__ import annotations

import pytest

from app.history.terms import (TERM_CHARS, parse_posting, parse_query, posting_keys, posting_prefix, term_bounds,
                               text_terms, time_hex)
from app.history.text import fold


def test_words_are_whole_folded_words_split_at_punctuation_and_underscore():
    assert text_terms(fold("Deep LEARNING, for_all: Straße! gpt-4")) == {
        "deep", "learning", "for", "all", "strasse", "gpt", "4"}


def test_marks_stay_inside_a_word():
    # Devanagari vowel signs are combining marks (not str.isalnum): the word is not split at them
    assert text_terms(fold("किताब पढ़ो")) == {"किताब", "पढो"}  # the nukta (combining) is folded away


def test_unspaced_scripts_give_unigrams_and_bigrams_and_words_around_them():
    assert text_terms("机器学习abc") == {"机", "器", "学", "习", "机器", "器学", "学习", "abc"}
    assert {"한국", "국어", "한", "국", "어"} <= text_terms(fold("한국어"))
    assert {"カタ", "タカ", "ナ"} <= text_terms(fold("カタカナ"))


def test_a_long_word_is_cut_alike_in_text_and_keyword():
    word = "x" * 100
    assert text_terms(word) == {"x" * TERM_CHARS}
    assert parse_query(word, fold).terms == ("x" * TERM_CHARS,)


@pytest.mark.parametrize("keyword,text", [
    ("STRASSE", "Wir wohnen in der Straße"), ("istanbul", "A trip to İstanbul"), ("ISTANBUL", "A trip to İstanbul"),
    ("café", "Un cafe\u0301 noir"), ("full", "ＦＵＬＬ width"), ("学习", "我们今天讨论机器学习的基本概念"),
    ("learning", "Deep LEARNING for 学习 fans"), ("机器学习", "讨论机器学习的"), ("学", "学"),
    ("learning rate", "the rate of learning"), ("한국", "한국어를"),
])
def test_every_term_of_a_matching_keyword_is_a_term_of_the_text(keyword, text):
    query = parse_query(keyword, fold)
    assert query.terms and set(query.terms) <= text_terms(fold(text)) and query.matches(fold(text))


@pytest.mark.parametrize("keyword,text", [
    ("learn", "learning"), ("learning", "machine"), ("rate", "learning"), ("学习", "学的习"),
])
def test_a_keyword_whose_terms_are_missing_does_not_match(keyword, text):
    assert not set(parse_query(keyword, fold).terms) <= text_terms(fold(text))


def test_a_run_of_three_needs_its_bigrams_in_order():
    query = parse_query("机器学", fold)
    assert query.terms == ("机器", "器学") and query.runs == ("机器学",)
    assert query.matches("讨论机器学习") and not query.matches("器学机器")


def test_query_mark_and_empty_query():
    assert parse_query("  Deep   Learning ", fold).mark == "deep"
    assert parse_query("  Deep   Learning ", fold).needle == "deep learning"
    assert parse_query("?!", fold).terms == ()
    assert parse_query("learning learning", fold).terms == ("learning",)


def test_posting_keys_sort_by_time_then_task_and_parse_back():
    keys = posting_keys("s", 1_780_000_000_000, "task_20260101_abc123", {"b", "a"})
    assert keys[0].startswith(posting_prefix("s", "")) and keys[1].startswith(posting_prefix("s", "a"))
    assert all(parse_posting(k) == (1_780_000_000_000, "task_20260101_abc123") for k in keys)
    older = posting_keys("s", 9, "task_z", {"a"})[1]
    newer = posting_keys("s", 10, "task_a", {"a"})[1]
    assert older < newer and time_hex(9) < time_hex(10) < time_hex(2**52)
    assert parse_posting("nope") is None and parse_posting(3) is None


def test_courses_whose_ids_share_a_prefix_never_share_postings():
    a = posting_keys("s", 1, "t", {"x"})[1]
    b = posting_keys("s\0x", 1, "t", {"x"})[1]
    lower, upper, _, _ = term_bounds("s", "x")
    assert lower <= a <= upper and not lower <= b <= upper


def test_term_bounds_cover_time_range_and_cursor():
    keys = [posting_keys("s", t, f"task_{t}", {"x"})[1] for t in (5, 10, 20)]
    keys.append(posting_keys("s", 10, "task_0", {"x"})[1])  # same time, smaller id
    keys.append(posting_keys("s", 10, "task_1", {"xy"})[1])  # another term
    keys.sort()

    def inside(bounds):
        lower, upper, lo_open, up_open = bounds
        return [parse_posting(k) for k in keys if (lower < k if lo_open else lower <= k) and (k < upper if up_open else k <= upper)]

    assert inside(term_bounds("s", "x")) == [(5, "task_5"), (10, "task_0"), (10, "task_10"), (20, "task_20")]
    assert inside(term_bounds("s", "x", since_ms=10)) == [(10, "task_0"), (10, "task_10"), (20, "task_20")]
    assert inside(term_bounds("s", "x", after=(10, "task_10"))) == [(5, "task_5"), (10, "task_0")]
    assert inside(term_bounds("s", "x", after=(10, "task_0"), oldest=True)) == [(10, "task_10"), (20, "task_20")]


def test_terms_made_in_steps_are_the_terms_of_the_whole_text():
    """``text_terms_steps`` (an import's slices, DESIGN.md §14) gives what ``text_terms`` gives, a run
    longer than a slice (an unspaced script with no break) included, and yields between slices."""
    from app.history.terms import text_terms_steps
    from app.history.text import fold_map

    text = fold_map("Deep LEARNING, for_all: Straße! 我们今天讨论机器学习的基本概念 " * 500 + "机器学习" * 3000
                    + " " + "y" * 90 + " gpt-4")[0]
    steps, yields = text_terms_steps(text, slice_runs=50, slice_chars=1000), 0
    while True:
        try:
            next(steps)
            yields += 1
        except StopIteration as done:
            assert done.value == text_terms(text)
            break
    assert yields >= 3000 * 4 // 1000


def test_a_run_of_joiners_or_marks_alone_is_no_term():
    """The joiner between the emoji of a sequence (👩‍💻, a family) is a mark, not a word: were it a
    term, any emoji sequence would find every conversation that holds another (DESIGN.md §9 search)."""
    assert text_terms(fold("Dogs 🐶 👩\u200d👩\u200d👧\u200d👦 🇫🇷 ok \u0301")) == {"dogs", "ok"}
    assert parse_query("👩\u200d👩\u200d👧\u200d👦", fold).terms == ()  # looked for as it is, by a scan
    assert text_terms(fold("a\u200db \u200dx")) == {"a\u200db", "\u200dx"}  # inside or at a word: kept
