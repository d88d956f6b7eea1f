"""The data plane's storage: one PartitionLog per partition replica (see partition_log)."""

from conformance.protocol.records.header import BatchHeader, parse_header
from reference_impl.log.config import LogConfig
from reference_impl.log.partition_log import AppendResult, PartitionLog, TimestampOffset

__all__ = [
    "AppendResult",
    "BatchHeader",
    "LogConfig",
    "PartitionLog",
    "TimestampOffset",
    "parse_header",
]
