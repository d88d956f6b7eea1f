"""Topic configuration semantics (``specs/requirements/configs.json``) on a topic the suite
makes: sources of defaults and overrides, AlterConfigs' whole-set replacement, the four
incremental operations, refusals, validate-only, every broker's view, unknown topics,
described and altered."""

from __future__ import annotations

from collections.abc import Callable

from conformance.protocol import ApiKey, ConfigOperation, ErrorCode
from conformance.suite.configs.topic_configs import (
    TOPIC_CONFIG,
    Configs,
    alter,
    configs_of,
    describe,
    incremental,
    items,
    settle,
    source_name,
)
from conformance.suite.kit import brokers as cluster
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, SyncConnection
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.provision import Topics, delete_topics
from conformance.suite.kit.safety import fresh_name

RETENTION, MAX_BYTES, POLICY = "retention.ms", "max.message.bytes", "cleanup.policy"


def policy(configs: Configs) -> set[str]:
    return items(configs.get(POLICY, (None,))[0])


def overrides(configs: Configs) -> dict[str, str | None]:
    return {k: v for k, (v, s) in configs.items() if s == TOPIC_CONFIG}


def once_shown(
    harness: Harness, conn: SyncConnection, topic: str, holds: Callable[[Configs], bool], req: str
) -> Configs:
    """The topic's configs through ``conn`` once every broker shows a change as ``holds`` says
    (``settle``, bounded): a broker applies a change a moment after the controller acknowledged
    it, so a DescribeConfigs asked right after can still show the value before."""
    settle(harness, topic, holds, req)
    return configs_of(harness, conn, topic, req)


@conformance("configs/topic/default-sources", "CONFIGS.R1", api=ApiKey.DESCRIBE_CONFIGS)
def test_default_sources(harness: Harness) -> None:
    with Topics(harness, "configs", given=False) as topics:
        (topic,) = topics
        first = configs_of(harness, harness.connect(), topic, "CONFIGS.R1")
        verify.check(RETENTION in first, f"DescribeConfigs lists no {RETENTION}", "CONFIGS.R1")
        verify.check(
            not overrides(first),
            f"a topic created without configs reports TOPIC_CONFIG for {overrides(first)}",
            "CONFIGS.R1",
        )


@conformance("configs/describe/named-keys", "CONFIGS.R11", api=ApiKey.DESCRIBE_CONFIGS)
def test_named_keys(harness: Harness) -> None:
    with Topics(harness, "configs", given=False) as topics:
        (topic,) = topics
        keys = [RETENTION, POLICY]
        got = describe(harness, harness.connect(), [topic], keys, req="CONFIGS.R11")[topic][1]
        verify.check(
            set(got) == set(keys),
            f"DescribeConfigs naming {keys} answered {sorted(got)}",
            "CONFIGS.R11",
        )


@conformance(
    "configs/topic/override-everywhere", "CONFIGS.R2", "CONFIGS.R9", api=ApiKey.DESCRIBE_CONFIGS
)
def test_override_through_every_broker(harness: Harness) -> None:
    harness.require(ApiKey.INCREMENTAL_ALTER_CONFIGS)
    with Topics(harness, "configs", given=False) as topics:
        (topic,) = topics
        conn = harness.connect()
        code = incremental(harness, conn, topic, [(RETENTION, ConfigOperation.SET, "3600000")])
        verify.check(
            code == ErrorCode.NONE, f"IncrementalAlterConfigs SET answered {code}", "CONFIGS.R2"
        )
        want = ("3600000", TOPIC_CONFIG)
        mine = once_shown(harness, conn, topic, lambda c: c.get(RETENTION) == want, "CONFIGS.R2")
        verify.check(
            mine.get(RETENTION) == want,
            f"after SET {RETENTION}=3600000 the broker that took it reports "
            f"{mine.get(RETENTION)} (source {source_name(mine.get(RETENTION, (0, 0))[1])})",
            "CONFIGS.R2",
        )
        views = settle(harness, topic, lambda c: c.get(RETENTION) == want, "CONFIGS.R9")
        wrong = {w: v.get(RETENTION) for w, v in views.items() if v.get(RETENTION) != want}
        verify.check(
            not wrong,
            f"brokers still report {RETENTION} as {wrong} after the change was acknowledged",
            "CONFIGS.R9",
        )


@conformance("configs/alter/replaces-whole-set", "CONFIGS.R3", api=ApiKey.ALTER_CONFIGS)
def test_alter_replaces_the_whole_set(harness: Harness) -> None:
    harness.require(ApiKey.ALTER_CONFIGS)
    harness.require(ApiKey.INCREMENTAL_ALTER_CONFIGS)
    with Topics(harness, "configs", given=False) as topics:
        (topic,) = topics
        conn = harness.connect()
        code = incremental(harness, conn, topic, [(RETENTION, ConfigOperation.SET, "3600000")])
        verify.check(
            code == ErrorCode.NONE, f"IncrementalAlterConfigs SET answered {code}", "CONFIGS.R3"
        )
        code = alter(harness, conn, topic, {MAX_BYTES: "2000000"})
        verify.check(code == ErrorCode.NONE, f"AlterConfigs answered {code}", "CONFIGS.R3")
        want = {MAX_BYTES: "2000000"}
        got = once_shown(harness, conn, topic, lambda c: overrides(c) == want, "CONFIGS.R3")
        verify.check(
            overrides(got) == {MAX_BYTES: "2000000"},
            f"after AlterConfigs with only {MAX_BYTES}=2000000 (and {RETENTION} set before) "
            f"the topic's overrides are {overrides(got)}",
            "CONFIGS.R3",
        )


@conformance("configs/incremental/set-delete", "CONFIGS.R4", api=ApiKey.INCREMENTAL_ALTER_CONFIGS)
def test_set_and_delete(harness: Harness) -> None:
    harness.require(ApiKey.INCREMENTAL_ALTER_CONFIGS)
    with Topics(harness, "configs", given=False) as topics:
        (topic,) = topics
        conn = harness.connect()
        default = configs_of(harness, conn, topic, "CONFIGS.R4")
        code = incremental(
            harness,
            conn,
            topic,
            [
                (RETENTION, ConfigOperation.SET, "3600000"),
                (MAX_BYTES, ConfigOperation.SET, "2000000"),
            ],
        )
        verify.check(code == ErrorCode.NONE, f"SET of two configs answered {code}", "CONFIGS.R4")
        code = incremental(harness, conn, topic, [(RETENTION, ConfigOperation.DELETE, None)])
        verify.check(code == ErrorCode.NONE, f"DELETE answered {code}", "CONFIGS.R4")
        want = {MAX_BYTES: "2000000"}
        got = once_shown(harness, conn, topic, lambda c: overrides(c) == want, "CONFIGS.R4")
        verify.check(
            overrides(got) == {MAX_BYTES: "2000000"}
            and got.get(RETENTION, (None,))[0] == default.get(RETENTION, (None,))[0],
            f"after SET {RETENTION}, {MAX_BYTES} then DELETE {RETENTION}: overrides "
            f"{overrides(got)}, {RETENTION} = {got.get(RETENTION)} (default "
            f"{default.get(RETENTION)})",
            "CONFIGS.R4",
        )


@conformance(
    "configs/incremental/append-subtract", "CONFIGS.R5", api=ApiKey.INCREMENTAL_ALTER_CONFIGS
)
def test_append_and_subtract(harness: Harness) -> None:
    harness.require(ApiKey.INCREMENTAL_ALTER_CONFIGS)
    with Topics(harness, "configs", given=False) as topics:
        (topic,) = topics
        conn = harness.connect()
        default = configs_of(harness, conn, topic, "CONFIGS.R5")
        base = items(default.get(POLICY, ("delete",))[0])
        code = incremental(harness, conn, topic, [(POLICY, ConfigOperation.APPEND, "compact")])
        verify.check(code == ErrorCode.NONE, f"APPEND to {POLICY} answered {code}", "CONFIGS.R5")
        appended = base | {"compact"}
        got = once_shown(harness, conn, topic, lambda c: policy(c) == appended, "CONFIGS.R5")
        verify.check(
            items(got.get(POLICY, (None,))[0]) == base | {"compact"},
            f"APPEND compact to {POLICY} (was {sorted(base)}): {got.get(POLICY)}",
            "CONFIGS.R5",
        )
        code = incremental(harness, conn, topic, [(POLICY, ConfigOperation.SUBTRACT, "delete")])
        verify.check(
            code == ErrorCode.NONE, f"SUBTRACT from {POLICY} answered {code}", "CONFIGS.R5"
        )
        left = appended - {"delete"}
        got = once_shown(harness, conn, topic, lambda c: policy(c) == left, "CONFIGS.R5")
        verify.check(
            items(got.get(POLICY, (None,))[0]) == left,
            f"SUBTRACT delete from {POLICY}: {got.get(POLICY)}",
            "CONFIGS.R5",
        )


def refusals(harness: Harness, req: str) -> None:
    """One kind of refusal (or validate-only) through IncrementalAlterConfigs, and through
    AlterConfigs where the target advertises it."""
    harness.require(ApiKey.INCREMENTAL_ALTER_CONFIGS)
    with Topics(harness, "configs", given=False) as topics:
        (topic,) = topics
        conn = harness.connect()
        code = incremental(harness, conn, topic, [(MAX_BYTES, ConfigOperation.SET, "2000000")])
        verify.check(code == ErrorCode.NONE, f"SET answered {code}", req)
        before = once_shown(
            harness, conn, topic, lambda c: c.get(MAX_BYTES, (None,))[0] == "2000000", req
        )
        unknown = "kc.no.such.config"
        cases = [
            (
                "CONFIGS.R6",
                "AlterConfigs of an unknown config",
                ErrorCode.INVALID_CONFIG,
                lambda v: alter(harness, conn, topic, {unknown: "1"}, validate_only=v),
            ),
            (
                "CONFIGS.R6",
                "IncrementalAlterConfigs SET of an unknown config",
                ErrorCode.INVALID_CONFIG,
                lambda v: incremental(
                    harness, conn, topic, [(unknown, ConfigOperation.SET, "1")], validate_only=v
                ),
            ),
            (
                "CONFIGS.R7",
                f"AlterConfigs {RETENTION}=not-a-number",
                ErrorCode.INVALID_CONFIG,
                lambda v: alter(harness, conn, topic, {RETENTION: "not-a-number"}, validate_only=v),
            ),
            (
                "CONFIGS.R7",
                f"IncrementalAlterConfigs SET {RETENTION}=not-a-number",
                ErrorCode.INVALID_CONFIG,
                lambda v: incremental(
                    harness,
                    conn,
                    topic,
                    [(RETENTION, ConfigOperation.SET, "not-a-number")],
                    validate_only=v,
                ),
            ),
            (
                "CONFIGS.R8",
                f"AlterConfigs {RETENTION}=3600000",
                ErrorCode.NONE,
                lambda v: alter(harness, conn, topic, {RETENTION: "3600000"}, validate_only=v),
            ),
            (
                "CONFIGS.R8",
                f"IncrementalAlterConfigs SET {RETENTION}=3600000",
                ErrorCode.NONE,
                lambda v: incremental(
                    harness,
                    conn,
                    topic,
                    [(RETENTION, ConfigOperation.SET, "3600000")],
                    validate_only=v,
                ),
            ),
        ]
        cases = [c for c in cases if c[0] == req]
        if ApiKey.ALTER_CONFIGS not in harness.advertised:
            cases = [c for c in cases if not c[1].startswith("AlterConfigs")]
        for req, what, want, send in cases:
            # a refused change is tried for real, then validate-only; a valid one only as a check
            for validate_only in (False, True) if want != ErrorCode.NONE else (True,):
                mode = " (validate only)" if validate_only else ""
                code = send(validate_only)
                # validate-only answers as the change would be answered; its checks name the
                # requirement of the change (CONFIGS.R8 for a valid one)
                named = req
                verify.check(code == want, f"{what}{mode} answered {code}; expected {want}", named)
                after = configs_of(harness, conn, topic, req)
                changed = {
                    k: (before.get(k), after.get(k))
                    for k in set(before) | set(after)
                    if before.get(k) != after.get(k)
                }
                verify.check(
                    not changed,
                    f"{what}{mode} changed the topic's configs (name: (value, source) before, "
                    f"after): {changed}",
                    named,
                )


@conformance("configs/refusals/unknown-name", "CONFIGS.R6", api=ApiKey.INCREMENTAL_ALTER_CONFIGS)
def test_unknown_name_refused(harness: Harness) -> None:
    refusals(harness, "CONFIGS.R6")


@conformance("configs/refusals/invalid-value", "CONFIGS.R7", api=ApiKey.INCREMENTAL_ALTER_CONFIGS)
def test_invalid_value_refused(harness: Harness) -> None:
    refusals(harness, "CONFIGS.R7")


@conformance("configs/refusals/validate-only", "CONFIGS.R8", api=ApiKey.INCREMENTAL_ALTER_CONFIGS)
def test_validate_only_changes_nothing(harness: Harness) -> None:
    refusals(harness, "CONFIGS.R8")


@conformance("configs/describe/unknown-topic", "CONFIGS.R10", api=ApiKey.DESCRIBE_CONFIGS)
def test_unknown_topic(harness: Harness) -> None:
    harness.require(ApiKey.DESCRIBE_CONFIGS, None)
    ghost = fresh_name("never")
    with Topics(harness, "configs", given=False) as topics:
        (topic,) = topics
        for b in cluster.brokers(harness):
            got = describe(harness, harness.connect(b.endpoint), [ghost, topic], req="CONFIGS.R10")
            verify.check(
                got.get(ghost, (None,))[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                f"DescribeConfigs through {b} of topic {ghost}, which does not exist, answered "
                f"error {got.get(ghost, (None,))[0]}; expected UNKNOWN_TOPIC_OR_PARTITION",
                "CONFIGS.R10",
            )
            code, configs = got.get(topic, (None, {}))
            verify.check(
                code == ErrorCode.NONE and configs,
                f"DescribeConfigs through {b}: the existing topic {topic} asked alongside "
                f"answered error {code} with {len(configs)} configs",
                "CONFIGS.R10",
            )


@conformance("configs/alter/unknown-topic", "CONFIGS.R12", api=ApiKey.INCREMENTAL_ALTER_CONFIGS)
def test_altering_an_unknown_topic(harness: Harness) -> None:
    """Through every broker, a change to a topic that does not exist is refused and creates
    nothing (a target that created it anyway gets it deleted: it has a suite name)."""
    harness.require(ApiKey.INCREMENTAL_ALTER_CONFIGS)
    ghost = fresh_name("never")
    change = [(RETENTION, ConfigOperation.SET, "3600000")]
    sends = [("IncrementalAlterConfigs SET", lambda c: incremental(harness, c, ghost, change))]
    if ApiKey.ALTER_CONFIGS in harness.advertised:
        sends.append(("AlterConfigs", lambda c: alter(harness, c, ghost, {RETENTION: "3600000"})))
    try:
        for b in cluster.brokers(harness):
            conn = harness.connect(b.endpoint)
            for what, send in sends:
                code = send(conn)
                verify.check(
                    code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    f"{what} {RETENTION}=3600000 through {b} of topic {ghost}, which does not "
                    f"exist, answered error {code}; expected UNKNOWN_TOPIC_OR_PARTITION",
                    "CONFIGS.R12",
                )
        if ApiKey.DESCRIBE_CONFIGS in harness.advertised:
            code, configs = describe(harness, harness.connect(), [ghost], req="CONFIGS.R12").get(
                ghost, (None, {})
            )
            verify.check(
                code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                f"after the changes to {ghost}, which did not exist, DescribeConfigs of it "
                f"answered error {code} with {len(configs)} configs; expected "
                "UNKNOWN_TOPIC_OR_PARTITION (nothing created)",
                "CONFIGS.R12",
            )
    finally:
        delete_topics(harness, [ghost])
