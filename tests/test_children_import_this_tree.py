"""A process a test starts from another folder runs this tree's code (tests/conftest.py puts
the tree first on PYTHONPATH): the CLI runs of a `git archive` tree once ran the checkout of the
environment's editable install instead, so the tree's own code went unjudged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_child_in_another_folder_imports_this_tree(tmp_path: Path) -> None:
    code = (
        "import conformance, reference_impl, conformance.specs as s; "
        "print(conformance.__file__, reference_impl.__file__, s.__file__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert [Path(p).parents[1] for p in out.stdout.split()] == [ROOT, ROOT, ROOT], out.stdout
