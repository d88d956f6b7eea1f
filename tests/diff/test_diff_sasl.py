"""The differential mode under SASL (issue 40): ``reference?security=sasl`` against Apache Kafka
4.4.0 with ``security=sasl``, each side's connections authenticated as its super user, over the
APIs the security profile changes (the SASL exchange, the ACL and SCRAM APIs, DescribeCluster's
authorized operations): every difference explained by the mask, none of the SCRAM APIs'
answers left out. A publication run (two secured clusters, about a minute); CI's diff test is
test_diff_kafka.py, without SASL. The whole stream under SASL (1361 requests) had 0 unexplained
differences on 2026-11-29 (`kafka-conformance diff --target 'reference?security=sasl' --target
'kafka:4.4.0?security=sasl'`)."""

from __future__ import annotations

import pytest

from conformance.diff.runner import DiffOptions, lines, run_diff
from conformance.diff.stream import parse_selection
from conformance.targets.maven import cached_broker

RELEASE = "4.4.0"
SUBSET = (
    "SaslHandshake",
    "SaslAuthenticate",
    "DescribeAcls",
    "CreateAcls",
    "DeleteAcls",
    "DescribeUserScramCredentials",
    "AlterUserScramCredentials",
    "DescribeCluster",
)


@pytest.mark.publication
def test_every_difference_under_sasl_is_explained(tmp_path) -> None:
    if cached_broker(RELEASE) is None:
        pytest.skip(f"Kafka {RELEASE} is not cached: `kafka-conformance fetch kafka:{RELEASE}`")
    done = run_diff(
        DiffOptions(
            targets=("reference?security=sasl", f"kafka:{RELEASE}?security=sasl"),
            brokers=1,
            seed=20261123,
            examples=3,
            select=[parse_selection(s) for s in SUBSET],
            out_dir=tmp_path,
        )
    )
    assert done.unexplained == 0, "\n".join(lines(done)[:20])
    for api in SUBSET:
        row = done.summary[api]
        assert row["compared"] == row["requests"] > 0, (api, row)
    assert done.hidden["scram-users-of-the-setup"] > 0
