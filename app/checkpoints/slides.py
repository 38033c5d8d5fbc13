"""How the stage view draws a scene document as a small slide (pure; DESIGN.md §10, §5).

Stored documents are data: only ``data:image/…;base64,`` URLs become image
sources or backgrounds, only hex colours become colours, and every text is set
as text by the view. Boxes are placed in percent of the 960 × 540 slide, and
text is sized in container units, so the slide scales with its card.

Example::

    >>> safe_image("data:image/png;base64,iVBORw0KGgo="), safe_image("javascript:alert(1)")
    ('data:image/png;base64,iVBORw0KGgo=', None)
    >>> safe_color("#12ab34"), safe_color("red;background:url(x)")
    ('#12ab34', None)
    >>> from app.checkpoints.documents import Box
    >>> box_style(Box(x=96, y=54, w=480, h=270))
    'left:10%;top:10%;width:50%;height:50%'
"""

from __future__ import annotations

import re
import unicodedata

from app.checkpoints.documents import CANVAS, Box, SceneElement

__all__ = ["LINE_HEIGHT", "box_style", "element_style", "safe_color", "safe_image", "text_size"]

LINE_HEIGHT = 1.15
"""Line height of slide text, in ems (``.slide-el`` in ``static/checkpoints.css`` says the same)."""
_FILL = 0.9
"""Share of a text box's width and height that the estimate may fill: room for the font's own widths."""
_SHRINK = 0.94
_WORDS = re.compile(r"[^\s]+")

_DATA_HEAD = re.compile(r"data:image/(?:png|jpeg|gif|webp);base64,")
_BASE64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_COLOR = re.compile(r"#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})")


def safe_image(src: str | None) -> str | None:
    """``src`` when it is a base64 ``data:`` URL of a raster image, else ``None`` (never fetched, never script)."""
    head = _DATA_HEAD.match(src) if isinstance(src, str) else None
    if head is None:
        return None
    body = src[head.end():]
    data = body.rstrip("=")
    # deleting the base64 alphabet with bytes.translate leaves nothing when the data is base64: a table
    # lookup per byte, twice as fast as the regex over tens of kilobytes, for each image of each slide
    valid = len(body) - len(data) <= 2 and data.isascii() and not data.encode("ascii").translate(None, _BASE64)
    return src if valid else None


def safe_color(value: str | None) -> str | None:
    """``value`` when it is a hex colour (``#rgb``, ``#rgba``, ``#rrggbb``, ``#rrggbbaa``), else ``None``."""
    return value if isinstance(value, str) and _COLOR.fullmatch(value) else None


def _pct(value: float, whole: int) -> str:
    number = round(value / whole * 100, 3)
    return f"{number:g}%"


def box_style(box: Box) -> str:
    """CSS placing ``box`` on the slide (percentages; the slide clips what lies outside)."""
    width, height = CANVAS
    return f"left:{_pct(box.x, width)};top:{_pct(box.y, height)};width:{_pct(box.w, width)};height:{_pct(box.h, height)}"


def _advance(char: str) -> float:
    """A generous width of ``char`` in ems (sans-serif; wide East Asian characters are square)."""
    if unicodedata.east_asian_width(char) in "WF":
        return 1.0
    if char.isspace():
        return 0.34
    return 0.74 if char.isupper() or char.isdigit() else 0.6


def _lines(text: str, width: float) -> int:
    """Lines ``text`` takes in a box ``width`` ems wide, wrapped as the browser does: at spaces,
    between wide East Asian characters, and inside a word longer than a line
    (``overflow-wrap: anywhere``); a line break in the text is a space (``white-space: normal``)."""
    lines, x = 1, 0.0
    for word in _WORDS.findall(text):
        pieces = [word] if not any(unicodedata.east_asian_width(c) in "WF" for c in word) else list(word)
        for n, piece in enumerate(pieces):
            w = sum(_advance(c) for c in piece)
            gap = _advance(" ") if x and n == 0 else 0.0
            if x and x + gap + w > width:
                lines, x, gap = lines + 1, 0.0, 0.0
            x += gap + w
            while x > width:  # a piece longer than a line is broken inside
                lines, x = lines + 1, x - width
    return lines


def text_size(element: SceneElement) -> float:
    """The font size (slide units) ``element``'s text is drawn at: its ``size`` (without one, 45 %
    of the box's height, at most 72), made smaller until the wrapped text fits its box
    (DESIGN.md §10: a slide shows its elements in their boxes; no text is cut at the bottom).

    >>> from app.checkpoints.documents import Box, SceneElement
    >>> text_size(SceneElement(id="t", kind="text", box=Box(x=0, y=0, w=800, h=100), text="Hi", size=40))
    40.0
    >>> long = SceneElement(id="b", kind="text", box=Box(x=0, y=0, w=400, h=80), text="word " * 40, size=40)
    >>> text_size(long) < 20
    True
    """
    box = element.box
    size = element.size if element.size is not None else min(box.h * 0.45, 72)
    text = element.text or ""
    if not text.strip() or box.w <= 0 or box.h <= 0:
        return size
    while size > 0.5:
        if _lines(text, box.w * _FILL / size) * LINE_HEIGHT * size <= box.h * _FILL:
            return size
        size = round(size * _SHRINK, 2)
    return size


def element_style(element: SceneElement) -> str:
    """The whole inline style of one element: its box, text size (``text_size``, in container
    units, so the slide scales with its card), and its colour when safe (text colour for text,
    fill for shapes)."""
    style = box_style(element.box)
    color = safe_color(element.color)
    if element.kind == "text":
        size = max(0.05, text_size(element) / CANVAS[0] * 100)
        style += f";font-size:{size:.3f}cqw"
        if color:
            style += f";color:{color}"
    elif element.kind == "shape" and color:
        style += f";background:{color}"
    return style
