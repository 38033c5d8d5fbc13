"""Search folding of DESIGN.md §14: full case folding, Turkish I, NFKC, accents ignored; snippets mark
the original text by grapheme cluster."""

from __future__ import annotations

import pytest

from app.history.text import fold, fold_map, snippet, source_index
from tests.unit.test_history import add, service


@pytest.mark.parametrize("keyword,text", [
    ("STRASSE", "Die Straße"), ("strasse", "DIE STRAẞE"), ("straße", "strasse"),
    ("istanbul", "İstanbul"), ("ISTANBUL", "İstanbul"), ("İSTANBUL", "istanbul"), ("ıstanbul", "ISTANBUL"),
    ("ＡＢＣ", "abc"), ("abc", "ＡＢＣ"), ("file", "ﬁle"), ("cafe", "café"), ("café", "cafe\u0301"), ("Ärger", "ärger"),
    ("ΣΟΦΙΑ", "σοφία"), ("ПРИВЕТ", "привет"), ("学习", "机器学习"), ("한국", "한국어"), ("ｶﾞ", "ガ"),
])
def test_folding_finds_what_section_14_says(keyword, text):
    assert fold(keyword) in fold(text)


def test_hangul_syllables_are_not_split_into_letters():
    assert fold("하") not in fold("한")  # NFD decomposes 한 into 하 + ᆫ: the folding composes it back


@pytest.mark.parametrize("text", ["plain ascii words", "Straße İstanbul café ﬁn ＡＢＣ 中文，测试 e\u0301t\u00e9 ok",
                                  "ß" * 300 + " x ẞẞ y"])
def test_fold_map_carries_folded_positions_back_to_the_text(text):
    folded, anchors = fold_map(text)
    assert folded == fold(text)
    at = 0
    for word in text.split(" "):  # each word starts a piece: its place is exact
        start = text.index(word, at)
        assert source_index(anchors, fold(text[:start]).__len__()) == start
        assert folded.startswith(fold(word), len(fold(text[:start])))
        at = start + len(word)


async def test_search_folds_and_marks_the_original_text():
    svc, _, _ = service()
    await add(svc, "s", "Wir wohnen in der Straße")
    await add(svc, "s", "A trip to İstanbul")
    await add(svc, "s", "Un cafe\u0301 noir")
    await add(svc, "s", "ＦＵＬＬ width")
    cases = {"STRASSE": "Straße", "istanbul": "İstanbul", "ISTANBUL": "İstanbul", "café": "cafe\u0301",
             "full": "ＦＵＬＬ"}
    for keyword, marked in cases.items():
        hits = (await svc.search("s", keyword)).items
        assert [h.snippet[1] for h in hits] == [marked], keyword


async def test_a_match_far_behind_expanding_letters_is_still_found_and_marked():
    """300 "ẞ" fold to 600 letters: the folded position of the match is 300 past its place in the
    text; the search record's anchors carry it back, so the snippet is cut around the match."""
    svc, _, _ = service()
    await add(svc, "s", "ẞ" * 300 + " the Needle here")
    (hit,) = (await svc.search("s", "NEEDLE")).items
    assert hit.snippet[1] == "Needle" and hit.snippet[0].endswith("the ") and hit.snippet[0].startswith("…")


def test_a_snippet_marks_whole_grapheme_clusters():
    import pyuegc

    text = "voilà: e\u0301te\u0301 👍🏽 ok"
    assert snippet(text, fold("ete"), cut_before=False, cut_after=False, graphemes=pyuegc.EGC) == (
        "voilà: ", "e\u0301te\u0301", " 👍🏽 ok")


async def test_search_records_of_the_earlier_folding_are_folded_again_and_indexed_once():
    """A record written before the §14 folding and the index holds only lower-cased text ("straße")
    and no terms: the first search of its course folds it again from the kept text and indexes it,
    so "STRASSE" finds it as in a new one; later searches do not look for such records again."""
    from app.records import MemoryBackend

    backend = MemoryBackend()
    svc, _, _ = service(backend=backend)
    task_id = await add(svc, "s", "Die Straße von İstanbul")
    old = {**backend.raw("search")[task_id], "folded": "die straße von i̇stanbul"}
    old.pop("fold")
    old.pop("terms")
    backend.put_raw("search", old)
    reloaded, _, _ = service(backend=backend)
    assert [h.snippet[1] for h in (await reloaded.search("s", "STRASSE")).items] == ["Straße"]
    assert backend.raw("search")[task_id]["fold"] == 2 and backend.raw("search")[task_id]["terms"]
    calls = backend.calls
    await reloaded.search("s", "istanbul")
    second = backend.calls - calls
    calls = backend.calls
    await reloaded.search("s", "istanbul")
    assert backend.calls - calls == second <= 5  # count, keys, metas, search, texts: no course-wide read


@pytest.mark.parametrize("text", [
    "", "plain ascii only", "Straße İstanbul cafe\u0301 ＦＵＬＬ 한국어 ﬁne\n" * 40, "é" * 300, "x" * 500 + "\u0301" * 5,
    "A\u0301" * 200, "\u1100\u1161" * 150 + " ok", "한국어를" * 100, "😀İ" * 120, "ǅ ß" * 99 + "\n" + "Σ" * 80,
])
def test_folding_in_steps_is_the_folding_of_the_whole_text(text):
    """``fold_map_steps`` (an import's slices, DESIGN.md §14) cuts the text only before a character
    that stands alone, so its folding and anchors are ``fold_map``'s, whatever the slice size."""
    from app.history.export import run_steps
    from app.history.text import fold_map, fold_map_steps

    for chars in (1, 7, 64, 10_000):
        assert run_steps(fold_map_steps(text, slice_chars=chars)) == fold_map(text)


def test_plain_text_in_steps_is_the_plain_text_lone_surrogates_replaced_in_every_slice():
    """``plain_text_steps`` (an import's slices, DESIGN.md §14) gives ``plain_text`` exactly, a lone
    surrogate on either side of a cut included, and yields between slices of a long text part."""
    from app.history.text import plain_text, plain_text_steps

    long = ("ab\ud800c" + "x" * 5 + "\udfff") * 400 + "😀"
    messages = [{"role": "user", "content": [{"type": "text", "text": long}]},
                {"role": "assistant", "content": [{"type": "text", "text": "short \ud83d"}, {"type": "tool-call"}]}]
    steps, yields = plain_text_steps(messages, slice_chars=7), 0
    while True:
        try:
            next(steps)
            yields += 1
        except StopIteration as done:
            assert done.value == plain_text(messages) and "\ud800" not in done.value
            break
    assert yields >= len(long) // 7 - 1
