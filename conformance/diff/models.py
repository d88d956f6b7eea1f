"""The state-machine models run against both targets with the same seed, their exchanges compared.

Each model test (``MODEL_TESTS``) runs through the suite's own plugin, in a process of its own per
target (``python -m conformance.diff.models``), with the wire client's ``on_exchange`` hook
recording every request a test sends and what came back. The model draws its steps from the
seed and its own state, so the same test sends the same sequence of requests to both targets as
long as their answers keep the model on the same path; the two sequences are aligned on the API
and compared step by step, each pair of answers under the mask; a run of steps only one
side took is one difference (``compare_models``).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from conformance.diff.compare import Answer, Comparison, plain
from conformance.diff.mask import RefusalRule
from conformance.protocol import ApiKey, Codec
from conformance.protocol.jsonform import from_json, to_json
from conformance.protocol.spec import ZERO_UUID
from conformance.suite.broker_registration.binding import SUITE_IDS
from conformance.suite.kit.safety import PREFIX

MODEL_TESTS = (
    "broker-registration/lifecycle/state-machine",
    "configs/topic/state-machine",
    "consumer-groups/members/state-machine",
    "groups/membership/state-machine",
    "kip-590/routing/state-machine",
    "kip-78/metadata/cluster-id/state-machine",
    "log/partition/state-machine",
    "share-groups/consumers/state-machine",
    "topics/admin/state-machine",
)
#: seconds one target's model run may take, start and stop included
RUN_TIMEOUT = 600
#: a member id drawn at random (KIP-848: by the model, or by the coordinator for a v0 join): a
#: UUID as Python writes it, or as Kafka's Uuid.toString does (22 characters of URL-safe base64)
DRAWN_MEMBER_ID = re.compile(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}|[A-Za-z0-9_-]{22}")


def record(target: str, seed: int, out: Path, tests: tuple[str, ...] = MODEL_TESTS) -> int:
    """Run the model ``tests`` against ``target`` in this process, recording into ``out``."""
    import pytest

    from conformance.client import wire

    codec = Codec.from_specs(strict=False)
    sink = out.open("w", encoding="utf-8")

    def exchange(api_key: int, version: int, body: dict, result: object) -> None:
        test = os.environ.get("PYTEST_CURRENT_TEST", "")
        if not test.endswith("(call)"):
            return  # the target's start and the suite's set-up are not the model's steps
        row: dict[str, Any] = {"test": test.removesuffix(" (call)"), "api_key": api_key}
        row["version"] = version
        row["request"] = plain(to_json(codec.message(api_key, "request"), body, version))
        if isinstance(result, Exception):
            row["outcome"] = type(result).__name__
        else:
            row["outcome"] = "answered"
            spec = codec.message(api_key, "response")
            row["response"] = plain(to_json(spec, result.body, version))  # type: ignore[attr-defined]
        sink.write(json.dumps(row, default=str) + "\n")

    wire.on_exchange = exchange
    try:
        args = ["--pyargs", "conformance.suite", "-p", "no:cacheprovider", "-q"]
        args += [f"--target={target}", f"--seed={seed}", "--select=" + " or ".join(tests)]
        args.append(f"--results-dir={out.parent / (out.stem + '-results')}")
        return int(pytest.main(args))
    finally:
        wire.on_exchange = None
        sink.close()


def run_models(
    targets: tuple[str, str], seed: int, out_dir: Path, tests: tuple[str, ...] = MODEL_TESTS
) -> list[Path]:
    """Record the models against each target, one after the other (a process each)."""
    paths = []
    for i, target in enumerate(targets):
        path = out_dir / f"models-{i + 1}.jsonl"
        cmd = [sys.executable, "-m", "conformance.diff.models", target, str(seed), str(path)]
        cmd.append(",".join(tests))
        with (out_dir / f"models-{i + 1}.log").open("w") as log:
            subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT)
        paths.append(path)
    return paths


def _steps(path: Path, refused: Refused | None = None) -> dict[str, list[dict]]:
    """Each test's exchanges, its suite names made alike (by order of first appearance in the
    test's requests, then in its answers: the models draw fresh random names, so the same step
    names different topics, and a target lists groups or topics in an order of its own; so are
    random member ids, ``DRAWN_MEMBER_ID``, two different ids staying different, and the
    topic ids each target drew, through the topic's name), a
    request or a short cycle of them repeated back to back kept once with its last answers
    (``_collapse``: the suite's helpers poll until a target shows a change), and a refusal the
    mask names followed by its retry elsewhere kept as the retry alone (``_retried``)."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""  # a run that broke
    rows = [json.loads(line) for line in text.splitlines()]
    if refused is not None:
        rows = _retried(rows, refused)
    names: dict[str, dict[str, Any]] = {}
    topics: dict[str, Topics] = {}
    for row in rows:
        _topic_names(row, topics.setdefault(row["test"], Topics()).names)
    for row in rows:
        _alike(row["request"], names.setdefault(row["test"], {}), topics[row["test"]])
    out: dict[str, list[dict]] = {}
    for row in rows:
        steps = out.setdefault(row["test"], [])
        row = _alike(row, names[row["test"]], topics[row["test"]])
        if steps and _per_coordinator(steps[-1], row):
            steps[-1] = _merged(steps[-1], row)
        else:
            steps.append(row)
        _collapse(steps)
    return out


class Refused:
    """Which of the second target's answers are refusals the mask names (``refusals``), and how
    many steps each entry explained."""

    def __init__(self, codec: Codec, rules: list[RefusalRule], hidden: Counter[str]) -> None:
        self.codec, self.rules, self.hidden = codec, rules, hidden

    def rule(self, row: dict) -> RefusalRule | None:
        """The entry that names ``row``'s answer: every entry of it refused with its error."""
        if row["outcome"] != "answered" or not self.rules:
            return None
        body = row.get("response") or {}
        entries = body.get("Topics") or body.get("Responses") or body.get("Results") or []
        codes: set[int | None] = {e.get("ErrorCode") for e in entries if isinstance(e, dict)}
        api = _name(self.codec, row["api_key"])
        for r in self.rules:
            if r.names(api, codes):
                return r
        return None


def _retried(rows: list[dict], refused: Refused) -> list[dict]:
    """The rows with each refusal that was sent again elsewhere left out, with the Metadata
    that looked up where (a client meeting NOT_CONTROLLER asks Metadata for the controller and
    retries there, as ``records_io.admin_call`` does): the retry's answer is the step."""
    out: list[dict] = []
    i = 0
    while i < len(rows):
        row, rule = rows[i], refused.rule(rows[i])
        if rule is not None:
            later = [r for r in rows[i + 1 : i + 3] if r["test"] == row["test"]]
            lookup = bool(later) and later[0]["api_key"] == ApiKey.METADATA
            retry = later[1:2] if lookup else later[:1]
            if retry and _same_request(row, retry[0]):
                refused.hidden[rule.id] += 1
                i += 1 + lookup
                continue
        out.append(row)
        i += 1
    return out


def _group_names(row: dict) -> set[str]:
    if row["api_key"] == ApiKey.DESCRIBE_GROUPS:
        return set(row["request"].get("Groups") or [])
    return {g.get("GroupId") for g in (row.get("response") or {}).get("Groups") or []}


def _per_coordinator(x: dict, y: dict) -> bool:
    """Whether ``y`` continues ``x``'s look at the groups: the groups model asks each group's
    coordinator for its groups (DescribeGroups, after the one its step's own check sent) and each
    of those brokers for its list (ListGroups), so how many requests a look takes is where each
    target placed its groups. DescribeGroups back to back are one look; ListGroups when the
    groups listed differ (the same groups listed again is a poll's next round)."""
    if x["api_key"] != y["api_key"] or x["api_key"] not in (
        ApiKey.DESCRIBE_GROUPS,
        ApiKey.LIST_GROUPS,
    ):
        return False
    if x["version"] != y["version"] or {x["outcome"], y["outcome"]} != {"answered"}:
        return False
    if x["api_key"] == ApiKey.DESCRIBE_GROUPS:
        return True
    return x["request"] == y["request"] and not _group_names(x) & _group_names(y)


def _merged(x: dict, y: dict) -> dict:
    """One step for the look at the groups ``x`` and ``y`` took together: their groups in one
    list (by name, each group's later answer)."""
    out = {**y, "response": {**y["response"]}}
    if x["api_key"] == ApiKey.DESCRIBE_GROUPS:
        answers = {g.get("GroupId"): g for g in x["response"].get("Groups") or []}
        answers.update({g.get("GroupId"): g for g in y["response"].get("Groups") or []})
        names = set(x["request"].get("Groups") or []) | set(y["request"].get("Groups") or [])
        out["request"] = {**y["request"], "Groups": sorted(names)}
        out["response"]["Groups"] = [answers[n] for n in sorted(answers, key=str)]
    else:
        out["response"]["Groups"] = list(x["response"].get("Groups") or []) + list(
            y["response"].get("Groups") or []
        )
        out["response"]["ErrorCode"] = x["response"].get("ErrorCode") or y["response"].get(
            "ErrorCode"
        )
    return out


#: APIs that only read, of which a poll's rounds are made
READS = frozenset(
    {
        ApiKey.METADATA,
        ApiKey.DESCRIBE_CONFIGS,
        ApiKey.DESCRIBE_CLUSTER,
        ApiKey.DESCRIBE_GROUPS,
        ApiKey.LIST_GROUPS,
        ApiKey.LIST_OFFSETS,
        ApiKey.OFFSET_FETCH,
        ApiKey.FIND_COORDINATOR,
        ApiKey.DESCRIBE_TOPIC_PARTITIONS,
    }
)
#: the longest cycle of requests a poll repeats (a model reading two views in turn until both
#: show a change: Metadata, then DescribeConfigs, again)
POLL_CYCLE = 3
#: the longest cycle of requests sent again exactly, whatever they are, that is a poll: the
#: consumer-group model's members each heartbeating with what they own, then ConsumerGroupDescribe,
#: until the assignment settles (a member sends the same heartbeat again only while the answers
#: changed nothing it holds; how many rounds that takes is each target's timing)
REPEATED_CYCLE = 6


def _collapse(steps: list[dict]) -> None:
    """A poll repeated until the target shows a change kept once, with its last answers: when the
    last step sends the request of the one before it, when the last few steps (up to
    ``REPEATED_CYCLE``) send again exactly the requests of the few before them, or is a read
    sending the request of a step
    up to ``POLL_CYCLE`` back with only reads of other APIs between (a round: Metadata, then
    DescribeConfigs of the topics it listed, again; the last round may be shorter), the earlier
    steps from that one on go (how many rounds a poll takes is each target's timing)."""
    if len(steps) >= 2 and _same_request(steps[-2], steps[-1]):
        del steps[-2]
        return
    for k in range(2, REPEATED_CYCLE + 1):
        if len(steps) >= 2 * k and all(
            _same_request(steps[-k - i], steps[-i]) for i in range(1, k + 1)
        ):
            del steps[-2 * k : -k]
            return
    if steps[-1]["api_key"] not in READS:
        return
    for e in range(len(steps) - 2, max(len(steps) - 2 - POLL_CYCLE, 0) - 1, -1):
        if _same_request(steps[e], steps[-1]):
            del steps[e:-1]
            return
        if steps[e]["api_key"] not in READS or steps[e]["api_key"] == steps[-1]["api_key"]:
            return  # a write, or another read of the same API: the model's own steps


def _repeats(steps: list[dict], i1: int, i2: int) -> bool:
    """Whether each of ``steps[i1:i2]`` repeats the request of the step just before the run or
    just after it, whatever the version: the same request again that only one side sent (a
    model that draws each request's version from the target's own range sends an exact repeat,
    kept once, by chance on one side; a poll that settled at another count)."""

    def same(x: dict, y: dict) -> bool:  # the fields both versions have, alike
        a, b = x["request"], y["request"]
        return x["api_key"] == y["api_key"] and all(a[k] == b[k] for k in a.keys() & b.keys())

    around = [steps[k] for k in (i1 - 1, i2) if 0 <= k < len(steps)]
    return all(any(same(s, n) for n in around) for s in steps[i1:i2])


def _same_request(x: dict, y: dict) -> bool:
    return (x["api_key"], x["version"], x["request"]) == (y["api_key"], y["version"], y["request"])


def _topic_names(value: Any, out: dict[str, str]) -> None:
    """Each topic id an exchange pairs with a suite topic's name (CreateTopics, Metadata and
    ConsumerGroupDescribe answers name both), into ``out``."""
    if isinstance(value, dict):
        name, tid = value.get("Name", value.get("TopicName")), value.get("TopicId")
        if isinstance(name, str) and name.startswith(PREFIX) and isinstance(tid, str):
            if tid != str(ZERO_UUID):
                out.setdefault(tid, name)
        value = list(value.values())
    if isinstance(value, list):
        for v in value:
            _topic_names(v, out)


@dataclass
class Topics:
    """A test's topic ids by the suite name each belongs to (``_topic_names``), and the ids
    seen per name, in order (a topic deleted and made again has another)."""

    names: dict[str, str] = field(default_factory=dict)
    ids: dict[str, list[str]] = field(default_factory=dict)

    def alike(self, value: str, alias: dict[str, Any]) -> str:
        """The id each target drew for the same topic (the n-th of a name): one made-up UUID."""
        name = self.names[value]
        ids = self.ids.setdefault(name, [])
        if value not in ids:
            ids.append(value)
        named = _alike(name, alias, self)
        return str(uuid.uuid5(uuid.NAMESPACE_OID, f"{named}#{ids.index(value)}"))


def _alike(value: Any, alias: dict[str, Any], topics: Topics, key: str = "") -> Any:
    if key == "MemberId" and isinstance(value, str) and DRAWN_MEMBER_ID.fullmatch(value):
        return alias.setdefault(f"#member{value}", f"{PREFIX}member{len(alias)}")
    if key == "TopicId" and isinstance(value, str) and value in topics.names:
        return topics.alike(value, alias)
    if isinstance(value, str) and value.startswith(PREFIX) and value != PREFIX:
        return alias.setdefault(value, f"{PREFIX}m{len(alias)}")
    if isinstance(value, int) and not isinstance(value, bool) and SUITE_IDS <= value < 2**31:
        # the broker-registration model's fake broker ids: a block drawn afresh per process
        return alias.setdefault(f"#id{value}", SUITE_IDS + len(alias))
    if isinstance(value, dict):
        return {k: _alike(v, alias, topics, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_alike(v, alias, topics) for v in value]
    return value


def _answer(codec: Codec, row: dict) -> Answer:
    if row["outcome"] != "answered":
        return Answer(row["outcome"])
    spec = codec.message(row["api_key"], "response")
    return Answer("answered", from_json(spec, row["response"]))


def _name(codec: Codec, api_key: int) -> str:
    return codec.message(api_key, "request").name.removesuffix("Request")


class ModelRow(TypedDict, total=False):
    """One model test's line of the summary: step counts, and why it was not compared."""

    steps_a: int
    steps_b: int
    compared: int
    other_version: int
    repeats: int
    differences: int
    refused: int  # steps the second target refused and the first did not (not compared)
    not_compared: str  # the mask's model rule: a model the second target cannot run at all


def compare_models(
    codec: Codec, comparison: Comparison, paths: list[Path]
) -> tuple[list[dict[str, Any]], dict[str, ModelRow]]:
    """(differences, per test: steps on each side, steps compared, differences).

    The two sequences of a test are aligned on the API as a text diff aligns lines: the pairs it
    matches are compared answer by answer where both sent the same version (a model picks
    versions from what each target advertises, which the ApiVersions comparison judges); each
    run of steps only one side took (a retry after a transient error, another path) is one
    ``<sequence>`` difference naming them.
    """
    refused = Refused(codec, comparison.mask.refusal_rules(comparison.other), comparison.hidden)
    a, b = _steps(paths[0]), _steps(paths[1], refused)
    differences: list[dict[str, Any]] = []
    summary: dict[str, ModelRow] = {}
    for test in sorted(set(a) | set(b)):
        sa, sb = a.get(test, []), b.get(test, [])
        row = ModelRow(steps_a=len(sa), steps_b=len(sb), compared=0, other_version=0)
        row["repeats"] = 0
        row["differences"] = 0
        summary[test] = row
        cannot = comparison.mask.model_rule(test, comparison.other) if not sb else None
        if cannot is not None:  # a model the second target cannot run at all
            comparison.hidden[cannot.id] += len(sa)
            row["not_compared"] = cannot.id
            continue
        keys_a = [x["api_key"] for x in sa]
        keys_b = [y["api_key"] for y in sb]
        matcher = difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag in ("insert", "delete") and _repeats(sa, i1, i2) and _repeats(sb, j1, j2):
                row["repeats"] += i2 - i1 + j2 - j1
                continue
            stop = refused.rule(sb[-1]) if sb and tag == "delete" and j1 == len(sb) else None
            if stop is not None and i2 == len(sa):
                # the second target's run ended at a refusal its model does not retry (the
                # model's check failed there): what the first's model did after it is no step
                # the second could have taken
                comparison.hidden[stop.id] += i2 - i1
                row["refused"] = row.get("refused", 0) + i2 - i1
                continue
            if tag != "equal":
                x = (sa[i1:i2] or sb[j1:j2])[0]
                only_a = [f"{_name(codec, s['api_key'])} v{s['version']}" for s in sa[i1:i2]]
                only_b = [f"{_name(codec, s['api_key'])} v{s['version']}" for s in sb[j1:j2]]
                differences.append(
                    {
                        "api": _name(codec, x["api_key"]),
                        "api_key": x["api_key"],
                        "version": x["version"],
                        "index": i1,
                        "label": f"model {test} steps {i1}-{i2} / {j1}-{j2}",
                        "path": "<sequence>",
                        "a": only_a,
                        "b": only_b,
                        "request": x["request"],
                    }
                )
                row["differences"] += 1
                continue
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                if sa[i]["version"] != sb[j]["version"]:
                    row["other_version"] += 1  # each side's pick from its own advertised range
                    continue
                rule = refused.rule(sb[j])
                if rule is not None and refused.rule(sa[i]) is None:
                    comparison.hidden[rule.id] += 1  # a refusal not retried: nothing to compare
                    row["refused"] = row.get("refused", 0) + 1
                    continue
                row["compared"] += 1
                found = _step(codec, comparison, sa[i], sb[j])
                for d in found:
                    differences.append(
                        {
                            "api": _name(codec, sa[i]["api_key"]),
                            "api_key": sa[i]["api_key"],
                            "version": sa[i]["version"],
                            "index": i,
                            "label": f"model {test} step {i}/{j}",
                            "path": d.path,
                            "a": d.a,
                            "b": d.b,
                            "request": sa[i]["request"],
                        }
                    )
                row["differences"] += len(found)
    return differences, summary


def _step(codec: Codec, comparison: Comparison, x: dict, y: dict) -> list:
    request = from_json(codec.message(x["api_key"], "request"), x["request"])
    fields = codec.message(x["api_key"], "response").struct.fields
    name = _name(codec, x["api_key"])
    return comparison.answers(
        name, x["version"], fields, _answer(codec, x), _answer(codec, y), request
    )


if __name__ == "__main__":
    chosen = tuple(sys.argv[4].split(",")) if len(sys.argv) > 4 else MODEL_TESTS
    sys.exit(record(sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]), chosen))
