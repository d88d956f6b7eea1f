"""Incremental publication (issue 41): the runs a report is made of, redoing only what changed.

    python -m conformance.matrix.publish reports/runs --runs 3 --kafka-runs 2 \\
        --client python --client java:4.4.0 reference tansu kafka:4.4.0 ...

For each target asked for (``--runs`` runs each, ``--kafka-runs`` for ``kafka:`` targets), the
runs already in the folder are compared by their manifests' content keys
(``conformance.results.content_key``) with the key the suite has now:

- unchanged: the run is kept as it is;
- a feature's files changed (its suite folder, a folder it imports, its requirement file or
  models): only that feature's tests are run again (``--select`` the features), and their
  records are put together with the earlier run's records of every other feature into one run
  whose manifest says which records were reused from which run (``reused``); the earlier run's
  folder goes;
- the shared files changed (kernel, kit, runner, targets; the reference cluster's for a
  reference target), or the target, seed, options or environment, or the earlier run had an
  outage or has no content key: the run is done again from the start.

Runs of targets not asked for, runs without a content key and runs beyond the count are never
deleted unasked: they are moved aside into a dated folder beside the runs folder
(``reports/runs-set-aside/<UTC time>/``, which no report reads), and a line says where, so a
mistyped target list costs a ``mv``, not an hour of runs; ``--prune`` deletes them instead.
Runs of external targets (a broker started by hand, ``--bootstrap-server``) are kept as they
are. One line per target says what was reused, what was rerun and why. The reruns run one
after the other, or, with ``--spark-master``, all at once as the tasks of one Spark job on a
standalone cluster (``conformance.matrix.publish_spark``). A run that records nothing (a broker
that exits at start under load) is tried once more; if it records nothing again it is skipped,
said in its line and listed in ``skipped.json`` in the runs folder (the report's run list shows
it), its earlier run, if any, left as it was, and the other targets' runs go on.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from conformance.results.advertised import NOT_JUDGED, judged_key
from conformance.results.content_key import (
    Sources,
    content_key,
    differences,
    feature_folder,
    narrowed,
    run_options,
)
from conformance.results.schema import (
    MANIFEST_FILE,
    RESULTS_FILE,
    RunError,
    manifest_errors,
    record_errors,
)
from conformance.targets.base import stop_process

#: runs a report is made of, per target: (target, clients) -> run folder, or None when it
#: recorded nothing
Runner = Callable[[str, tuple[str, ...], str | None, Path], Path | None]


#: the content key's target of a run of a broker started by hand (--bootstrap-server)
EXTERNAL = "external:"


#: the runs folder's list of the runs the last publication skipped (each recorded nothing twice)
SKIPPED_FILE = "skipped.json"

#: the folder, beside the runs folder, that publication moves the runs it does not use into
#: (one dated folder per publication); reports/runs-set-aside is not in git
SET_ASIDE = "{}-set-aside"


def set_aside_folder(runs_dir: Path, now: datetime | None = None) -> Path:
    """Where this publication puts the runs it does not use: outside ``runs_dir``, so no report
    made of ``runs_dir`` reads them, and dated, so publications never mix."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    return runs_dir.parent / SET_ASIDE.format(runs_dir.name) / stamp


@dataclass(frozen=True)
class Wanted:
    """A target of the report and how many runs of it."""

    target: str
    count: int
    clients: tuple[str, ...] = ()


@dataclass
class Step:
    """What publication does about one run of a target."""

    target: str
    #: "reuse", "partial" (rerun ``features``, reuse the others from ``previous``), "rerun"
    #: (replaces ``previous``), "new", "remove" (not used: set aside, or deleted with --prune),
    #: "keep" (an external target's run: a broker publication does not start, run by hand and
    #: documented in reports/README.md)
    action: str
    previous: Path | None = None
    features: set[str] = field(default_factory=set)
    why: str = ""


@dataclass
class Plan:
    wanted: list[Wanted]
    keys: dict[str, dict[str, Any]]
    steps: list[Step]
    #: where the runs it does not use go; None: they are deleted (--prune)
    aside: Path | None = None

    def _gone(self) -> str:
        return "removed" if self.aside is None else "set aside"

    def lines(self) -> list[str]:
        """One line per target (and one for what is set aside or removed)."""
        out = []
        for w in self.wanted:
            steps = [s for s in self.steps if s.target == w.target and s.action != "remove"]
            parts = []
            for action, label in (
                ("reuse", "reused"),
                ("partial", "reran"),
                ("rerun", "reran whole"),
                ("new", "new"),
            ):
                chosen = [s for s in steps if s.action == action]
                if not chosen:
                    continue
                whys = sorted({s.why for s in chosen if s.why})
                text = f"{label} {len(chosen)}"
                if whys:
                    text += f" ({'; '.join(whys)})"
                parts.append(text)
            dropped = [s for s in self.steps if s.target == w.target and s.action == "remove"]
            if dropped:
                parts.append(f"{self._gone()} {len(dropped)} ({dropped[0].why})")
            n = f"{w.count} run{'s' if w.count != 1 else ''}"
            out.append(f"publish: {w.target} ({n}): {', '.join(parts)}")
        kept = [s for s in self.steps if s.action == "keep"]
        if kept:
            out.append(
                f"publish: kept {len(kept)} run{'s' if len(kept) != 1 else ''} of external "
                "targets as they are (publication cannot start them again)"
            )
        others = Counter(
            s.why for s in self.steps if s.action == "remove" and s.target not in self.keys
        )
        for why, n in sorted(others.items()):
            out.append(f"publish: {self._gone()} {n} earlier run{'s' if n != 1 else ''} ({why})")
        if self.aside is not None and any(s.action == "remove" for s in self.steps):
            out.append(
                f"publish: the runs set aside are in {self.aside} (no report reads them): move "
                "them back into the runs folder to publish them again, or delete them "
                "(--prune deletes such runs at once)"
            )
        return out

    def reruns(self) -> list[Step]:
        return [s for s in self.steps if s.action in ("partial", "rerun", "new")]


def wanted_key(w: Wanted, src: Sources) -> dict[str, Any]:
    """The key a run of ``w`` made now would record: every feature with a suite folder."""
    key = content_key(
        w.target,
        seed=None,
        options=run_options(
            examples=None, strict=False, clients=list(w.clients), spec_dir=None, select=None
        ),
        src=src,
    )
    suite = src.package / "suite"
    return narrowed(key, [f for f in key["features"] if (suite / feature_folder(f)).is_dir()])


def _recorded(runs_dir: Path) -> list[tuple[Path, dict[str, Any]]]:
    out = []
    if not runs_dir.is_dir():
        return out
    for manifest in sorted(runs_dir.rglob(MANIFEST_FILE)):
        try:
            out.append((manifest.parent, json.loads(manifest.read_text(encoding="utf-8"))))
        except (OSError, ValueError):
            out.append((manifest.parent, {}))
    return out


def _features_changed(features: set[str], count: int) -> str:
    names = ", ".join(sorted(features))
    return f"{names}: files changed" if len(features) < count else "every feature changed"


def plan(
    runs_dir: Path, wanted: list[Wanted], src: Sources | None = None, prune: bool = False
) -> Plan:
    """What to do about each run: nothing runs here. The runs it does not use are set aside
    (``set_aside_folder``), or deleted with ``prune``."""
    src = src or Sources.installed()
    keys = {w.target: wanted_key(w, src) for w in wanted}
    by_target: dict[str, list[tuple[Path, dict[str, Any]]]] = {}
    steps: list[Step] = []
    for folder, manifest in _recorded(runs_dir):
        key = manifest.get("content_key")
        target = key.get("target") if isinstance(key, dict) else None
        if target in keys:
            by_target.setdefault(target, []).append((folder, manifest))
        elif isinstance(target, str) and target.startswith(EXTERNAL):
            steps.append(Step(target, "keep", folder, why="an external target's run"))
        else:
            why = "no content key" if target is None else "target not asked for"
            steps.append(Step(target or "?", "remove", folder, why=why))
    for w in wanted:
        new = keys[w.target]
        earlier = sorted(by_target.get(w.target, []), key=lambda fm: fm[1].get("started_at", ""))
        earlier.reverse()  # the newest first
        for folder, manifest in earlier[: w.count]:
            whole, redo = differences(manifest.get("content_key"), new)
            if manifest.get("outages"):
                whole = ["the earlier run had an outage", *whole]
            if whole:
                steps.append(Step(w.target, "rerun", folder, why=", ".join(whole)))
            elif redo:
                why = _features_changed(redo, len(new["features"]))
                steps.append(Step(w.target, "partial", folder, set(redo), why))
            else:
                steps.append(Step(w.target, "reuse", folder, why="key unchanged"))
        for folder, _ in earlier[w.count :]:
            steps.append(Step(w.target, "remove", folder, why="more runs than asked for"))
        for _ in range(w.count - min(w.count, len(earlier))):
            steps.append(Step(w.target, "new", why="no earlier run"))
    return Plan(wanted, keys, steps, None if prune else set_aside_folder(runs_dir))


# --- putting a partial run together with the earlier run's other features ----------------------


def _read_records(run_dir: Path) -> list[dict[str, Any]]:
    with (run_dir / RESULTS_FILE).open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _feature(record: dict[str, Any]) -> str:
    return record["test_id"].split("/", 1)[0]


def merge(new_dir: Path, old_dir: Path, rerun: set[str], key: dict[str, Any]) -> dict[str, Any]:
    """Make ``new_dir`` (a run of the features ``rerun``) the whole run: its records of those
    features, and ``old_dir``'s records of the others (taking ``new_dir``'s run id), with the
    manifest's ``content_key`` over all of them and ``reused`` naming where records came from.
    Records the rerun made outside ``rerun`` (a selection also matches tests of other features
    that credit a rerun feature's requirements) are left out: the earlier run's stand."""
    new_m = json.loads((new_dir / MANIFEST_FILE).read_text(encoding="utf-8"))
    old_m = json.loads((old_dir / MANIFEST_FILE).read_text(encoding="utf-8"))
    run_id = new_m["run_id"]
    fresh = [r for r in _read_records(new_dir) if _feature(r) in rerun]
    kept = [
        {**r, "run_id": run_id}
        for r in _read_records(old_dir)
        if _feature(r) not in rerun and _feature(r) in key["features"]
    ]
    for r in fresh + kept:
        errors = record_errors(r, run_id)
        if errors:
            raise RunError(f"{new_dir}: merged record of {r.get('test_id')}: {errors[0]}")
    with (new_dir / RESULTS_FILE).open("w", encoding="utf-8") as f:
        for r in fresh + kept:
            f.write(json.dumps(r, sort_keys=True) + "\n")

    per_feature = Counter(_feature(r) for r in kept)
    reused: list[dict[str, Any]] = []
    accounted: set[str] = set()
    for entry in old_m.get("reused", []):  # records the earlier run had itself taken over
        feats = sorted(set(entry["features"]) & set(per_feature))
        if feats:
            reused.append(
                {**entry, "features": feats, "records": sum(per_feature[f] for f in feats)}
            )
            accounted |= set(feats)
    own = sorted(set(per_feature) - accounted)
    if own:
        reused.insert(
            0,
            {
                "run_id": old_m["run_id"],
                "started_at": old_m["started_at"],
                "features": own,
                "records": sum(per_feature[f] for f in own),
            },
        )
    recorded = {_feature(r) for r in fresh + kept}
    manifest = {
        **new_m,
        "select": None,
        "content_key": narrowed(key, recorded),
        "reused": reused,
        "not_judged": _not_judged(new_m.get("not_judged", []), kept),
    }
    defects = _defects(new_m.get("setup_defects", []), old_m.get("setup_defects", []), rerun)
    if defects:
        manifest["setup_defects"] = defects
    else:
        manifest.pop("setup_defects", None)
    errors = manifest_errors(manifest)
    if errors:
        raise RunError(f"{new_dir}: merged manifest: {errors[0]}")
    (new_dir / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def _not_judged(entries: list[dict[str, Any]], kept: Iterable[dict[str, Any]]) -> list[dict]:
    """The rerun's ``not_judged`` less the versions the reused records judged."""
    judged = {k for r in kept if (k := judged_key(r)) is not None}
    out = []
    for e in entries:
        if e["reason"] == NOT_JUDGED:
            versions = [v for v in e["versions"] if (e["listener"], e["api_key"], v) not in judged]
            if not versions:
                continue
            e = {**e, "versions": versions}
        out.append(e)
    return out


def _defects(new: list[dict], old: list[dict], rerun: set[str]) -> list[dict]:
    """The rerun's set-up defects, and the earlier run's met first by a reused feature's test."""
    out = {(d["api_key"], d["version"], d["node"]): dict(d) for d in new}
    for d in old:
        test = d.get("test_id") or ""
        if test.split("/", 1)[0] in rerun:
            continue
        k = (d["api_key"], d["version"], d["node"])
        if k in out:
            out[k]["tests"] += d["tests"]
        else:
            out[k] = dict(d)
    return list(out.values())


# --- running ----------------------------------------------------------------------------------


#: ``run``'s exit codes for a run that did not complete: 2 could not start, 130 interrupted (a
#: SIGTERM'd run still writes the manifest of the tests it ran: session 13 nearly published one)
INCOMPLETE = (2, 130)
#: how long a run stopped by publication's own stop may take to stop its target (a Kafka
#: cluster's brokers and ZooKeeper, its side runs' clusters) before it is SIGKILLed
RUN_STOPS_WITHIN = 120.0


def suite_runner(echo: bool = True) -> Runner:
    """Runs ``kafka-conformance run`` (this interpreter, ``-m conformance``) into a folder and
    returns the run folder it made (None when it made none). A failing MUST makes ``run`` exit
    non-zero and is recorded all the same."""

    def run(target: str, clients: tuple[str, ...], select: str | None, into: Path) -> Path | None:
        kc = [sys.executable, "-m", "conformance"]
        if target.startswith("kafka:"):
            release = target.removeprefix("kafka:").split("?", 1)[0]
            subprocess.run([*kc, "fetch", f"kafka:{release}"], check=True, capture_output=True)
        for client in clients:
            if client.startswith("java:"):
                subprocess.run([*kc, "fetch", client], check=True, capture_output=True)
        before = {p.parent for p in into.rglob(MANIFEST_FILE)} if into.exists() else set()
        cmd = [*kc, "run", "--target", target, "--results-dir", str(into), "--no-report"]
        for client in clients:
            cmd += ["--client", client]
        if select:
            cmd += ["--select", select]
        # a session of its own: a terminal's ^C reaches publication only, which stops the run
        # once, by SIGTERM, as when publication itself is stopped so
        proc = subprocess.Popen(
            cmd, stdout=None if echo else subprocess.DEVNULL, start_new_session=True
        )
        try:
            code = proc.wait()
        except BaseException:  # publication stopped: the run stops its target, then we go
            stop_process(proc, RUN_STOPS_WITHIN)
            raise
        made = {p.parent for p in into.rglob(MANIFEST_FILE)} - before
        if code in INCOMPLETE:  # a manifest of what ran, not a whole run
            for folder in made:
                shutil.rmtree(folder, ignore_errors=True)
            return None
        return made.pop() if made else None

    return run


def _say(line: str) -> None:
    print(line, flush=True)


#: runs every rerun's (target, clients, select) at once, each into its own folder under the
#: staging folder given, and returns the run folder each made (None where one made none), in order
Batch = Callable[[list[tuple[str, tuple[str, ...], str | None]], Path], list[Path | None]]


def _select(step: Step) -> str | None:
    return " or ".join(sorted(step.features)) if step.action == "partial" else None


def execute(
    the_plan: Plan, runs_dir: Path, runner: Runner, log=_say, batch: Batch | None = None
) -> list[str]:
    """Carry the plan out: each rerun in a staging folder beside ``runs_dir``, moved in once it
    is whole (merged where partial); the runs it does not use are moved into ``the_plan.aside``
    (deleted where it is None). With ``batch`` (a Spark job,
    ``conformance.matrix.publish_spark``) the reruns run together first, else one after the
    other, each moved in as soon as it ends. Returns the lines it logged."""
    lines = the_plan.lines()
    for line in lines:
        log(line)
    runs_dir.mkdir(parents=True, exist_ok=True)
    staging = runs_dir.parent / f".{runs_dir.name}-staging"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    clients = {w.target: w.clients for w in the_plan.wanted}
    reruns = the_plan.reruns()
    skipped: list[dict[str, Any]] = []
    (runs_dir / SKIPPED_FILE).unlink(missing_ok=True)

    def say(line: str) -> None:
        log(line)
        lines.append(line)

    try:
        for step in the_plan.steps:
            if step.action == "remove" and step.previous is not None:
                _put_away(step.previous, runs_dir, the_plan.aside)
        made_together: list[Path | None] = []
        if batch is not None and reruns:
            start = time.monotonic()
            tasks = [(s.target, clients[s.target], _select(s)) for s in reruns]
            made_together = batch(tasks, staging)
            say(f"publish: {len(tasks)} runs together in {time.monotonic() - start:.0f} s")
            again = [i for i, made in enumerate(made_together) if made is None]
            if again:
                start = time.monotonic()
                for i in again:
                    say(f"publish: {tasks[i][0]}: recorded nothing, tried once more")
                retried = batch([tasks[i] for i in again], staging / "again")
                for i, made in zip(again, retried, strict=True):
                    made_together[i] = made
                say(f"publish: {len(again)} runs again in {time.monotonic() - start:.0f} s")
        for i, step in enumerate(reruns):
            select = _select(step)
            start = time.monotonic()
            if batch is not None:
                made = made_together[i]
            else:
                made = runner(step.target, clients[step.target], select, staging)
                if made is None:
                    say(f"publish: {step.target}: recorded nothing, tried once more")
                    made = runner(step.target, clients[step.target], select, staging)
            if made is None:
                kept = f"; its earlier run {step.previous.name} stays" if step.previous else ""
                why = f"recorded nothing twice (no whole {MANIFEST_FILE}){kept}"
                say(f"publish: {step.target}: skipped: {why}")
                skipped.append({"target": step.target, "select": select, "why": why})
                continue
            if step.action == "partial":
                assert step.previous is not None
                merge(made, step.previous, step.features, the_plan.keys[step.target])
            shutil.move(str(made), str(runs_dir / made.name))
            if step.previous is not None:
                shutil.rmtree(step.previous, ignore_errors=True)
            if batch is None:
                what = f"{select} only" if select else "whole"
                say(f"publish: {step.target}: {what} in {time.monotonic() - start:.0f} s")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if skipped:
        text = json.dumps(skipped, indent=2) + "\n"
        (runs_dir / SKIPPED_FILE).write_text(text, encoding="utf-8")
    return lines


def _put_away(folder: Path, runs_dir: Path, aside: Path | None) -> None:
    """Move a run not used into ``aside`` (its path under ``runs_dir`` kept), or delete it."""
    if aside is None:
        shutil.rmtree(folder, ignore_errors=True)
        return
    into = aside / folder.relative_to(runs_dir)
    into.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(folder), str(into))


def remove_all_but_external(runs_dir: Path) -> None:
    """``--fresh``: every run goes but external targets' (publication cannot start them again)."""
    for folder, manifest in _recorded(runs_dir):
        key = manifest.get("content_key")
        if not (isinstance(key, dict) and str(key.get("target", "")).startswith(EXTERNAL)):
            shutil.rmtree(folder, ignore_errors=True)
    (runs_dir / SKIPPED_FILE).unlink(missing_ok=True)


def read_skipped(runs_dirs: Iterable[Path | str]) -> list[dict[str, Any]]:
    """The runs the last publication into these folders skipped (the report's run list)."""
    out: list[dict[str, Any]] = []
    for d in runs_dirs:
        f = Path(d) / SKIPPED_FILE
        if f.is_file():
            out += json.loads(f.read_text(encoding="utf-8"))
    return out


def _interrupt_on_sigterm() -> None:
    """SIGTERM (``publish.sh`` stopped) ends publication like ^C: the run under way is stopped
    by its pid (``suite_runner``), not left running without it (session 16: orphaned)."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m conformance.matrix.publish",
        description="Bring a folder of runs up to date with the suite: reuse the runs whose "
        "content key is unchanged, rerun what changed (issue 41). Runs of targets not named are "
        "not deleted: they are moved into RUNS_DIR-set-aside/<UTC time>/ (no report reads it) "
        "and said, unless --prune.",
    )
    p.add_argument("runs_dir", type=Path, metavar="RUNS_DIR")
    p.add_argument(
        "targets", nargs="+", metavar="TARGET", help="every target the report is made of"
    )
    p.add_argument("--runs", type=int, default=3, help="runs per target (default 3)")
    p.add_argument("--kafka-runs", type=int, default=2, help="runs per kafka: target (default 2)")
    p.add_argument("--client", action="append", default=[], help="clients KIP-42.R1-R7 judge")
    p.add_argument(
        "--clients-on", default="reference", metavar="TARGET", help="the target run with them"
    )
    p.add_argument(
        "--fresh", action="store_true", help="remove every run first but external targets'"
    )
    p.add_argument(
        "--prune",
        action="store_true",
        help="delete the runs not used (of targets not asked for, without a content key, beyond "
        "the count); without it they are moved into RUNS_DIR-set-aside/<UTC time>/ and said",
    )
    p.add_argument("--dry-run", action="store_true", help="say what would be done, do nothing")
    p.add_argument(
        "--spark-master",
        metavar="URL",
        help="run the reruns as tasks of one Spark job on this master (spark://host:port, a "
        "standalone cluster whose workers have the project installed), all at once",
    )
    args = p.parse_args(argv)
    _interrupt_on_sigterm()
    if args.fresh and not args.dry_run:
        remove_all_but_external(args.runs_dir)
    wanted = [
        Wanted(
            t,
            args.kafka_runs if t.startswith("kafka:") else args.runs,
            tuple(args.client) if t == args.clients_on else (),
        )
        for t in args.targets
    ]
    the_plan = plan(args.runs_dir, wanted, prune=args.prune)
    if args.dry_run:
        for line in the_plan.lines():
            _say(line)
        return 0
    batch = None
    if args.spark_master:
        from conformance.matrix.publish_spark import spark_batch

        batch = spark_batch(args.spark_master)
    execute(the_plan, args.runs_dir, suite_runner(), batch=batch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
