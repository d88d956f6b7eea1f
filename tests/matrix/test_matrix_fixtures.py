"""The matrix job over the recorded fixture runs, checked cell by cell."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from conformance.matrix import run_diff
from conformance.report.verdict_style import cell_text
from conformance.requirements import requirement_texts

TARGETS = ["reference 0.1.0", "reference 0.2.0", "tansu 0.5.1", "tansu 0.6.0"]
# Each cell: verdict, then runs passed / runs scored. Worked out from fixtures/runs/make_runs.py,
# not from the job: UNSUPPORTED / NOT_EXPOSED / PROPOSAL_ABSENT / SKIP runs are never scored.
EXPECTED = """
PROTOCOL.R1            | PASS 2/2    | PASS 2/2         | PASS 2/2        | PASS 3/3
PROTOCOL.R2            | PASS 2/2    | PASS 2/2         | PASS 2/2        | PASS 3/3
PROTOCOL.R3            | PASS 2/2    | PASS 2/2         | PASS 2/2        | PASS 3/3
PROTOCOL.R6            | PASS 2/2    | PASS 2/2         | FAIL 0/2        | FAIL 0/3
PROTOCOL.R7            | PASS 2/2    | PASS 2/2         | PASS 2/2        | FAIL 0/3
PROTOCOL.R18           | PASS 2/2    | PASS 2/2         | NONSTRICT 0/2   | NONSTRICT 0/3
KIP-78.R1              | PASS 2/2    | PASS 2/2         | UNSUPPORTED     | PASS 3/3
KIP-78.R2              | PASS 2/2    | PASS 2/2         | PASS 2/2        | PASS 3/3
KIP-78.R3              | PASS 2/2    | PASS 2/2         | UNSUPPORTED     | PASS 3/3
KIP-78.R4              | PASS 2/2    | PASS 2/2         | NONSTRICT 0/2   | NONSTRICT 0/3
KIP-78.R5              | PASS 2/2    | PASS 2/2         | UNSUPPORTED     | PASS 3/3
KIP-78.R7              | UNSUPPORTED | PASS 2/2         | PASS 2/2        | PASS 3/3
KIP-78.R8              | PASS 1/1    | PASS 2/2         | SKIP            | SKIP
BROKER-REGISTRATION.R1 | PASS 2/2    | PASS 2/2         | UNSUPPORTED     | UNSUPPORTED
BROKER-REGISTRATION.R2 | PASS 2/2    | PASS 2/2         | UNSUPPORTED     | UNSUPPORTED
BROKER-REGISTRATION.R5 | PASS 2/2    | FLAKY 1/2 failed | UNSUPPORTED     | UNSUPPORTED
KIP-42.R1              | PASS 2/2    | PASS 2/2         | PASS 2/2        | FLAKY 1/3 failed (lone failure)
KIP-42.R8              | PASS 2/2    | PASS 2/2         | ERROR 0/2       | PASS 3/3
KIP-536.R1             | PASS 2/2    | PASS 2/2         | PROPOSAL_ABSENT | PROPOSAL_ABSENT
KIP-536.R2             | UNSUPPORTED | PASS 2/2         | PROPOSAL_ABSENT | PROPOSAL_ABSENT
KIP-590.R1             | PASS 2/2    | FAIL 0/2         | PASS 2/2        | PASS 2/2
KIP-590.R2             | PASS 2/2    | PASS 2/2         | UNSUPPORTED     | UNSUPPORTED
"""  # noqa: E501 (a table: one requirement a line)
NOT_APPLICABLE = {"UNSUPPORTED", "NOT_EXPOSED", "PROPOSAL_ABSENT", "SKIP"}


def expected_cells() -> dict[tuple[str, str], str]:
    out = {}
    for line in EXPECTED.strip().splitlines():
        rid, *cells = (c.strip() for c in line.split("|"))
        for target, text in zip(TARGETS, cells, strict=True):
            out[(target, rid)] = text
    return out


def test_every_cell(model):
    got = {
        (f"{c['implementation']} {c['version']}", c["requirement_id"]): cell_text(c)
        for c in model["cells"]
    }
    assert got == expected_cells()


def test_targets_in_version_order_and_runs(model):
    assert [f"{t['implementation']} {t['version']}" for t in model["targets"]] == TARGETS
    assert [len(t["runs"]) for t in model["targets"]] == [2, 2, 2, 3]


def test_not_applicable_verdicts_never_count_as_failures(model):
    cells = model["cells"]
    for c in cells:
        if c["verdict"] in NOT_APPLICABLE:
            assert c["scored"] == 0 and c["failing_runs"] == [] and c["failure_rate"] is None
        # a run that did not apply is neither a pass nor a failure of the cell
        assert c["scored"] == c["passes"] + c["fail"] + c["error"] + c["nonstrict"]
    by = {(c["implementation"], c["version"], c["requirement_id"]): c for c in cells}
    # NOT_EXPOSED on the client listener beside PASS on the controller listener: a pass
    assert by[("reference", "0.1.0", "BROKER-REGISTRATION.R2")]["verdict"] == "PASS"
    # SKIP in one run, PASS in the other: a pass, not FLAKY
    assert by[("reference", "0.1.0", "KIP-78.R8")]["skip"] == 1
    summary = {(s["implementation"], s["version"]): s for s in model["summary"]}
    tansu = summary[("tansu", "0.6.0")]
    assert (tansu["must_passed"], tansu["must_scored"]) == (10, 13)
    assert tansu["features"]["kip-536"]["pass_rate"] is None  # PROPOSAL_ABSENT only
    assert tansu["features"]["broker-registration"]["scored"] == 0  # UNSUPPORTED only


def test_every_feature_rate_has_its_coverage(model):
    """judged = cells with a check that ran (not UNSUPPORTED, NOT_EXPOSED, PROPOSAL_ABSENT,
    SKIP) out of the feature's cells at that target; low coverage under half judged."""
    for s in model["summary"]:
        target = (s["implementation"], s["version"])
        mine = [c for c in model["cells"] if (c["implementation"], c["version"]) == target]
        assert s["must_requirements"] == sum(c["level"] == "MUST" for c in mine)
        assert s["must_low_coverage"] == (2 * s["must_scored"] < s["must_requirements"])
        for feature, f in s["features"].items():
            cells = [c for c in mine if c["feature"] == feature]
            judged = sum(c["verdict"] not in NOT_APPLICABLE for c in cells)
            assert (f["requirements"], f["judged"], f["scored"]) == (len(cells), judged, judged)
            assert f["coverage"] == judged / len(cells)
            assert f["low_coverage"] == (2 * judged < len(cells))
    summary = {(s["implementation"], s["version"]): s for s in model["summary"]}
    kip78 = summary[("tansu", "0.5.1")]["features"]["kip-78"]
    assert (kip78["judged"], kip78["requirements"], kip78["low_coverage"]) == (3, 7, True)


def test_flakiness_with_rate_and_lone_failure_flag(model):
    flaky = {
        (f["implementation"], f["version"], f["requirement_id"]): f for f in model["flakiness"]
    }
    assert set(flaky) == {
        ("reference", "0.2.0", "BROKER-REGISTRATION.R5"),
        ("tansu", "0.6.0", "KIP-42.R1"),
    }
    lone = flaky[("tansu", "0.6.0", "KIP-42.R1")]
    assert lone["lone_failure"] is True
    assert lone["failure_rate"] == pytest.approx(1 / 3)
    assert lone["failing_runs"] == ["20250318T160000Z-tansu-0.6.0-2"]
    even = flaky[("reference", "0.2.0", "BROKER-REGISTRATION.R5")]
    assert even["lone_failure"] is False  # one failure, but only one pass beside it
    assert even["failure_rate"] == 0.5


def test_flaky_tests_even_where_their_cell_hides_them(model):
    """Per (test, requirement, API version): every key with more than one verdict across the
    runs of one set-up, in run order; the cell it belongs to counts it."""
    got = {
        (f["implementation"], f["version"], f["test_id"], f["api_version"]): [
            o["verdict"] for o in f["outcomes"]
        ]
        for f in model["flaky_tests"]
    }
    assert got == {
        # SKIP -> PASS: never scored, so the cell is PASS 1/1
        ("reference", "0.1.0", "kip-78/zookeeper/cluster-id/znode", None): ["SKIP", "PASS"],
        ("reference", "0.2.0", "broker-registration/broker-heartbeat/v1/session-timeout", 1): [
            "PASS",
            "FAIL",
        ],
        # FAIL -> PASS -> PASS beside protocol/api-versions/v0/answered, which fails in every
        # run: the requirement is FAIL 0/3, not FLAKY
        ("tansu", "0.6.0", "protocol/api-versions/v3/answered", 3): ["FAIL", "PASS", "PASS"],
        ("tansu", "0.6.0", "kip-42/client/interceptors/on-send", 9): ["PASS", "FAIL", "PASS"],
    }
    hidden = next(
        f for f in model["flaky_tests"] if f["test_id"] == "protocol/api-versions/v3/answered"
    )
    assert hidden["requirement_id"] == "PROTOCOL.R6" and hidden["setup"] == "tansu"
    assert [o["run_id"] for o in hidden["outcomes"]] == [
        f"20250318T{h}0000Z-tansu-0.6.0-{n}" for h, n in (("14", 1), ("16", 2), ("18", 3))
    ]
    assert "got none (the connection stayed open)" in hidden["message"]
    counted = {
        (c["implementation"], c["version"], c["requirement_id"]): (c["verdict"], c["flaky_tests"])
        for c in model["cells"]
        if c["flaky_tests"]
    }
    assert counted == {
        ("reference", "0.1.0", "KIP-78.R8"): ("PASS", 1),
        ("reference", "0.2.0", "BROKER-REGISTRATION.R5"): ("FLAKY", 1),
        ("tansu", "0.6.0", "PROTOCOL.R6"): ("FAIL", 1),
        ("tansu", "0.6.0", "KIP-42.R1"): ("FLAKY", 1),
    }


def test_regressions_between_versions(model):
    got = {
        (r["implementation"], r["requirement_id"], r["from_version"], r["to_version"],
         r["to_verdict"])
        for r in model["regressions"]
    }  # fmt: skip
    # ERROR -> PASS (tansu KIP-42.R8) and UNSUPPORTED -> PASS are fixes, PASS -> FLAKY is in
    # the flakiness table: none of them is a regression.
    assert got == {
        ("reference", "KIP-590.R1", "0.1.0", "0.2.0", "FAIL"),
        ("tansu", "PROTOCOL.R7", "0.5.1", "0.6.0", "FAIL"),
    }


def test_failure_messages_and_requirement_texts_reach_the_cells(model):
    by = {(c["implementation"], c["version"], c["requirement_id"]): c for c in model["cells"]}
    cell = by[("tansu", "0.6.0", "PROTOCOL.R7")]
    assert cell["details_total"] == 3
    assert all("UNSUPPORTED_VERSION" in d["message"] for d in cell["details"])
    assert {d["test_id"] for d in cell["details"]} == {
        "protocol/api-versions/v127/downgrade-answer"
    }
    texts = requirement_texts()
    for rid, req in model["requirements"].items():
        assert req["known"] is (rid in texts)
        assert req.get("statement") == texts.get(rid, {}).get("statement")


def test_bad_line_reported_and_rest_counted(model):
    assert model["records"] == {"lines": 261, "bad": 1, "counted": 260}
    (problem,) = model["problems"]
    assert problem["file"].endswith("20250318T180000Z-tansu-0.6.0-3/results.jsonl")
    assert problem["line"] == 28
    runs = {r["run_id"]: r for r in model["runs"]}
    assert runs["20250318T180000Z-tansu-0.6.0-3"]["records"] == 28
    assert runs["20250318T180000Z-tansu-0.6.0-3"]["bad_records"] == 1


def test_parquet_dataset_holds_the_counted_records(fixture_output):
    table = pq.read_table(fixture_output.files["json"].parent / "results.parquet")
    assert table.num_rows == 260
    assert {"run_id", "verdict", "implementation", "version", "started_at"} <= set(
        table.column_names
    )
    assert set(table.column("implementation").to_pylist()) == {"reference", "tansu"}


def test_api_support_and_best_guess(model):
    api = model["api_support"]
    targets = {(t["implementation"], t["version"]): t for t in api["targets"]}
    assert "60" not in targets[("reference", "0.1.0")]["advertised"]
    assert targets[("reference", "0.2.0")]["advertised"]["60"] == [0, 1]
    # the 3.9 line's newest patch, whose versions equal 3.9.0's (0688047)
    assert targets[("reference", "0.2.0")]["best_guess"]["release"] == "3.9.2"
    assert targets[("tansu", "0.5.1")]["advertised"]["3"] == [0, 11]
    # ApiVersions records in its three runs: v0 FAIL x3, v3 FAIL then PASS x2, v127 FAIL x3
    assert targets[("tansu", "0.6.0")]["tested"]["18"] == {"FAIL": 7, "PASS": 2}
    assert api["kafka"]["3.9.0"]["3"] == [0, 12]
    assert api["kafka"]["2.3.1"]["3"] == [0, 8]
    assert "62" not in api["kafka"]["3.9.0"]  # a controller API: no broker advertises it


def test_default_diffs_compare_each_implementations_last_two_runs(model):
    diffs = {(d["run_a"], d["run_b"]): d for d in model["diffs"]}
    ref = diffs[("20250317T090000Z-reference-0.2.0-1", "20250317T110000Z-reference-0.2.0-2")]
    assert [(c["test_id"], c["verdict_a"], c["verdict_b"]) for c in ref["changes"]] == [
        ("broker-registration/broker-heartbeat/v1/session-timeout", "PASS", "FAIL")
    ]
    tansu = diffs[("20250318T160000Z-tansu-0.6.0-2", "20250318T180000Z-tansu-0.6.0-3")]
    assert (tansu["changed"], tansu["only_a"], tansu["only_b"]) == (1, 1, 0)
    assert {(c["test_id"], c["verdict_a"], c["verdict_b"]) for c in tansu["changes"]} == {
        ("kip-42/client/interceptors/on-send", "FAIL", "PASS"),
        ("kip-590/admin/create-topics/v7/forwarded", "PASS", None),  # the malformed line
    }


def test_diff_of_two_chosen_runs(spark, fixture_output):
    records = spark.read.parquet(str(fixture_output.files["json"].parent / "results.parquet"))
    d = run_diff.diff_runs(
        records, "20250303T090000Z-reference-0.1.0-1", "20250317T090000Z-reference-0.2.0-1"
    )
    got = {(c["test_id"], c["verdict_a"], c["verdict_b"]) for c in d["changes"]}
    assert got == {
        ("kip-590/admin/create-topics/v7/forwarded", "PASS", "FAIL"),
        ("kip-78/describe-cluster/v1/cluster-id/agrees", "UNSUPPORTED", "PASS"),
        ("kip-536/describe-cluster/v1/broker-start-time", "UNSUPPORTED", "PASS"),
        ("kip-78/zookeeper/cluster-id/znode", "SKIP", "PASS"),
    }
    assert d["same"] == 29 - 4
    # the most severe change first
    assert d["changes"][0]["verdict_b"] == "FAIL"
