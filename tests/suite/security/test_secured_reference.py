"""SECURITY R1-R15 and KIP-590.R2 (a client's Envelope, sent as alice under SASL) on
``reference?security=sasl``: PASS as it is (both metadata stores), each FAILing against a fault
(``tests.support.faulty_security``), and no password in what a run keeps.

* as it is: every requirement PASS; the passwords the target drew appear nowhere in the run's
  results, manifest and report (the secret-leak check; the Kafka one is test_security.py's);
* ``accept_wrong_password`` (R1), ``serve_before_authentication`` (R2), ``accept_any_mechanism``
  (R3), ``match_literal_only`` (R4), ``ignore_deny`` (R5), ``keep_deleted_credentials`` (R11:
  a deleted SCRAM credential still logs in), ``accept_any_credential`` (R12: no alteration
  refused), ``report_every_operation`` (R14: every operation reported), ``ignore_session_lifetime``
  (R15: an expired session served on) and ``allow_everyone``
  (a principal with no ACL may do anything: R6-R10, R13, and alice's Envelope is taken:
  KIP-590.R2) in one run: each FAILs, R11-R15 with their own fault's message.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.runs import only_run, suite_pytest

ALL = {f"SECURITY.R{i}" for i in range(1, 16)} | {"KIP-590.R2"}
FAULTS = (
    "accept_wrong_password,serve_before_authentication,accept_any_mechanism,match_literal_only,"
    "ignore_deny,allow_everyone,keep_deleted_credentials,accept_any_credential,"
    "report_every_operation,ignore_session_lifetime"
)
#: what each newer requirement's failure says: its own fault's doing, not another's
SCRAM_FAILURES = {
    "SECURITY.R11": "after its credential was deleted",
    "SECURITY.R12": "answered {",
    "SECURITY.R13": "by a principal without ALTER on the cluster answered",
    "SECURITY.R14": "TopicAuthorizedOperations for User:alice was",
    "SECURITY.R15": "not re-authenticated was still served",
}


def run(tmp_path: Path, target: str, *args: str) -> tuple[dict[str, str], object]:
    results = tmp_path / "results"
    proc = suite_pytest(
        "-p",
        "tests.support.faulty_security",
        f"--target={target}",
        "--select=SECURITY or KIP-590.R2",
        f"--results-dir={results}",
        *args,
        timeout=180,
    )
    got = only_run(results)
    verdicts: dict[str, str] = {}
    for r in got.records:  # KIP-590.R2: two tests, FAIL if either does
        if verdicts.get(r["requirement_id"]) != "FAIL":
            verdicts[r["requirement_id"]] = r["verdict"]
    assert set(verdicts) == ALL, proc.stdout[-3000:]
    return verdicts, got


@pytest.mark.parametrize(
    "store",
    # the ZooKeeper store's secured cluster is CI's in tests/reference/security/test_cluster.py;
    # the suite's run on it is the publication's (about 8 s)
    ["reference", pytest.param("reference:zookeeper", marks=pytest.mark.publication)],
)
def test_a_secured_reference_passes_and_keeps_no_password(tmp_path: Path, store: str) -> None:
    secrets = tmp_path / "passwords.json"
    report = tmp_path / "report"
    args = [f"--record-passwords={secrets}"]
    if store == "reference":  # the report once: what it adds is the same in both stores
        args.append(f"--report={report}")
    verdicts, got = run(tmp_path, f"{store}?security=sasl", *args)
    assert set(verdicts.values()) == {"PASS"}, verdicts
    passwords = json.loads(secrets.read_text())
    assert set(passwords) == {"admin", "alice", "broker"}
    kept = [p for d in (got.dir, report) for p in Path(d).rglob("*") if p.is_file()]
    assert any(p.name == "manifest.json" for p in kept)
    assert store != "reference" or any(p.suffix == ".html" for p in kept)
    for path in kept:
        data = path.read_bytes()
        assert not any(pw.encode() in data for pw in passwords.values()), path


def test_each_requirement_fails_against_its_fault(tmp_path: Path) -> None:
    verdicts, got = run(tmp_path, "reference?security=sasl", f"--security-faults={FAULTS}")
    assert got.manifest["target_name"] == "faulty-reference"
    assert verdicts == dict.fromkeys(ALL, "FAIL"), verdicts
    messages = {r["requirement_id"]: r["message"] for r in got.records}
    for req, said in SCRAM_FAILURES.items():
        assert said in messages[req], (req, messages[req])
