"""One name per feature: the requirement file's stem names the id prefix, the models, the
suite's test folder and the first segment of each test id, and each suite test lives in the
folder of the requirements it checks."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest

import conformance.suite
from conformance import specs
from conformance.requirements import requirements
from conformance.suite.kit.meta import MARKER

SUITE = Path(conformance.suite.__file__).parent


#: features whose folder is not their Python name: ``protocol`` would shadow the kernel package
#: ``conformance.protocol`` in a reader's mind and in tools that resolve by last segment. The new
#: name sorts where the old one did (after offsets/, before topics/), so a run collects, and runs,
#: its tests in the same order (tests/suite/protocol_basics/test_unanswered.py relies on it)
RENAMED = {"protocol": "protocol_basics"}
#: the suite's folders that are no feature: its shared machinery
SUPPORT = {"kit"}
#: the folders of the suite's own tests that mirror no folder of the suite: whole runs of it
WHOLE_RUNS = {"runs"}


def folder_of(stem: str) -> str:
    """``kip-78`` -> ``kip78``, ``broker-registration`` -> ``broker_registration``,
    ``protocol`` -> ``protocol_basics`` (``RENAMED``)."""
    return RENAMED.get(stem) or re.sub(r"^kip-", "kip", stem).replace("-", "_")


def suite_modules() -> list[str]:
    return sorted(
        ".".join(p.relative_to(SUITE.parents[1]).with_suffix("").parts)
        for p in SUITE.rglob("test_*.py")
    )


def declared(module: str) -> list[tuple[str, tuple[str, ...], str]]:
    """(test function, requirement ids, test id) of every ``@conformance`` test in a module."""
    mod = importlib.import_module(module)
    out = []
    for name, obj in vars(mod).items():
        if name.startswith("test_") and callable(obj):
            for mark in getattr(obj, "pytestmark", []):
                if mark.name == MARKER:
                    out.append((name, mark.kwargs["requirements"], mark.kwargs["test_id"]))
    return out


def test_ids_are_prefixed_with_the_upper_cased_file_stem() -> None:
    reqs = requirements()
    assert "BROKER-REGISTRATION" in reqs.features
    for r in reqs:
        assert r.id.rsplit(".", 1)[0] == r.feature == r.file.upper(), r.id


def test_models_are_named_feature_dash_what() -> None:
    stems = {f.path.stem for f in requirements().features.values()}
    models = sorted(specs.MODELS.glob("*.json"))
    assert {p.stem for p in models} >= {
        "broker-registration-lifecycle",
        "kip-78-cluster-id",
        "kip-590-controller-routing",
    }
    for path in models:
        obj = json.loads(path.read_text(encoding="utf-8"))
        feature = obj["feature"].lower()
        assert feature in stems, path.name
        assert obj["model"] == path.stem, path.name
        assert path.stem.startswith(feature + "-"), path.name


def test_every_suite_test_is_in_a_feature_folder() -> None:
    folders = {folder_of(f.path.stem) for f in requirements().features.values()}
    modules = suite_modules()
    assert "conformance.suite.protocol_basics.test_robustness" in modules
    for module in modules:
        parts = module.split(".")
        assert len(parts) == 4 and parts[2] in folders, module


@pytest.mark.parametrize("module", suite_modules())
def test_a_suite_test_checks_its_own_feature(module: str) -> None:
    reqs = requirements()
    tests = declared(module)
    assert tests, f"{module}: no @conformance test"
    folder = module.split(".")[2]
    for name, ids, test_id in tests:
        elsewhere = [r for r in ids if folder_of(reqs[r].file) != folder]
        assert not elsewhere, f"{module}.{name} checks {elsewhere}: move it to their folder"
        # the id starts with the feature (the requirement file's stem): `kip-78/metadata/...`
        feature = reqs[ids[0]].file
        assert test_id.startswith(feature + "/"), f"{module}.{name}: {test_id!r} not {feature}/..."


def packages(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if (p / "__init__.py").exists()}


def test_the_suite_holds_feature_folders_and_its_kit() -> None:
    """Support code apart from features: every package of the suite is a feature's folder or the
    kit, and beside them only the catalog (the ``requirements`` subcommand)."""
    folders = {folder_of(f.path.stem) for f in requirements().features.values()}
    assert packages(SUITE) - folders == SUPPORT
    assert {p.name for p in SUITE.glob("*.py")} == {"__init__.py", "catalog.py"}


def test_the_tests_of_the_suite_mirror_it() -> None:
    """``tests/suite/<folder>/`` tests ``conformance/suite/<folder>/``; ``runs/`` whole runs;
    beside them only the tests of the suite as a whole (this file, the catalog, the requirement
    files); the fault proxies and faulty brokers are ``tests/support``."""
    here = Path(__file__).parent
    assert packages(here) - packages(SUITE) == WHOLE_RUNS
    assert {p.name for p in here.glob("*.py")} == {
        "__init__.py",
        "conftest.py",
        "test_catalog.py",
        "test_layout.py",
        "test_requirements.py",
    }
    assert not list((here.parent / "support").rglob("test_*.py")), "tests/support holds no tests"
