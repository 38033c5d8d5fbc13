"""Drawing at most once per animation frame while a reply streams (``app.frames``, DESIGN.md §6, §12)."""

from __future__ import annotations

from app.frames import FrameCoalescer


class Frames:
    """A fake ``requestAnimationFrame``: callbacks wait until ``tick()``."""

    def __init__(self) -> None:
        self.waiting: list = []

    def request(self, callback) -> None:
        self.waiting.append(callback)

    def tick(self) -> None:
        waiting, self.waiting = self.waiting, []
        for callback in waiting:
            callback()


def test_many_notifications_while_streaming_draw_once_per_frame_with_the_latest_state():
    frames, drawn, state = Frames(), [], {"text": ""}
    coalescer = FrameCoalescer(frames.request, defer=lambda: True)
    for token in ("a", "b", "c"):
        state["text"] += token
        coalescer.schedule(lambda: drawn.append(state["text"]))
    assert drawn == [] and len(frames.waiting) == 1 and coalescer.pending
    frames.tick()
    assert drawn == ["abc"] and not coalescer.pending
    state["text"] += "d"
    coalescer.schedule(lambda: drawn.append(state["text"]))
    frames.tick()
    frames.tick()  # a frame with nothing new draws nothing
    assert drawn == ["abc", "abcd"] and coalescer.frames_drawn == 2


def test_a_change_outside_streaming_is_drawn_at_once_and_the_pending_frame_adds_nothing():
    frames, drawn, streaming = Frames(), [], [True]
    coalescer = FrameCoalescer(frames.request, defer=lambda: streaming[0])
    coalescer.schedule(lambda: drawn.append("token"))
    streaming[0] = False  # the turn ended: its last state is drawn now, not a frame later
    coalescer.schedule(lambda: drawn.append("ended"))
    assert drawn == ["ended"]
    frames.tick()
    assert drawn == ["ended"] and coalescer.frames_drawn == 0


def test_a_second_answer_to_one_frame_request_is_ignored():
    # the browser asks for a frame and, for hidden tabs, a timer: whichever comes second does nothing
    answers, drawn = [], []
    coalescer = FrameCoalescer(lambda callback: answers.extend([callback, callback]), defer=lambda: True)
    coalescer.schedule(lambda: drawn.append(1))
    answers[0]()
    coalescer.schedule(lambda: drawn.append(2))  # asks for the next frame
    answers[1]()  # the stale second answer of the first request: not the next frame
    assert drawn == [1] and coalescer.pending
    answers[2]()
    assert drawn == [1, 2]


def test_flush_draws_what_waits_now():
    frames, drawn = Frames(), []
    coalescer = FrameCoalescer(frames.request, defer=lambda: True)
    coalescer.flush()
    coalescer.schedule(lambda: drawn.append("x"))
    coalescer.flush()
    frames.tick()
    assert drawn == ["x"]


async def test_a_streamed_turn_is_drawn_once_per_frame_and_its_end_at_once_with_every_token():
    from app.model import TextPart
    from tests.unit.test_runtime import make

    runtime, _store, ticks, _storage = make()
    runtime.set_stage("intro-ml")
    frames, drawn, shows_running = Frames(), [], [False]
    # the browser's rule: deferred once the panel says the turn runs (its start is drawn at once)
    coalescer = FrameCoalescer(frames.request, defer=lambda: runtime.is_running and shows_running[0])
    runtime.notify_through(coalescer.schedule)

    def draw():
        reply = runtime.messages[-1] if runtime.messages else None
        text = "".join(p.text for p in reply.content if isinstance(p, TextPart)) if reply else ""
        drawn.append((runtime.is_running, text))
        shows_running[0] = runtime.is_running

    runtime.subscribe(draw)
    task = runtime.send("hello")
    assert drawn == [(True, "")]  # the turn shows as running in the same step as the Send
    for _ in range(6):  # six tokens arrive within one frame
        await ticks.advance()
    assert len(drawn) == 1  # nothing drawn between frames
    frames.tick()
    assert len(drawn) == 2 and drawn[1][0] is True and drawn[1][1]
    await ticks.finish(task)  # the end is drawn at once, with every token, no frame needed
    assert drawn[-1] == (False, "".join(p.text for p in runtime.messages[-1].content if isinstance(p, TextPart)))
    count = len(drawn)
    frames.tick()
    assert len(drawn) == count  # the frame asked for during the stream adds nothing after the end
