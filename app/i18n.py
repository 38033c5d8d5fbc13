"""Locales: choosing one, and translating keys into it (DESIGN.md §7).

Catalogues are ``app/locales/<locale>.json``, nested objects whose leaves are
strings with ``{name}`` placeholders, read with a dotted key
(``edit.agent.newConversation``). A leaf may instead be a *plural* object keyed
by CLDR cardinal category (``zero one two few many other``); ``t`` picks the
form from the ``count`` parameter. Every catalogue has the same keys; a plural
object holds the categories its own language uses (always ``other``).

How a locale writes numbers is the platform's CLDR data, not ours: the plural
category of a count, the count with its thousands separators ("1,209" in en-US,
"1 209" in ru-RU, Latin digits everywhere) and the decimal mark come through the
``NumberRules`` port. In the page it is the browser's ``Intl.PluralRules`` and
``Intl.NumberFormat`` (``app.browser.intl.IntlNumbers``); CPython tests and tools
install Babel's CLDR data (``tools.cldr_numbers.CldrNumbers``) with
``use_number_rules``.

Example (with ``use_number_rules`` done)::

    >>> resolve_locale(None, ["zh-Hant-HK", "en"])
    'zh-TW'
    >>> Translator("ru-RU").t("edit.agent.tool.elements", count=3)
    '3 элемента'
    >>> Translator("en-US").t("history.tokens", count=1209)
    '1,209 tokens'
    >>> Translator("en-US").t("notice.storage-corrupt", backup_key="k.bak")[-22:]
    'under the key “k.bak”.'
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "DEFAULT_LOCALE",
    "LOCALES",
    "PLURAL_CATEGORIES",
    "NumberRules",
    "NumberRulesFactory",
    "Translator",
    "catalogue",
    "is_rtl",
    "join_sentences",
    "number_rules",
    "plural_category",
    "resolve_locale",
    "use_number_rules",
]

LOCALES: tuple[str, ...] = ("zh-CN", "zh-TW", "en-US", "ja-JP", "ru-RU", "ar-SA", "pt-BR", "ko-KR")
DEFAULT_LOCALE = "en-US"
PLURAL_CATEGORIES = frozenset({"zero", "one", "two", "few", "many", "other"})

_BY_LANGUAGE = {locale.split("-")[0]: locale for locale in LOCALES if locale != "zh-TW"}
_TRADITIONAL_ZH = {"hant", "tw", "hk", "mo"}
_RTL_LANGUAGES = {"ar", "he", "fa", "ur"}
_LOCALE_DIR = Path(__file__).with_name("locales")


def _match(tag: str) -> str | None:
    """Map one BCP 47 tag to a supported locale: exact (any case, ``_`` or ``-``), else by language."""
    subtags = tag.strip().replace("_", "-").lower().split("-")
    exact = {locale.lower(): locale for locale in LOCALES}.get("-".join(subtags))
    if exact:
        return exact
    if subtags[0] == "zh":
        return "zh-TW" if _TRADITIONAL_ZH & set(subtags[1:]) else "zh-CN"
    return _BY_LANGUAGE.get(subtags[0])


def resolve_locale(query_lang: str | None, browser_languages: Sequence[str]) -> str:
    """Pick the locale: ``?lang=`` if it matches, else the first matching browser language, else en-US.

    A tag matches exactly or by its language (``zh-Hant``/``zh-HK`` → zh-TW,
    ``zh``/``zh-Hans`` → zh-CN, ``pt`` → pt-BR, ``ar-EG`` → ar-SA).

    >>> resolve_locale("ja", ["ko-KR"]), resolve_locale("xx", ["fr", "pt"]), resolve_locale(None, [])
    ('ja-JP', 'pt-BR', 'en-US')
    """
    for tag in ([query_lang] if query_lang else []) + list(browser_languages):
        if locale := _match(tag):
            return locale
    return DEFAULT_LOCALE


def is_rtl(locale: str) -> bool:
    """True for right-to-left locales (``ar-SA``)."""
    return locale.split("-")[0].lower() in _RTL_LANGUAGES


_FULL_WIDTH_END = frozenset("。！？：；）」』")
"""Marks that end a Chinese or Japanese sentence and carry their own space (full-width forms)."""


def join_sentences(sentences: Sequence[str]) -> str:
    """Sentences said one after the other (a status line's outcomes, an error and its hint): a space
    between two, but none after a full-width mark that ends one ("已导入 1 个对话。1 个无法读取": Chinese
    and Japanese write no space between sentences, DESIGN.md §7). Empty ones are left out.

    >>> join_sentences(["Imported 1.", "", "1 skipped."]), join_sentences(["已导入 1 个。", "1 个无法读取。"])
    ('Imported 1. 1 skipped.', '已导入 1 个。1 个无法读取。')
    """
    text = ""
    for sentence in (s for s in sentences if s):
        text += sentence if not text or text[-1] in _FULL_WIDTH_END else " " + sentence
    return text


class NumberRules(Protocol):
    """How one locale writes numbers, from the platform's CLDR data (DESIGN.md §7).

    Implementations: ``app.browser.intl.IntlNumbers`` (the browser's ``Intl``) and
    ``tools.cldr_numbers.CldrNumbers`` (Babel, for CPython); unit and e2e tests show both give
    the same answers for the eight locales.
    """

    def plural(self, count: int) -> str:
        """CLDR cardinal category of integer ``count``: one of ``PLURAL_CATEGORIES``."""
        ...

    def integer(self, value: int) -> str:
        """``value`` written with the locale's thousands separators in Latin digits ("1,209")."""
        ...

    def decimal_mark(self) -> str:
        """The locale's decimal mark in Latin digits ("." in en-US, "," in ru-RU and pt-BR)."""
        ...


NumberRulesFactory = Callable[[str], NumberRules]
"""Builds the ``NumberRules`` of one supported locale (``"ru-RU"``)."""

_installed: dict[str, NumberRulesFactory] = {}


def use_number_rules(factory: NumberRulesFactory) -> None:
    """Make ``factory`` the number rules of every ``Translator`` built without its own (and of
    ``plural_category``): the browser's boot passes ``IntlNumbers`` explicitly; CPython tests and
    tools install ``CldrNumbers`` here once."""
    _installed["factory"] = factory


def number_rules(locale: str) -> NumberRules:
    """The installed ``NumberRules`` of ``locale``; ``LookupError`` when none was installed."""
    factory = _installed.get("factory")
    if factory is None:
        raise LookupError("no NumberRules installed: pass Translator(locale, numbers) or call use_number_rules")
    return factory(locale)


def plural_category(locale: str, count: int) -> str:
    """CLDR cardinal category of integer ``count`` in ``locale`` (the installed ``NumberRules``).

    >>> [plural_category("ar-SA", n) for n in (0, 1, 2, 5, 11, 100)]
    ['zero', 'one', 'two', 'few', 'many', 'other']
    """
    return number_rules(locale).plural(int(count))


@cache
def catalogue(locale: str) -> Mapping[str, Any]:
    """The parsed catalogue of ``locale`` (read once from ``app/locales/<locale>.json``)."""
    if locale not in LOCALES:
        raise KeyError(f"unsupported locale {locale!r}; expected one of {LOCALES}")
    return json.loads((_LOCALE_DIR / f"{locale}.json").read_text(encoding="utf-8"))


def _lookup(tree: Mapping[str, Any], key: str) -> Any:
    node: Any = tree
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


_PLACEHOLDER = re.compile(r"\{(\w+)\}")

class Translator:
    """Translates dotted keys into one locale; missing keys fall back to en-US, then to the key itself.

    ``numbers`` builds each locale's ``NumberRules`` (the plural form, the written ``count``, the
    ``decimal_mark``); without it, the rules installed by ``use_number_rules`` (``LookupError``
    if none were).

    >>> t = Translator("zh-CN")
    >>> t("edit.agent.newConversation"), t.rtl
    ('新对话', False)
    """

    def __init__(self, locale: str, numbers: NumberRulesFactory | None = None) -> None:
        self.locale = locale if locale in LOCALES else DEFAULT_LOCALE
        self.rtl = is_rtl(self.locale)
        rules = numbers or number_rules
        self._numbers = rules(self.locale)
        self.decimal_mark = self._numbers.decimal_mark()
        self._chain = ((catalogue(self.locale), self._numbers), (catalogue(DEFAULT_LOCALE), rules(DEFAULT_LOCALE)))

    def t(self, key: str, **params: Any) -> str:
        """The text for ``key`` with ``{name}`` placeholders filled from ``params``.

        Plural keys need ``count``; an integer ``count`` is written the locale's way ("1,209").
        Unknown placeholders are left as written.
        """
        count = params.get("count", 0)
        if type(count) is int:
            params = {**params, "count": self._numbers.integer(count)}
        for tree, numbers in self._chain:
            value = _lookup(tree, key)
            if isinstance(value, Mapping):
                value = value.get(numbers.plural(int(count)), value.get("other"))
            if isinstance(value, str):
                return _PLACEHOLDER.sub(lambda m: str(params.get(m[1], m[0])), value)
        return key

    __call__: Callable[..., str] = t
