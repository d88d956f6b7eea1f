"""TxnOffsetCommit (28): a transactional producer commits a group's offsets in its transaction.

Behaviour / version notes (Kafka 3.9's KafkaApis.handleTxnOffsetCommitRequest and the classic
GroupCoordinator.handleTxnCommitOffsets):

- WRITE on the TRANSACTIONAL_ID (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every
  partition), then READ on the GROUP (GROUP_AUTHORIZATION_FAILED on every partition); per topic
  READ (TOPIC_AUTHORIZATION_FAILED), a partition the metadata does not know
  UNKNOWN_TOPIC_OR_PARTITION.
- The coordinator's checks: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, INVALID_GROUP_ID;
  then, unless the producer already has its transaction open in the group's
  ``__consumer_offsets`` partition, the transaction coordinator is asked whether that
  partition is in the transaction (``txn_verification.py``: AddOffsetsToTxn adds it; not in it:
  INVALID_TXN_STATE, v4 TRANSACTION_ABORTABLE; PRODUCER_FENCED: INVALID_PRODUCER_EPOCH; no
  answer: COORDINATOR_LOAD_IN_PROGRESS).
- KIP-447 group metadata (v3+: GenerationIdOrMemberEpoch, MemberId, GroupInstanceId) is checked
  like an OffsetCommit's: a static member id mismatch FENCED_INSTANCE_ID, an unknown member
  UNKNOWN_MEMBER_ID, another generation ILLEGAL_GENERATION; without it (generation -1, no
  member: v0-2 and old producers) the commit is accepted even while the group has members.
  An unknown group is created empty.
- The offsets are written as a transactional batch of the producer (its id and epoch) and stay
  pending: OffsetFetch does not show them (RequireStable: UNSTABLE_OFFSET_COMMIT) until the
  transaction's COMMIT marker on the group's partition makes them the committed offsets; an
  ABORT drops them. Metadata over offset.metadata.max.bytes: OFFSET_METADATA_TOO_LARGE.
- v5 (KIP-890 part 2): a transaction-version-2 client sends no AddOffsetsToTxn; the group's
  partition is added to the transaction through the coordinator (``txn_verification.py``,
  ``add=True``). v6 names topics by id, as OffsetCommit v10: the broker's metadata gives the
  names, an id it does not know is UNKNOWN_TOPIC_ID for each of its partitions (nothing of it
  committed), and the answer is by id, entries of one id merged.
"""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.internal_topics import OFFSETS_TOPIC
from reference_impl.groups.errors import store_offsets_error
from reference_impl.groups.group_types import OffsetAndMetadata
from reference_impl.groups.offsets import TxnCommit
from reference_impl.groups.service import GroupService
from reference_impl.handlers.group_common import (
    allowed,
    commit_topics,
    group_allowed,
    groups,
    merged_by_id,
    partition_errors,
)
from reference_impl.handlers.txn_verification import Verifier
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView

#: the first version whose commit adds the group's partition to the transaction (TV2)
TV2_VERSION = 5
#: the first version naming topics by id
TOPIC_IDS_VERSION = 6


def api(node: BrokerView) -> Api:
    service = groups(node)
    verifier = Verifier(node)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        v = ctx.version
        group_id, tid = body["GroupId"], body["TransactionalId"]
        pid, epoch = body["ProducerId"], body["ProducerEpoch"]
        topics, requested, results = commit_topics(node, body["Topics"], v >= TOPIC_IDS_VERSION)
        whole = 0
        if not allowed(node, ctx, "WRITE", ("TRANSACTIONAL_ID", tid)):
            whole = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        elif not group_allowed(node, ctx, "READ", group_id):
            whole = ErrorCode.GROUP_AUTHORIZATION_FAILED
        else:
            whole = service.coordinator.offsets.group_status(group_id)
        if whole:
            results.update({(t, i): int(whole) for t, i, _ in requested})
        else:
            offsets = {}
            for topic, index, p in requested:
                if not allowed(node, ctx, "READ", ("TOPIC", topic)):
                    results[(topic, index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                elif not service.partition_exists(topic, index):
                    results[(topic, index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    offsets[(topic, index)] = OffsetAndMetadata(
                        p["CommittedOffset"],
                        p["CommittedLeaderEpoch"] if v >= 2 else -1,
                        p["CommittedMetadata"] or "",
                    )
            if offsets:
                error = await _verify(node, verifier, service, group_id, tid, pid, epoch, v)
                if error:
                    results.update(dict.fromkeys(offsets, error))
                else:
                    req = TxnCommit(
                        group_id,
                        (pid, epoch),
                        body["MemberId"] if v >= 3 else "",
                        body["GroupInstanceId"] if v >= 3 else None,
                        body["GenerationIdOrMemberEpoch"] if v >= 3 else -1,
                        offsets,
                    )
                    results.update(await service.txn_commit(req))
        answered = partition_errors(topics, results)
        if v >= TOPIC_IDS_VERSION:
            answered = merged_by_id(answered, topics)
        return {"ThrottleTimeMs": 0, "Topics": answered}

    return Api(ApiKey.TXN_OFFSET_COMMIT, handle)


async def _verify(
    node: BrokerView,
    verifier: Verifier,
    service: GroupService,
    group_id: str,
    tid: str,
    pid: int,
    epoch: int,
    version: int,
) -> int:
    """0 when the group's partition is in the producer's transaction (or already written in
    it), else the error the commit is answered with (Kafka's maybeConvertOffsetCommitError)."""
    index = service.coordinator.partition_for(group_id)
    if node.replica_manager.transaction_open(OFFSETS_TOPIC, index, pid, epoch):
        return 0
    found = await verifier.ask(
        tid, pid, epoch, [(OFFSETS_TOPIC, index)], generic=version >= 4, add=version >= TV2_VERSION
    )
    code = found.get((OFFSETS_TOPIC, index), 0)
    if code == ErrorCode.NETWORK_EXCEPTION:
        return int(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    return store_offsets_error(code) if code else 0
