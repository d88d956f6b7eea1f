"""The line of a run's phases after its verdicts (``summary.phase_line``): a concurrent run's
side runs ran beside the workers from the run's start, so the line does not put them after."""

from __future__ import annotations

from conformance.results.summary import phase_line


def test_side_runs_that_ended_before_the_workers_are_not_put_after_them() -> None:
    """Session 16's publication, the reference with the Java clients: the workers took 41.5 s,
    the side runs 27.5 s from their spawn, and the line read "…: 41.5 s; then 35 tests in 2
    side runs …: 27.5 s", a second phase ending before the first."""
    line = phase_line(
        [
            ("4 processes", 681, 41.5, False),
            (
                "2 side runs beside them, from their spawn (waited for 0.0 s at the end)",
                35,
                27.5,
                True,
            ),
        ]
    )
    assert line == (
        "681 tests in 4 processes: 41.5 s; and 35 tests in 2 side runs beside them, from their "
        "spawn (waited for 0.0 s at the end): 27.5 s"
    ), line
    assert "then" not in line


def test_phases_after_one_another_are_joined_by_then() -> None:
    line = phase_line(
        [
            ("4 processes", 600, 20.0, False),
            ("this process beside the side runs", 5, 8.0, False),
            (
                "2 side runs beside them, from their spawn (waited for 2.0 s at the end)",
                25,
                31.0,
                True,
            ),
            ("this process, one at a time", 1, 4.0, False),
        ]
    )
    assert line.count("; then ") == 2 and line.count("; and ") == 1, line
    assert line.startswith("600 tests in 4 processes: 20.0 s; then 5 tests in this process"), line
    assert line.endswith("; then 1 tests in this process, one at a time: 4.0 s"), line
