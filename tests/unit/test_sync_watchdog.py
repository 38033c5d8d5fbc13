"""The sync progress watchdog (DESIGN.md §16, app/sync/watchdog.py) with an injected clock."""

from __future__ import annotations

import pytest

from app.sync.watchdog import Backoff, ProgressWatchdog


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _dog(stall_after: float = 20, **backoff) -> tuple[ProgressWatchdog, Clock]:
    clock = Clock()
    return ProgressWatchdog(clock, stall_after=stall_after, backoff=Backoff(**backoff) if backoff else None), clock


def test_syncing_with_nothing_moving_is_stalled_after_the_limit_and_only_once():
    dog, clock = _dog()
    dog.observe("syncing")
    clock.now += 19.9
    assert dog.poll() is None and not dog.stalled
    clock.now += 0.1
    assert dog.poll() == "stalled" and dog.stalled
    assert dog.poll() is None  # the restart is scheduled, not a second stall


def test_documents_moving_keep_it_from_stalling_and_active_reports_do_not():
    dog, clock = _dog()
    dog.observe("syncing")
    for _ in range(5):  # a batch every 15 s: never stalled
        clock.now += 15
        dog.moved()
        dog.observe("syncing")  # a report of 'syncing' again is no progress and does not restart the count
        assert dog.poll() is None
    clock.now += 15
    dog.observe("syncing")
    clock.now += 5
    assert dog.poll() == "stalled"


def test_other_work_restarts_the_count_but_does_not_end_a_stall_or_its_restart():
    dog, clock = _dog()
    dog.observe("syncing")
    clock.now += 20
    assert dog.poll() == "stalled"
    dog.worked()  # history takes in a slice the stalled replication had brought
    clock.now += 1
    assert dog.poll() == "restart" and dog.stalled
    dog.restarted()
    dog.observe("syncing")
    clock.now += 10
    dog.worked()  # the server answered the probe; no document moved yet
    assert dog.stalled
    clock.now += 19
    assert dog.poll() is None
    dog.moved()
    assert not dog.stalled


@pytest.mark.parametrize("state", ["synced", "offline", "error", "off"])
def test_no_watching_outside_syncing_and_another_reported_state_ends_a_stall(state):
    dog, clock = _dog()
    dog.observe(state)
    clock.now += 1000
    assert dog.poll() is None and not dog.stalled
    dog.observe("syncing")
    clock.now += 20
    assert dog.poll() == "stalled"
    dog.observe(state)  # the replication says what it does: its word is shown, not the stall
    assert not dog.stalled


def test_restarts_follow_a_capped_backoff_that_progress_resets():
    dog, clock = _dog(first=1, factor=2, cap=8)
    delays = []
    for _ in range(6):
        dog.observe("syncing")
        clock.now += dog.patience
        assert dog.poll() == "stalled"
        stalled_at = clock.now
        while dog.poll() != "restart":
            clock.now += 0.5
        delays.append(clock.now - stalled_at)
        dog.restarted()
    assert delays == [1, 2, 4, 8, 8, 8]
    dog.observe("syncing")
    dog.moved()  # documents move again: the schedule starts over
    clock.now += 20
    assert dog.poll() == "stalled"
    clock.now += 1
    assert dog.poll() == "restart"


def test_caught_up_resets_the_backoff_and_sync_now_cancels_the_scheduled_restart():
    dog, clock = _dog(first=1, factor=2, cap=60)
    for _ in range(3):
        dog.observe("syncing")
        clock.now += dog.patience
        dog.poll()
        clock.now += 100
        assert dog.poll() == "restart"
        dog.restarted()
    dog.observe("synced")
    dog.observe("syncing")
    clock.now += 20
    assert dog.poll() == "stalled"
    dog.restarted()  # Sync now, at once: the scheduled restart is no longer due
    clock.now += 1000
    assert dog.poll() is None
    assert dog.stalled  # still nothing moved: the panel keeps saying so


def test_off_forgets_everything():
    dog, clock = _dog()
    dog.observe("syncing")
    clock.now += 20
    assert dog.poll() == "stalled"
    dog.stop()
    clock.now += 1000
    assert dog.poll() is None and not dog.stalled


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError):
        Backoff(first=0)
    with pytest.raises(ValueError):
        Backoff(first=10, cap=5)
    with pytest.raises(ValueError):
        ProgressWatchdog(Clock(), stall_after=0)
    with pytest.raises(ValueError):
        ProgressWatchdog(Clock(), stall_after=30, max_stall_after=20)


def test_the_module_examples_hold():
    import doctest

    import app.sync.watchdog

    assert doctest.testmod(app.sync.watchdog).failed == 0


def test_each_stall_in_a_row_gives_the_next_attempt_twice_the_patience_up_to_a_cap():
    clock = Clock()
    dog = ProgressWatchdog(clock, stall_after=20, max_stall_after=100)
    stalls = []
    for _ in range(10):  # a link that needs 90 s to move one batch
        dog.observe("syncing")
        started = clock.now
        while clock.now - started < 90 and dog.poll() != "stalled":
            clock.now += 1
        if clock.now - started >= 90:
            dog.moved()  # this attempt was given long enough: the batch got through
            break
        stalls.append(clock.now - started)
        while dog.poll() != "restart":
            clock.now += 1
        dog.restarted()
    assert stalls == [20, 40, 80] and not dog.stalled and dog.patience == 20
    dog.observe("syncing")
    for _ in range(4):
        clock.now += dog.patience
        assert dog.poll() == "stalled"
        clock.now += 100
        assert dog.poll() == "restart"
        dog.restarted()
        dog.observe("syncing")
    assert dog.patience == 100  # capped
