"""Locales: choosing one, and translating keys into it (DESIGN.md §7).

Catalogues are ``app/locales/<locale>.json``, nested objects whose leaves are
strings with ``{name}`` placeholders, read with a dotted key
(``edit.agent.newConversation``). A leaf may instead be a *plural* object keyed
by CLDR cardinal category (``zero one two few many other``); ``t`` picks the
form from the ``count`` parameter. Every catalogue has the same keys; a plural
object holds the categories its own language uses (always ``other``).

Example::

    >>> resolve_locale(None, ["zh-Hant-HK", "en"])
    'zh-TW'
    >>> Translator("ru-RU").t("edit.agent.tool.elements", count=3)
    '3 элемента'
    >>> Translator("en-US").t("notice.storage-corrupt", backup_key="k.bak")[-22:]
    'under the key “k.bak”.'
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_LOCALE",
    "LOCALES",
    "PLURAL_CATEGORIES",
    "Translator",
    "catalogue",
    "is_rtl",
    "plural_category",
    "resolve_locale",
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


def plural_category(locale: str, count: int) -> str:
    """CLDR cardinal category of integer ``count`` in ``locale``'s language.

    >>> [plural_category("ar-SA", n) for n in (0, 1, 2, 5, 11, 100)]
    ['zero', 'one', 'two', 'few', 'many', 'other']
    """
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
    return "other"  # zh, ja, ko


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

DECIMAL_MARKS: Mapping[str, str] = {"ru-RU": ",", "pt-BR": ","}
"""Each locale's decimal mark where it is not "." (CLDR, Latin digits, as the page writes numbers)."""


class Translator:
    """Translates dotted keys into one locale; missing keys fall back to en-US, then to the key itself.

    >>> t = Translator("zh-CN")
    >>> t("edit.agent.newConversation"), t.rtl
    ('新对话', False)
    """

    def __init__(self, locale: str) -> None:
        self.locale = locale if locale in LOCALES else DEFAULT_LOCALE
        self.rtl = is_rtl(self.locale)
        self.decimal_mark = DECIMAL_MARKS.get(self.locale, ".")
        self._chain = (catalogue(self.locale), catalogue(DEFAULT_LOCALE))

    def t(self, key: str, **params: Any) -> str:
        """The text for ``key`` with ``{name}`` placeholders filled from ``params``.

        Plural keys need ``count``. Unknown placeholders are left as written.
        """
        for tree, locale in zip(self._chain, (self.locale, DEFAULT_LOCALE)):
            value = _lookup(tree, key)
            if isinstance(value, Mapping):
                value = value.get(plural_category(locale, params.get("count", 0)), value.get("other"))
            if isinstance(value, str):
                return _PLACEHOLDER.sub(lambda m: str(params.get(m[1], m[0])), value)
        return key

    __call__: Callable[..., str] = t
