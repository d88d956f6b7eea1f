# ruff: noqa: E501 - the printed lines say what each release answers, in full
"""Hand confirmation, on the wire, of the answers that differ between Apache Kafka release lines
behind rows of the truth table (issue 41), one release per argument:

    .venv/bin/python -m confirmations.kafka_release_lines '3.2.3?store=zookeeper' '3.3.2?store=zookeeper' 4.1.2 4.2.2

- CONFIGS.R7: AlterConfigs v0 and IncrementalAlterConfigs v0 giving retention.ms a value that is
  not a number (ZooKeeper mode before 3.3: INVALID_REQUEST 42; KAFKA-13899, 3.3: INVALID_CONFIG 40);
- SHARE-GROUPS (4.1's preview): the finalized share.version feature in ApiVersions, and what a
  ShareGroupHeartbeat joining a new group and a ShareGroupDescribe of an unknown group get.

TXN.R11 (verification from 3.6) is confirmed by ``confirmations.txn_wire 3.5.2 3.6.2``.
"""

import asyncio
import uuid

from confirmations.launch import connect, each_target
from conformance.client.create_topics import create_body
from conformance.protocol.codec import Codec

CREATE, ALTER, INCREMENTAL, APIV, SHARE_HB, SHARE_DESCRIBE = 19, 33, 44, 18, 76, 77
TOPIC_RESOURCE = 2
UNKNOWN_TOPIC = 3


async def configs(codec, c, advertised, target) -> None:
    topic = f"kc-lines-{uuid.uuid4().hex[:8]}"
    body = create_body({topic: 1})
    # ZooKeeper mode before KIP-590's forwarding: only the controller creates (others: 41)
    for ep in target.bootstrap:
        conn = await connect(ep.host, ep.port, codec)
        try:
            made = (await conn.request(CREATE, 2, body)).body
        finally:
            await conn.close()
        codes = [t["ErrorCode"] for t in made["Topics"]]
        print(f"  CreateTopics v2 {topic} at {ep.host}:{ep.port}: {codes}")
        if codes == [0]:
            break
    bad = {"Name": "retention.ms", "Value": "not-a-number"}
    resource = {"ResourceType": TOPIC_RESOURCE, "ResourceName": topic, "Configs": [bad]}
    for _ in range(40):  # until the broker asked knows the topic (ZooKeeper mode: a moment)
        got = (await c.request(ALTER, 0, {"Resources": [resource], "ValidateOnly": False})).body
        if got["Responses"][0]["ErrorCode"] != UNKNOWN_TOPIC:
            break
        await asyncio.sleep(0.5)
    print(
        f"  CONFIGS.R7 AlterConfigs v0 retention.ms=not-a-number: {[(r['ErrorCode'], r['ErrorMessage']) for r in got['Responses']]}"
    )
    if INCREMENTAL in advertised:
        got = (
            await c.request(
                INCREMENTAL,
                0,
                {
                    "Resources": [
                        {
                            "ResourceType": TOPIC_RESOURCE,
                            "ResourceName": topic,
                            "Configs": [{**bad, "ConfigOperation": 0}],
                        }
                    ],
                    "ValidateOnly": False,
                },
            )
        ).body
        print(
            f"  CONFIGS.R7 IncrementalAlterConfigs v0 SET retention.ms=not-a-number: {[(r['ErrorCode'], r['ErrorMessage']) for r in got['Responses']]}"
        )


async def share_groups(codec, c, advertised) -> None:
    answer = (
        await c.request(APIV, 3, {"ClientSoftwareName": "kc-lines", "ClientSoftwareVersion": "0"})
    ).body
    features = {
        f["Name"]: (f["MinVersionLevel"], f["MaxVersionLevel"])
        for f in answer.get("FinalizedFeatures") or []
    }
    print(f"  finalized features: {features}")
    print(
        f"  ShareGroupHeartbeat advertised: {advertised.get(SHARE_HB)}, ShareGroupDescribe: {advertised.get(SHARE_DESCRIBE)}"
    )
    if SHARE_HB not in advertised:
        return
    v = advertised[SHARE_HB][1]
    group = f"kc-lines-share-{uuid.uuid4().hex[:8]}"
    hb = {
        "GroupId": group,
        "MemberId": uuid.uuid4().hex[:22],
        "MemberEpoch": 0,
        "RackId": None,
        "SubscribedTopicNames": ["kc-lines"],
    }
    got = (await c.request(SHARE_HB, v, hb)).body
    print(
        f"  SHARE-GROUPS.R1 ShareGroupHeartbeat v{v} join (epoch 0): ErrorCode {got['ErrorCode']} ({got.get('ErrorMessage')}), MemberEpoch {got.get('MemberEpoch')}"
    )
    d = advertised[SHARE_DESCRIBE][1]
    got = (
        await c.request(
            SHARE_DESCRIBE,
            d,
            {"GroupIds": [f"{group}-unknown"], "IncludeAuthorizedOperations": False},
        )
    ).body
    print(
        f"  SHARE-GROUPS.R7 ShareGroupDescribe v{d} of a group that does not exist: {[(g['ErrorCode'], g.get('ErrorMessage')) for g in got['Groups']]}"
    )


async def probe(target) -> None:
    codec = Codec.from_specs().strict()
    ep = target.bootstrap[0]
    c = await connect(ep.host, ep.port, codec)
    try:
        advertised = await c.api_versions()
        print(f"Apache Kafka {target.version} ({target.store}), broker {ep.host}:{ep.port}")
        await configs(codec, c, advertised, target)
        await share_groups(codec, c, advertised)
    finally:
        await c.close()


if __name__ == "__main__":
    each_target(probe)
