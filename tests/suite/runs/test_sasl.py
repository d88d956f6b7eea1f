"""An external target behind SASL: the suite authenticates every connection it opens (PLAIN and
SCRAM-SHA-256), and wrong credentials are one clear line, exit code 2."""

from __future__ import annotations

import pytest

from tests.reference.control_plane import new_cluster
from tests.reference.security.test_cluster import SECURITY, USERS, SecuredCluster


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    plain = new_cluster(
        tmp_path_factory.mktemp("sasl"),
        "embedded",
        None,
        overrides={"settings": {"security": SECURITY}, "super_users": ["User:admin"]},
    )
    cluster = SecuredCluster(
        plain.data_dir,
        brokers=plain.brokers,
        metadata_store=plain.metadata_store,
        nodes=plain.nodes,
    ).secure()
    cluster.start(timeout=60)
    yield cluster
    cluster.stop()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_the_suite_runs_authenticated(cli, secured, mechanism: str) -> None:
    proc, run = cli(
        "--bootstrap-server",
        secured.bootstrap_servers,
        "--select",
        "KIP-78 or protocol/robustness/negative-size",
        "--sasl-mechanism",
        mechanism,
        "--sasl-username",
        "admin",
        "--sasl-password",
        USERS["admin"],
    )
    assert run is not None, proc.stderr[-2000:]
    v = {r["requirement_id"]: r["verdict"] for r in run.records}
    assert v["KIP-78.R1"] == "PASS" and v["KIP-78.R5"] == "PASS" and v["PROTOCOL.R15"] == "PASS"
    assert "FAIL" not in v.values() and "ERROR" not in v.values(), run.records
    assert proc.returncode == 0


def test_wrong_credentials_are_one_line(cli, secured) -> None:
    proc, run = cli(
        "--bootstrap-server",
        secured.bootstrap_servers,
        "--select",
        "KIP-78",
        "--sasl-mechanism",
        "PLAIN",
        "--sasl-username",
        "admin",
        "--sasl-password",
        "wrong",
    )
    assert proc.returncode == 2 and run is None
    assert [line for line in proc.stderr.splitlines() if line.strip()] == [
        line for line in proc.stderr.splitlines() if "SASL PLAIN authentication failed" in line
    ]
    assert "Traceback" not in proc.stdout + proc.stderr
