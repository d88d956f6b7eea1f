# ruff: noqa: E501 - the printed lines say what the target answers, in full
"""Hand confirmation, on the wire, of transactions v2 (KIP-890 part 2): the transaction.version
feature in ApiVersions and UpdateFeatures, a partition added by a transactional Produce v12 alone,
EndTxn v5's epoch bump and its answer, and a late write at the aborted transaction's epoch.
Raw requests with the project's codec and wire client, versions named on each line.

    .venv/bin/python -m confirmations.txn_v2_wire 4.0.2 4.4.0    # Apache Kafka releases
    .venv/bin/python -m confirmations.txn_v2_wire tansu
"""

import asyncio
import sys
import time
import uuid

from confirmations import txn_wire
from confirmations.txn_wire import END, INIT, PRODUCE, Txn, Wire, show

APIV, DESCRIBE_TXN, UPDATE_FEATURES = 18, 65, 57


async def api_versions(w: Wire, ep=None, version=3) -> dict:
    c = await w.conn(ep)
    body = {"ClientSoftwareName": "kc-confirm", "ClientSoftwareVersion": "0"}
    return (await c.request(APIV, version, body)).body


async def ask(w: Wire, api, version, body, ep=None, timeout=15.0):
    c = await w.conn(ep)
    try:
        return (await c.request(api, version, body, timeout=timeout)).body
    except Exception as e:
        w.conns.pop(ep or w.boot, None)
        return f"{type(e).__name__}: {e}"


def features(v: dict) -> tuple:
    sup = {f["Name"]: (f["MinVersion"], f["MaxVersion"]) for f in v.get("SupportedFeatures") or []}
    fin = {f["Name"]: f["MaxVersionLevel"] for f in v.get("FinalizedFeatures") or []}
    return (
        sup.get("transaction.version"),
        fin.get("transaction.version"),
        v.get("FinalizedFeaturesEpoch"),
    )


class V2(Txn):
    async def produce_v(self, version, tid, records):
        return await self.produce(tid, records, version)

    async def end_v(self, version, tid, ep, pid, epoch, commit):
        for _ in range(200):
            got = await ask(
                self.w,
                END,
                version,
                dict(TransactionalId=tid, ProducerId=pid, ProducerEpoch=epoch, Committed=commit),
                ep,
            )
            if isinstance(got, str) or got["ErrorCode"] not in (14, 15, 16, 51):
                return got
            await asyncio.sleep(0.1)
        return got

    async def state(self, tid, ep):
        got = await ask(self.w, DESCRIBE_TXN, 0, {"TransactionalIds": [tid]}, ep)
        s = got["TransactionStates"][0]
        return (
            s["TransactionState"],
            s["ProducerId"],
            s["ProducerEpoch"],
            [(t["Topic"], t["Partitions"]) for t in s["Topics"]],
        )

    async def until_state(self, tid, ep, want):
        start = time.monotonic()
        while time.monotonic() - start < 30:
            got = await self.state(tid, ep)
            if got[0] == want:
                break
            await asyncio.sleep(0.1)
        return got, round(time.monotonic() - start, 1)

    async def control_epochs(self):
        """(base offset, control types, producer id, producer epoch) of each control batch and
        (base offset, values, epoch) of each data batch, read_uncommitted."""
        from confirmations.txn_wire import FETCH
        from conformance.protocol.records import decode_batches

        part = dict(
            Partition=0,
            FetchOffset=0,
            PartitionMaxBytes=1 << 20,
            CurrentLeaderEpoch=-1,
            LogStartOffset=-1,
            LastFetchedEpoch=-1,
        )
        got = await ask(
            self.w,
            FETCH,
            12,
            dict(
                ReplicaId=-1,
                MaxWaitMs=100,
                MinBytes=1,
                MaxBytes=1 << 20,
                IsolationLevel=0,
                SessionId=0,
                SessionEpoch=-1,
                Topics=[dict(Topic=self.topic, Partitions=[part])],
                ForgottenTopicsData=[],
                RackId="",
            ),
            self.leader,
        )
        p = got["Responses"][0]["Partitions"][0]
        out = []
        for b in decode_batches(p["Records"] or b"", allow_partial=True):
            what = f"control {b.control_types()}" if b.is_control else [r.value for r in b.records]
            out.append((b.base_offset, what, b.producer_id, b.producer_epoch))
        return p["HighWatermark"], out


async def setup(w: Wire) -> V2:
    """txn_wire's topic and leader, for the steps here."""
    t = await txn_wire.setup(w)
    return V2(t.w, t.topic, t.leader)


async def init_v(t: V2, tid: str):
    ep = await t.coordinator(tid)
    for _ in range(100):
        got = await ask(
            t.w,
            INIT,
            t.w.init_version,
            dict(TransactionalId=tid, TransactionTimeoutMs=60000, ProducerId=-1, ProducerEpoch=-1),
            ep,
        )
        if isinstance(got, str) or got["ErrorCode"] not in (14, 15, 16, 51):
            break
        await asyncio.sleep(0.2)
    return ep, got


async def scenario(w: Wire) -> None:
    v = await api_versions(w)
    ranges = {a["ApiKey"]: (a["MinVersion"], a["MaxVersion"]) for a in v["ApiKeys"]}
    show(
        "advertised Produce, InitProducerId, EndTxn, ListTransactions, UpdateFeatures",
        [ranges.get(k) for k in (PRODUCE, INIT, END, 66, UPDATE_FEATURES)],
    )
    show(
        "TXN-V2 ApiVersions v3: transaction.version supported (min, max), finalized level, features epoch",
        features(v),
    )
    if ranges[APIV][1] >= 4:
        show(
            "TXN-V2 ApiVersions v4 (KIP-1022: features from 0 listed): transaction.version supported, finalized, epoch",
            features(await api_versions(w, version=4)),
        )
    if ranges.get(END, (0, 0))[1] < 5:
        print("  no EndTxn v5: transactions v2 not served")
        return
    w.init_version = min(ranges[INIT][1], 6)
    t = await setup(w)
    tid = f"kc-wire-tv2-{uuid.uuid4().hex[:6]}"
    ep, got = await init_v(t, tid)
    pid, e = got["ProducerId"], got["ProducerEpoch"]
    show(f"InitProducerId v{w.init_version} of {tid}", got)
    show(
        "TXN implicit add: transactional Produce v12 [v2-aborted], no AddPartitionsToTxn",
        await t.produce_v(12, tid, t.batch(pid, e, 0, [b"v2-aborted"])),
    )
    show("  DescribeTransactions v0 (state, pid, epoch, partitions)", await t.state(tid, ep))
    got = await t.end_v(5, tid, ep, pid, e, False)
    show(f"TXN epoch bump: EndTxn v5 abort at epoch {e}", got)
    show(
        f"TXN stale epoch, at once: Produce v12 at epoch {e}, sequence 1",
        await t.produce_v(12, tid, t.batch(pid, e, 1, [b"v2-late-0"])),
    )
    show(
        "  DescribeTransactions until CompleteAbort (state..., seconds)",
        await t.until_state(tid, ep, "CompleteAbort"),
    )
    show(
        f"TXN stale epoch, markers written: Produce v12 at epoch {e}, sequence 2",
        await t.produce_v(12, tid, t.batch(pid, e, 2, [b"v2-late-1"])),
    )
    show(
        f"TXN stale epoch, markers written: Produce v11 at epoch {e}, sequence 2",
        await t.produce_v(11, tid, t.batch(pid, e, 2, [b"v2-late-2"])),
    )
    show("  DescribeTransactions", await t.state(tid, ep))
    show(
        f"  Produce v12 at the new epoch {e + 1}, sequence 0",
        await t.produce_v(12, tid, t.batch(pid, e + 1, 0, [b"v2-committed"])),
    )
    show(
        f"TXN epoch bump: EndTxn v5 commit at epoch {e + 1}",
        await t.end_v(5, tid, ep, pid, e + 1, True),
    )
    show(
        f"  EndTxn v5 commit retried at epoch {e + 1}", await t.end_v(5, tid, ep, pid, e + 1, True)
    )
    show(
        f"  EndTxn v5 abort at epoch {e + 1} (the other outcome)",
        await t.end_v(5, tid, ep, pid, e + 1, False),
    )
    show(f"  EndTxn v5 commit at epoch {e} (two below)", await t.end_v(5, tid, ep, pid, e, True))
    await t.until_state(tid, ep, "CompleteCommit")
    show("  read_uncommitted batches (offset, what, pid, epoch)", await t.control_epochs())

    # a v11 write (classic) to a partition never added, while transaction.version is 2
    t0 = f"kc-wire-tv2-{uuid.uuid4().hex[:6]}"
    _, got = await init_v(t, t0)
    show(
        "Produce v11 of another id, partition never added (TXN.R11 under tv2)",
        await t.produce_v(11, t0, t.batch(got["ProducerId"], got["ProducerEpoch"], 0, [b"stray"])),
    )
    # EndTxn v4 after a v12 write: classic end, no bump in the answer
    show(
        "  Produce v12 of it, partition 0 not added",
        await t.produce_v(12, t0, t.batch(got["ProducerId"], got["ProducerEpoch"], 0, [b"v4-end"])),
    )
    show(
        "  EndTxn v4 commit of it",
        await t.end_v(
            4, t0, await t.coordinator(t0), got["ProducerId"], got["ProducerEpoch"], True
        ),
    )

    # the feature level: UpdateFeatures transaction.version to 1 (a safe downgrade), then back
    if UPDATE_FEATURES in ranges:
        uv = min(ranges[UPDATE_FEATURES][1], 1)
        for level, kind in ((1, 2), (3, 1), (2, 1)):
            body = dict(
                timeoutMs=30000,
                FeatureUpdates=[
                    dict(
                        Feature="transaction.version",
                        MaxVersionLevel=level,
                        UpgradeType=kind,
                        AllowDowngrade=kind != 1,
                    )
                ],
                ValidateOnly=False,
            )
            show(
                f"TXN feature: UpdateFeatures v{uv} transaction.version to {level} (upgrade type {kind})",
                await ask(w, UPDATE_FEATURES, uv, body),
            )
            await asyncio.sleep(2)
            show(
                "  ApiVersions v3 after it (supported, finalized, epoch)",
                features(await api_versions(w)),
            )
            show("  its leader's ApiVersions v3", features(await api_versions(w, t.leader)))
            if level == 1:
                t1 = f"kc-wire-tv1-{uuid.uuid4().hex[:6]}"
                ep1, got = await init_v(t, t1)
                p1, e1 = got["ProducerId"], got["ProducerEpoch"]
                show(
                    "TXN feature at 1: Produce v12, no AddPartitionsToTxn",
                    await t.produce_v(12, t1, t.batch(p1, e1, 0, [b"tv1"])),
                )
                show("  DescribeTransactions", await t.state(t1, ep1))
                show("TXN feature at 1: EndTxn v5 abort", await t.end_v(5, t1, ep1, p1, e1, False))
                v1 = await api_versions(w)
                r1 = {a["ApiKey"]: (a["MinVersion"], a["MaxVersion"]) for a in v1["ApiKeys"]}
                show("  advertised Produce, EndTxn at level 1", [r1.get(k) for k in (PRODUCE, END)])


if __name__ == "__main__":
    txn_wire.main(sys.argv[1:], scenario)
