"""The quick benchmark's localStorage quota search (bench/__main__.py ``largest_fitting``): from any
starting point it finds the largest size that fits, and from one at the answer in two probes."""

from __future__ import annotations

import pytest

from bench.__main__ import largest_fitting


def quota(limit: int, calls: list[int]):
    def fits(n: int) -> bool:
        calls.append(n)
        return n <= limit
    return fits


@pytest.mark.parametrize("limit", [0, 1, 2, 7, 1000, 5_242_879])
@pytest.mark.parametrize("hint", [1, 2, 999, 1000, 1001, 5_242_879, 9_000_000])
def test_the_search_finds_the_largest_size_that_fits_from_any_start(limit, hint):
    assert largest_fitting(quota(limit, []), hint) == limit


def test_a_start_at_the_answer_costs_two_probes_and_one_from_1_many_more():
    calls: list[int] = []
    assert largest_fitting(quota(5_242_879, calls), 5_242_879) == 5_242_879
    assert calls == [5_242_879, 5_242_880]
    calls.clear()
    assert largest_fitting(quota(5_242_879, calls), 1) == 5_242_879
    assert len(calls) > 40
