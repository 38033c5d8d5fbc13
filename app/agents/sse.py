"""Server-sent events: an incremental parser for ``text/event-stream`` bytes (DESIGN.md §12).

The OpenAI Chat Completions stream is a server-sent event stream: ``data:``
lines holding JSON chunks, a blank line after each event, ``data: [DONE]`` at
the end. Network reads split it anywhere — inside a line, between ``\\r`` and
``\\n``, inside a multi-byte UTF-8 character — so the parser keeps what it has
not finished and yields only whole events. It follows the WHATWG HTML
"event stream interpretation" rules: lines end with CRLF, LF or CR; a line
starting with ``:`` is a comment; ``data`` lines of one event are joined with
``\\n``; one leading space after the colon is dropped; an event with no data is
not dispatched; a partial event when the stream ends is discarded.

Example::

    >>> parser = SSEParser()
    >>> parser.feed(b'data: {"a":1}\\r\\n\\r')
    [SSEEvent(data='{"a":1}', event='message', id=None)]
    >>> parser.feed(b"\\n: keep-alive\\n\\ndata: [DO")
    []
    >>> parser.feed("NE]\\n\\n".encode())
    [SSEEvent(data='[DONE]', event='message', id=None)]
"""

from __future__ import annotations

import codecs
from typing import NamedTuple

__all__ = ["SSEEvent", "SSEParser"]


class SSEEvent(NamedTuple):
    """One dispatched event: ``data`` (data lines joined by ``\\n``), ``event`` type, last ``id``."""

    data: str
    event: str = "message"
    id: str | None = None


class SSEParser:
    """Feed bytes as they arrive (``feed``), get whole events back; ``close`` at end of stream.

    Invalid UTF-8 is replaced with U+FFFD (the spec's decoding), never raised.
    ``feed`` returns the events completed by that chunk, in order.
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending: list[str] = []  # pieces of the line not yet ended (no "\r" or "\n" in them)
        self._skip_lf = False  # the previous chunk ended with "\r": a leading "\n" belongs to it
        self._bom_checked = False
        self._data: list[str] = []
        self._event = ""
        self._last_id: str | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Parse ``chunk`` (any split of the stream); returns the events it completed."""
        return self._consume(self._decoder.decode(chunk))

    def close(self) -> list[SSEEvent]:
        """End of stream: flush the decoder; an unterminated event is discarded (per the spec)."""
        events = self._consume(self._decoder.decode(b"", final=True))
        self._pending, self._data, self._event = [], [], ""
        return events

    def _consume(self, text: str) -> list[SSEEvent]:
        text = self._opening(text)
        if not text:
            return []
        if "\n" not in text and "\r" not in text:  # a long line arriving in pieces: joined once, at its end
            self._pending.append(text)  # (adding each piece to one string copied it all again: quadratic)
            return []
        if self._pending and "\r" not in text and self._pending[0].startswith("data: "):
            text = self._end_long_data_line(text)
            if "\n" not in text:
                if text:
                    self._pending.append(text)
                return []
        buffer = "".join([*self._pending, text]) if self._pending else text
        self._pending = []
        if "\r" not in text:  # the common case (LF only): split in C
            return self._lf_lines(buffer)
        return self._any_lines(buffer)

    def _opening(self, text: str) -> str:
        """``text`` without the stream's byte-order mark (its first chunk only) and without the LF
        of a CR LF that the chunk before ended between."""
        if text and not self._bom_checked:
            self._bom_checked = True
            if text.startswith("\ufeff"):
                text = text[1:]
        if text and self._skip_lf:
            self._skip_lf = False
            if text.startswith("\n"):
                text = text[1:]
        return text

    def _end_long_data_line(self, text: str) -> str:
        """A long data line (its pieces pending) ends in ``text``: its value is joined once (no joined
        line, then a split and a slice of it: three more copies of megabytes, DESIGN.md §12); returns
        what follows that line's LF."""
        end = text.index("\n")
        pending, self._pending = self._pending, []
        pending[0] = pending[0][6:]
        pending.append(text[:end])
        self._data.append("".join(pending))
        return text[end + 1:]

    def _lf_lines(self, buffer: str) -> list[SSEEvent]:
        """The events of ``buffer``'s LF-ended lines ("data: …" lines inline); the unended rest waits."""
        events: list[SSEEvent] = []
        lines = buffer.split("\n")
        rest = lines.pop()
        if rest:
            self._pending.append(rest)
        data = self._data
        for line in lines:
            if line.startswith("data: "):
                data.append(line[6:])
            elif line:
                self._line(line)  # appends to the same self._data list
            elif data:
                events.append(SSEEvent("\n".join(data), self._event or "message", self._last_id))
                data = self._data = []
                self._event = ""
            else:
                self._event = ""
        return events

    def _any_lines(self, buffer: str) -> list[SSEEvent]:
        """The events of ``buffer``'s lines ended by CR, LF or CR LF; the unended rest waits."""
        events: list[SSEEvent] = []
        start = 0
        length = len(buffer)
        while True:
            lf = buffer.find("\n", start)
            cr = buffer.find("\r", start, lf if lf >= 0 else length)
            if cr >= 0:
                end, nxt = cr, cr + 1
                if nxt < length and buffer[nxt] == "\n":
                    nxt += 1
                elif nxt == length:
                    self._skip_lf = True
            elif lf >= 0:
                end, nxt = lf, lf + 1
            else:
                break
            event = self._line(buffer[start:end])
            if event is not None:
                events.append(event)
            start = nxt
        if start < length:
            self._pending.append(buffer[start:])
        return events

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            if not self._data:
                self._event = ""
                return None
            event = SSEEvent("\n".join(self._data), self._event or "message", self._last_id)
            self._data, self._event = [], ""
            return event
        if line.startswith(":"):
            return None  # a comment (servers send them as keep-alives)
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._last_id = value
        return None  # "retry" and unknown fields are ignored
