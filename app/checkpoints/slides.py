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

from app.checkpoints.documents import CANVAS, Box, SceneElement

__all__ = ["box_style", "element_style", "safe_color", "safe_image"]

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


def element_style(element: SceneElement) -> str:
    """The whole inline style of one element: its box, text size (from its height, in container
    units), and its colour when safe (text colour for text, fill for shapes)."""
    style = box_style(element.box)
    color = safe_color(element.color)
    if element.kind == "text":
        size = max(0.6, min(element.box.h * 0.45, 72) / CANVAS[0] * 100)
        style += f";font-size:{size:.2f}cqw"
        if color:
            style += f";color:{color}"
    elif element.kind == "shape" and color:
        style += f";background:{color}"
    return style
