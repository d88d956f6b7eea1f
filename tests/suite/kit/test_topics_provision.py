"""Topics without CreateTopics (issue 24): the suite judges LOG, GROUPS and OFFSETS on a target
that hides CreateTopics or refuses it, through auto-creation or topics the user gives; a fault
behind such a target still FAILs; with no way to obtain a topic the requirements are SKIP
saying so (never UNSUPPORTED) and the run counts them.

The reference cluster (3 brokers) runs behind ``faults_log.ProxiedCluster``; the topic faults
are ``faults_topics``. The reference auto-creates as Kafka does by default (Metadata v4+
AllowAutoTopicCreation, num.partitions 1), so auto-created topics have one partition.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest

from conformance.protocol import ApiKey, Codec
from conformance.results.verdicts import MissingPrecondition, NotApplicable
from conformance.suite.groups import test_administration, test_membership, test_membership_model
from conformance.suite.kip590 import test_forwarding
from conformance.suite.kit import credit, verify
from conformance.suite.kit.brokers import brokers
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.provision import Obtained, delete_topics, give, obtain, release
from conformance.suite.log import test_delete_then_use, test_partition_model, test_produce_fetch
from conformance.suite.offsets import test_commit_fetch
from conformance.suite.topics import test_create_topics
from tests.support import in_process
from tests.support.faults_groups import generation_not_bumped
from tests.support.faults_log import (
    EveryWriteToPartitionZero,
    Fault,
    HeadersDropped,
    HighWatermarkOffByOne,
    ListOffsetsOffByOne,
    ProxiedCluster,
)
from tests.support.faults_topics import (
    Chain,
    HideApis,
    HideCreateTopics,
    NoAutoCreation,
    RefuseCreateTopics,
)
from tests.support.runs import verdicts

CODEC = Codec.from_specs()
SEED = 20261123
#: one test each of LOG, GROUPS and OFFSETS that writes to a topic of its own
JUDGED = (
    "log/fetch/high-watermark-after-acks-all",
    "groups/list-and-delete",
    "offsets/commit-fetch/read-back",
)
ROUND_TRIP = test_produce_fetch.test_acknowledged_records_are_fetched_as_produced
NAMED_PARTITION = test_produce_fetch.test_a_write_lands_in_the_partition_it_names
READ_BACK = test_commit_fetch.test_simple_commits_read_back
RECREATED = test_delete_then_use.test_a_deleted_topic_is_gone_and_comes_back_empty
LOG_MODEL = test_partition_model.test_partition_log_state_machine
GROUPS_MODEL = test_membership_model.test_groups_state_machine


def NoGrowth() -> HideApis:
    """A broker without CreateTopics or CreatePartitions: a 3-partition topic must be given."""
    return HideApis(ApiKey.CREATE_TOPICS, ApiKey.CREATE_PARTITIONS)


#: the suite's seed fixed, as the LOG faults' tests fix it (the reference cluster is conftest's)
fixed_seed = in_process.fixed_seed


def run(cluster: ProxiedCluster, fn: Callable, topics: str | None = None) -> BaseException | None:
    """One suite test through the proxies, as the plugin runs it: what ended it, or None."""
    harness = Harness(cluster.target(), CODEC, examples=3, seed=SEED)
    try:
        harness.open()
        give(harness, topics)
        fn(harness)
    except (verify.Failed, NotApplicable) as e:
        return e
    finally:
        harness.close()
    return None


@pytest.fixture
def three_partitions(reference) -> Iterator[Callable[[], str]]:
    """Makes empty 3-partition topics on the reference directly, as a user would before giving
    them to the suite (a given topic is used by one test, which expects it empty), each led by
    the first broker, as the tests of where a write lands want."""
    harness = Harness(reference, CODEC)
    harness.open()
    first = brokers(harness)[0].node_id
    made: list[str] = []

    def make() -> str:
        made.append(obtain(harness, "given", 3, on_broker=first).name)
        harness.end_test()
        return made[-1]

    yield make
    delete_topics(harness, made)
    harness.close()


def test_log_groups_offsets_are_judged_with_create_topics_hidden(cli, reference) -> None:
    hide = HideCreateTopics()
    with ProxiedCluster(reference, hide) as cluster:
        proc, run_ = cli(
            "--bootstrap-server",
            cluster.bootstrap,
            "--seed",
            str(SEED),
            "--select",
            " or ".join(JUDGED),
        )
    assert run_ is not None, proc.stderr[-2000:]
    got = verdicts(run_)
    assert {t for t, _ in got} == set(JUDGED), got
    assert set(got.values()) == {"PASS"}, got
    assert hide.changed > 0


def test_log_groups_offsets_are_judged_with_create_topics_refused(reference) -> None:
    refuse = RefuseCreateTopics()
    with ProxiedCluster(reference, refuse) as cluster:
        for fn in (ROUND_TRIP, test_administration.test_list_and_delete, READ_BACK, RECREATED):
            assert run(cluster, fn) is None, fn.__name__
    # refused once per run (request and answer rewritten), then each run went on without it
    assert refuse.changed == 2 * 4, refuse.changed
    # a test judging CreateTopics itself cannot judge a refused one: SKIP, not FAIL
    with ProxiedCluster(reference, RefuseCreateTopics()) as cluster:
        judged = run(cluster, test_create_topics.test_an_existing_topic_is_refused)
    assert isinstance(judged, MissingPrecondition), judged
    # judged at the oldest and the newest version (4be1da2): the first one tried is refused
    assert re.search(r"CreateTopics v\d+ refused \(TOPIC_AUTHORIZATION_FAILED\)", str(judged)), (
        judged
    )
    # nor can KIP-590's forwarding of one, sent to each broker by its model
    with ProxiedCluster(reference, RefuseCreateTopics()) as cluster:
        judged = run(cluster, test_forwarding.test_create_topics_through_each_broker)
    assert isinstance(judged, MissingPrecondition), judged
    assert "refused (TOPIC_AUTHORIZATION_FAILED)" in str(judged), judged


def test_no_way_to_obtain_a_topic_is_skip_and_counted(cli, reference) -> None:
    with ProxiedCluster(reference, Chain(HideCreateTopics(), NoAutoCreation())) as cluster:
        proc, run_ = cli("--bootstrap-server", cluster.bootstrap, "--select", " or ".join(JUDGED))
    assert run_ is not None, proc.stderr[-2000:]
    unset = [r for r in run_.records if r["test_id"] != "groups/list-and-delete"]
    assert unset and {r["verdict"] for r in unset} == {"SKIP"}, verdicts(run_)
    message = unset[0]["message"]
    assert message.startswith("no way to obtain a topic: CreateTopics not advertised; "), message
    assert "no auto-creation (Metadata v" in message and "none given (--topics)" in message
    count = len({r["requirement_id"] for r in run_.records if r["verdict"] == "SKIP"})
    assert f"{count} requirements could not be set up" in proc.stdout, proc.stdout[-1500:]


def test_more_partitions_than_auto_creation_gives_says_so_or_takes_a_given_topic(
    reference, three_partitions
) -> None:
    named, prefixed = three_partitions(), three_partitions()
    got: list[Obtained] = []

    def grow(harness: Harness) -> None:
        got.append(obtain(harness, "grown", 3))
        release(harness, got)

    with ProxiedCluster(reference, HideCreateTopics()) as cluster:
        grown = run(cluster, grow)
    fixed = HideApis(ApiKey.CREATE_TOPICS, ApiKey.CREATE_PARTITIONS)
    with ProxiedCluster(reference, fixed) as cluster:
        skipped = run(cluster, NAMED_PARTITION)
        given = run(cluster, NAMED_PARTITION, topics=f"kc-nothing-here,{named}")
        by_prefix = run(cluster, NAMED_PARTITION, topics=f"{prefixed[:-3]}*")
    assert grown is None and got[0].partitions == 3, (grown, got)
    assert got[0].how == "auto-creation (Metadata v12), grown by CreatePartitions", got
    assert isinstance(skipped, NotApplicable), skipped
    assert (
        "auto-creation gives 1 partition, the test needs at least 3 (no CreatePartitions to "
        "grow it); none given (--topics)" in str(skipped)
    ), skipped
    assert given is None and by_prefix is None, (given, by_prefix)
    # a given topic is the user's: the suite wrote to it and did not delete it
    harness = Harness(reference, CODEC)
    try:
        harness.open()
        body = {"Topics": [{"Name": n} for n in (named, prefixed)], "AllowAutoTopicCreation": False}
        topics = harness.connect().request(ApiKey.METADATA, 9, body).body["Topics"]
    finally:
        harness.close()
    assert [(t["ErrorCode"], len(t["Partitions"])) for t in topics] == [(0, 3)] * 2, topics


@pytest.mark.parametrize(
    ("topic_fault", "data_fault", "req"),
    [
        (HideCreateTopics, HeadersDropped, "LOG.R1"),
        (RefuseCreateTopics, HeadersDropped, "LOG.R1"),
        (HideCreateTopics, EveryWriteToPartitionZero, "LOG.R3"),
        (NoGrowth, EveryWriteToPartitionZero, "LOG.R3"),
    ],
)
def test_a_fault_behind_a_target_without_create_topics_fails(
    reference, three_partitions, topic_fault, data_fault, req: str
) -> None:
    data: Fault = data_fault()
    fn = ROUND_TRIP if req == "LOG.R1" else NAMED_PARTITION
    with ProxiedCluster(reference, Chain(topic_fault(), data)) as cluster:
        failure = run(cluster, fn, topics=three_partitions())
    assert data.changed > 0, f"{data_fault.__name__} rewrote nothing"
    assert isinstance(failure, verify.Failed) and req in failure.req_ids, failure


def test_clean_up_a_target_lacks_never_decides_a_verdict(reference) -> None:
    """A group test deletes its group where DeleteGroups is advertised; without it the test is
    judged all the same (the suite-named group stays), not UNSUPPORTED."""
    hide = HideApis(ApiKey.DELETE_GROUPS)
    with ProxiedCluster(reference, hide) as cluster:
        assert run(cluster, test_membership.test_rounds) is None
    assert hide.changed > 0


# --- the state machines and the group tests on a target without CreateTopics -------------------

LOG_JUDGED = ("LOG.R1", "LOG.R2", "LOG.R6", "LOG.R7", "LOG.R10")
GROUPS_JUDGED = tuple(f"GROUPS.R{n}" for n in (3, 4, 5, 6, 7, 8, 9, 20, 21))
#: the requirements judging the group administration APIs a classic-only broker lacks
GROUPS_ADMIN = tuple(f"GROUPS.R{n}" for n in (13, 14, 15, 17, 18, 19))


def ClassicGroupsOnly() -> HideApis:
    """A small broker: no CreateTopics, and of the group APIs only the classic ones (JoinGroup,
    SyncGroup, Heartbeat, LeaveGroup, OffsetCommit/Fetch, FindCoordinator)."""
    return HideApis(
        ApiKey.CREATE_TOPICS, ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS, ApiKey.DELETE_GROUPS
    )


class GenerationNotBumped(Fault):
    """JoinGroup answers always carry the first generation (GROUPS.R3)."""

    responses = (ApiKey.JOIN_GROUP,)

    def on_response(self, api, version, body, asked) -> bool:
        return generation_not_bumped(api, version, body)


def ledger_of(
    cluster: ProxiedCluster, fn: Callable, topics: str | None = None
) -> tuple[BaseException | None, credit.Ledger]:
    """``run`` of one suite test, with what it credited and why it could not check the rest."""
    got: list[credit.Ledger] = []

    def kept(harness: Harness) -> None:
        try:
            fn(harness)
        finally:
            got.append(credit.current())

    ended = run(cluster, kept, topics)
    return ended, got[0]


def GivenOnly() -> Chain:
    """Neither CreateTopics nor auto-creation: the topics must be given (--topics)."""
    return Chain(HideCreateTopics(), NoAutoCreation())


@pytest.mark.parametrize("topic_fault", [HideCreateTopics, RefuseCreateTopics, GivenOnly])
def test_the_log_model_is_judged_on_obtained_topics(
    reference, three_partitions, topic_fault
) -> None:
    fault = topic_fault()
    given = f"{three_partitions()},{three_partitions()}" if topic_fault is GivenOnly else None
    with ProxiedCluster(reference, fault) as cluster:
        ended, ledger = ledger_of(cluster, LOG_MODEL, given)
    assert ended is None, ended
    assert all(ledger.credited(r) for r in LOG_JUDGED), ledger.observed
    verdict, why = ledger.without_checks("LOG.R17")
    assert not ledger.credited("LOG.R17") and verdict.value == "SKIP", (verdict, why)
    assert why.startswith("set-up needs what the target does not offer: CreateTopics "), why
    assert fault.changed > 0


def test_groups_are_judged_on_a_broker_with_only_the_classic_group_apis(reference) -> None:
    hide = ClassicGroupsOnly()
    with ProxiedCluster(reference, hide) as cluster:
        model, model_ledger = ledger_of(cluster, GROUPS_MODEL)
        expiry, expiry_ledger = ledger_of(cluster, test_membership.test_session_expiry)
    assert model is None and expiry is None, (model, expiry)
    assert all(model_ledger.credited(r) for r in GROUPS_JUDGED), model_ledger.observed
    for r in GROUPS_ADMIN:  # what judges the APIs the broker lacks stays UNSUPPORTED
        verdict, why = model_ledger.without_checks(r)
        assert verdict.value == "UNSUPPORTED" and "not advertised" in why, (r, verdict, why)
    assert expiry_ledger.credited("GROUPS.R10"), expiry_ledger.observed


@pytest.mark.parametrize(
    ("topic_fault", "data_fault", "model", "req"),
    [
        (HideCreateTopics, HighWatermarkOffByOne, LOG_MODEL, "LOG.R6"),
        (ClassicGroupsOnly, GenerationNotBumped, GROUPS_MODEL, "GROUPS.R3"),
        (RefuseCreateTopics, ListOffsetsOffByOne, RECREATED, "LOG.R17"),
    ],
)
def test_a_fault_behind_a_target_without_create_topics_fails_the_model(
    reference, topic_fault, data_fault, model, req: str
) -> None:
    data: Fault = data_fault()
    with ProxiedCluster(reference, Chain(topic_fault(), data)) as cluster:
        ended, _ = ledger_of(cluster, model)
    assert data.changed > 0, f"{data_fault.__name__} rewrote nothing"
    assert isinstance(ended, verify.Failed) and req in ended.req_ids, ended
