"""Transaction answers the differential run against Apache Kafka 3.9.1 showed the reference giving
differently (``kafka-conformance diff --target reference --target kafka:3.9.1 --api
DescribeTransactions --api ListTransactions``, issue 26), pinned as Kafka gives them: a
transactional id DescribeTransactions cannot find keeps the spec's defaults (0) for its producer
id, epoch and start time (Kafka's TransactionCoordinator sets only the error), and ListTransactions
names each unknown state filter once (Kafka reads the filters as a set)."""

from __future__ import annotations

import asyncio
import time

from conformance.client.wire import Connection
from conformance.protocol import ApiKey, Codec, ErrorCode
from conformance.targets.reference import ReferenceTarget


async def answers(host: str, port: int) -> tuple[dict, dict]:
    """DescribeTransactions of an id never used, and ListTransactions with unknown filters."""
    async with await Connection.open(host, port, codec=Codec.from_specs()) as conn:
        find = {"Key": "kc-suite-tid", "KeyType": 1}
        deadline = time.monotonic() + 15  # the state topic is created on the first look-up
        while (await conn.request(ApiKey.FIND_COORDINATOR, 1, find)).body["ErrorCode"] != 0:
            assert time.monotonic() < deadline, "no transaction coordinator in 15 s"
            await asyncio.sleep(0.1)
        body = {"TransactionalIds": ["kc-suite-tid"]}
        described = (await conn.request(ApiKey.DESCRIBE_TRANSACTIONS, 0, body)).body
        filters = {"StateFilters": ["x", "Ongoing", "y", "x"], "ProducerIdFilters": []}
        listed = (await conn.request(ApiKey.LIST_TRANSACTIONS, 0, filters)).body
        return described, listed


def test_unknown_transactional_ids_and_state_filters_answered_as_kafka() -> None:
    target = ReferenceTarget(brokers=1)
    target.start()
    try:
        ep = target.bootstrap[0]
        described, listed = asyncio.run(answers(ep.host, ep.port))
    finally:
        target.stop()
    (state,) = described["TransactionStates"]
    assert state["ErrorCode"] == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, state
    assert (state["ProducerId"], state["ProducerEpoch"]) == (0, 0), state
    assert state["TransactionStartTimeMs"] == 0, state
    assert listed["UnknownStateFilters"] == ["x", "y"], listed
