"""One redraw per batch of changes (app.runtime.notify), and a turn's end told to the view once."""

from __future__ import annotations

import pytest

from app.runtime.notify import Notifier
from app.runtime.trace import trace

from tests.unit.test_runtime import make, seeded_storage, user, assistant


def test_notifications_inside_held_are_told_once_at_its_end():
    told = []
    notify = Notifier(lambda: told.append(1))
    with notify.held():
        notify()
        notify()
        assert told == []
    assert told == [1]
    notify()
    assert told == [1, 1]


def test_held_without_notification_tells_nothing_and_nested_holds_tell_at_the_outermost_end():
    told = []
    notify = Notifier(lambda: told.append(1))
    with notify.held():
        pass
    assert told == []
    with notify.held():
        with notify.held():
            notify()
        assert told == []
    assert told == [1]


def test_an_error_inside_held_still_tells_what_was_notified_before_it():
    told = []
    notify = Notifier(lambda: told.append(1))
    with pytest.raises(RuntimeError):
        with notify.held():
            notify()
            raise RuntimeError("save failed")
    assert told == [1]
    with notify.held():  # the hold is over: a later batch is told again
        notify()
    assert told == [1, 1]


async def test_a_turn_end_whose_save_adds_a_notice_tells_the_view_once():
    runtime, _, ticks, storage = make(seeded_storage(small=[user("q"), assistant("a")]))
    runtime.set_stage("full")
    phases, told = [], []
    trace(runtime, lambda phase, _stage: phases.append(phase))
    runtime.subscribe(lambda: told.append(tuple(phases)))
    storage.quota = storage.used + 600
    await ticks.finish(runtime.send("does not fit " * 100))
    assert [n.code for n in runtime.notices] == ["storage-full"]  # the save added it: a change to draw
    at_end = [t for t in told if t and t[-1] in ("turn-end", "thread-save", "thread-saved")]
    assert len(at_end) == 1  # the notice and the ended reply: one redraw
