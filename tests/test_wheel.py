"""The wheel is the product: built from the project's files, installed into a fresh venv outside
the checkout, it carries the specs and the reference cluster, and runs the suite from there.

The venv reuses the project's installed dependencies (a ``.pth`` naming a folder of links to the
``.venv``'s site-packages entries, minus this project's own editable install), so the check
installs only the wheel and takes seconds, not a download of pyspark.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: what the wheel is built from (the rest of the checkout is not the product)
SOURCES = ("conformance", "reference_impl", "specs", "setup.py", "pyproject.toml", "README.md")


def _run(cmd: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST"))}
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    print(f"$ {' '.join(map(str, cmd))}  (exit {proc.returncode})")
    return proc


def build_wheel(tmp: Path) -> Path:
    src, dist = tmp / "src", tmp / "dist"
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, src / name)
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    proc = _run([*cmd, "--no-index", "-q", "-w", str(dist), str(src)], tmp, 300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (wheel,) = dist.glob("kafka_conformance-*.whl")
    return wheel


def fresh_venv(tmp: Path) -> Path:
    """A venv of its own whose only extra path is a folder of links to the project's installed
    dependencies; the project itself is not among them."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    deps = tmp / "deps"
    deps.mkdir()
    site = Path(sysconfig.get_paths()["purelib"])
    own = ("kafka_conformance", "__editable__", "conformance", "reference_impl")
    for entry in site.iterdir():
        if not entry.name.startswith(own) and entry.suffix != ".pth":
            (deps / entry.name).symlink_to(entry)
    purelib = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "project-dependencies.pth").write_text(f"{deps}\n")
    return venv


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    started = time.monotonic()
    wheel = build_wheel(tmp)
    names = zipfile.ZipFile(wheel).namelist()
    for data in (
        "conformance/specs/__init__.py",  # the top-level specs/, mapped by setup.py
        "conformance/specs/requirements/kip-78.json",
        "conformance/specs/models/kip-78-cluster-id.json",
        "conformance/specs/messages/MetadataRequest.json",
        "conformance/specs/schema/result.schema.json",
        "conformance/suite/kip78/test_cluster_id.py",
        "conformance/suite/kit/data/documented_errors.json",  # verify reads it (PROTOCOL.R5)
        "conformance/targets/java/Kip42Harness.java",  # compiled by run --client java:VERSION
        "reference_impl/launcher.py",
    ):
        assert data in names, data
    venv = fresh_venv(tmp)
    python = str(venv / "bin" / "python")
    proc = _run(
        [python, "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)], tmp, 300
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    print(f"built and installed {wheel.name} in {time.monotonic() - started:.1f} s")
    work = tmp / "work"
    work.mkdir()
    return venv


def test_the_installed_package_is_the_wheel(installed: Path) -> None:
    code = (
        "import conformance, reference_impl; print(conformance.__file__, reference_impl.__file__)"
    )
    proc = _run([str(installed / "bin" / "python"), "-c", code], installed.parent / "work", 60)
    assert proc.returncode == 0, proc.stderr
    for path in proc.stdout.split():
        assert Path(path).is_relative_to(installed), proc.stdout
        assert not Path(path).is_relative_to(ROOT), proc.stdout


def test_run_from_the_wheel(installed: Path) -> None:
    work = installed.parent / "work"
    cmd = [str(installed / "bin" / "kafka-conformance"), "run", "-k", "KIP-78", "--no-report"]
    started = time.monotonic()
    proc = _run([*cmd, "--seed", "7"], work, 600)
    print(proc.stdout[-1500:])
    print(f"kafka-conformance run from the wheel: {time.monotonic() - started:.1f} s")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "warning" not in proc.stdout.lower(), proc.stdout[-3000:]
    (run_dir,) = (work / "conformance-results").iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["target_kind"] == "reference" and manifest["suite_version"] == "0.1.0"
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    passed = {r["requirement_id"] for r in records if r["verdict"] == "PASS"}
    assert {"KIP-78.R1", "KIP-78.R3", "KIP-78.R5", "KIP-78.R9"} <= passed, passed
    assert {r["feature"] for r in records} == {"kip-78"}


def test_pytest_pyargs_from_the_wheel(installed: Path) -> None:
    work = installed.parent / "work"
    cmd = [str(installed / "bin" / "python"), "-m", "pytest", "--pyargs", "conformance.suite"]
    started = time.monotonic()
    proc = _run([*cmd, "-k", "KIP-78", "-p", "no:cacheprovider", "--seed", "7"], work, 600)
    print(proc.stdout[-1500:])
    print(f"pytest --pyargs conformance.suite from the wheel: {time.monotonic() - started:.1f} s")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout and "failed" not in proc.stdout, proc.stdout[-3000:]
    assert str(ROOT) not in proc.stdout, "the tests ran from the checkout, not the wheel"
