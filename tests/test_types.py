"""The type checker keeps its scope clean: mypy (pinned in the ``test`` extras) over the packages
``[tool.mypy] files`` names in pyproject.toml (the wire codec, the reference's handlers and group
coordinator, the node roles, the data plane's interface, the replica manager and the transaction
coordinator) reports no error. Its cache is ``.mypy_cache`` in the checkout, so a
second run takes a few seconds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_reports_no_error() -> None:
    pytest.importorskip("mypy", reason="mypy is in the test extras (pip install -e '.[test]')")
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success: no issues found" in proc.stdout


def test_the_readme_names_the_checked_scope() -> None:
    """README's sentence on the type checker names exactly pyproject's ``[tool.mypy] files``."""
    import tomllib

    with (ROOT / "pyproject.toml").open("rb") as f:
        files = tomllib.load(f)["tool"]["mypy"]["files"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    sentence = readme[readme.index("Types are checked by mypy") :].split("\n\n")[0]
    for path in files:
        assert f"`{path}`" in sentence, path
        assert (ROOT / path).exists(), path
