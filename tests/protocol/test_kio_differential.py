"""Differential test of the codec against kio 0.6.5, an independent Python Kafka codec.

For every (api key, version, kind) of our specs that kio's package models (found from its
schema index, headers included), hypothesis values of ours are checked both ways:
(1) kio's native reader, given our bytes, consumes all of them and yields the entity that
    holds our value (compared as kio entities and again in our model, after converting back);
(2) kio's writer, given our value converted to a kio entity, produces exactly our bytes.
(2) runs first: kio's Rust reader aborts the whole process (a failed allocation, not an
exception) on some malformed lengths, so our bytes reach it only once they equal kio's own.

Values come from ``message_values`` with two adjustments, documented in ``kio_adapter``:
unknown tagged fields are removed (kio's reader raises KeyError on tags it does not know,
and its entities have nowhere to keep them), and a few primitives are folded into kio's
narrower domain (error codes outside kio's ErrorCode enum, epoch-millisecond timestamps and
int64 durations that kio converts through floats).

kio is generated from Kafka 4.x specs, which dropped the versions KIP-896 removed and the
ZooKeeper-era inter-broker APIs (LeaderAndIsr, StopReplica, UpdateMetadata,
ControlledShutdown) and the v0 of some others; those pairs are listed in KIO_ABSENT, and a test
checks the list. When
written: 360 of our 453 (message, version) pairs are compared, 178 requests and 178 responses
over 35 of the 39 APIs, plus RequestHeader v1-2 and ResponseHeader v0-1.
"""

from __future__ import annotations

import pytest
from hypothesis import given

from conformance.protocol import Codec, MessageSpec
from conformance.strategies.messages import message_values
from tests.protocol.kio_adapter import (
    KioMismatch,
    fit,
    from_kio,
    kio_absent,
    kio_pairs,
    kio_read,
    kio_write,
    link,
    to_kio,
)

CODEC = Codec.from_specs()
HEADER_KINDS = {"RequestHeader": "request", "ResponseHeader": "response"}
#: Pairs kio 0.6.5 models with other field names or shapes than ours (Kafka 4.4's): KRaft's
#: AssignReplicasToDirs, TxnOffsetCommit's GenerationId (4.4: GenerationIdOrMemberEpoch), a
#: streams-group field 4.4 renamed: not comparable.
KIO_RENAMED = {
    ("AssignReplicasToDirsRequest", 0),
    ("AssignReplicasToDirsResponse", 0),
    ("TxnOffsetCommitRequest", 3),
    ("TxnOffsetCommitRequest", 4),
    ("TxnOffsetCommitRequest", 5),
    ("StreamsGroupHeartbeatResponse", 0),
}
PAIRS = [
    pytest.param(spec, version, entity, id=f"{spec.name}-v{version}")
    for spec, version, entity in kio_pairs(CODEC)
    if (spec.name, version) not in KIO_RENAMED
]


def _versions(name: str, versions: range) -> set[tuple[str, int]]:
    return {(f"{name}{kind}", v) for kind in ("Request", "Response") for v in versions}


#: Our (message, version) pairs that kio 0.6.5 does not model at all.
KIO_ABSENT = {
    *_versions("Produce", range(3)),
    *_versions("Fetch", range(4)),
    *_versions("ListOffsets", range(1)),
    *_versions("LeaderAndIsr", range(8)),
    *_versions("StopReplica", range(5)),
    *_versions("UpdateMetadata", range(9)),
    *_versions("ControlledShutdown", range(4)),
    *_versions("OffsetCommit", range(2)),
    *_versions("OffsetFetch", range(1)),
    *_versions("CreateTopics", range(2)),
    *_versions("DeleteTopics", range(1)),
    *_versions("DescribeAcls", range(1)),
    *_versions("CreateAcls", range(1)),
    *_versions("DeleteAcls", range(1)),
    *_versions("DescribeConfigs", range(1)),
    *_versions("AlterPartition", range(2)),
    *_versions("OffsetForLeaderEpoch", range(2)),
    *_versions("WriteTxnMarkers", range(1)),
    *_versions("AlterReplicaLogDirs", range(1)),
    *_versions("DescribeLogDirs", range(1)),
    *_versions("CreateDelegationToken", range(1)),
    *_versions("RenewDelegationToken", range(1)),
    *_versions("ExpireDelegationToken", range(1)),
    *_versions("DescribeDelegationToken", range(1)),
    # kio models share groups as Kafka 4.x finished them, not 3.9's unstable v0
    *_versions("ShareGroupHeartbeat", range(1)),
    *_versions("ShareGroupDescribe", range(1)),
    *_versions("ShareFetch", range(1)),
    *_versions("ShareAcknowledge", range(1)),
    ("RequestHeader", 0),  # only ControlledShutdown v0 uses it
    # what Kafka added after the release kio models
    *_versions("ApiVersions", range(5, 6)),
    *_versions("DeleteGroups", range(3, 4)),
    *_versions("StreamsGroupDescribe", range(1, 2)),
    *_versions("StreamsGroupHeartbeat", range(1, 2)),
    *_versions("StreamsGroupTopologyDescriptionUpdate", range(1)),
    *_versions("TxnOffsetCommit", range(6, 7)),
    *_versions("UnregisterController", range(1)),
}


def test_kio_models_every_pair_except_the_documented_ones() -> None:
    assert kio_absent(CODEC) == KIO_ABSENT
    total = sum(len(list(m.valid_versions)) for m in CODEC.specs)
    assert len(PAIRS) == total - len(KIO_ABSENT) - len(KIO_RENAMED)


def test_the_renamed_pairs_do_differ() -> None:
    """KIO_RENAMED holds only pairs whose models really disagree."""
    agree = []
    for spec, version, entity in kio_pairs(CODEC):
        if (spec.name, version) in KIO_RENAMED:
            try:
                link(spec.struct, version, entity)
                agree.append((spec.name, version))
            except KioMismatch:
                pass
    assert not agree


@pytest.mark.parametrize(("spec", "version", "entity"), PAIRS)
def test_kio_reads_our_bytes_and_writes_them_back(
    spec: MessageSpec, version: int, entity: type
) -> None:
    sl = link(spec.struct, version, entity)
    if spec.type == "header":
        compiled = CODEC.compiled_header(HEADER_KINDS[spec.name], version)
    else:
        compiled = CODEC.compiled(spec.api_key, version, spec.type)

    @given(message_values(spec, version).map(lambda v: fit(sl, v)))
    def check(value: dict) -> None:
        ours = compiled.encode(value)
        expected = to_kio(sl, value)
        assert kio_write(expected) == ours  # (2) first: see the module docstring
        got, size = kio_read(entity, ours)  # (1)
        assert size == len(ours), f"kio read {size} of {len(ours)} bytes"
        assert got == expected
        assert from_kio(sl, got) == value

    check()
