"""KIP-42 interceptors of the suite's own client, exercised against the target.

Hypothesis draws interceptor chains (passing, modifying, re-keying, raising, returning junk)
and records; each example produces through the chain and reads back what was stored (see
``scenarios``). The audit test produces a few thousand records through an auditing interceptor
pair and proves each acknowledged record is read back exactly once with its checksum.
"""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.protocol import ApiKey
from conformance.suite.kip42 import env as client_env
from conformance.suite.kip42 import probes
from conformance.suite.kip42 import scenarios as sc
from conformance.suite.kip42 import strategies as kip42_strategies
from conformance.suite.kit.harness import Harness, run_property
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.safety import fresh_name

#: records of the audited round trip
AUDIT_RECORDS = 2000


@conformance(
    "kip-42/producer/interceptor-chain",
    "KIP-42.R1",
    "KIP-42.R2",
    "KIP-42.R5",
    "KIP-42.R6",
    api=ApiKey.PRODUCE,
)
def test_producer_chain(harness: Harness) -> None:
    env = client_env.harness_env(harness)
    with client_env.suite_topic(harness) as [topic]:
        run_property(
            harness,
            st.tuples(
                kip42_strategies.chains(probes.PRODUCER_BEHAVIOURS), kip42_strategies.items()
            ),
            lambda v: harness.call(sc.producer_chain(env, topic, *v)),
        )


@conformance(
    "kip-42/producer/send-errors",
    "KIP-42.R1",
    "KIP-42.R2",
    "KIP-42.R5",
    "KIP-42.R6",
    api=ApiKey.PRODUCE,
)
def test_send_errors(harness: Harness) -> None:
    env = client_env.harness_env(harness)
    with client_env.suite_topic(harness) as [topic]:
        run_property(
            harness,
            st.tuples(
                kip42_strategies.chains(probes.PRODUCER_BEHAVIOURS), st.sampled_from(sc.ERROR_KINDS)
            ),
            lambda v: harness.call(sc.producer_errors(env, topic, *v)),
        )


@conformance(
    "kip-42/consumer/interceptor-chain", "KIP-42.R3", "KIP-42.R5", "KIP-42.R6", api=ApiKey.FETCH
)
def test_consumer_chain(harness: Harness) -> None:
    env = client_env.harness_env(harness)
    with client_env.suite_topic(harness) as [topic]:
        values = st.lists(st.lists(st.integers(0, 99), max_size=3), min_size=1, max_size=6)
        run_property(
            harness,
            st.tuples(kip42_strategies.chains(probes.CONSUMER_BEHAVIOURS), values),
            lambda v: harness.call(sc.consumer_chain(env, topic, *v)),
        )


@conformance(
    "kip-42/consumer/on-commit", "KIP-42.R4", "KIP-42.R5", "KIP-42.R6", api=ApiKey.OFFSET_COMMIT
)
def test_on_commit(harness: Harness) -> None:
    env = client_env.harness_env(harness, commits=True)
    harness.pick_version(ApiKey.OFFSET_COMMIT)
    with client_env.suite_topic(harness) as [topic]:
        values = st.lists(st.lists(st.integers(0, 99), max_size=2), min_size=1, max_size=4)
        run_property(
            harness,
            st.tuples(kip42_strategies.chains(probes.CONSUMER_BEHAVIOURS), values),
            lambda v: harness.call(sc.commits(env, topic, *v, fresh_name("kip42-group"))),
        )


@conformance("kip-42/record-metadata/checksum-and-sizes", "KIP-42.R7", api=ApiKey.PRODUCE)
def test_checksum_and_sizes(harness: Harness) -> None:
    env = client_env.harness_env(harness)
    with client_env.suite_topic(harness) as [topic]:
        run_property(
            harness,
            kip42_strategies.raw_records(),
            lambda v: harness.call(sc.checksums(env, topic, v)),
        )


@conformance("kip-42/audit/exactly-once", "KIP-42.R8", api=ApiKey.FETCH)
def test_audited_round_trip(harness: Harness) -> None:
    env = client_env.harness_env(harness)
    harness.notes.seeded = True
    with client_env.suite_topic(harness) as [topic]:
        harness.call(
            sc.audited_round_trip(env, topic, AUDIT_RECORDS, seed=harness.seed or 0), timeout=300
        )
