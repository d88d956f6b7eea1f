# ruff: noqa: E501 - the printed lines say what Kafka answers, in full
"""Hand confirmation on the wire: how Apache Kafka's KRaft controller answers BrokerRegistration,
BrokerHeartbeat and UnregisterBroker for brokers that do not exist (BROKER-REGISTRATION.R1, R3,
R4, R7, R9, R10), apart from the suite: the project's codec and wire client only.

Fake broker ids far above the real ones register on the controller listener with the listener
name the real brokers use, at a port nobody listens on; every one is unregistered at the end.

    .venv/bin/python -m confirmations.kafka_broker_registration 3.9.1 4.0.2 4.4.0
"""

import asyncio
import uuid

from confirmations.launch import each_version
from conformance.client.wire import Connection
from conformance.protocol.codec import Codec
from conformance.protocol.kafka_errors import error_name
from conformance.targets.kafka import KafkaTarget

REG, HB, UNREG, METADATA = 62, 63, 64, 3
FAKE = 1_950_000_000
FEATURES = [
    {"Name": "metadata.version", "MinSupportedVersion": 1, "MaxSupportedVersion": 32767},
    *(
        {"Name": n, "MinSupportedVersion": 0, "MaxSupportedVersion": 32767}
        for n in ("kraft.version", "group.version", "transaction.version")
    ),
]
CAUGHT_UP, BEHIND = 2**62, -1


def top(versions, codec, key):
    """The highest version both the controller and the project's specs know."""
    ours = codec.message(key, "request").valid_versions
    return min(versions[key][1], ours.hi)


async def confirm(version: str, target: KafkaTarget) -> None:
    codec = Codec.from_specs().strict()
    boot, ctl = target.bootstrap[0], target.controller
    client = await Connection.open(boot.host, boot.port, codec=codec)
    cluster_id = (
        await client.request(METADATA, 12, {"Topics": [], "AllowAutoTopicCreation": False})
    ).body["ClusterId"]
    c = await Connection.open(ctl.host, ctl.port, codec=codec)
    versions = await c.api_versions()
    rv, hv, uv = (top(versions, codec, k) for k in (REG, HB, UNREG))
    print(
        f"== Apache Kafka {version} KRaft; controller advertises BrokerRegistration {versions[REG]}, BrokerHeartbeat {versions[HB]}, UnregisterBroker {versions[UNREG]}; sent v{rv}/v{hv}/v{uv}"
    )
    finalized = (
        await c.request(18, 3, {"ClientSoftwareName": "kc-confirm", "ClientSoftwareVersion": "1"})
    ).body.get("FinalizedFeatures") or []
    print("controller's finalized features:", {f["Name"]: f["MaxVersionLevel"] for f in finalized})
    claimed = {f["Name"] for f in FEATURES}
    extra = [
        {"Name": f["Name"], "MinSupportedVersion": 0, "MaxSupportedVersion": 32767}
        for f in finalized
        if f["Name"] not in claimed
    ]

    def reg_body(broker, incarnation, log_dir, cluster=cluster_id, features=FEATURES + extra):
        return {
            "BrokerId": broker,
            "ClusterId": cluster,
            "IncarnationId": incarnation,
            "Listeners": [
                {"Name": "PLAINTEXT", "Host": "127.0.0.1", "Port": 9, "SecurityProtocol": 0}
            ],
            "Features": features,
            "Rack": None,
            "LogDirs": [log_dir],
        }

    async def register(label, broker, incarnation, log_dir, **kw):
        resp = await c.request(REG, rv, reg_body(broker, incarnation, log_dir, **kw))
        b = resp.body
        print(
            f"{label}: BrokerRegistration -> {error_name(b['ErrorCode'])} BrokerEpoch={b['BrokerEpoch']}  [response frame {resp.raw.hex()}]"
        )
        return b["BrokerEpoch"]

    async def heartbeat(label, broker, epoch, offset=CAUGHT_UP, fence=False, shutdown=False):
        body = {
            "BrokerId": broker,
            "BrokerEpoch": epoch,
            "CurrentMetadataOffset": offset,
            "WantFence": fence,
            "WantShutDown": shutdown,
        }
        resp = await c.request(HB, hv, body)
        b = resp.body
        print(
            f"{label}: BrokerHeartbeat(epoch {epoch}) -> {error_name(b['ErrorCode'])} IsCaughtUp={b['IsCaughtUp']} IsFenced={b['IsFenced']} ShouldShutDown={b['ShouldShutDown']}  [response frame {resp.raw.hex()}]"
        )
        return b

    async def unregister(label, broker):
        resp = await c.request(UNREG, uv, {"BrokerId": broker})
        print(
            f"{label}: UnregisterBroker -> {error_name(resp.body['ErrorCode'])}  [response frame {resp.raw.hex()}]"
        )

    async def listed(label, broker):
        await asyncio.sleep(1.0)  # brokers apply the controller's log asynchronously
        b = (
            await client.request(METADATA, 12, {"Topics": [], "AllowAutoTopicCreation": False})
        ).body
        print(
            f"{label}: client Metadata lists broker {broker}: {broker in {x['NodeId'] for x in b['Brokers']}}"
        )

    await register(
        "R1 register with 3.9's four features only (4.4 finalizes features these do not name)",
        FAKE - 1,
        uuid.uuid4(),
        uuid.uuid4(),
        features=FEATURES,
    )
    a, b = FAKE + int(uuid.uuid4().int % 1000) * 4, None
    b = a + 1
    ia, ib, da, db = uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    await heartbeat("R9/R10 heartbeat of a broker id never registered", a, 0)
    await unregister("R10 unregister of a broker id never registered", a)
    e1 = await register("R1 register A (incarnation IA, directory DA)", a, ia, da)
    await register("R1 register B (another incarnation) naming A's directory DA", b, ib, da)
    eb0 = await register("R1 register B (incarnation IB, its own directory DB)", b, ib, db)
    await register(
        "R1 register naming another cluster id",
        a + 2,
        uuid.uuid4(),
        uuid.uuid4(),
        cluster="kc-not-" + cluster_id[:8],
    )
    eb = await register(
        "R1 register B as a new incarnation while B is Fenced (its heartbeats on time)",
        b,
        uuid.uuid4(),
        db,
    )
    print(f"   B's epoch larger: {eb > eb0}")
    await heartbeat("R2 A behind (Fenced)", a, e1, offset=BEHIND)
    e2 = await register("R7 register A again, same incarnation IA, while Fenced", a, ia, da)
    print(f"   epoch kept: {e2 == e1}")
    await heartbeat("R3 A caught up", a, e1)
    await listed("R3/R4 A Online", a)
    e3 = await register("R7 register A again, same incarnation IA, while Online", a, ia, da)
    print(f"   epoch kept: {e3 == e1}")
    await heartbeat(
        "   A behind after that registration (Fenced again would say IsFenced=True)",
        a,
        e1,
        offset=BEHIND,
    )
    await listed("   A after that registration", a)
    await register(
        "R1 register A as a new incarnation while its session is alive", a, uuid.uuid4(), da
    )
    await heartbeat("R5/R2 A WantFence", a, e1, fence=True)
    await listed("R4 A fenced", a)
    await unregister("R10 unregister A", a)
    await heartbeat("R10 heartbeat of A with its last epoch after UnregisterBroker", a, e1)
    await listed("R10 A unregistered", a)
    e4 = await register(
        "R7 register A again after UnregisterBroker (same incarnation IA)", a, ia, da
    )
    print(f"   epoch larger than before: {e4 > e1}")
    await heartbeat("R7 heartbeat with A's earlier epoch", a, e1)
    c_id, ic, dc = a + 3, uuid.uuid4(), uuid.uuid4()
    ec = await register("R6 register C", c_id, ic, dc)
    await heartbeat("R6 C caught up", c_id, ec)
    await heartbeat("R6 C WantShutDown (leads nothing)", c_id, ec, shutdown=True)
    ec2 = await register("R7 register C again after ShouldShutDown, same incarnation", c_id, ic, dc)
    print(f"   epoch kept: {ec2 == ec}")
    await heartbeat("   C behind after that registration", c_id, ec, offset=BEHIND)
    await unregister("cleanup: unregister C", c_id)
    await unregister("cleanup: unregister A", a)
    await unregister("cleanup: unregister B", b)
    await unregister("cleanup: unregister the broker of 3.9's four features", FAKE - 1)
    await c.close()
    await client.close()


if __name__ == "__main__":
    each_version(confirm)
