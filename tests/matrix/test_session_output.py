"""What Spark's JVM prints goes to the job's log file, not among the run's own lines: the JVM is a
child process that inherits file descriptors 1 and 2 while the session starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conformance.matrix.session import _output_to

#: like PySpark's JVM: prints at start-up, and again after the session is up
CHILD = (
    "import sys, time; print('banner', flush=True); time.sleep(0.3); "
    "print('later error', file=sys.stderr)"
)


def test_a_child_started_meanwhile_writes_to_the_log(tmp_path: Path, capfd) -> None:
    log = tmp_path / "report" / "spark.log"
    print("before", flush=True)
    with _output_to(log):
        child = subprocess.Popen([sys.executable, "-c", CHILD])
    print("after", flush=True)
    assert child.wait(timeout=30) == 0
    out, err = capfd.readouterr()
    assert (out.split(), err) == (["before", "after"], "")
    assert sorted(log.read_text().splitlines()) == ["banner", "later error"]
