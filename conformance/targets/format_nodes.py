"""Every KRaft node's storage formatted in one JVM, not one JVM per node (issue 36).

A Kafka cluster's start formats each node's storage with Kafka's ``kafka.tools.StorageTool``;
each run of it was a JVM of its own, about 0.45 CPU-s mostly to start, four per cluster and three
clusters in a whole run with side runs. ``java/FormatNodes.java`` (our code, reflection only, so
one build serves every release) runs the same tool once per node in one JVM, Kafka's exit hook
turned into an exception between them: 0.4-0.55 CPU-s for four nodes, 1.5-1.8 as four JVMs
(benchmarks/README.md, session 15, K). It is compiled once into the cache; with no
``javac`` (a Java runtime without the JDK) the target formats node by node as before.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from conformance.targets.maven import cache_root

SOURCE = Path(__file__).with_name("java") / "FormatNodes.java"
MAIN = "FormatNodes"
#: between two nodes' StorageTool arguments
NEXT = "--next"
#: the line the helper prints after each node: ``FORMAT-EXIT <index> <exit code>``
EXIT_LINE = "FORMAT-EXIT"
COMPILE_TIMEOUT = 120.0


def helper_classes() -> Path | None:
    """The compiled helper's folder (compiled now if need be, for Java 17 and later; named after
    the source's digest), or None where it cannot be."""
    javac = shutil.which("javac")
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    folder = cache_root() / "kafka" / f"format-nodes-{digest}"
    if (folder / f"{MAIN}.class").is_file():
        return folder
    if javac is None:
        return None
    work = folder.with_name(f"{folder.name}.{os.getpid()}.tmp")  # runs compiling at once
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        done = subprocess.run(
            [javac, "-nowarn", "--release", "17", "-d", str(work), str(SOURCE)],
            capture_output=True,
            timeout=COMPILE_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        done = None
    if done is None or done.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        return None
    if not (folder / f"{MAIN}.class").is_file():
        shutil.rmtree(folder, ignore_errors=True)  # a leftover without the class
        try:
            work.rename(folder)
        except OSError:  # another process put its build there first: the same classes
            pass
    shutil.rmtree(work, ignore_errors=True)
    return folder if (folder / f"{MAIN}.class").is_file() else None


def exit_codes(output: str) -> dict[int, int]:
    """Each node's exit code (by its index in the command) from the helper's output."""
    codes = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == EXIT_LINE and parts[1].isdigit():
            codes[int(parts[1])] = int(parts[2]) if parts[2].lstrip("-").isdigit() else 1
    return codes
