# ruff: noqa: E501 - the printed lines say what Kafka answers, in full
"""Hand confirmation on the wire: SCRAM credentials through the admin APIs (KIP-554) and the
authorized-operations fields (KIP-430) on Apache Kafka with ``security=sasl``, apart from the
suite: the project's codec and wire client.

As ``admin`` (super user): DescribeUserScramCredentials of everyone, of an unknown user, of one
user twice; AlterUserScramCredentials upserting a new user's SCRAM-SHA-256 credential (then a
SCRAM login with its password, and a wrong one), each refusal (unknown mechanism, too few and too
many iterations, a user twice in one request, an empty name, deleting what does not exist), the
deletion (then the login again). As ``alice`` (no ACL): both APIs. Then the authorized
operations: Metadata v8+ with IncludeTopicAuthorizedOperations for a topic alice may READ,
DescribeCluster as admin and as alice, DescribeGroups of a group alice may READ. The drawn
passwords are never printed.

    .venv/bin/python -m confirmations.kafka_scram_and_operations '4.4.0?brokers=1&security=sasl'
"""

import asyncio
import uuid

from confirmations.launch import each_target
from conformance.client.sasl import SaslAuthenticationError, authenticate, scram_upsertion
from conformance.client.wire import Connection
from conformance.protocol import AclOperation, ApiKey
from conformance.protocol.codec import Codec
from conformance.protocol.kafka_errors import error_name
from conformance.targets.kafka import KafkaTarget

SHA256, SHA512 = 1, 2
ZERO = uuid.UUID(int=0)


def ops(bits: int) -> str:
    if bits == -(2**31):
        return "unset (INT32_MIN)"
    return f"{bits} = " + "|".join(o.name for o in AclOperation if o > 0 and bits >> int(o) & 1)


def upsertion(name: str, password: str, mechanism: int = SHA256, iterations: int = 4096) -> dict:
    return scram_upsertion(name, password, mechanism, iterations)


def results(body: dict) -> str:
    return "; ".join(
        f"{r['User']}: {error_name(r['ErrorCode'])} ({r['ErrorMessage']})" for r in body["Results"]
    )


async def confirm(target: KafkaTarget) -> None:
    codec = Codec.from_specs().strict()
    ep = target.bootstrap[0]

    async def login(user: str, password: str, mechanism: str = "PLAIN") -> Connection:
        conn = await Connection.open(ep.host, ep.port, codec=codec)
        await authenticate(conn, mechanism, user, password)
        return conn

    async def try_login(user: str, password: str, mechanism: str) -> str:
        try:
            conn = await login(user, password, mechanism)
        except SaslAuthenticationError as e:
            return f"refused: {error_name(e.error_code) if e.error_code else ''} {e}"
        await conn.close()
        return "authenticated"

    admin = await login("admin", target.passwords["admin"])
    print(f"== Apache Kafka {target.version} ({target.store}), security=sasl")
    advertised = await admin.api_versions()
    for key in (ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, ApiKey.ALTER_USER_SCRAM_CREDENTIALS):
        print(f"{key.name} advertised: {advertised.get(key)}")

    async def describe(conn: Connection, names: list[str] | None) -> dict:
        users = None if names is None else [{"Name": n} for n in names]
        return (
            await conn.request(
                ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"Users": users}, timeout=25
            )
        ).body

    async def alter(conn: Connection, upserts: list[dict], deletes: list[dict]) -> dict:
        body = {"Upsertions": upserts, "Deletions": deletes}
        return (await conn.request(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, body, timeout=25)).body

    def described(body: dict) -> str:
        top = f"top {error_name(body['ErrorCode'])} ({body['ErrorMessage']})"
        rows = [
            f"{r['User']}: {error_name(r['ErrorCode'])} ({r['ErrorMessage']}) "
            + str([(i["Mechanism"], i["Iterations"]) for i in r["CredentialInfos"]])
            for r in body["Results"]
        ]
        return top + "; " + "; ".join(rows)

    print("-- KIP-554, as admin")
    print("describe all:", described(await describe(admin, None)))
    print("describe unknown:", described(await describe(admin, ["kc-nobody"])))
    print("describe alice twice:", described(await describe(admin, ["alice", "alice"])))
    print("describe [] :", described(await describe(admin, [])))
    user = f"kc-scram-{uuid.uuid4().hex[:8]}"
    password = uuid.uuid4().hex
    print(
        f"upsert {user} SHA-256 4096:", results(await alter(admin, [upsertion(user, password)], []))
    )
    await asyncio.sleep(1.0)
    print("describe it:", described(await describe(admin, [user])))
    print("login SCRAM-SHA-256:", await try_login(user, password, "SCRAM-SHA-256"))
    print("login SCRAM-SHA-256 wrong:", await try_login(user, password + "x", "SCRAM-SHA-256"))
    print("login SCRAM-SHA-512 (none set):", await try_login(user, password, "SCRAM-SHA-512"))
    print("login PLAIN:", await try_login(user, password, "PLAIN"))
    upsert512 = upsertion(user, password, SHA512, 8192)
    print("upsert SHA-512 8192:", results(await alter(admin, [upsert512], [])))
    await asyncio.sleep(1.0)
    print("describe it:", described(await describe(admin, [user])))
    print("login SCRAM-SHA-512:", await try_login(user, password, "SCRAM-SHA-512"))
    other = f"kc-scram-{uuid.uuid4().hex[:8]}"
    for label, ups, dels in (
        ("mechanism 0", [upsertion(other, password, 0)], []),
        ("mechanism 3", [upsertion(other, password, 3)], []),
        ("iterations 4095", [upsertion(other, password, SHA256, 4095)], []),
        ("iterations 16385", [upsertion(other, password, SHA256, 16385)], []),
        (
            "user twice in upsertions, two mechanisms",
            [upsertion(other, password), upsertion(other, password, SHA512)],
            [],
        ),
        (
            "user twice in upsertions, one mechanism",
            [upsertion(other, password), upsertion(other, password)],
            [],
        ),
        (
            "user in upsertions and deletions",
            [upsertion(other, password)],
            [{"Name": other, "Mechanism": SHA512}],
        ),
        (
            "user twice in deletions",
            [],
            [{"Name": other, "Mechanism": SHA256}, {"Name": other, "Mechanism": SHA512}],
        ),
        ("empty name", [upsertion("", password)], []),
        ("delete absent", [], [{"Name": other, "Mechanism": SHA256}]),
        ("delete mechanism 0", [], [{"Name": user, "Mechanism": 0}]),
        (
            "one good, one bad",
            [upsertion(other, password), upsertion(other + "-b", password, SHA256, 100)],
            [],
        ),
    ):
        print(f"alter {label}:", results(await alter(admin, ups, dels)))
    await asyncio.sleep(1.0)
    print("describe the refused ones:", described(await describe(admin, [other, other + "-b"])))
    print(
        "upsert 16384:",
        results(await alter(admin, [upsertion(other, password, SHA256, 16384)], [])),
    )
    print(
        "upsert and delete the other mechanism:",
        results(
            await alter(
                admin, [upsertion(other, password, SHA512)], [{"Name": other, "Mechanism": SHA256}]
            )
        ),
    )
    await asyncio.sleep(1.0)
    print("describe it:", described(await describe(admin, [other])))
    print("delete SHA-256:", results(await alter(admin, [], [{"Name": user, "Mechanism": SHA256}])))
    await asyncio.sleep(1.0)
    print("describe it:", described(await describe(admin, [user])))
    print("login SCRAM-SHA-256 after deletion:", await try_login(user, password, "SCRAM-SHA-256"))
    print("delete SHA-512:", results(await alter(admin, [], [{"Name": user, "Mechanism": SHA512}])))
    await asyncio.sleep(1.0)
    print("describe it:", described(await describe(admin, [user])))
    alice = await login("alice", target.passwords["alice"])
    print("-- KIP-430")
    topic, hidden = f"kc-ops-{uuid.uuid4().hex[:8]}", f"kc-ops-{uuid.uuid4().hex[:8]}"
    group = f"kc-ops-group-{uuid.uuid4().hex[:8]}"
    create = {
        "Topics": [
            {
                "Name": t,
                "NumPartitions": 1,
                "ReplicationFactor": 1,
                "Assignments": [],
                "Configs": [],
            }
            for t in (topic, hidden)
        ],
        "timeoutMs": 15000,
        "validateOnly": False,
    }
    print(
        "create topics:",
        [
            (t["Name"], error_name(t["ErrorCode"]))
            for t in (await admin.request(ApiKey.CREATE_TOPICS, 5, create)).body["Topics"]
        ],
    )

    def acl(rtype: int, name: str, op: int) -> dict:
        return {
            "ResourceType": rtype,
            "ResourceName": name,
            "ResourcePatternType": 3,
            "Principal": "User:alice",
            "Host": "*",
            "Operation": op,
            "PermissionType": 3,
        }

    grants = [
        acl(2, topic, AclOperation.READ),
        acl(2, topic, AclOperation.ALTER_CONFIGS),
        acl(3, group, AclOperation.READ),
    ]
    created = (await admin.request(ApiKey.CREATE_ACLS, 2, {"Creations": grants})).body
    print("create acls:", [error_name(r["ErrorCode"]) for r in created["Results"]])
    for _ in range(100):  # the offsets topic is made on the first FindCoordinator
        found = (
            await admin.request(
                ApiKey.FIND_COORDINATOR, 4, {"KeyType": 0, "CoordinatorKeys": [group]}
            )
        ).body
        if found["Coordinators"][0]["ErrorCode"] == 0:
            break
        await asyncio.sleep(0.2)
    print("find coordinator:", error_name(found["Coordinators"][0]["ErrorCode"]))
    offset = {"PartitionIndex": 0, "CommittedOffset": 0, "CommittedMetadata": None}
    commit = {"GroupId": group, "GenerationIdOrMemberEpoch": -1, "MemberId": ""}
    commit |= {"GroupInstanceId": None, "Topics": [{"Name": topic, "Partitions": [offset]}]}
    for _ in range(100):  # the coordinator may still be loading the group's partition
        done = (await admin.request(ApiKey.OFFSET_COMMIT, 8, commit)).body
        code = done["Topics"][0]["Partitions"][0]["ErrorCode"]
        if code == 0:
            break
        await asyncio.sleep(0.2)
    print("offset commit as admin (the group exists, Empty):", error_name(code))
    await asyncio.sleep(2.0)
    for who, conn in (("admin", admin), ("alice", alice)):
        md = (
            await conn.request(
                ApiKey.METADATA,
                12,
                {
                    "Topics": [{"Name": topic, "TopicId": ZERO}, {"Name": hidden, "TopicId": ZERO}],
                    "AllowAutoTopicCreation": False,
                    "IncludeTopicAuthorizedOperations": True,
                },
            )
        ).body
        for t in md["Topics"]:
            print(
                f"metadata v12 as {who}: {'granted' if t['Name'] == topic else 'hidden'} {error_name(t['ErrorCode'])} ops {ops(t['TopicAuthorizedOperations'])}"
            )
        md = (
            await conn.request(
                ApiKey.METADATA,
                12,
                {
                    "Topics": [{"Name": topic, "TopicId": ZERO}],
                    "AllowAutoTopicCreation": False,
                    "IncludeTopicAuthorizedOperations": False,
                },
            )
        ).body
        print(
            f"metadata v12 as {who}, not asked: ops {ops(md['Topics'][0]['TopicAuthorizedOperations'])}"
        )
        for v in (8, 10):
            md = (
                await conn.request(
                    ApiKey.METADATA,
                    v,
                    {
                        "Topics": [{"Name": topic, "TopicId": ZERO}],
                        "AllowAutoTopicCreation": False,
                        "IncludeClusterAuthorizedOperations": True,
                        "IncludeTopicAuthorizedOperations": True,
                    },
                )
            ).body
            print(
                f"metadata v{v} as {who}: topic ops {ops(md['Topics'][0]['TopicAuthorizedOperations'])}, cluster ops {ops(md.get('ClusterAuthorizedOperations', -(2**31)))}"
            )
        for include in (True, False):
            for label, key, version, body, where in (
                (
                    "describe cluster",
                    ApiKey.DESCRIBE_CLUSTER,
                    1,
                    {"IncludeClusterAuthorizedOperations": include, "EndpointType": 1},
                    None,
                ),
                (
                    "describe groups",
                    ApiKey.DESCRIBE_GROUPS,
                    5,
                    {"Groups": [group], "IncludeAuthorizedOperations": include},
                    "Groups",
                ),
            ):
                got = (await conn.request(key, version, body)).body
                entry = got[where][0] if where else got
                field = "AuthorizedOperations" if where else "ClusterAuthorizedOperations"
                state = f" state {entry['GroupState']!r}" if where else ""
                print(
                    f"{label} as {who}, include={include}: {error_name(entry['ErrorCode'])}{state} ops {ops(entry[field])}"
                )
    print("-- KIP-554, as alice")
    for label, call in (
        ("describe all", lambda c: describe(c, None)),
        ("describe alice", lambda c: describe(c, ["alice"])),
        ("upsert", lambda c: alter(c, [upsertion(other, password)], [])),
        ("delete", lambda c: alter(c, [], [{"Name": "admin", "Mechanism": SHA256}])),
    ):
        try:
            body = await asyncio.wait_for(call(alice), 30)
        except (TimeoutError, ConnectionError) as e:
            print(f"{label}: no answer ({type(e).__name__})")
            alice = await login("alice", target.passwords["alice"])
            continue
        print(f"{label}:", described(body) if "ErrorCode" in body else results(body))
    await admin.close()
    await alice.close()


if __name__ == "__main__":
    each_target(confirm)
