"""What several LOG test modules use: DeleteRecords sent to a partition's leader, and batches
of records drawn by hypothesis (timestamps, keys, values, headers)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from conformance.protocol import ApiKey
from conformance.protocol.records import Header
from conformance.suite.kit import verify
from conformance.suite.kit.partitions import SuiteTopic

#: DeleteRecords: the offset that stands for the high watermark
TO_HIGH_WATERMARK = -1


def delete_records(
    topic: SuiteTopic, version: int, offset: int, partition: int = 0, req: str = "LOG.R19"
) -> dict[str, Any]:
    """The partition's entry of its leader's DeleteRecords answer for ``offset``."""
    part = {"PartitionIndex": partition, "Offset": offset}
    body = {"Topics": [{"Name": topic.name, "Partitions": [part]}], "TimeoutMs": 10000}
    conn = topic.conn(partition)
    resp = verify.expect_response(conn, ApiKey.DELETE_RECORDS, version, body, served=req)
    parts = [p for t in resp.body["Topics"] for p in t["Partitions"]]
    verify.check(
        len(parts) == 1 and parts[0]["PartitionIndex"] == partition,
        f"DeleteRecords v{version} of {topic.name}-{partition}: the answer has partitions "
        f"{[p['PartitionIndex'] for p in parts]}, expected [{partition}]",
        req,
    )
    return parts[0]


_bytes = st.one_of(st.none(), st.binary(max_size=48))
_header = st.builds(Header, st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8)))
#: one batch: (timestamp offset from now, key, value, headers) per record
BATCHES = st.lists(
    st.tuples(st.integers(-3_600_000, 0), _bytes, _bytes, st.lists(_header, max_size=3)),
    min_size=1,
    max_size=5,
)
