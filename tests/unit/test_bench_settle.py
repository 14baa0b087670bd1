"""bench.server_idle reads the idle server once it has settled, not a fixed time after `memsearch/indexed`."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from bench.server_idle import settle


def samples(*values: tuple[int, float]) -> Callable[[], tuple[int, float]]:
    it: Iterator[tuple[int, float]] = iter(values)
    last = values[-1]
    return lambda: next(it, last)


def test_the_reading_waits_for_the_engine_to_fold_and_leave_and_for_two_close_samples() -> None:
    # +0 s: the server and its engine; the fold grows it; the engine exits; the server gives memory back, then holds
    rss, _, settled = settle(samples((1, 414.0), (1, 562.0), (1, 540.0), (0, 300.0), (0, 262.0), (0, 260.0)), 0)
    assert (rss, settled) == (260.0, True)


def test_a_stable_reading_with_a_child_still_running_is_not_idle() -> None:
    rss, _, settled = settle(samples((1, 414.0), (1, 414.0), (1, 414.0), (0, 262.0), (0, 261.0)), 0)
    assert (rss, settled) == (261.0, True)


def test_a_reading_that_never_settles_is_the_last_sample_and_says_so() -> None:
    rss, waited, settled = settle(samples((1, 500.0)), 0.01, max_s=0.1)
    assert (rss, settled) == (500.0, False) and waited >= 0.1
    growing = iter(range(300, 10**6, 10))  # no child left, but RSS still growing
    rss, _, settled = settle(lambda: (0, float(next(growing))), 0.01, max_s=0.1)
    assert settled is False and rss > 300
