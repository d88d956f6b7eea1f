# ruff: noqa: E501 - the printed lines say what Kafka answers, in full
"""Hand confirmation on the wire: tansu 0.6's IncrementalAlterConfigs of a topic that does not
exist (CONFIGS.R12), and DescribeConfigs of it afterwards."""

import asyncio
import uuid

from confirmations.launch import connect, tansu
from conformance.protocol.codec import Codec


async def main(host: str, port: int) -> None:
    codec = Codec.from_specs().strict()
    c = await connect(host, port, codec)
    try:
        versions = await c.api_versions()
        print(
            "advertised IncrementalAlterConfigs",
            versions.get(44),
            "AlterConfigs",
            versions.get(33),
            "OffsetDelete",
            versions.get(47),
        )
        ghost = f"kc-never-{uuid.uuid4().hex[:8]}"
        v = versions[44][1]
        body = {
            "Resources": [
                {
                    "ResourceType": 2,
                    "ResourceName": ghost,
                    "Configs": [{"Name": "retention.ms", "ConfigOperation": 0, "Value": "3600000"}],
                }
            ],
            "ValidateOnly": False,
        }
        print(
            f"IncrementalAlterConfigs v{v} SET retention.ms on {ghost} (Kafka: 3 UNKNOWN_TOPIC_OR_PARTITION):",
            (await c.request(44, v, body)).body,
        )
        dv = versions[32][1]
        body = {
            "Resources": [{"ResourceType": 2, "ResourceName": ghost, "ConfigurationKeys": None}],
            "IncludeSynonyms": False,
            "IncludeDocumentation": False,
        }
        r = (await c.request(32, dv, body)).body["Results"][0]
        print(
            f"DescribeConfigs v{dv} of {ghost} afterwards (Kafka: 3):",
            {k: r[k] for k in ("ErrorCode", "ResourceName")},
            len(r["Configs"]),
            "configs",
        )
        md = (
            await c.request(
                3,
                12,
                {
                    "Topics": [{"Name": ghost, "TopicId": uuid.UUID(int=0)}],
                    "AllowAutoTopicCreation": False,
                    "IncludeClusterAuthorizedOperations": False,
                    "IncludeTopicAuthorizedOperations": False,
                },
            )
        ).body
        print("Metadata v12 of it:", [(t["Name"], t["ErrorCode"]) for t in md["Topics"]])
    finally:
        await c.close()


if __name__ == "__main__":
    with tansu() as (host, port):
        asyncio.run(main(host, port))
