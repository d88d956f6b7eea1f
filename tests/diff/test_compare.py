"""The differential mode's mask and comparison, on answers made up here (no target)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from conformance.diff import mask as maskmod
from conformance.diff.compare import Answer, Comparison
from conformance.diff.stream import build, parse_selection
from conformance.protocol import ApiKey, Codec

CODEC = Codec.from_specs(strict=False)
METADATA = CODEC.message(ApiKey.METADATA, "response").struct.fields
FIND = CODEC.message(ApiKey.FIND_COORDINATOR, "response").struct.fields


def _mask(tmp_path: Path, fields: list[dict], versions: list[dict] | None = None) -> maskmod.Mask:
    path = tmp_path / "mask.json"
    path.write_text(json.dumps({"fields": fields, "versions": versions or []}))
    return maskmod.load(path)


def _metadata(topics: list[tuple[str, int]], port: int = 9092) -> dict:
    broker = {"NodeId": 1, "Host": "127.0.0.1", "Port": port, "Rack": None}
    return {
        "ThrottleTimeMs": 0,
        "Brokers": [broker],
        "ClusterId": "abc",
        "ControllerId": 1,
        "Topics": [
            {
                "ErrorCode": code,
                "Name": name,
                "TopicId": uuid.UUID(int=0),
                "IsInternal": False,
                "Partitions": [],
                "TopicAuthorizedOperations": -2147483648,
            }
            for name, code in topics
        ],
        "ClusterAuthorizedOperations": -2147483648,
    }


def test_the_projects_mask_loads_and_every_entry_has_a_reason() -> None:
    mask = maskmod.load()
    entries = mask.entries()
    assert len(entries) >= 10
    assert all(e["reason"].strip() for e in entries)
    assert len({e["id"] for e in entries}) == len(entries)


def test_an_entry_without_a_reason_is_refused(tmp_path: Path) -> None:
    with pytest.raises(maskmod.MaskError, match="without a reason"):
        _mask(tmp_path, [{"id": "x", "path": "ThrottleTimeMs", "compare": "ignore"}])
    with pytest.raises(maskmod.MaskError, match="compare must be"):
        _mask(tmp_path, [{"id": "x", "path": "P", "compare": "sometimes", "reason": "r"}])


def test_lists_with_a_map_key_are_matched_by_key_and_each_difference_named(tmp_path) -> None:
    cmp = Comparison(_mask(tmp_path, []), "kafka:4.4.0")
    a = Answer("answered", _metadata([("t1", 0), ("t2", 3)]))
    b = Answer("answered", _metadata([("t2", 3), ("t1", 5), ("t3", 0)], port=9093))
    found = {(d.path, str(d.a), str(d.b)) for d in cmp.answers("Metadata", 12, METADATA, a, b)}
    assert ("Brokers[1].Port", "9092", "9093") in found
    assert ("Topics[t1].ErrorCode", "0", "5") in found
    assert any(p == "Topics[t3]" and x == "<absent>" for p, x, _ in found)
    assert not any(p.startswith("Topics[t2]") for p, _, _ in found)


def test_the_mask_hides_only_what_it_names_and_counts_it(tmp_path: Path) -> None:
    mask = _mask(
        tmp_path,
        [
            {"id": "ports", "path": "*Port", "compare": "ignore", "reason": "drawn"},
            {
                "id": "t1-code",
                "apis": ["Metadata"],
                "path": "Topics[].ErrorCode",
                "compare": "pairs",
                "pairs": [[0, 5]],
                "reason": "made up",
            },
        ],
    )
    cmp = Comparison(mask, "kafka:4.4.0")
    a = Answer("answered", _metadata([("t1", 0), ("t2", 3)]))
    b = Answer("answered", _metadata([("t1", 5), ("t2", 7)], port=1))
    found = [(d.path, d.a, d.b) for d in cmp.answers("Metadata", 12, METADATA, a, b)]
    assert found == [("Topics[t2].ErrorCode", 3, 7)]
    assert cmp.hidden == {"ports": 1, "t1-code": 1}


def test_request_conditions_and_outcomes(tmp_path: Path) -> None:
    mask = _mask(
        tmp_path,
        [
            {
                "id": "txn",
                "apis": ["FindCoordinator"],
                "path": "ErrorCode",
                "request": {"KeyType": 1},
                "compare": "pairs",
                "pairs": [[15, 0]],
                "reason": "no transaction coordinator",
            }
        ],
    )
    cmp = Comparison(mask, "kafka:4.4.0")
    body = {"ThrottleTimeMs": 0, "ErrorCode": 15, "ErrorMessage": None, "NodeId": 1}
    a, b = Answer("answered", body), Answer("answered", {**body, "ErrorCode": 0})
    assert cmp.answers("FindCoordinator", 1, FIND, a, b, {"KeyType": 1}) == []
    assert [d.path for d in cmp.answers("FindCoordinator", 1, FIND, a, b, {"KeyType": 0})] == [
        "ErrorCode"
    ]
    closed = Answer("closed", None, "reset")
    assert [(d.path, d.a, d.b) for d in cmp.answers("FindCoordinator", 1, FIND, a, closed)] == [
        ("<outcome>", "answered", "closed")
    ]


def test_the_stream_is_the_same_at_the_same_seed_names_made_alike() -> None:
    advertised = {int(ApiKey.DESCRIBE_GROUPS): (0, 5), int(ApiKey.METADATA): (0, 12)}
    select = [parse_selection("DescribeGroups"), parse_selection("Metadata:9-10")]
    one = build(CODEC, advertised, 7, 2, select)
    two = build(CODEC, advertised, 7, 2, select)
    assert [(r.api_key, r.version, r.label, r.body) for r in one] == [
        (r.api_key, r.version, r.label, r.body) for r in two
    ]
    assert {(r.api_key, r.version) for r in one} == {
        *((15, v) for v in range(6)),
        (3, 9),
        (3, 10),
    }
    names = {g for r in one if r.api_key == 15 for g in r.body["Groups"]}
    assert names and all(n.startswith("kc-suite-d") for n in names)


def test_model_exchanges_are_aligned_polls_collapsed_names_alike(tmp_path: Path) -> None:
    from conformance.diff.models import compare_models

    def step(name: str, code: int, api: int = 3) -> dict:
        request = {"Topics": [{"Name": name}], "AllowAutoTopicCreation": False}
        topic = {"ErrorCode": code, "Name": name, "Partitions": []}
        return {"api_key": api, "version": 12, "request": request, "outcome": "answered"} | {
            "response": {"Brokers": [], "Topics": [topic]}
        }

    def write(path: Path, steps: list[dict]) -> Path:
        path.write_text("".join(json.dumps({"test": "t", **s}) + "\n" for s in steps))
        return path

    a = write(tmp_path / "a.jsonl", [step("kc-suite-x1", 0), step("kc-suite-x2", 3)])
    b = write(
        tmp_path / "b.jsonl",
        [step("kc-suite-y1", 3), step("kc-suite-y1", 0), step("kc-suite-y2", 0)],
    )
    found, summary = compare_models(CODEC, Comparison(_mask(tmp_path, []), "k"), [a, b])
    assert summary["t"] == {
        "steps_a": 2,
        "steps_b": 2,
        "compared": 2,
        "other_version": 0,
        "repeats": 0,
        "differences": 1,
    }
    assert [(d["index"], d["path"], d["a"], d["b"]) for d in found] == [
        (1, "Topics[kc-suite-m1].ErrorCode", 3, 0)
    ]


def test_model_repeats_on_one_side_and_fake_broker_ids_are_not_differences(tmp_path) -> None:
    """A request sent again at another version on one side only is a repeat, not a step the
    other missed; the broker-registration model's ids, drawn per process, are aliased."""
    from conformance.diff.models import compare_models

    def step(broker: int, version: int = 12, api: int = 3) -> dict:
        request = {"Topics": [], "AllowAutoTopicCreation": False}
        node = {"NodeId": broker, "Host": "h", "Port": 1, "Rack": None}
        body = {"Brokers": [node], "Topics": []}
        return {"api_key": api, "version": version, "request": request, "outcome": "answered"} | {
            "response": body
        }

    def write(path: Path, steps: list[dict]) -> Path:
        path.write_text("".join(json.dumps({"test": "t", **s}) + "\n" for s in steps))
        return path

    a = write(tmp_path / "a.jsonl", [step(1_955_351_072), step(1_955_351_072, 11)])
    b = write(tmp_path / "b.jsonl", [step(2_016_531_680)])
    found, summary = compare_models(CODEC, Comparison(_mask(tmp_path, []), "k"), [a, b])
    assert (summary["t"]["compared"], summary["t"]["repeats"], found) == (1, 1, [])
    c = write(tmp_path / "c.jsonl", [step(2_016_531_680), step(2_016_531_681)])
    found, summary = compare_models(CODEC, Comparison(_mask(tmp_path, []), "k"), [a, c])
    assert [d["path"] for d in found] == ["Brokers[1900000000]", "Brokers[1900000001]"]


def test_a_poll_of_read_rounds_is_kept_once_other_rounds_are_steps() -> None:
    """Rounds of reads starting with the same request (Metadata, then DescribeConfigs of what it
    listed) are a poll, kept once; rounds with a write in them are the model's own steps."""
    from conformance.diff.models import _collapse

    def step(api: int, request: dict) -> dict:
        return {"api_key": api, "version": 4, "request": request}

    meta = step(3, {"Topics": None})
    steps: list[dict] = []
    for names in (["a"], ["a", "b"]):
        for s in (meta, step(32, {"Resources": names})):
            steps.append(s)
            _collapse(steps)
    assert steps == [meta, step(32, {"Resources": ["a", "b"]})]
    steps = []
    for value in ("1", "2"):
        for s in (step(32, {"Resources": ["a"]}), step(44, {"Value": value})):
            steps.append(s)
            _collapse(steps)
    assert len(steps) == 4
    steps = []
    for s in (step(20, {"Topics": ["a"]}), meta, step(32, {"Resources": ["a"]}), meta):
        steps.append(s)
        _collapse(steps)
    assert steps == [step(20, {"Topics": ["a"]}), meta], "a last round may be shorter"


def test_a_cycle_of_requests_sent_again_exactly_is_a_poll_kept_once() -> None:
    """Members heartbeating with what they own, then a describe, until the assignment settles:
    each round sending exactly the requests of the one before is a poll, kept once with its
    last answers (how many rounds a target takes is its timing); a round whose requests
    changed (a member acted on an answer) is a step of its own."""
    from conformance.diff.models import _collapse

    def step(api: int, request: dict, answer: int = 0) -> dict:
        return {"api_key": api, "version": 1, "request": request, "response": {"n": answer}}

    def rounds(answers: list[int], then: int) -> list[dict]:
        steps: list[dict] = []
        for n in answers:
            for member in ("a", "b"):
                steps.append(step(68, {"MemberId": member, "Epoch": 1}, n))
                _collapse(steps)
            steps.append(step(69, {"GroupIds": ["g"]}, n))
            _collapse(steps)
        steps.append(step(68, {"MemberId": "a", "Epoch": then}))
        _collapse(steps)
        return steps

    # one target takes five rounds to show the change (answer 1), the other two
    slow, fast = rounds([0, 0, 0, 0, 1], 2), rounds([0, 1], 2)
    assert slow == fast and len(slow) == 4 and slow[0]["response"] == {"n": 1}
    # a round with another request is kept: three rounds, the second's heartbeat at epoch 2
    steps: list[dict] = []
    for epoch in (1, 2, 1):
        for s in (step(68, {"MemberId": "a", "Epoch": epoch}), step(69, {"GroupIds": ["g"]})):
            steps.append(s)
            _collapse(steps)
    assert len(steps) == 6


def test_the_groups_looked_at_per_coordinator_are_one_step(tmp_path: Path) -> None:
    """DescribeGroups sent to each group's coordinator, ListGroups to each of those brokers:
    one step each, however the target placed the groups; asking again is a poll's round."""
    from conformance.diff.models import _steps

    def row(api: int, request: dict, groups: list[dict]) -> dict:
        body = {"ThrottleTimeMs": 0, "ErrorCode": 0, "Groups": groups}
        step = {"test": "t", "api_key": api, "version": 5, "request": request}
        return step | {"outcome": "answered", "response": body}

    def look(groups: list[list[str]]) -> list[dict]:
        rows = [row(15, {"Groups": g}, [{"GroupId": n} for n in g]) for g in groups]
        return rows + [row(16, {}, [{"GroupId": n} for n in g]) for g in groups]

    def steps(groups: list[list[str]], rounds: int) -> list[tuple]:
        path = tmp_path / f"m{len(groups)}-{rounds}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in look(groups) * rounds))
        return [
            (s["api_key"], sorted(g["GroupId"] for g in s["response"]["Groups"]))
            for s in _steps(path)["t"]
        ]

    one = steps([["kc-suite-a", "kc-suite-b"]], 1)
    assert one == [(15, ["kc-suite-m0", "kc-suite-m1"]), (16, ["kc-suite-m0", "kc-suite-m1"])]
    assert steps([["kc-suite-a"], ["kc-suite-b"]], 3) == one
    assert steps([["kc-suite-b"], ["kc-suite-b", "kc-suite-a"]], 1)[0] == one[0]


def test_a_refusal_retried_elsewhere_is_the_retry_and_one_that_stops_a_model_is_named(
    tmp_path: Path,
) -> None:
    """ZooKeeper-mode Kafka's NOT_CONTROLLER, then Metadata and the same CreateTopics at the
    controller: one step, the retry's answer compared, counted against the mask entry; a refusal
    not retried (a model sending to a broker it names) ends that side's run, and what the other
    side did after it is counted there too; only for the target kind the entry names."""
    from conformance.diff.models import compare_models

    def create(name: str, code: int) -> dict:
        request = {"Topics": [{"Name": name, "NumPartitions": 1, "ReplicationFactor": 1}]}
        topic = {"Name": name, "ErrorCode": code, "NumPartitions": 1 if code == 0 else -1}
        return {"api_key": 19, "version": 7, "request": request | {"timeoutMs": 1}} | {
            "outcome": "answered",
            "response": {"ThrottleTimeMs": 0, "Topics": [topic]},
        }

    lookup = {"api_key": 3, "version": 12, "outcome": "answered"} | {
        "request": {"Topics": [], "AllowAutoTopicCreation": False},
        "response": {"Brokers": [], "Topics": []},
    }

    def write(path: Path, steps: list[dict], test: str = "t") -> Path:
        path.write_text("".join(json.dumps({"test": test, **s}) + "\n" for s in steps))
        return path

    entry = {"id": "not-controller", "apis": ["CreateTopics"], "error": 41, "reason": "why"}
    entry["when"] = "kafka:*store=zookeeper*"
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"fields": [], "refusals": [entry]}))
    mask = maskmod.load(path)
    zk, kraft = "kafka:3.9.1?store=zookeeper", "kafka:3.9.1"
    a = write(tmp_path / "a.jsonl", [create("kc-suite-a", 0), create("kc-suite-b", 0)])
    b = write(
        tmp_path / "b.jsonl",
        [create("kc-suite-a", 41), lookup, create("kc-suite-a", 0), create("kc-suite-b", 0)],
    )
    comparison = Comparison(mask, zk, "models")
    found, summary = compare_models(CODEC, comparison, [a, b])
    assert (found, summary["t"]["compared"], comparison.hidden["not-controller"]) == ([], 2, 1)
    found, _ = compare_models(CODEC, Comparison(mask, kraft, "models"), [a, b])
    assert [d["path"] for d in found] == ["<sequence>"], "only where the entry says"
    stopped = write(tmp_path / "c.jsonl", [create("kc-suite-a", 41)])
    comparison = Comparison(mask, zk, "models")
    found, summary = compare_models(CODEC, comparison, [a, stopped])
    assert (found, summary["t"]["refused"], comparison.hidden["not-controller"]) == ([], 2, 2)
    found, _ = compare_models(CODEC, Comparison(mask, kraft, "models"), [a, stopped])
    assert {d["path"] for d in found} >= {"<sequence>", "Topics[kc-suite-m0].ErrorCode"}
    entry["error"] = 0
    path.write_text(json.dumps({"refusals": [entry]}))
    with pytest.raises(maskmod.MaskError, match="error code"):
        maskmod.load(path)


def test_a_model_the_second_target_cannot_run_is_named_not_compared(tmp_path: Path) -> None:
    """A model test with no steps on the second target is left out only where a ``models``
    entry names it for that target kind (its first target's steps counted there)."""
    from conformance.diff.models import compare_models

    step = {"api_key": 3, "version": 12, "outcome": "answered"} | {
        "request": {"Topics": [], "AllowAutoTopicCreation": False},
        "response": {"Brokers": [], "Topics": []},
    }
    test = "conformance/suite/x/test_m.py::test_state_machine"
    a = tmp_path / "a.jsonl"
    a.write_text(json.dumps({"test": test, **step}) + "\n")
    b = tmp_path / "b.jsonl"
    b.write_text("")
    entry = {"id": "no-listener", "tests": ["*/x/test_m.py::*"], "reason": "why"}
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"models": [entry | {"when": "kafka:*store=zookeeper*"}]}))
    comparison = Comparison(maskmod.load(path), "kafka:3.9.1?store=zookeeper", "models")
    found, summary = compare_models(CODEC, comparison, [a, b])
    assert (found, summary[test]["not_compared"], comparison.hidden["no-listener"]) == (
        [],
        "no-listener",
        1,
    )
    found, _ = compare_models(CODEC, Comparison(maskmod.load(path), "kafka:3.9.1"), [a, b])
    assert [d["path"] for d in found] == ["<sequence>"]
    path.write_text(json.dumps({"models": [entry | {"tests": []}]}))
    with pytest.raises(maskmod.MaskError, match="tests"):
        maskmod.load(path)


def test_request_conditions_bound_numbers_and_look_into_every_element(tmp_path: Path) -> None:
    """A bound ({"<": 0}) holds for numbers only; a path with [*] holds when one element
    meets the condition; a malformed bound is refused when the mask loads."""
    entry = {
        "id": "negative-partition",
        "apis": ["FindCoordinator"],
        "path": "ErrorCode",
        "request": {"Groups[*].Partitions[*]": {"<": 0}, "TimeoutMs": {"<=": 0}},
        "compare": "pairs",
        "pairs": [[15, 0]],
        "reason": "made up",
    }
    cmp = Comparison(_mask(tmp_path, [entry]), "kafka:4.4.0")
    body = {"ThrottleTimeMs": 0, "ErrorCode": 15, "ErrorMessage": None, "NodeId": 1}
    a, b = Answer("answered", body), Answer("answered", {**body, "ErrorCode": 0})

    def differs(request: dict) -> bool:
        return bool(cmp.answers("FindCoordinator", 1, FIND, a, b, request))

    groups = [{"Partitions": [0, 1]}, {"Partitions": [2, -3]}]
    assert not differs({"Groups": groups, "TimeoutMs": -5})
    assert not differs({"Groups": groups, "TimeoutMs": 0})
    assert differs({"Groups": groups, "TimeoutMs": 1})
    assert differs({"Groups": groups[:1], "TimeoutMs": -5})
    assert differs({"Groups": [], "TimeoutMs": -5})
    assert differs({"Groups": groups, "TimeoutMs": None})
    assert maskmod.lookup({"Groups": groups}, "Groups[1].Partitions[1]") == -3
    bad = {**entry, "request": {"TimeoutMs": {"~": 0}}}
    with pytest.raises(maskmod.MaskError, match=r"negative-partition.*a bound is one of"):
        _mask(tmp_path, [bad])


def _heartbeat_step(sent: str, answered: str, topic: str | None = None) -> dict:
    """A recorded ConsumerGroupHeartbeat v1 step: the member id sent and answered, and the
    topic id of its assignment (none: no assignment)."""
    request = {"GroupId": "kc-suite-g", "MemberId": sent, "MemberEpoch": 0}
    assignment = (
        None if topic is None else {"TopicPartitions": [{"TopicId": topic, "Partitions": [0]}]}
    )
    body = {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "MemberId": answered}
    body |= {"MemberEpoch": 1, "HeartbeatIntervalMs": 5000, "Assignment": assignment}
    return {"api_key": 68, "version": 1, "request": request, "outcome": "answered"} | {
        "response": body
    }


def _written(path: Path, steps: list[dict]) -> Path:
    path.write_text("".join(json.dumps({"test": "t", **s}) + "\n" for s in steps))
    return path


def test_model_member_ids_drawn_per_run_are_aliased_and_stay_distinct(tmp_path) -> None:
    """KIP-848 member ids the model (a UUID) or a coordinator (Kafka's 22-character Uuid text)
    draws differ per run: aliased by first appearance, so the same member matches on both
    sides, while an answer naming another member than the request still differs."""
    from conformance.diff.models import compare_models

    step, write = _heartbeat_step, _written
    ours, theirs = str(uuid.uuid4()), str(uuid.uuid4())
    a = write(tmp_path / "a.jsonl", [step(ours, ours), step("", "AAAAAAAAAAAAAAAAAAAAAA")])
    b = write(tmp_path / "b.jsonl", [step(theirs, theirs), step("", "fWk3b-ZtT0KV_5Xn2Dq1cw")])
    found, summary = compare_models(CODEC, Comparison(_mask(tmp_path, []), "k"), [a, b])
    assert (summary["t"]["compared"], found) == (2, [])
    c = write(tmp_path / "c.jsonl", [step(theirs, str(uuid.uuid4())), step("", "x")])
    found, _ = compare_models(CODEC, Comparison(_mask(tmp_path, []), "k"), [a, c])
    assert [(d["index"], d["path"]) for d in found] == [(0, "MemberId"), (1, "MemberId")]


def test_model_topic_ids_are_aliased_through_their_names(tmp_path) -> None:
    """Each target draws its own id for a topic: an id an answer pairs with a suite topic's
    name is made alike through that name, so an assignment naming the same topic by id matches,
    and one naming another topic still differs."""
    from conformance.diff.models import compare_models

    def metadata(ids: dict[str, str]) -> dict:
        topics = [
            {"ErrorCode": 0, "Name": n, "TopicId": t, "IsInternal": False, "Partitions": []}
            for n, t in ids.items()
        ]
        asked = [{"TopicId": str(uuid.UUID(int=0)), "Name": n} for n in sorted(ids)]
        request = {"Topics": asked, "AllowAutoTopicCreation": False}
        return {"api_key": 3, "version": 12, "request": request, "outcome": "answered"} | {
            "response": {"Brokers": [], "Topics": topics}
        }

    def heartbeat(topic: str) -> dict:
        return _heartbeat_step("m", "m", topic)

    write = _written
    x, y, u, v = (str(uuid.uuid4()) for _ in range(4))
    a = write(tmp_path / "a.jsonl", [metadata({"kc-suite-1": x, "kc-suite-2": y}), heartbeat(x)])
    b = write(tmp_path / "b.jsonl", [metadata({"kc-suite-2": v, "kc-suite-1": u}), heartbeat(u)])
    found, _ = compare_models(CODEC, Comparison(_mask(tmp_path, []), "k"), [a, b])
    assert found == []
    c = write(tmp_path / "c.jsonl", [metadata({"kc-suite-2": v, "kc-suite-1": u}), heartbeat(v)])
    found, _ = compare_models(CODEC, Comparison(_mask(tmp_path, []), "k"), [a, c])
    assert {d["path"].split("[")[0] for d in found} == {"Assignment.TopicPartitions"}


def test_diff_model_option_names_the_model_tests(monkeypatch) -> None:
    """``diff --model TEST`` (repeatable) runs the models with just those tests (e.g. the
    share-group or consumer-group model alone; both are among MODEL_TESTS' defaults)."""
    from conformance import cli
    from conformance.diff import runner
    from conformance.diff.mask import MaskError

    seen = []

    def fake(opts):
        seen.append(opts)
        raise MaskError("stop here")

    monkeypatch.setattr(runner, "run_diff", fake)
    argv = ["diff", "--target", "reference", "--target", "kafka:4.4.0"]
    argv += ["--model", "share-groups/consumers/state-machine", "--model", "x/y"]
    assert cli.main(argv) == 2
    assert seen[0].models is True
    assert seen[0].model_tests == ("share-groups/consumers/state-machine", "x/y")
    from conformance.diff.models import MODEL_TESTS

    defaults = {"share-groups/consumers/state-machine", "consumer-groups/members/state-machine"}
    assert defaults <= set(MODEL_TESTS)
