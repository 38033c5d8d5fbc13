"""The server-sent event parser (app/agents/sse.py): every split of the stream gives the same events."""

from __future__ import annotations

import pytest

from app.agents.sse import SSEEvent, SSEParser

STREAM = (
    ": keep-alive comment\r\n"
    'data: {"text":"héllo 你好 🎉"}\r\n\r\n'
    "event: ping\n"
    "id: 7\n"
    "data: line one\n"
    "data: line two\n\n"
    "data:no-space\r\r"
    "retry: 1000\n"
    "data: [DONE]\n\n"
).encode("utf-8")

EXPECTED = [
    SSEEvent('{"text":"héllo 你好 🎉"}'),
    SSEEvent("line one\nline two", event="ping", id="7"),
    SSEEvent("no-space", id="7"),
    SSEEvent("[DONE]", id="7"),
]


def parse(chunks: list[bytes]) -> list[SSEEvent]:
    parser = SSEParser()
    events = []
    for chunk in chunks:
        events += parser.feed(chunk)
    return events + parser.close()


def test_whole_stream():
    assert parse([STREAM]) == EXPECTED


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 13])
def test_every_chunk_size_gives_the_same_events(size):
    assert parse([STREAM[i:i + size] for i in range(0, len(STREAM), size)]) == EXPECTED


def test_every_two_way_split():
    for cut in range(len(STREAM) + 1):
        assert parse([STREAM[:cut], STREAM[cut:]]) == EXPECTED, cut


def test_multibyte_character_split_across_chunks():
    data = "data: 🎉\n\n".encode()
    emoji_start = data.index("🎉".encode())
    parser = SSEParser()
    assert parser.feed(data[:emoji_start + 2]) == []
    assert parser.feed(data[emoji_start + 2:]) == [SSEEvent("🎉")]


def test_crlf_split_between_cr_and_lf_is_one_line_end():
    parser = SSEParser()
    assert parser.feed(b"data: a\r") == []
    # The "\n" completes the CRLF of "data: a"; the next "\r\n" is the blank line that dispatches.
    assert parser.feed(b"\n\r\n") == [SSEEvent("a")]


def test_comment_only_and_empty_data_are_not_dispatched():
    assert parse([b": hi\n\n: again\n\n"]) == []
    assert parse([b"data\n\n"]) == [SSEEvent("")]


def test_unterminated_event_at_end_is_discarded():
    assert parse([b'data: {"cut": tr']) == []


def test_invalid_utf8_is_replaced_not_raised():
    assert parse([b"data: \xff\xfe ok\n\n"]) == [SSEEvent("\ufffd\ufffd ok")]


def test_leading_bom_is_skipped():
    assert parse(["\ufeffdata: x\n\n".encode()]) == [SSEEvent("x")]


LF_STREAM = STREAM.replace(b"\r\n", b"\n").replace(b"\r", b"\n")


def test_lf_only_stream_every_two_way_split():
    for cut in range(len(LF_STREAM) + 1):
        assert parse([LF_STREAM[:cut], LF_STREAM[cut:]]) == EXPECTED, cut


def test_cr_arriving_after_lf_only_chunks():
    parser = SSEParser()
    assert parser.feed(b"data: a\n") == []
    assert parser.feed(b"\r\ndata: b\r") == [SSEEvent("a")]
    assert parser.feed(b"\n\n") == [SSEEvent("b")]


def test_an_error_event_split_between_cr_and_lf_keeps_its_type():
    """A network read that ends with the CR of a CRLF: the LF that starts the next read belongs to it,
    it is not a blank line that would dispatch (and so lose) the event's type."""
    parser = SSEParser()
    assert parser.feed(b"event: error\r") == []
    assert parser.feed(b'\ndata: {"error":{"message":"overloaded"}}\r\n\r\n') == [
        SSEEvent('{"error":{"message":"overloaded"}}', event="error")]


def test_a_multi_line_event_split_between_cr_and_lf_stays_one_event():
    parser = SSEParser()
    assert parser.feed(b"data: first\r") == []
    assert parser.feed(b"\ndata: second\r") == []
    assert parser.feed(b"\n\r\n") == [SSEEvent("first\nsecond")]


def test_every_split_of_a_crlf_stream_with_typed_and_multi_line_events():
    stream = b'event: error\r\ndata: {"a":1}\r\n\r\ndata: one\r\ndata: two\r\n\r\nid: 3\r\ndata: x\r\n\r\n'
    expected = [SSEEvent('{"a":1}', event="error"), SSEEvent("one\ntwo"), SSEEvent("x", id="3")]
    for cut in range(len(stream) + 1):
        assert parse([stream[:cut], stream[cut:]]) == expected, cut
    for size in (1, 2, 3):
        assert parse([stream[i:i + size] for i in range(0, len(stream), size)]) == expected, size


def test_a_long_line_in_many_pieces_is_one_event_whatever_ends_it():
    text = "数据 data " * 50_000  # 450,000 characters in one data line
    for end in ("\n\n", "\r\n\r\n", "\r\r"):
        stream = ("event: big\ndata: " + text + end + "data: after\n\n").encode("utf-8")
        chunks = [stream[i:i + 1000] for i in range(0, len(stream), 1000)]
        assert parse(chunks) == [SSEEvent(text, event="big"), SSEEvent("after")], repr(end)
