# ruff: noqa: E501 - the printed lines say what Kafka answers, in full
"""Hand confirmation, on the wire, of tansu 0.6's group-coordinator answers (not the suite:
raw requests with the project's codec, one connection per member)."""

import asyncio
import time
import uuid

from confirmations.launch import connect, tansu
from conformance.protocol.codec import Codec

JG, SG, HB, LG, DG, LS, DEL, OC, OF, FC = 11, 14, 12, 13, 15, 16, 42, 8, 9, 10
V = {JG: 9, SG: 5, HB: 4, LG: 5, DG: 5, LS: 4, DEL: 2, OC: 8, OF: 8}


def show(what, body):
    print(f"  {what}: {body}")


async def join(c, group, member="", session=6000, ptype="consumer", instance=None):
    """A JoinGroup on connection ``c``: the answer and how long it took."""
    body = dict(
        GroupId=group,
        SessionTimeoutMs=session,
        RebalanceTimeoutMs=4000,
        MemberId=member,
        GroupInstanceId=instance,
        ProtocolType=ptype,
        Protocols=[dict(Name="range", Metadata=b"m")],
        Reason=None,
    )
    t = time.monotonic()
    r = (await c.request(JG, V[JG], body, timeout=60)).body
    return r, time.monotonic() - t


async def full_join(c, group, **kw):
    """A JoinGroup, repeated with the member id a MEMBER_ID_REQUIRED answer gives."""
    r, _ = await join(c, group, **kw)
    if r["ErrorCode"] == 79:
        r, _ = await join(c, group, member=r["MemberId"], **kw)
    return r


async def sync(c, group, gen, member, assign=None, instance=None):
    """A SyncGroup; ``assign``: member id -> assignment (the leader's)."""
    body = dict(
        GroupId=group,
        GenerationId=gen,
        MemberId=member,
        GroupInstanceId=instance,
        ProtocolType="consumer",
        ProtocolName="range",
        Assignments=[dict(MemberId=m, Assignment=a) for m, a in (assign or {}).items()],
    )
    return (await c.request(SG, V[SG], body, timeout=30)).body


async def hb(c, group, gen, member, instance=None):
    """A Heartbeat."""
    return (
        await c.request(
            HB,
            V[HB],
            dict(GroupId=group, GenerationId=gen, MemberId=member, GroupInstanceId=instance),
            timeout=30,
        )
    ).body


async def rejoin_answered_when(conn):
    """GROUPS.R21: how long a new member's JoinGroups take."""
    print("GROUPS.R21: one new member, session 45000 ms, rebalance timeout 4000 ms")
    c = await conn()
    g = f"kc-wire-{uuid.uuid4().hex[:8]}"
    r, took = await join(c, g, session=45000)
    show(
        f"JoinGroup v9 (no member id) answered after {took:.1f} s",
        {k: r[k] for k in ("ErrorCode", "MemberId")},
    )
    r, took = await join(c, g, member=r["MemberId"], session=45000)
    show(
        f"JoinGroup v9 with that id answered after {took:.1f} s (Kafka: within the 4 s rebalance timeout)",
        {k: r[k] for k in ("ErrorCode", "GenerationId")},
    )


async def join_before_member_ids(conn):
    """GROUPS.R2: a JoinGroup version without MEMBER_ID_REQUIRED."""
    print(
        "GROUPS.R2: JoinGroup v3 (no MEMBER_ID_REQUIRED in v0-3) from a new member (Kafka: NONE, joined)"
    )
    g0 = f"kc-wire-{uuid.uuid4().hex[:8]}"
    c3 = await conn()
    body = dict(
        GroupId=g0,
        SessionTimeoutMs=6000,
        RebalanceTimeoutMs=4000,
        MemberId="",
        ProtocolType="consumer",
        Protocols=[dict(Name="range", Metadata=b"m")],
    )
    show(
        "JoinGroup v3",
        {
            k: v
            for k, v in (await c3.request(JG, 3, body, timeout=30)).body.items()
            if k in ("ErrorCode", "MemberId", "GenerationId")
        },
    )


async def stale_and_unknown_members(conn):
    """GROUPS.R6/R7: a stable one-member group; returns its connection, group, generation and
    member id, which the later steps use."""
    print(
        "GROUPS.R6/R7: a stable one-member group; Heartbeat of a stale generation, of an unknown member"
    )
    g = f"kc-wire-{uuid.uuid4().hex[:8]}"
    a = await conn()
    r = await full_join(a, g)
    gen, mid = r["GenerationId"], r["MemberId"]
    show("JoinGroup", {k: r[k] for k in ("ErrorCode", "GenerationId", "MemberId", "Leader")})
    show("SyncGroup", await sync(a, g, gen, mid, {mid: b"x"}))
    show(f"Heartbeat gen {gen} (current)", await hb(a, g, gen, mid))
    show(
        f"Heartbeat gen {gen - 1} (stale; Kafka: 22 ILLEGAL_GENERATION)",
        await hb(a, g, gen - 1, mid),
    )
    show(f"SyncGroup gen {gen - 1} (stale; Kafka: 22)", await sync(a, g, gen - 1, mid))
    show(
        "Heartbeat of unknown member (Kafka: 25 UNKNOWN_MEMBER_ID)",
        await hb(a, g, gen, "kc-ghost"),
    )
    show("SyncGroup of unknown member (Kafka: 25)", await sync(a, g, gen, "kc-ghost"))
    return a, g, gen, mid


async def other_protocol_type(conn, a, g, gen, mid):
    """GROUPS.R12: a member of another protocol type joins the stable group."""
    print(
        "GROUPS.R12: JoinGroup with protocol type kc-other into that group (Kafka: 23 INCONSISTENT_GROUP_PROTOCOL)"
    )
    o = await conn()
    r, took = await join(o, g, ptype="kc-other")
    show(f"JoinGroup (after {took:.1f} s)", {k: r[k] for k in ("ErrorCode", "MemberId")})
    fut = asyncio.ensure_future(join(o, g, member=r["MemberId"], ptype="kc-other"))
    await asyncio.sleep(0.5)
    show("member a's Heartbeat meanwhile", await hb(a, g, gen, mid))
    r, took = await fut
    show(
        f"JoinGroup with that id (after {took:.1f} s)",
        {k: r[k] for k in ("ErrorCode", "MemberId", "GenerationId", "ProtocolName")},
    )


async def delete_non_empty(conn):
    """GROUPS.R17: DeleteGroups of a group with a member."""
    print("GROUPS.R17: DeleteGroups of that group, which has a member (Kafka: 68 NON_EMPTY_GROUP)")
    g2 = f"kc-wire-{uuid.uuid4().hex[:8]}"
    b = await conn()
    r = await full_join(b, g2)
    await sync(b, g2, r["GenerationId"], r["MemberId"], {r["MemberId"]: b"x"})
    show("DeleteGroups", (await b.request(DEL, V[DEL], dict(GroupsNames=[g2]), timeout=30)).body)
    try:
        show(
            "the member's Heartbeat afterwards (Kafka: NONE, the group kept)",
            await hb(b, g2, r["GenerationId"], r["MemberId"]),
        )
    except Exception as e:
        show(
            "the member's Heartbeat afterwards (Kafka: NONE, the group kept)",
            f"{type(e).__name__}: {e}",
        )


async def member_leaves(conn):
    """GROUPS.R9: a member leaves its stable group; returns the group."""
    print("GROUPS.R9: a member of a stable group leaves (Kafka: NONE for it)")
    g3 = f"kc-wire-{uuid.uuid4().hex[:8]}"
    d = await conn()
    r = await full_join(d, g3)
    gen3, mid3 = r["GenerationId"], r["MemberId"]
    await sync(d, g3, gen3, mid3, {mid3: b"x"})
    show(
        "LeaveGroup v5",
        (
            await d.request(
                LG,
                V[LG],
                dict(GroupId=g3, Members=[dict(MemberId=mid3, GroupInstanceId=None, Reason=None)]),
                timeout=30,
            )
        ).body,
    )
    show("Heartbeat after leaving (Kafka: 25)", await hb(d, g3, gen3, mid3))
    return g3


async def static_member_rejoins(conn):
    """GROUPS.R11: a static member rejoins without its id; returns its connection and group."""
    print(
        "GROUPS.R11: a static member rejoins without its member id (Kafka: NONE, a NEW member id, same generation)"
    )
    g4 = f"kc-wire-{uuid.uuid4().hex[:8]}"
    s1 = await conn()
    inst = f"kc-instance-{uuid.uuid4().hex[:6]}"
    r = await full_join(s1, g4, instance=inst)
    show("first JoinGroup", {k: r[k] for k in ("ErrorCode", "GenerationId", "MemberId")})
    await sync(s1, g4, r["GenerationId"], r["MemberId"], {r["MemberId"]: b"x"}, instance=inst)
    s2 = await conn()
    r2, took = await join(s2, g4, instance=inst)
    show(
        f"rejoin without id (after {took:.1f} s)",
        {k: r2[k] for k in ("ErrorCode", "GenerationId", "MemberId")},
    )
    return s1, g4


async def describe_stable(s1, g4):
    """GROUPS.R14: DescribeGroups of the static member's stable group."""
    print(
        "GROUPS.R14: DescribeGroups of that stable group (Kafka: ProtocolType consumer, ProtocolData range)"
    )
    r = (
        await s1.request(
            DG, V[DG], dict(Groups=[g4], IncludeAuthorizedOperations=False), timeout=30
        )
    ).body["Groups"][0]
    show(
        "DescribeGroups",
        {k: r[k] for k in ("ErrorCode", "GroupState", "ProtocolType", "ProtocolData")},
    )


async def never_existed(a):
    """GROUPS.R13/R15/R16 and R19: DescribeGroups and DeleteGroups of a group never made."""
    print("GROUPS.R13/R15/R16: DescribeGroups of a group that never existed; ListGroups")
    ghost = f"kc-never-{uuid.uuid4().hex[:8]}"
    r = (
        await a.request(
            DG, V[DG], dict(Groups=[ghost], IncludeAuthorizedOperations=False), timeout=30
        )
    ).body
    show(
        "DescribeGroups (Kafka: ErrorCode 0, GroupState Dead)",
        {k: r["Groups"][0][k] for k in ("ErrorCode", "GroupState")},
    )
    print("GROUPS.R19: DeleteGroups of a group that never existed (Kafka: 69 GROUP_ID_NOT_FOUND)")
    show(
        "DeleteGroups",
        (await a.request(DEL, V[DEL], dict(GroupsNames=[ghost]), timeout=30)).body,
    )


async def empty_group_and_listings(a, g, g3, g4):
    """An empty group made by a simple commit, then ListGroups with and without a filter."""
    # an empty group made by a simple commit (generation -1)
    t = f"kc-topic-{uuid.uuid4().hex[:6]}"
    await a.request(
        19,
        7,
        dict(
            Topics=[dict(Name=t, NumPartitions=1, ReplicationFactor=1, Assignments=[], Configs=[])],
            TimeoutMs=10000,
            validateOnly=False,
        ),
        timeout=30,
    )
    e = f"kc-empty-{uuid.uuid4().hex[:6]}"
    oc = (
        await a.request(
            OC,
            V[OC],
            dict(
                GroupId=e,
                GenerationIdOrMemberEpoch=-1,
                MemberId="",
                GroupInstanceId=None,
                RetentionTimeMs=-1,
                Topics=[
                    dict(
                        Name=t,
                        Partitions=[
                            dict(
                                PartitionIndex=0,
                                CommittedOffset=5,
                                CommittedLeaderEpoch=-1,
                                CommittedMetadata="m",
                            )
                        ],
                    )
                ],
            ),
            timeout=30,
        )
    ).body
    show("simple OffsetCommit (generation -1)", oc)
    ls = (await a.request(LS, V[LS], dict(StatesFilter=[]), timeout=30)).body
    show(
        "ListGroups (no filter): the wire groups",
        [x for x in ls["Groups"] if x["GroupId"] in (g, e, g3, g4)],
    )
    ls = (await a.request(LS, V[LS], dict(StatesFilter=["Stable"]), timeout=30)).body
    show(
        "ListGroups (StatesFilter [Stable])",
        [x for x in ls["Groups"] if x["GroupId"] in (g, e, g3, g4)],
    )


async def main(host: str, port: int) -> None:
    codec = Codec.from_specs().strict()

    opened = []  # every member's connection stays open until the end, as Kafka's members do

    async def conn():
        opened.append(await connect(host, port, codec))
        return opened[-1]

    await rejoin_answered_when(conn)
    await join_before_member_ids(conn)
    a, g, gen, mid = await stale_and_unknown_members(conn)
    await other_protocol_type(conn, a, g, gen, mid)
    await delete_non_empty(conn)
    g3 = await member_leaves(conn)
    s1, g4 = await static_member_rejoins(conn)
    await describe_stable(s1, g4)
    await never_existed(a)
    await empty_group_and_listings(a, g, g3, g4)


if __name__ == "__main__":
    with tansu() as (host, port):
        asyncio.run(main(host, port))
