"""DeleteRecords moves the log start offset, and ListOffsets and Fetch follow it (LOG.R19):
on a fresh suite topic of 6 records, an offset past the high watermark is refused, then the
start moves to 3 and to the high watermark (-1), each followed by EARLIEST and Fetch."""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.partitions import EARLIEST, SuiteTopic, now_ms
from conformance.suite.log.shared import TO_HIGH_WATERMARK, delete_records

REQ = "LOG.R19"


def check_start(topic: SuiteTopic, start: int, after: str) -> None:
    """ListOffsets EARLIEST answers ``start``; a Fetch below it is out of range, at it not."""
    earliest = topic.list_offset(0, EARLIEST, REQ)
    verify.check(
        (earliest["ErrorCode"], earliest["Offset"]) == (ErrorCode.NONE, start),
        f"ListOffsets EARLIEST of {topic.name}-0 after {after}: ErrorCode "
        f"{earliest['ErrorCode']}, Offset {earliest['Offset']}; expected 0 and {start}",
        REQ,
    )
    below = topic.fetch(0, start - 1, REQ)
    at = topic.fetch(0, start, REQ, max_wait=0)
    codes = (below["ErrorCode"], at["ErrorCode"])
    verify.check(
        codes == (ErrorCode.OFFSET_OUT_OF_RANGE, ErrorCode.NONE),
        f"Fetch of {topic.name}-0 at {start - 1} and at {start} after {after}: ErrorCodes "
        f"{codes}, expected (1 OFFSET_OUT_OF_RANGE, 0)",
        REQ,
    )


@conformance("log/delete-records/moves-the-log-start", REQ, api=ApiKey.DELETE_RECORDS)
def test_delete_records_moves_the_log_start(harness: Harness) -> None:
    version = harness.pick_version(ApiKey.DELETE_RECORDS)
    with SuiteTopic.create(harness, "log-delete-records") as topic:
        end = 0
        for i in range(3):
            items = [(now_ms(), None, f"b{i}r{j}".encode()) for j in range(2)]
            end = topic.produce_ok(0, items, REQ) + 2
        past = delete_records(topic, version, end + 1)
        verify.check(
            past["ErrorCode"] == ErrorCode.OFFSET_OUT_OF_RANGE,
            f"DeleteRecords v{version} of {topic.name}-0 to {end + 1}, past the high watermark "
            f"{end}: ErrorCode {past['ErrorCode']}, expected 1 (OFFSET_OUT_OF_RANGE)",
            REQ,
        )
        for offset, start in ((3, 3), (TO_HIGH_WATERMARK, end)):
            answer = delete_records(topic, version, offset)
            verify.check(
                (answer["ErrorCode"], answer["LowWatermark"]) == (ErrorCode.NONE, start),
                f"DeleteRecords v{version} of {topic.name}-0 to {offset} (high watermark "
                f"{end}): ErrorCode {answer['ErrorCode']}, LowWatermark "
                f"{answer['LowWatermark']}; expected 0 and {start}",
                REQ,
            )
            check_start(topic, start, f"DeleteRecords to {offset}")
