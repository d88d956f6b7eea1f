"""Every requirement has a suite test that can credit it, and every check names what it checks.

Static (nothing is started): the suite's modules are imported and their check calls read, so a
requirement added to ``specs/requirements`` without a test, or a check that names no requirement
id, fails CI here rather than turning into a SKIP "not checked" in someone's run.
"""

from __future__ import annotations

from pathlib import Path

import conformance
from conformance.cli import main
from conformance.requirements import requirements
from conformance.suite import catalog as catalog_module
from conformance.suite.catalog import Catalog, catalog, unnamed_checks


def test_every_requirement_has_a_test_that_can_credit_it() -> None:
    cat = catalog()
    uncovered = {r.id for r in requirements() if not cat.creditable(r.id)}
    assert not uncovered, (
        f"requirements no suite test can credit (a test must list the id and a check or model "
        f"rule must name it): {sorted(uncovered)}"
    )


def test_every_check_names_the_requirements_it_checks() -> None:
    assert unnamed_checks() == []


def test_tests_are_found_with_the_requirements_they_list() -> None:
    cat = catalog()
    ids = {t.test_id for t in cat.tests_of("KIP-78.R7")}
    assert ids == {
        "kip-78/describe-cluster/cluster-id/matches-metadata",
        "kip-78/metadata/cluster-id/state-machine",
    }
    # a requirement credited only through a model's rules counts (the lifecycle's R2)
    assert any(w.startswith("model ") for w in cat.checked_by["BROKER-REGISTRATION.R2"])


def test_the_requirements_command_prints_statements_and_tests(capsys) -> None:
    code = main(["requirements", "kip-78"])
    out = capsys.readouterr().out
    assert code == 0, out
    for r in requirements():
        if r.file == "kip-78":
            assert f"{r.id}  {r.level}  {r.statement}" in out
    # each test on its own line: its id and where it is (file::function, as pytest names it)
    lines = out.splitlines()
    r7 = lines.index(next(line for line in lines if line.startswith("KIP-78.R7  ")))
    tests = [line.split() for line in lines[r7 + 1 : r7 + 3]]
    assert [t[0] for t in tests] == [
        "kip-78/describe-cluster/cluster-id/matches-metadata",
        "kip-78/metadata/cluster-id/state-machine",
    ]
    for _test_id, location in tests:
        file, function = location.split("::")
        assert file.startswith("conformance/suite/kip78/") and file.endswith(".py"), location
        assert function.startswith("test_"), location
        source = (Path(conformance.__file__).resolve().parents[1] / file).read_text()
        assert f"def {function}(" in source, location


def test_the_requirements_command_fails_on_a_requirement_nothing_credits(
    capsys, monkeypatch
) -> None:
    full = catalog()
    without = Catalog([t for t in full.tests if "KIP-78.R3" not in t.requirements], full.checked_by)
    monkeypatch.setattr(catalog_module, "catalog", lambda: without)
    assert main(["requirements", "KIP-78.R3", "KIP-78.R4"]) == 1
    out = capsys.readouterr().out
    assert "KIP-78.R3  MUST" in out and "no test; nothing can credit it (no test lists it)" in out
    assert "1 requirement(s) no test can credit: KIP-78.R3" in out
