"""The import contracts of ARCHITECTURE.md hold: ``lint-imports`` (pyproject's
``[tool.importlinter]``) keeps every contract, catches a broken one, and the reference cluster is
never imported at module level by the ``conformance`` package."""

from __future__ import annotations

import ast
import os
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
    assert len(names) == 4
    flat = " ".join(out.split())
    for name in names:
        assert f"{name} KEPT" in flat, (name, out)


def test_a_reverse_import_breaks_its_contract(tmp_path: Path) -> None:
    """The same tree with two old cycles put back: the launcher using the CLI's error, the
    report calling the matrix job. lint-imports fails and names both contracts."""
    ignore = shutil.ignore_patterns("__pycache__", "*.json")
    for pkg in ("conformance", "reference_impl"):
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=ignore)
    launcher = tmp_path / "reference_impl" / "launcher.py"
    launcher.write_text(launcher.read_text() + "\nfrom conformance.cli import CliError\n")
    tables = tmp_path / "conformance" / "report" / "tables.py"
    tables.write_text(tables.read_text() + "\nfrom conformance.matrix.job import run_matrix\n")
    proc = lint_imports(tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0, out
    by_id = {c["id"]: c["name"] for c in contracts()}
    assert f"{by_id['reference-on-kernel']} BROKEN" in out, out
    assert f"{by_id['layers']} BROKEN" in out, out
    assert f"{by_id['kernel']} KEPT" in out, out


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


def test_module_level_detection(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text(
        "import os\nfrom reference_impl import launcher\n"
        "def f():\n    import reference_impl.node\n"
        "try:\n    import reference_impl\nexcept ImportError:\n    pass\n"
    )
    assert module_level_imports(src, "reference_impl") == [2, 6]
