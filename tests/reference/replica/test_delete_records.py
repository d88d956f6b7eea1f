"""DeleteRecords (21) on the reference: the leader moves its log start offset (-1: the high
watermark), refuses an offset past the high watermark, a follower and an unknown partition;
ListOffsets EARLIEST and Fetch then follow; followers learn it; a restart keeps it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.records import build_batch, encode_batch
from reference_impl.log import LogConfig, PartitionLog, parse_header
from tests.reference.data_plane import MiniCluster, fetch_body, produce_body, wait_until


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def batch(*values: bytes) -> bytes:
    return encode_batch(build_batch([(1_000 + i, None, v) for i, v in enumerate(values)]))


def test_advance_start_deletes_whole_segments_and_survives_a_reopen(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path, LogConfig(segment_bytes=300))
    for i in range(20):
        raw = batch(b"x" * 50, b"%d" % i)
        log.append_as_leader(raw, parse_header(raw), 0)
    assert len(log.segments) > 3
    assert log.advance_start(13) == 13
    assert log.segments[0].base_offset <= 13 < log.segments[0].next_offset
    assert log.advance_start(5) == 13, "the log start never moves back"
    assert log.advance_start(10**6) == log.log_end_offset == 40, "never past the log end"
    log.close()
    reopened = PartitionLog(tmp_path, LogConfig(segment_bytes=300))
    assert reopened.log_start_offset == 40
    reopened.close()


async def delete(c: MiniCluster, broker: int, offset: int, *, topic="t", index=0, version=2):
    conn = await c.connect(broker)
    try:
        body = {
            "Topics": [
                {"Name": topic, "Partitions": [{"PartitionIndex": index, "Offset": offset}]}
            ],
            "TimeoutMs": 5000,
        }
        resp = await conn.request(ApiKey.DELETE_RECORDS, version, body)
    finally:
        await conn.close()
    part = resp.body["Topics"][0]["Partitions"][0]
    return part["ErrorCode"], part["LowWatermark"]


async def earliest_and_fetch(c: MiniCluster, broker: int, offset: int) -> tuple[int, int, int]:
    """ListOffsets EARLIEST, Fetch at ``offset``'s error code and its answer's LogStartOffset."""
    conn = await c.connect(broker)
    try:
        lo = await conn.request(
            ApiKey.LIST_OFFSETS,
            7,
            {
                "ReplicaId": -1,
                "IsolationLevel": 0,
                "Topics": [
                    {
                        "Name": "t",
                        "Partitions": [
                            {"PartitionIndex": 0, "CurrentLeaderEpoch": -1, "Timestamp": -2}
                        ],
                    }
                ],
            },
        )
        f = await conn.request(ApiKey.FETCH, 12, fetch_body("t", offset))
    finally:
        await conn.close()
    fp = f.body["Responses"][0]["Partitions"][0]
    return lo.body["Topics"][0]["Partitions"][0]["Offset"], fp["ErrorCode"], fp["LogStartOffset"]


def test_delete_records_on_a_three_broker_cluster(tmp_path: Path) -> None:
    async def main():
        c = await MiniCluster(tmp_path).start()
        try:
            await c.create_topic("t")
            conn = await c.connect(1)
            for _ in range(5):
                r = await conn.request(ApiKey.PRODUCE, 9, produce_body("t", batch(b"a", b"b")))
                assert r.body["Responses"][0]["PartitionResponses"][0]["ErrorCode"] == 0
            await conn.close()
            rm = c.brokers[1].replica_manager
            await wait_until(lambda: rm.partitions[("t", 0)].high_watermark == 10)

            assert await delete(c, 1, 11) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
            assert await delete(c, 1, -2) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
            assert await delete(c, 2, 3) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)
            assert await delete(c, 1, 0, topic="nope") == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)
            assert await delete(c, 1, 0, index=7) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)
            assert await earliest_and_fetch(c, 1, 0) == (0, 0, 0), "refusals move nothing"

            assert await delete(c, 1, 3, version=0) == (0, 3)
            assert await delete(c, 1, 1) == (0, 3), "never moves back"
            assert await earliest_and_fetch(c, 1, 2) == (3, ErrorCode.OFFSET_OUT_OF_RANGE, -1)
            assert (await earliest_and_fetch(c, 1, 3))[1:] == (0, 3)
            assert await delete(c, 1, -1, version=1) == (0, 10), "-1 is the high watermark"
            assert await earliest_and_fetch(c, 1, 10) == (10, 0, 10)

            # followers learn the log start from the leader's Fetch answers
            for b in (2, 3):
                plog = c.brokers[b].replica_manager.partitions[("t", 0)].log
                await wait_until(lambda plog=plog: plog.log_start_offset == 10)
            # a restart keeps it (the checkpoint file), on the leader and on a follower
            await c.crash(1)
            await c.elect("t", 0, 2)
            await c.restart(1)
            for b in (1, 2):
                plog = c.brokers[b].replica_manager.partitions[("t", 0)].log
                assert plog.log_start_offset == 10
            assert (await earliest_and_fetch(c, 2, 10))[0] == 10
            assert not c.failures
        finally:
            await c.stop()

    run(main())


def test_delete_records_needs_delete_on_the_topic(tmp_path: Path) -> None:
    """Kafka's rule: DELETE on the TOPIC, else TOPIC_AUTHORIZATION_FAILED and nothing moves."""
    from reference_impl.security import acl

    binding = acl.AclBinding(
        acl.resource_type("TOPIC"),
        "t",
        acl.AclPatternType.LITERAL,
        "User:ANONYMOUS",
        "*",
        acl.AclOperation.DELETE,
        acl.AclPermissionType.ALLOW,
    )
    authorizer = acl.AclAuthorizer([binding])

    async def main():
        c = await MiniCluster(tmp_path, brokers=1).start()
        try:
            await c.create_topic("t")
            await c.create_topic("u")
            conn = await c.connect(1)
            for topic in ("t", "u"):
                body = produce_body(topic, batch(b"a", b"b"))
                r = await conn.request(ApiKey.PRODUCE, 9, body)
                assert r.body["Responses"][0]["PartitionResponses"][0]["ErrorCode"] == 0
            await conn.close()
            # from here on the ACLs decide (DELETE on t only)
            c.brokers[1].authorize = lambda session, op, resource: authorizer.authorize(
                session.principal, "", op, *resource
            )
            assert await delete(c, 1, 1, topic="u") == (ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1)
            rm = c.brokers[1].replica_manager
            assert rm.partitions[("u", 0)].log.log_start_offset == 0
            assert await delete(c, 1, 1, topic="t") == (0, 1)
        finally:
            await c.stop()

    run(main())
