"""``requirement_matrix.details`` keeps, per cell, the samples of the (run, verdict) groups that
did not pass: worst verdict first, then newest run, then run id, at most
``DETAILS_PER_CELL``, with the total of their records. The rule is computed here in Python over
the same verdict counts, with cells of more groups than are kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.matrix.requirement_matrix import DETAILS_PER_CELL, PRECEDENCE, details

RUNS = [f"run-{i}" for i in range(8)]
#: run-5 and run-6 start at the same time: their order falls to the run id
START = {
    r: datetime(2025, 1, 1, tzinfo=UTC) + timedelta(hours=min(i, 5)) for i, r in enumerate(RUNS)
}
COLUMNS = (
    "implementation string, version string, feature string, requirement_id string, "
    "run_id string, verdict string, records long, started_at timestamp, "
    "sample struct<test_id: string, api_version: bigint, message: string, seed: string>"
)

groups = st.dictionaries(
    st.tuples(
        st.sampled_from(["X.R1", "X.R2"]), st.sampled_from(RUNS), st.sampled_from(PRECEDENCE)
    ),
    st.tuples(
        st.integers(1, 50),
        st.sampled_from(["t/a", "t/b"]),
        st.sampled_from([None, 0, 3]),
        st.text("ab ", max_size=3),
    ),
    min_size=20,
    max_size=40,
)


def expected(counts: dict) -> dict:
    cells: dict[str, list] = {}
    for (req, run, verdict), (n, test, version, message) in counts.items():
        if verdict != "PASS":
            cells.setdefault(req, []).append((verdict, run, n, test, version, message))
    out = {}
    for req, entries in cells.items():
        entries.sort(key=lambda e: (PRECEDENCE.index(e[0]), -START[e[1]].timestamp(), e[1]))
        out[req] = (
            [
                (i, e[1], e[3], e[4], e[0], e[5])
                for i, e in enumerate(entries[:DETAILS_PER_CELL], 1)
            ],
            sum(e[2] for e in entries),
        )
    return out


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(counts=groups)
def test_details_keep_the_worst_and_newest_groups_of_each_cell(spark, counts):
    frame = spark.createDataFrame(
        [
            ("impl", "1.0", "protocol", req, run, verdict, n, START[run], (test, ver, msg, None))
            for (req, run, verdict), (n, test, ver, msg) in counts.items()
        ],
        COLUMNS,
    )
    fields = ("_n", "run_id", "test_id", "api_version", "verdict", "message")
    got = {
        r["requirement_id"]: (
            [tuple(d[k] for k in fields) for d in r["details"]],
            r["details_total"],
        )
        for r in details(frame).collect()
    }
    assert got == expected(counts)
