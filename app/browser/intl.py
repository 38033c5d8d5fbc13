"""``NumberRules`` from the browser's ``Intl`` (DESIGN.md §7): plural categories from
``Intl.PluralRules``, grouped integers and the decimal mark from ``Intl.NumberFormat``.

Numbers are written in Latin digits in every locale (the ``-u-nu-latn`` extension: ar-SA would
otherwise write Arabic-Indic digits), as the page has always written them. CPython code gets
the same answers from Babel's CLDR data (``tools.cldr_numbers``).
"""

from __future__ import annotations

import js

__all__ = ["IntlNumbers"]


class IntlNumbers:
    """``app.i18n.NumberRules`` of one supported ``locale`` ("ru-RU") over the browser's ``Intl``."""

    def __init__(self, locale: str) -> None:
        self._plural = js.Intl.PluralRules.new(locale)
        self._format = js.Intl.NumberFormat.new(f"{locale}-u-nu-latn")
        parts = self._format.formatToParts(1.5)
        self._decimal = next((str(part.value) for part in parts if part.type == "decimal"), ".")

    def plural(self, count: int) -> str:
        """``Intl.PluralRules.select(count)``: one of zero, one, two, few, many, other."""
        return str(self._plural.select(int(count)))

    def integer(self, value: int) -> str:
        """``Intl.NumberFormat.format(value)``: "1,209" in en-US, "1 209" in ru-RU."""
        return str(self._format.format(int(value)))

    def decimal_mark(self) -> str:
        """The ``decimal`` part of ``Intl.NumberFormat.formatToParts(1.5)``."""
        return self._decimal
