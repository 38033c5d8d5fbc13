"""Locales (DESIGN.md §7): same keys everywhere, real translations, resolution order, RTL, plurals,
and numbers written through the NumberRules port (Babel's CLDR data here, ``Intl`` in the page)."""

import doctest
import json
from pathlib import Path

import pytest

import app.i18n
import tools.cldr_numbers
from app.i18n import LOCALES, PLURAL_CATEGORIES, Translator, catalogue, is_rtl, plural_category, resolve_locale
from tools.cldr_numbers import CldrNumbers

LOCALE_DIR = Path(__file__).resolve().parents[2] / "app" / "locales"

NEW_CONVERSATION = {
    "zh-CN": "新对话",
    "zh-TW": "新對話",
    "en-US": "New conversation",
    "ja-JP": "新しい会話",
    "ru-RU": "Новый диалог",
    "ar-SA": "محادثة جديدة",
    "pt-BR": "Nova conversa",
    "ko-KR": "새 대화",
}

REQUIRED_KEYS = {
    "app.title", "app.loading", "app.startupError",
    "course.label", "course.placeholderTitle", "course.scene", "course.scenes",
    "edit.agent.title", "edit.agent.collapse", "edit.agent.expand",
    "edit.agent.inputLabel", "edit.agent.inputPlaceholder", "edit.agent.send", "edit.agent.stop",
    "edit.agent.newConversation", "edit.agent.newConversationTooltip", "edit.agent.emptyHint",
    "edit.agent.tool.regenerateScene", "edit.agent.tool.elements", "edit.agent.tool.actions",
    "edit.agent.tool.failed", "edit.agent.tool.interrupted",
    "notice.storage-corrupt", "notice.storage-newer-version", "notice.storage-unavailable",
    "notice.storage-full", "notice.storage-pruned", "notice.storage-read-only",
}


def is_plural(node):
    return isinstance(node, dict) and "other" in node and set(node) <= PLURAL_CATEGORIES


def leaves(tree, prefix=""):
    """Dotted key → leaf (a string, or a plural object counted as one leaf)."""
    out = {}
    for key, node in tree.items():
        path = f"{prefix}{key}"
        if isinstance(node, dict) and not is_plural(node):
            out.update(leaves(node, path + "."))
        else:
            out[path] = node
    return out


def test_there_is_one_catalogue_file_per_locale():
    assert sorted(p.stem for p in LOCALE_DIR.glob("*.json")) == sorted(LOCALES)


def test_locales_share_keys():
    keys = {locale: set(leaves(catalogue(locale))) for locale in LOCALES}
    for locale in LOCALES:
        assert keys[locale] == keys["en-US"], locale
    assert REQUIRED_KEYS <= keys["en-US"]


def test_every_leaf_is_text_and_plurals_cover_their_language():
    for locale in LOCALES:
        needed = {plural_category(locale, n) for n in range(0, 201)} | {"other"}
        for key, node in leaves(catalogue(locale)).items():
            if isinstance(node, dict):
                assert set(node) == needed, (locale, key)
                assert all(isinstance(v, str) and v for v in node.values()), (locale, key)
            else:
                assert isinstance(node, str) and node, (locale, key)


def test_placeholders_match_english_in_every_locale():
    import re

    def names(node):
        texts = node.values() if isinstance(node, dict) else [node]
        return set().union(*(re.findall(r"\{(\w+)\}", t) for t in texts)) - {"count"}

    english = leaves(catalogue("en-US"))
    for locale in LOCALES:
        for key, node in leaves(catalogue(locale)).items():
            assert names(node) == names(english[key]), (locale, key)


def test_every_locale_translates_new_conversation():
    for locale, text in NEW_CONVERSATION.items():
        assert Translator(locale).t("edit.agent.newConversation") == text


def test_translations_are_not_english_copies():
    english = leaves(catalogue("en-US"))
    for locale in set(LOCALES) - {"en-US"}:
        own = leaves(catalogue(locale))
        copied = [key for key, node in own.items()  # a separator (no letters) may be the same as English
                  if node == english[key] and not (isinstance(node, str) and not any(c.isalpha() for c in node))]
        assert not copied, (locale, copied)


def test_catalogue_files_are_json_without_escapes():
    for path in LOCALE_DIR.glob("*.json"):
        text = path.read_text(encoding="utf-8")
        json.loads(text)
        assert "\\u" not in text, path.name


@pytest.mark.parametrize(
    ("query", "browser", "expected"),
    [
        ("ja-JP", ["ko-KR"], "ja-JP"),
        ("ja", ["ko-KR"], "ja-JP"),
        ("AR_sa", [], "ar-SA"),
        ("xx", ["ko-KR", "ja-JP"], "ko-KR"),
        (None, ["fr-FR", "pt", "en-US"], "pt-BR"),
        (None, ["zh-Hant"], "zh-TW"),
        (None, ["zh-TW"], "zh-TW"),
        (None, ["zh-HK"], "zh-TW"),
        (None, ["zh-Hant-HK"], "zh-TW"),
        (None, ["zh"], "zh-CN"),
        (None, ["zh-Hans"], "zh-CN"),
        (None, ["zh-SG"], "zh-CN"),
        (None, ["ru"], "ru-RU"),
        (None, ["fr", "de"], "en-US"),
        (None, [], "en-US"),
        ("", [], "en-US"),
    ],
)
def test_resolve_locale_order(query, browser, expected):
    assert resolve_locale(query, browser) == expected


def test_only_arabic_is_right_to_left():
    assert [locale for locale in LOCALES if is_rtl(locale)] == ["ar-SA"]
    assert Translator("ar-SA").rtl and not Translator("en-US").rtl


def test_placeholders_are_filled():
    assert Translator("en-US").t("edit.agent.tool.regenerateScene", sceneId="scene-2") == "Regenerate scene scene-2"
    assert "“maic-agent-threads.bak”" in Translator("en-US").t("notice.storage-corrupt", backup_key="maic-agent-threads.bak")
    assert "{backup_key}" in Translator("en-US").t("notice.storage-corrupt")


@pytest.mark.parametrize(
    ("locale", "count", "expected"),
    [
        ("en-US", 1, "1 element"),
        ("en-US", 24, "24 elements"),
        ("pt-BR", 0, "0 elemento"),
        ("pt-BR", 2, "2 elementos"),
        ("ru-RU", 1, "1 элемент"),
        ("ru-RU", 3, "3 элемента"),
        ("ru-RU", 11, "11 элементов"),
        ("ru-RU", 21, "21 элемент"),
        ("ru-RU", 25, "25 элементов"),
        ("ar-SA", 2, "عنصران"),
        ("ar-SA", 5, "5 عناصر"),
        ("ar-SA", 30, "30 عنصرًا"),
        ("ar-SA", 100, "100 عنصر"),
        ("zh-CN", 30, "30 个元素"),
    ],
)
def test_element_count_uses_plural_forms(locale, count, expected):
    assert Translator(locale).t("edit.agent.tool.elements", count=count) == expected


def test_unknown_key_and_unknown_locale_fall_back():
    assert Translator("en-US").t("no.such.key") == "no.such.key"
    assert Translator("fr-FR").locale == "en-US"


def test_the_modules_examples_hold():
    assert doctest.testmod(app.i18n).failed == 0
    assert doctest.testmod(tools.cldr_numbers).failed == 0


def _cardinal_before_cldr(locale, count):
    """The plural rules the app wrote by hand before it read CLDR's (en, pt-BR, ru, ar; else other)."""
    lang, n = locale.split("-")[0], abs(int(count))
    if lang == "en":
        return "one" if n == 1 else "other"
    if lang == "pt":
        return "one" if n <= 1 else "other"
    if lang == "ru":
        if n % 10 == 1 and n % 100 != 11:
            return "one"
        return "few" if 2 <= n % 10 <= 4 and not 12 <= n % 100 <= 14 else "many"
    if lang == "ar":
        if n <= 2:
            return ("zero", "one", "two")[n]
        return "few" if 3 <= n % 100 <= 10 else "many" if n % 100 >= 11 else "other"
    return "other"


@pytest.mark.parametrize("locale", LOCALES)
def test_cldr_plural_categories_are_the_ones_the_catalogues_were_written_for(locale):
    for n in [*range(0, 1001), 1209, 100_000, 1_000_001]:
        assert plural_category(locale, n) == _cardinal_before_cldr(locale, n), (locale, n)


@pytest.mark.parametrize(
    ("locale", "tokens", "seconds"),
    [
        ("en-US", "1,209 tokens", "."),
        ("ru-RU", "1\u00a0209 токенов", ","),
        ("pt-BR", "1.209 tokens usados", ","),
        ("ar-SA", "1,209 رموز", "."),
        ("ja-JP", "1,209 トークン", "."),
        ("zh-CN", None, "."),
        ("zh-TW", None, "."),
        ("ko-KR", None, "."),
    ],
)
def test_a_count_is_written_with_the_locales_thousands_separator_and_latin_digits(locale, tokens, seconds):
    t = Translator(locale)
    written = t("history.tokens", count=1209)
    if tokens is not None:
        assert written == tokens
    assert CldrNumbers(locale).integer(1209) in written and "1209" not in written
    assert t("history.tokens", count=12) == t("history.tokens", count=12).replace(",", "")  # no separator below 1000
    assert t.decimal_mark == seconds


def test_a_translator_needs_number_rules(monkeypatch):
    monkeypatch.setattr(app.i18n, "_installed", {})
    with pytest.raises(LookupError):
        Translator("en-US")
    assert Translator("ru-RU", CldrNumbers).t("edit.agent.tool.elements", count=21) == "21 элемент"


def test_sentences_said_together_take_a_space_except_after_a_full_width_mark():
    from app.agents.errors import describe
    from app.i18n import join_sentences

    assert join_sentences(["Saved.", "", "2 kept."]) == "Saved. 2 kept."
    assert join_sentences(["已导入 0 个对话。", "1 个无法读取：x。"]) == "已导入 0 个对话。1 个无法读取：x。"
    assert join_sentences(["会話 1 件。", "Done."]) == "会話 1 件。Done."
    zh = Translator("zh-CN")
    said = describe(zh, {"code": "network", "params": {"url": "http://127.0.0.1:9/v1", "detail": "refused"}})
    assert said == zh("model.error.network", url="http://127.0.0.1:9/v1") + zh("model.error.detail", detail="refused")


def test_a_command_in_right_to_left_text_is_its_own_left_to_right_run():
    """ar-SA: ``/regenerate scene-1`` in a catalogue value sits in a left-to-right isolate (U+2066 …
    U+2069): a placeholder cannot hold markup, and with an LRM only the composer's placeholder drew the
    slash on the wrong side of the command."""
    for locale in (loc for loc in LOCALES if is_rtl(loc)):
        for key, text in leaves(catalogue(locale)).items():
            if isinstance(text, str) and "/regenerate" in text:
                start = text.index("/regenerate")
                assert text[start - 1] == "\u2066" and "\u2069" in text[start:], (locale, key, text)
                assert "\u200e" not in text, (locale, key)


def test_the_history_file_actions_disclosure_is_named_in_every_locale():
    names = {locale: catalogue(locale)["history"]["more"] for locale in LOCALES}
    assert len(set(names.values())) == len(LOCALES), names
