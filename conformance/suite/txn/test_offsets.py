"""Offsets committed in a transaction (TXN.R8, R9, R14): AddOffsetsToTxn and TxnOffsetCommit
put a group's offset in the transaction; OffsetFetch does not see it while the transaction is open
(RequireStable is answered UNSTABLE_OFFSET_COMMIT), sees it once the transaction commits, and
never sees the offset of an aborted one. A group-aware commit (KIP-447) naming a member and
generation the group does not have is refused."""

from __future__ import annotations

import time

from conformance.protocol import ApiKey, ErrorCode
from conformance.results.verdicts import MissingPrecondition
from conformance.suite.groups import commits
from conformance.suite.groups.members import Group, find_coordinator
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, SyncConnection
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.partitions import SuiteTopic
from conformance.suite.kit.records_io import quiet_version
from conformance.suite.kit.safety import fresh_name
from conformance.suite.txn import txns
from conformance.suite.txn.txns import TxnProducer, name

REQS = ("TXN.R8", "TXN.R9")


def offset_fetch(
    harness: Harness, conn: SyncConnection, group: str, partition: tuple[str, int], stable: bool
) -> tuple[int, int]:
    """OffsetFetch of one partition: (committed offset, partition error code)."""
    version = quiet_version(harness, ApiKey.OFFSET_FETCH, "7+" if stable else "1+")
    body, _ = commits.fetch_body(harness, group, version, [partition])
    body["RequireStable"] = stable
    answer = verify.expect_response(conn, ApiKey.OFFSET_FETCH, version, body, served="TXN.R8").body
    entry = answer["Groups"][0] if version >= 8 else answer
    parts = [
        (p["CommittedOffset"], p["ErrorCode"]) for t in entry["Topics"] for p in t["Partitions"]
    ]
    return parts[0] if parts else (-1, entry.get("ErrorCode", 0))


def visible(harness: Harness, conn: SyncConnection, group: str, partition, want: int) -> int:
    """The committed offset once it is ``want`` (markers are written after EndTxn's answer),
    for at most SETTLE seconds; the last one read."""
    deadline = time.monotonic() + txns.SETTLE
    while True:
        offset, _ = offset_fetch(harness, conn, group, partition, False)
        if offset == want or time.monotonic() > deadline:
            return offset
        time.sleep(0.1)


@conformance("txn/offsets/visible-on-commit", *REQS, api=ApiKey.TXN_OFFSET_COMMIT)
def test_transactional_offsets_are_visible_only_once_committed(harness: Harness) -> None:
    harness.pick_version(ApiKey.ADD_OFFSETS_TO_TXN)
    harness.pick_version(ApiKey.TXN_OFFSET_COMMIT, "0-4")
    harness.pick_version(ApiKey.END_TXN, txns.CLASSIC_END)
    stable_ok = harness.can_check(ApiKey.OFFSET_FETCH, "TXN.R9", within="7+")
    with SuiteTopic.create(harness, "txn-offsets", 1) as topic:
        group = fresh_name("txn-group")
        partition = (topic.name, 0)
        producer = TxnProducer.start(harness, "offsets", "TXN.R8")
        coordinator = find_coordinator(
            harness, group, quiet_version(harness, ApiKey.FIND_COORDINATOR), "TXN.R8"
        )
        conn = harness.connect(coordinator.endpoint)

        def commit_in_transaction(offset: int) -> None:
            code = producer.add_offsets(group)
            codes = producer.commit_offsets(group, {partition: offset})
            verify.check(
                code == ErrorCode.NONE and set(codes.values()) == {ErrorCode.NONE},
                f"AddOffsetsToTxn of group {group} for {producer.tid}: {name(code)}; "
                f"TxnOffsetCommit of offset {offset}: {codes}; expected 0 for each",
                "TXN.R8",
            )

        commit_in_transaction(5)
        pending = offset_fetch(harness, conn, group, partition, False)
        verify.check(
            pending[0] == -1,
            f"OffsetFetch of group {group} {partition} while the transaction committing offset "
            f"5 is open: (offset, error) {pending}; expected no committed offset (-1)",
            "TXN.R8",
        )
        if stable_ok:
            unstable = offset_fetch(harness, conn, group, partition, True)
            verify.check(
                unstable[1] == ErrorCode.UNSTABLE_OFFSET_COMMIT,
                f"OffsetFetch with RequireStable of group {group} {partition} while offset 5 is "
                f"pending: (offset, error) {unstable}; expected error 88 "
                "(UNSTABLE_OFFSET_COMMIT)",
                "TXN.R9",
            )
        producer.end_ok(True, "TXN.R8")
        after = visible(harness, conn, group, partition, 5)
        verify.check(
            after == 5,
            f"OffsetFetch of group {group} {partition} after the transaction committed: "
            f"offset {after}, expected 5",
            "TXN.R8",
        )
        if stable_ok:
            now = offset_fetch(harness, conn, group, partition, True)
            verify.check(
                now == (5, ErrorCode.NONE),
                f"OffsetFetch with RequireStable of group {group} {partition} once the "
                f"transaction committed: (offset, error) {now}, expected (5, 0)",
                "TXN.R9",
            )
        commit_in_transaction(9)
        producer.end_ok(False, "TXN.R8")
        # the abort is complete once the coordinator takes the id's next transaction (it
        # answers CONCURRENT_TRANSACTIONS until the markers are written), and the group has
        # applied it once no offset of it is pending
        producer.add_offsets(group)
        deadline = time.monotonic() + txns.SETTLE
        while stable_ok and time.monotonic() < deadline:
            if offset_fetch(harness, conn, group, partition, True)[1] == ErrorCode.NONE:
                break
            time.sleep(0.1)
        final = offset_fetch(harness, conn, group, partition, False)
        verify.check(
            final[0] == 5,
            f"OffsetFetch of group {group} {partition} after a transaction committing offset 9 "
            f"aborted: offset {final[0]}, expected 5 (the aborted offset never visible)",
            "TXN.R8",
        )
        producer.end(False)  # the transaction opened to wait with: not left to time out


@conformance("txn/offsets/group-aware", "TXN.R14", api=ApiKey.TXN_OFFSET_COMMIT)
def test_a_group_aware_commit_is_checked_against_the_member(harness: Harness) -> None:
    harness.pick_version(ApiKey.TXN_OFFSET_COMMIT, "3-4")
    harness.pick_version(ApiKey.ADD_OFFSETS_TO_TXN)
    with SuiteTopic.create(harness, "txn-member", 1) as topic:
        group = Group(harness)
        try:
            member = group.new_member()
            group.rebalance([member])  # joined again while the coordinator is not ready
            if member.generation < 0 or not member.member_id:
                raise MissingPrecondition(
                    f"group {group.name} did not form: {member.joins[-1:] or 'no JoinGroup answer'}"
                )
            producer = TxnProducer.start(harness, "member", "TXN.R14")
            partition = (topic.name, 0)
            code = producer.add_offsets(group.name)
            verify.check(
                code == ErrorCode.NONE,
                f"AddOffsetsToTxn of group {group.name}: {name(code)}, expected 0",
                "TXN.R14",
            )
            tries = {
                "the member at a generation the group is not at": (
                    (member.member_id, member.generation + 1),
                    1,
                    ErrorCode.ILLEGAL_GENERATION,
                ),
                "a member the group does not have": (
                    ("kc-not-a-member", member.generation),
                    2,
                    ErrorCode.UNKNOWN_MEMBER_ID,
                ),
                "the member at its generation": (
                    (member.member_id, member.generation),
                    3,
                    ErrorCode.NONE,
                ),
            }
            got = {
                what: producer.commit_offsets(group.name, {partition: offset}, member=who)[
                    partition
                ]
                for what, (who, offset, _) in tries.items()
            }
            want = {what: int(expected) for what, (_, _, expected) in tries.items()}
            verify.check(
                got == want,
                f"TxnOffsetCommit to group {group.name} (member {member.member_id}, generation "
                f"{member.generation}) naming {list(tries)}: error codes {list(got.values())}, "
                f"expected {list(want.values())} (22 ILLEGAL_GENERATION, 25 UNKNOWN_MEMBER_ID, 0)",
                "TXN.R14",
            )
            producer.end_ok(True, "TXN.R14")
            conn = harness.connect(group.coordinator.endpoint)
            after = visible(harness, conn, group.name, partition, 3)
            verify.check(
                after == 3,
                f"OffsetFetch of group {group.name} {partition} after the commit: offset {after}, "
                "expected 3 (the refused commits not applied)",
                "TXN.R14",
            )
        finally:
            group.cleanup()
