"""How `./dev.sh test` hands the project's tests to pytest-xdist workers (xdist_groups.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from tests.xdist_groups import FIRST, _LongFirst, module_scopes


def item(module: str, **fixtures: str) -> SimpleNamespace:
    defs = {name: [SimpleNamespace(scope=scope)] for name, scope in fixtures.items()}
    return SimpleNamespace(
        nodeid=f"{module}::test_x",
        path=Path(module),
        _fixtureinfo=SimpleNamespace(name2fixturedefs=defs),
        iter_markers=lambda name: [],
    )


def test_modules_sharing_a_costly_session_fixture_or_a_run_are_one_unit() -> None:
    scopes = module_scopes(
        [
            item("tests/matrix/test_a.py", spark="session", codec="session"),
            item("tests/report/test_b.py", spark="session"),
            item("tests/client/test_c.py", env="session"),
            item("tests/client/test_d.py", env="session", reference="session"),
            item("tests/client/test_e.py", tansu="session"),
            item("tests/suite/kip78/test_f.py", reference="module"),  # a module's own cluster
            item("tests/suite/runs/test_against_tansu.py"),
            item("tests/suite/groups/test_groups_tansu.py"),
            item("tests/protocol/test_g.py", codec="session"),
        ]
    )
    assert scopes["tests/matrix/test_a.py"] == scopes["tests/report/test_b.py"] == "spark"
    # env and reference meet in test_d, so tansu (env's other broker) is not joined by a test
    assert scopes["tests/client/test_c.py"] == scopes["tests/client/test_d.py"] == "env+reference"
    assert scopes["tests/client/test_e.py"] == "tansu"
    assert scopes["tests/suite/kip78/test_f.py"] == "tests/suite/kip78/test_f.py"
    assert scopes["tests/suite/runs/test_against_tansu.py"] == "tansu-runs"
    assert scopes["tests/suite/groups/test_groups_tansu.py"] == "tansu-runs"
    assert scopes["tests/protocol/test_g.py"] == "tests/protocol/test_g.py"


def test_the_longest_waits_are_handed_out_first_then_the_largest_units() -> None:
    queue = _LongFirst()
    queue["tests/a.py"] = {"x": False}
    queue["tests/big.py"] = {"x": False, "y": False}
    queue["spark"] = {"x": False}
    queue["tansu-runs"] = {"x": False}
    order = [queue.popitem(last=False)[0] for _ in range(4)]
    assert order == ["tansu-runs", "spark", "tests/big.py", "tests/a.py"]
    assert FIRST.index("tansu-runs") < FIRST.index("spark")


def test_every_module_judging_a_shared_run_is_in_its_runs_unit() -> None:
    """A module that judges a shared run of ``early`` (``shared_run``, ``early.shared``) outside
    JUDGES is a unit of its own, and the worker that runs it starts the runs again: two more
    whole suite runs against the reference, as the SHARE-GROUPS module did before it was listed."""
    from tests.support.early import JUDGES

    here = Path(__file__).resolve()
    judging = {
        p.name
        for p in here.parent.rglob("test_*.py")
        if p != here
        and any(call in p.read_text(encoding="utf-8") for call in ("shared_run(", "early.shared("))
    }
    assert judging - set(JUDGES) == set()
    assert "test_share_groups_reference.py" in judging
