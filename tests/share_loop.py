"""Kafka's KafkaShareConsumer (KIP-932) with explicit acknowledgement across a broker kill -9.

What a share group promises a user, checked end to end with the released client (issue 39): two
members (``tests/java/ShareHarness.java``) share a topic of numbered records, each record taking
a few milliseconds of work, so that both hold acquired records when, a third of the way through,
the leader of partition 0, the group's coordinator and partition 0's share coordinator (where
the target names one: FindCoordinator key type 2) are killed with SIGKILL and started again. A
value ending in 0 is RELEASEd on its first delivery, one ending in 5 REJECTed, every other
delivery ACCEPTed; the member commits each acknowledgement (commitSync) at once and
logs which partitions' acknowledgements failed.

Judged: an acknowledgement the broker confirmed is final — an accepted or rejected record never
delivered again; every record not rejected is accepted (none lost); a record's delivery count
never decreases (one in flight at the kill may come back at the same count: Kafka persists
acknowledgements, not acquisitions); a released record comes back. Counts per member and
overall in one JSON line. ``python -m tests.share_loop --target kafka:4.4.0`` (``--help``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import signal
import subprocess
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any

from conformance.client.wire import Connection
from conformance.protocol import ApiKey, Codec
from conformance.targets.base import Target

SOURCE = Path(__file__).with_name("java") / "ShareHarness.java"
VERSION = "4.4.0"
MEMBERS = ("a", "b")
#: the shortest acquisition lock Kafka 4.4.0 allows a group (group.share.min.record.lock
#: .duration.ms): a record whose acknowledgement was lost comes back after it at the latest
LOCK_MS = 15000


@dataclass(frozen=True)
class SharePlan:
    records: int = 300
    partitions: int = 3
    work_ms: int = 20  # per record, so that the kill falls while records are held
    kill_at: int = 100  # deliveries the members logged before the kill (0: no kill)
    down: float = 1.0  # seconds the killed brokers stay down
    deadline: float = 180.0


@dataclass
class ShareResult:
    target: str
    records: int = 0
    killed: list[int] = field(default_factory=list)
    in_flight_at_kill: int = 0  # records logged whose acknowledgement was not confirmed yet
    not_delivered_at_kill: int = 0
    deliveries: dict[str, int] = field(default_factory=dict)  # per member
    accepted: dict[str, int] = field(default_factory=dict)  # confirmed, per member
    redelivered: int = 0  # deliveries after a record's first, releases' second ones excluded
    failed_acks: int = 0  # acknowledgements whose commit failed (or threw)
    same_count_again: int = 0  # deliveries at the count of the record's previous delivery
    lost: int = 0  # records not rejected that no member accepted
    duplicated_accepted: int = 0  # records accepted (confirmed) more than once
    after_final: int = 0  # deliveries after a confirmed accept or reject
    count_decreased: int = 0
    wall: float = 0.0
    problems: list[str] = field(default_factory=list)

    def ok(self) -> bool:
        return not self.problems

    def line(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


# -- the cluster side --------------------------------------------------------------------------


@cache
def codec() -> Codec:
    return Codec.from_specs()


def ask(target: Target, api: ApiKey, version: int, body: dict[str, Any]) -> dict[str, Any]:
    """One request to the first bootstrap broker that answers."""

    async def one(host: str, port: int) -> dict[str, Any]:
        async with await Connection.open(host, port, codec=codec(), timeout=5) as c:
            return (await c.request(api, version, body, timeout=10)).body

    last: BaseException | None = None
    for ep in target.bootstrap:
        try:
            return asyncio.run(one(ep.host, ep.port))
        except (OSError, ConnectionError, TimeoutError) as e:
            last = e
    raise AssertionError(f"no broker answered {api.name}: {last!r}")


def configure_group(target: Target, group: str) -> None:
    """share.auto.offset.reset earliest (the records are written before the members join) and
    the shortest acquisition lock, as group configs (IncrementalAlterConfigs, resource 32)."""
    configs = [
        {"Name": "share.auto.offset.reset", "ConfigOperation": 0, "Value": "earliest"},
        {"Name": "share.record.lock.duration.ms", "ConfigOperation": 0, "Value": str(LOCK_MS)},
    ]
    body = {
        "Resources": [{"ResourceType": 32, "ResourceName": group, "Configs": configs}],
        "ValidateOnly": False,
    }
    answer = ask(target, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)
    assert answer["Responses"][0]["ErrorCode"] == 0, f"group configs refused: {answer}"


def victims(target: Target, topic: str, group: str) -> list[int]:
    """Partition 0's leader, the group's coordinator and partition 0's share coordinator (key
    ``group:topicId:0``, the id in URL-safe base64, as Kafka prints it), where named."""
    md = ask(
        target, ApiKey.METADATA, 12, {"Topics": [{"Name": topic, "TopicId": uuid.UUID(int=0)}]}
    )
    (t,) = md["Topics"]
    nodes = {p["LeaderId"] for p in t["Partitions"] if p["PartitionIndex"] == 0}
    printed = base64.urlsafe_b64encode(t["TopicId"].bytes).rstrip(b"=").decode()
    for key_type, key in ((0, group), (2, f"{group}:{printed}:0")):
        body = {"KeyType": key_type, "CoordinatorKeys": [key]}
        (c,) = ask(target, ApiKey.FIND_COORDINATOR, 6, body)["Coordinators"]
        if c["ErrorCode"] == 0:
            nodes.add(c["NodeId"])
    return sorted(n for n in nodes if n >= 0)


# -- the members' logs -------------------------------------------------------------------------


def read_log(path: Path) -> list[dict[str, Any]]:
    """The member's deliveries in order, each with ``confirmed``: True once a commit after it
    reported no failure for its partition, False when it failed or threw, None not yet."""
    text = path.read_text() if path.exists() else ""
    out: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for line in text.splitlines():
        if not line.startswith("{") or not line.endswith("}"):
            continue  # a line being written
        event = json.loads(line)
        if "partition" in event:
            event["confirmed"] = None
            out.append(event)
            pending.append(event)
        elif event.get("event") == "commit":
            failed = event.get("failed", {})
            for d in pending:
                d["confirmed"] = "error" not in event and str(d["partition"]) not in failed
            pending = []
    return out


def judge(result: ShareResult, logs: dict[str, list[dict[str, Any]]], records: int) -> None:
    """The counts and problems of the members' deliveries (see the module's docstring)."""
    per_value: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for name, log in logs.items():
        result.deliveries[name] = len(log)
        result.accepted[name] = sum(d["action"] == "accept" and d["confirmed"] is True for d in log)
        for d in log:
            per_value[d["value"]].append(d)
    # one member's deliveries of a value are in order; across members, by delivery count
    wanted = {str(i) for i in range(records) if not str(i).endswith("5")}
    accepts = Counter(
        d["value"]
        for ds in per_value.values()
        for d in ds
        if d["action"] == "accept" and d["confirmed"]
    )
    result.failed_acks = sum(d["confirmed"] is False for ds in per_value.values() for d in ds)
    result.lost = len({v for v in wanted if not any(d["action"] == "accept" for d in per_value[v])})
    result.duplicated_accepted = sum(n > 1 for n in accepts.values())
    for _value, ds in per_value.items():
        ds.sort(key=lambda d: d["delivery"])
        first_final = next(
            (i for i, d in enumerate(ds) if d["action"] != "release" and d["confirmed"]), None
        )
        if first_final is not None:
            result.after_final += len(ds) - first_final - 1
        for before, after in pairwise(ds):
            result.same_count_again += after["delivery"] == before["delivery"]
            result.redelivered += before["action"] != "release"
    # a member sees a record's deliveries in its own order: a count lower than its last one
    for log in logs.values():
        last: dict[str, int] = {}
        for d in log:
            result.count_decreased += d["delivery"] < last.get(d["value"], 0)
            last[d["value"]] = d["delivery"]
    for name, count in (
        ("records not rejected never accepted (lost)", result.lost),
        ("records accepted (confirmed) more than once", result.duplicated_accepted),
        ("deliveries after a confirmed accept or reject", result.after_final),
        ("deliveries at a lower count than the member saw before", result.count_decreased),
    ):
        if count:
            result.problems.append(f"{count} {name}")


# -- the loop ----------------------------------------------------------------------------------


def run_loop(target: Target, plan: SharePlan, work: Path, tag: str = "") -> ShareResult:
    """Two harness JVMs against the started ``target``, the kill at ``plan.kill_at``."""
    from conformance.targets.java_client import fetch_client, harness_classes
    from tests.support.java_members import numbered_topic, start_jvm, stop_jvms

    started = time.monotonic()
    result = ShareResult(target.describe(), records=plan.records)
    topic, group = f"share-loop{tag}", f"share-loop-group{tag}"
    classes, libs = harness_classes(VERSION, SOURCE), fetch_client(VERSION)
    bootstrap = ",".join(map(str, target.bootstrap))
    configure_group(target, group)
    numbered_topic(bootstrap, topic, plan.records, plan.partitions)
    nodes = victims(target, topic, group) if plan.kill_at else []
    stop = work / f"stop{tag}"
    procs: list[subprocess.Popen] = []
    outs = {name: work / f"{name}{tag}.jsonl" for name in MEMBERS}
    seconds = str(int(plan.deadline))
    for name, out in outs.items():
        args = [
            "ShareHarness",
            bootstrap,
            topic,
            group,
            name,
            str(stop),
            seconds,
            str(plan.work_ms),
            "each",
        ]
        procs.append(start_jvm(classes, libs, args, out, work / f"{name}{tag}.log"))

    def logs() -> dict[str, list[dict[str, Any]]]:
        return {name: read_log(out) for name, out in outs.items()}

    wanted = {str(i) for i in range(plan.records) if not str(i).endswith("5")}
    deadline = started + plan.deadline
    try:
        if plan.kill_at:
            kill_mid_stream(target, plan, result, logs, nodes, deadline)
        quiet, last_seen = 3.0, (0, time.monotonic())
        while time.monotonic() < deadline:
            now = logs()
            done = {d["value"] for log in now.values() for d in log if d["action"] == "accept"}
            seen = sum(map(len, now.values()))
            if seen != last_seen[0]:
                last_seen = (seen, time.monotonic())
            if any(d["confirmed"] is False for log in now.values() for d in log):
                quiet = LOCK_MS / 1000 + 3  # a lost acknowledgement's record comes back then
            if done >= wanted and time.monotonic() - last_seen[1] > quiet:
                break
            time.sleep(0.2)
    finally:
        stop_jvms(stop, procs)
    judge(result, logs(), plan.records)
    if plan.kill_at and not result.killed:
        result.problems.append(f"no kill: fewer than {plan.kill_at} deliveries in time")
    elif plan.kill_at and not result.not_delivered_at_kill:
        result.problems.append("the kill did not fall mid-stream (every record delivered)")
    result.wall = round(time.monotonic() - started, 1)
    return result


def kill_mid_stream(
    target: Target,
    plan: SharePlan,
    result: ShareResult,
    logs: Any,
    nodes: list[int],
    deadline: float,
) -> None:
    """Once the members logged ``plan.kill_at`` deliveries, partition 0's among them confirmed
    (what the restarted leader must remember): SIGKILL of the victims, what was held
    then noted, the victims started again ``plan.down`` s later."""
    while time.monotonic() < deadline:
        now = [d for log in logs().values() for d in log]
        held = any(d["partition"] == 0 and d["confirmed"] for d in now)
        if held and len(now) >= plan.kill_at:
            break
        time.sleep(0.02)
    else:
        return
    for node in nodes:
        target.signal_node(node, signal.SIGKILL)
    result.killed = nodes
    now = logs()
    delivered = {d["value"] for log in now.values() for d in log}
    result.in_flight_at_kill = sum(d["confirmed"] is None for log in now.values() for d in log)
    result.not_delivered_at_kill = plan.records - len(delivered)
    time.sleep(plan.down)
    target.start_nodes(nodes)


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.share_loop --target kafka:4.4.0``: one JSON line of counts; exit 1
    when it has problems."""
    import argparse
    import tempfile

    from conformance.targets import TargetOptions, make_target

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--target", default="reference")
    ap.add_argument("--records", type=int, default=SharePlan.records)
    ap.add_argument("--work-ms", type=int, default=SharePlan.work_ms)
    ap.add_argument("--kill-at", type=int, default=SharePlan.kill_at, help="0: no kill")
    ap.add_argument("--deadline", type=float, default=SharePlan.deadline)
    args = ap.parse_args(argv)
    plan = SharePlan(
        records=args.records, work_ms=args.work_ms, kill_at=args.kill_at, deadline=args.deadline
    )
    target = make_target(TargetOptions(target=args.target))
    with tempfile.TemporaryDirectory(prefix="share-loop-") as work:
        started = time.monotonic()
        target.start()
        print(f"# {target.describe()} started in {time.monotonic() - started:.1f} s", flush=True)
        try:
            result = run_loop(target, plan, Path(work))
        finally:
            target.stop()
    print(result.line(), flush=True)
    return 0 if result.ok() else 1


if __name__ == "__main__":
    raise SystemExit(main())
