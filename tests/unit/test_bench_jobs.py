"""The quick benchmark's CPython work done beside the browser (bench/__main__.py ``Run.prepare``): a part
takes a prepared job's result, computed in a worker process while earlier parts ran, or computes it
itself when nothing was prepared for those arguments; a result no part took is discarded at the end."""

from __future__ import annotations

import os

from bench.__main__ import Run


def test_a_prepared_job_runs_in_a_worker_process_and_goes_to_the_part_that_asks_for_it():
    run = Run(None, "")
    try:
        run.prepare(os.getpid)
        worker = run.prepared(os.getpid)
        assert worker != os.getpid()
        assert run.prepared(os.getpid) == os.getpid()  # taken once: asked again, the part computes it itself
    finally:
        run.close_jobs()


def test_a_part_asking_with_other_arguments_computes_them_itself_and_the_prepared_job_waits():
    run = Run(None, "")
    try:
        run.prepare(pow, 2, 10)
        assert run.prepared(pow, 2, 11) == 2048
        assert run.prepared(pow, 2, 10) == 1024
    finally:
        run.close_jobs()


def test_a_result_no_part_took_is_discarded_when_the_run_ends():
    run = Run(None, "")
    discarded: list = []
    run.prepare(str.upper, "dist", discard=discarded.append)
    run.close_jobs()
    assert discarded == ["DIST"]
