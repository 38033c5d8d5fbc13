"""``NumberRules`` over Babel's CLDR data, for CPython (tests and tools; DESIGN.md §7).

The page writes numbers through the browser's ``Intl`` (``app.browser.intl.IntlNumbers``);
code that runs under CPython (unit tests, the benchmark's paint record) gets the same answers
from the same CLDR data through Babel, a development-only dependency (requirements-dev.txt)::

    >>> CldrNumbers("ru-RU").plural(3), CldrNumbers("ru-RU").integer(1209), CldrNumbers("pt-BR").decimal_mark()
    ('few', '1\\xa0209', ',')
"""

from __future__ import annotations

from functools import cache

from babel import Locale
from babel.numbers import format_decimal, get_decimal_symbol

__all__ = ["CldrNumbers", "cldr_numbers"]


class CldrNumbers:
    """``app.i18n.NumberRules`` of one BCP 47 ``locale`` ("ar-SA") from Babel, Latin digits."""

    def __init__(self, locale: str) -> None:
        self._locale = Locale.parse(locale, sep="-")

    def plural(self, count: int) -> str:
        """CLDR cardinal category of integer ``count`` (``Intl.PluralRules.select``)."""
        return self._locale.plural_form(int(count))

    def integer(self, value: int) -> str:
        """``value`` with the locale's grouping separators (``Intl.NumberFormat`` with ``nu-latn``)."""
        return format_decimal(int(value), locale=self._locale, numbering_system="latn")

    def decimal_mark(self) -> str:
        """The locale's decimal symbol in the Latin numbering system."""
        return get_decimal_symbol(self._locale, numbering_system="latn")


@cache
def cldr_numbers(locale: str) -> CldrNumbers:
    """The (shared) ``CldrNumbers`` of ``locale``: an ``app.i18n.NumberRulesFactory``."""
    return CldrNumbers(locale)
