"""The import contracts of ARCHITECTURE.md hold: ``lint-imports`` (pyproject's
``[tool.importlinter]``) keeps every contract, catches a broken one, and the reference cluster is
never imported at module level by the ``conformance`` package."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).parent / "lint-imports"


def lint_imports(cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT), "--no-logo", "--no-cache", "--config", str(ROOT / "pyproject.toml")],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def contracts() -> list[dict]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)["tool"]["importlinter"]["contracts"]


def test_every_contract_is_kept() -> None:
    proc = lint_imports(ROOT)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    names = [c["name"] for c in contracts()]
    assert len(names) == 12
    flat = " ".join(out.split())
    for name in names:
        assert f"{name} KEPT" in flat, (name, out)


def test_a_reverse_import_breaks_its_contract(tmp_path: Path) -> None:
    """The same tree with old cycles put back: the launcher using the CLI's error, the report
    calling the matrix job, the authorizer taking the forwarded APIs from the broker package,
    the log stopping the node through ``node.py``, a product module importing a test helper, a
    product module importing a suite test module, the suite's kit importing a feature folder, a
    target importing a confirmation, a confirmation importing the suite.
    lint-imports fails and names each contract."""
    ignore = shutil.ignore_patterns("__pycache__", "*.json")
    for pkg in ("conformance", "reference_impl", "tests", "confirmations"):
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=ignore)

    def append(rel: str, line: str) -> None:
        path = tmp_path / rel
        path.write_text(path.read_text() + f"\n{line}\n")

    append("reference_impl/launcher.py", "from conformance.cli import CliError")
    append("conformance/report/tables.py", "from conformance.matrix.job import run_matrix")
    append("reference_impl/controller/lifecycle.py", "from reference_impl.broker import forwarding")
    append("reference_impl/log/segment.py", "from reference_impl.node import Node")
    append("reference_impl/groups/store.py", "from reference_impl.log import PartitionLog")
    append("conformance/results/verdicts.py", "from tests.support import proxies")
    append("conformance/diff/stream.py", "from conformance.suite.kip78 import test_cluster_id")
    append("conformance/suite/kit/cases.py", "from conformance.suite.log import shared")
    append("conformance/targets/tansu.py", "from confirmations import launch")
    append("confirmations/launch.py", "from conformance.suite.kit import harness")
    proc = lint_imports(tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0, out
    by_id = {c["id"]: c["name"] for c in contracts()}
    for broken in (
        "reference-on-kernel",
        "layers",
        "controller-not-broker",
        "reference-leaves",
        "reference-subsystems-apart",
        "product-not-tests",
        "no-test-module-imports",
        "kit-not-features",
        "confirmations-apart",
        "confirmations-no-suite",
    ):
        assert f"{by_id[broken]} BROKEN" in out, (broken, out)
    assert f"{by_id['kernel']} KEPT" in out, out


#: in a fresh interpreter: what a controller process imports (its node and every handler module
#: it serves, as ``Node.handler_apis`` loads them), then whether any broker module came along
CONTROLLER_IMPORTS = """
import importlib, pkgutil, sys
import reference_impl.controller.controller
from reference_impl import handlers
for info in pkgutil.iter_modules(handlers.__path__):
    importlib.import_module(handlers.__name__ + "." + info.name)
print(sorted(m for m in sys.modules if m.startswith("reference_impl.broker.")))
"""


def test_a_controller_process_does_not_load_the_broker() -> None:
    """The controller shares handlers and the node with the broker, never the broker package
    (its forwarding, metadata cache, lifecycle): the leaves they share say what both use."""
    assert fresh_interpreter(CONTROLLER_IMPORTS) == "[]"


def fresh_interpreter(script: str) -> str:
    """What ``script`` prints, run by a new interpreter in the checkout (nothing imported yet)."""
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def module_level_imports(path: Path, package: str) -> list[int]:
    """Lines of imports of ``package`` that run when the module is imported (outside any
    function body)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    deferred = {
        id(node)
        for fn in ast.walk(tree)
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
        for node in ast.walk(fn)
    }
    lines = []
    for node in ast.walk(tree):
        if id(node) in deferred:
            continue
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        if any(n == package or n.startswith(package + ".") for n in names):
            lines.append(node.lineno)
    return lines


def test_the_reference_cluster_is_only_imported_where_it_starts() -> None:
    """Importing any conformance module (the suite, a target, the CLI) never loads
    reference_impl: the reference target and ``serve`` import it when they start it."""
    found = {
        str(p.relative_to(ROOT)): lines
        for p in sorted((ROOT / "conformance").rglob("*.py"))
        if (lines := module_level_imports(p, "reference_impl"))
    }
    assert found == {}
    users = [
        p.name
        for p in (ROOT / "conformance").rglob("*.py")
        if "reference_impl" in p.read_text(encoding="utf-8")
    ]
    assert "reference.py" in users  # the check looks where the imports are


def test_the_specs_locator_imports_only_the_standard_library() -> None:
    """``specs/__init__.py`` (the package ``conformance.specs``) is the bottom of the kernel; it
    lives outside ``conformance/``, where lint-imports does not look, so this checks it."""
    tree = ast.parse((ROOT / "specs" / "__init__.py").read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add("." if node.level else (node.module or "").split(".")[0])
    assert imported and imported <= sys.stdlib_module_names | {"__future__"}, imported


def test_module_level_detection(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text(
        "import os\nfrom reference_impl import launcher\n"
        "def f():\n    import reference_impl.node\n"
        "try:\n    import reference_impl\nexcept ImportError:\n    pass\n"
    )
    assert module_level_imports(src, "reference_impl") == [2, 6]


CLI_IMPORTS = """
import sys
import conformance.cli
print(sorted(m for m in ("hypothesis", "pyspark") if m in sys.modules))
"""


def test_the_command_line_entry_loads_no_test_machinery() -> None:
    """``kafka-conformance`` builds its parser for every subcommand; a subcommand's heavy
    dependencies (hypothesis for diff's stream, pyspark for matrix) load in its handler: imported
    before pytest, hypothesis makes pytest warn that it cannot rewrite its asserts, which a wheel
    install's run refuses (tests/test_wheel.py)."""
    assert fresh_interpreter(CLI_IMPORTS) == "[]"


def test_benchmarks_import_no_test_module() -> None:
    """benchmarks/ takes the project's tests' fault proxies from ``tests.support`` (and the kio
    adapter from ``tests.protocol.kio_adapter``), modules with no tests in them, never a test
    module or a conftest."""
    found = []
    for path in sorted((ROOT / "benchmarks").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            for name in names:
                last = name.rpartition(".")[2]
                if last.startswith("test_") or last == "conftest":
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}")
    assert found == []


def test_reports_hold_only_what_is_published() -> None:
    """reports/README.md and ARCHITECTURE: ``reports/`` holds what is published (``latest/``,
    ``runs/``, the ``kafka-truth-table/`` rows, its README) and ``publish.sh``; no code."""
    allowed = {"README.md", "publish.sh", "latest", "runs", "kafka-truth-table"}
    assert {p.name for p in (ROOT / "reports").iterdir()} <= allowed
    assert not list((ROOT / "reports").rglob("*.py"))


def test_the_confirmations_readme_names_what_exists() -> None:
    """Each ``python -m confirmations.<script>`` of confirmations/README.md is a module there, every
    tansu or Kafka start-up goes through ``confirmations/launch.py``, and each ``*.out`` the
    README and specs/README.md name is beside its script."""
    readme = (ROOT / "confirmations" / "README.md").read_text(encoding="utf-8")
    scripts = re.findall(r"-m confirmations\.(\w+)", readme)
    assert scripts
    for name in scripts:
        assert (ROOT / "confirmations" / f"{name}.py").exists(), name
    for out in re.findall(r"confirmations/(\w+\.out)", readme):
        assert (ROOT / "confirmations" / out).exists(), out
    for path in sorted((ROOT / "confirmations").glob("*.py")):
        if path.name != "launch.py":
            text = path.read_text(encoding="utf-8")
            assert "subprocess.Popen" not in text and "from_spec(" not in text, path.name


def test_the_specs_readme_names_what_exists() -> None:
    """Every path specs/README.md names in backquotes (``messages/``, ``schema/…``, tests, the
    launcher) exists, relative to specs/ or to the checkout."""
    readme = (ROOT / "specs" / "README.md").read_text(encoding="utf-8")
    for path in re.findall(r"`([\w./-]+\.(?:json|py|md)|[\w-]+/)`", readme):
        if "<" in path or "*" in path:
            continue
        assert (ROOT / "specs" / path).exists() or (ROOT / path).exists(), path
