"""Why a model turn failed, as a code + params the view localizes (DESIGN.md §12).

Every failure of the OpenAI-compatible back end ends the turn with a
``ModelError``: the runtime marks the assistant message failed and the view
shows ``model.error.<code>`` from the locale with ``params`` filled in
(``[data-testid=turn-error]``). Codes:

=================  ======================================  ===================
code               when                                    params
=================  ======================================  ===================
``auth``           HTTP 401 or 403                         ``status``
``not-found``      HTTP 404 (unknown model or base URL)    ``status``, ``model``
``rate-limited``   HTTP 429                                ``seconds`` or none
``server``         HTTP 5xx                                ``status``
``http``           any other non-2xx status                ``status``
``network``        the request could not be made           ``url``
``cors``           the browser refused the cross-origin    ``origin``
                   response (CORS headers missing)
``blocked``        the page's Content-Security-Policy      ``origin``
                   (``connect-src``) refused the request
``stream-cut``     the stream ended before the reply did   —
``bad-event``      an event's data is not JSON             ``excerpt``
``stream-error``   the server sent an error object         ``message``
``empty-reply``    the reply ended with no text and no     —
                   tool call
``tool-rounds``    the model kept calling tools            ``count``
``context``        the prompt is over the server's         ``detail``
                   context, even with fewer turns
``timeout``        no headers or no new data for too long  ``seconds``
``settings``       settings incomplete (no base URL/model) ``field``
=================  ======================================  ===================

``message`` (when the server said why) is kept as ``detail`` for the view. The
API key is never part of a ``ModelError`` (``scrub`` removes it from any server
text), so logs and the thread never hold it. Nor is it part of a reply: a
server that echoes the key in its text (or a tool call's arguments, or the
model name) has it masked before the text reaches the thread (``KeyMask``,
which also catches a key split across stream chunks), so
``maic-agent-threads``, history and exports never hold it (§12).

A ``context`` code (the prompt is over the server's context even after leaving
out earlier turns, ``app.agents.context``) has ``detail`` only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.i18n import join_sentences

__all__ = ["KeyMask", "ModelError", "TransportError", "error_payload", "http_error", "mask_key",
           "retry_after_seconds", "scrub"]


class ModelError(Exception):
    """A failed model turn: ``code`` (see the module table) and JSON-safe ``params``."""

    def __init__(self, code: str, **params: Any) -> None:
        self.code = code
        self.params = {k: v for k, v in params.items() if v is not None}
        super().__init__(code if not self.params else f"{code} {self.params}")


class TransportError(Exception):
    """Raised by a transport when no response arrived or a stream broke.

    ``kind``: ``network`` (no connection, or a read failed mid-stream),
    ``cors`` (the browser refused the response: missing CORS headers),
    ``blocked`` (Content-Security-Policy ``connect-src``). ``origin``: the
    origin of the URL that failed.
    """

    def __init__(self, kind: str, origin: str = "") -> None:
        self.kind = kind
        self.origin = origin
        super().__init__(f"{kind} {origin}".strip())


def scrub(text: str, secret: str | None, limit: int = 200) -> str:
    """``text`` with every occurrence of ``secret`` masked, cut to ``limit`` characters.

    >>> scrub("bad key sk-123 given", "sk-123")
    'bad key ••• given'
    """
    text = " ".join(mask_key(text, secret).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


MASK = "•••"
"""What stands for the API key wherever server text would have held it."""


def mask_key(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` replaced by ``MASK`` (nothing else changed).

    >>> mask_key("key sk-1 and sk-1", "sk-1")
    'key ••• and •••'
    """
    return text.replace(secret, MASK) if secret else text


class KeyMask:
    """Masks ``secret`` in a text that arrives in pieces (a streamed reply, DESIGN.md §12).

    ``feed(piece)`` returns the text that is now safe to show: a tail that could be the start of
    the key is held back until the next piece says; ``flush()`` returns what is held at the end.
    Without a secret every piece passes through unchanged.

    >>> mask = KeyMask("sk-12345")
    >>> mask.feed("your key is sk-12"), mask.feed("345, right?"), mask.flush()
    ('your key is ', '•••, right?', '')
    """

    def __init__(self, secret: str | None) -> None:
        self.secret = secret or ""
        self._held = ""

    def feed(self, piece: str) -> str:
        """The masked text of everything fed so far that can no longer be part of the key."""
        if not self.secret:
            return piece
        text = (self._held + piece).replace(self.secret, MASK)
        keep = 0
        for length in range(min(len(self.secret) - 1, len(text)), 0, -1):
            if self.secret.startswith(text[-length:]):
                keep = length
                break
        self._held = text[len(text) - keep:] if keep else ""
        return text[:len(text) - keep] if keep else text

    def flush(self) -> str:
        """What was held back (the stream ended: it was not the key)."""
        held, self._held = self._held, ""
        return held


def retry_after_seconds(value: str | None, now_s: float) -> int | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date); ``None`` if absent/bad.

    >>> retry_after_seconds("30", 0), retry_after_seconds("soon", 0), retry_after_seconds(None, 0)
    (30, None, None)
    >>> retry_after_seconds("Thu, 01 Jan 1970 00:01:00 GMT", 15.0)
    45
    """
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return int(value)
    import email.utils  # here, not at the top: email.utils and urllib.parse cost 50-90 ms before ready (§13)

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0, round(when.timestamp() - now_s))


def _server_message(body: str) -> str | None:
    import json

    try:
        data = json.loads(body)
    except ValueError:
        return body.strip() or None
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"]
    if isinstance(error, str):
        return error
    return None


def http_error(status: int, headers: Mapping[str, str], body: str, *, model: str, secret: str | None,
               now_s: float) -> ModelError:
    """The ``ModelError`` for a non-2xx response (``headers`` keyed in lower case)."""
    message = _server_message(body)
    detail = scrub(message, secret) if message else None
    if status in (401, 403):
        return ModelError("auth", status=status, detail=detail)
    if status == 404:
        return ModelError("not-found", status=status, model=model, detail=detail)
    if status == 429:
        return ModelError("rate-limited", seconds=retry_after_seconds(headers.get("retry-after"), now_s),
                          detail=detail)
    if 500 <= status <= 599:
        return ModelError("server", status=status, detail=detail)
    return ModelError("http", status=status, detail=detail)


def error_payload(error: BaseException) -> dict[str, Any]:
    """``{"code", "params"}`` for the failed message's status; ``unknown`` for any other exception."""
    if isinstance(error, ModelError):
        return {"code": error.code, "params": dict(error.params)}
    return {"code": "unknown", "params": {}}


REFUSED_CODES = ("cors", "blocked")
"""Codes where the browser refused the connection: the message points to README's CORS/CSP section."""


def describe(t: Any, payload: Mapping[str, Any] | None) -> str:
    """The localized text of a failure ``{"code", "params"}`` with translator ``t`` (``model.error.<code>``).

    A 429 without ``Retry-After`` uses ``model.error.rate-limitedNoWait``; the
    server's own words (``detail``) follow in ``model.error.detail``; a
    browser refusal adds ``model.settings.refusedHint``; an unknown code reads
    ``model.error.unknown``.
    """
    payload = payload or {}
    code, params = str(payload.get("code") or "unknown"), dict(payload.get("params") or {})
    key = f"model.error.{code}"
    if code == "rate-limited" and "seconds" not in params:
        key = "model.error.rate-limitedNoWait"
    text = t(key, **params)
    if text == key:
        text = t("model.error.unknown")
    detail = t("model.error.detail", detail=params["detail"]) if params.get("detail") else ""
    return join_sentences([text, detail, t("model.settings.refusedHint") if code in REFUSED_CODES else ""])
