"""SECURITY.R11-R13: SCRAM credentials through the admin APIs (KIP-554).

R11 needs a SASL listener enabling SCRAM-SHA-256 (else SKIP), R13 the target's unprivileged
principal (else SKIP); R12 is judged wherever the target advertises the APIs, as the suite's
principal. Alterations go to the broker Metadata names as controller, as Kafka's admin client
sends them (ZooKeeper-mode brokers answer NOT_CONTROLLER elsewhere; KRaft brokers forward them
from any broker). Each test alters only users of its own (fresh names, so concurrent tests
never meet) and deletes what it made. Brokers learn credentials with the cluster metadata: a
login waits (bounded) for the change to arrive.
"""

from __future__ import annotations

import time
import uuid

from conformance.client.sasl import (
    SCRAM_ITERATIONS,
    SCRAM_SHA_256,
    SCRAM_TYPES,
    SaslAuthenticationError,
    authenticate,
    scram_upsertion,
)
from conformance.protocol import ApiKey, ErrorCode
from conformance.results.verdicts import MissingPrecondition
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, SyncConnection
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.records_io import controller_endpoint
from conformance.suite.kit.safety import fresh_name
from conformance.suite.security.shared import NO_PRINCIPAL, NO_SASL

R11, R12, R13 = "SECURITY.R11", "SECURITY.R12", "SECURITY.R13"
SHA256, SHA512 = (code for code, name in sorted(SCRAM_TYPES.items()))
LOW, HIGH = SCRAM_ITERATIONS
#: how long a credential change may take to reach the broker a login goes to
PROPAGATION_S = 6.0


def upsertion(name: str, password: str, mechanism: int = SHA256, iterations: int = LOW) -> dict:
    return scram_upsertion(name, password, mechanism, iterations)


def alter(harness: Harness, conn: SyncConnection, upserts: list, deletes: list) -> dict[str, tuple]:
    """User -> (error code, message) of an AlterUserScramCredentials."""
    body = {"Upsertions": upserts, "Deletions": deletes}
    version = harness.pick_version(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
    answer = verify.expect_response(conn, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, version, body)
    return {r["User"]: (r["ErrorCode"], r["ErrorMessage"]) for r in answer.body["Results"]}


def describe(harness: Harness, conn: SyncConnection, names: list[str]):
    version = harness.pick_version(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
    body = {"Users": [{"Name": n} for n in names]}
    return verify.expect_response(conn, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, version, body)


def _user() -> tuple[str, str]:
    return fresh_name("scram"), uuid.uuid4().hex


def _login(harness: Harness, user: str, password: str) -> str | None:
    """None when a SCRAM-SHA-256 login as ``user`` succeeds, else why it did not."""
    conn = harness.connect(authenticate=False)
    try:
        harness.call(
            authenticate(
                conn.conn, SCRAM_SHA_256, user, password, versions=harness.advertised or None
            )
        )
    except SaslAuthenticationError as e:
        return f"refused ({e.error_code}: {e})"
    except ConnectionError as e:
        return f"closed ({e})"
    finally:
        conn.close()
    return None


def _until(harness: Harness, user: str, password: str, accepted: bool) -> str | None:
    """Log in until the outcome is ``accepted`` (or PROPAGATION_S passed): the last outcome."""
    deadline = time.monotonic() + PROPAGATION_S
    while True:
        outcome = _login(harness, user, password)
        if (outcome is None) == accepted or time.monotonic() > deadline:
            return outcome
        time.sleep(0.2)


def _scram_listener(harness: Harness) -> None:
    if harness.target.sasl is None:
        raise MissingPrecondition(NO_SASL)
    conn = harness.connect(authenticate=False)
    enabled = conn.request(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": SCRAM_SHA_256}).body
    conn.close()
    if enabled["ErrorCode"] != 0:
        raise MissingPrecondition(
            f"the listener does not enable {SCRAM_SHA_256} (it enables {enabled['Mechanisms']})"
        )


@conformance("security/scram/credentials-take-effect", R11, api=ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
def test_an_upserted_credential_logs_in_until_deleted(harness: Harness) -> None:
    harness.pick_version(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
    harness.pick_version(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
    _scram_listener(harness)
    user, password = _user()
    conn = harness.connect(controller_endpoint(harness))
    made = upsertion(user, password)
    upserted = alter(harness, conn, [made], [])
    try:
        verify.check(
            upserted.get(user, (None,))[0] == 0,
            f"AlterUserScramCredentials v0 upserting SCRAM-SHA-256 for {user} answered {upserted}",
            R11,
        )
        refused = _until(harness, user, password, accepted=True)
        verify.check(
            refused is None,
            f"a SCRAM-SHA-256 login as {user}, {PROPAGATION_S:.0f} s after its credential was "
            f"upserted, was {refused}",
            R11,
        )
        wrong = _login(harness, user, password + "-not-it")
        verify.check(
            wrong is not None,
            f"a SCRAM-SHA-256 login as {user} with a wrong password succeeded",
            R11,
        )
        answer = describe(harness, conn, [user])
        results = answer.body["Results"]
        infos = [(i["Mechanism"], i["Iterations"]) for r in results for i in r["CredentialInfos"]]
        verify.check(
            [r["ErrorCode"] for r in results] == [0] and infos == [(SHA256, LOW)],
            f"DescribeUserScramCredentials v0 of {user} answered "
            f"{[(r['User'], r['ErrorCode'], r['ErrorMessage']) for r in results]} with "
            f"(mechanism, iterations) {infos}, not [({SHA256}, {LOW})]",
            R11,
        )
        leaked = [what for what in ("Salt", "SaltedPassword") if made[what] in answer.raw]
        verify.check(
            not leaked, f"DescribeUserScramCredentials of {user} carries its {leaked}", R11
        )
    finally:
        deleted = alter(harness, conn, [], [{"Name": user, "Mechanism": SHA256}])
    verify.check(
        deleted.get(user, (None,))[0] == 0,
        f"AlterUserScramCredentials v0 deleting {user}'s SCRAM-SHA-256 credential answered "
        f"{deleted}",
        R11,
    )
    accepted = _until(harness, user, password, accepted=False)
    verify.check(
        accepted is not None,
        f"a SCRAM-SHA-256 login as {user} still succeeded {PROPAGATION_S:.0f} s after its "
        "credential was deleted",
        R11,
    )
    gone = describe(harness, conn, [user]).body["Results"]
    verify.check(
        [r["ErrorCode"] for r in gone] == [ErrorCode.RESOURCE_NOT_FOUND],
        f"DescribeUserScramCredentials v0 of {user} after its deletion answered "
        f"{[(r['User'], r['ErrorCode'], r['CredentialInfos']) for r in gone]}, not "
        "RESOURCE_NOT_FOUND",
        R11,
    )


@conformance("security/scram/refusals", R12, api=ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
def test_each_wrong_alteration_is_refused_per_user(harness: Harness) -> None:
    harness.pick_version(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
    harness.pick_version(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
    conn = harness.connect(controller_endpoint(harness))
    _, password = _user()
    cases = {
        "mechanism 0 (UNKNOWN)": ([upsertion(fresh_name("scram"), password, 0)], [], "UPS"),
        "mechanism 3": ([upsertion(fresh_name("scram"), password, 3)], [], "UPS"),
        f"{LOW - 1} iterations": (
            [upsertion(fresh_name("scram"), password, SHA256, LOW - 1)],
            [],
            "UNACCEPTABLE",
        ),
        f"{HIGH + 1} iterations": (
            [upsertion(fresh_name("scram"), password, SHA256, HIGH + 1)],
            [],
            "UNACCEPTABLE",
        ),
    }
    twice = fresh_name("scram")
    absent = fresh_name("scram")
    cases["the same credential upserted twice"] = (
        [upsertion(twice, password), upsertion(twice, password)],
        [],
        "DUPLICATE",
    )
    cases["deleting a credential that does not exist"] = (
        [],
        [{"Name": absent, "Mechanism": SHA256}],
        "NOT_FOUND",
    )
    want = {
        "UPS": ErrorCode.UNSUPPORTED_SASL_MECHANISM,
        "UNACCEPTABLE": ErrorCode.UNACCEPTABLE_CREDENTIAL,
        "DUPLICATE": ErrorCode.DUPLICATE_RESOURCE,
        "NOT_FOUND": ErrorCode.RESOURCE_NOT_FOUND,
    }
    users: list[str] = []
    try:
        for label, (ups, dels, kind) in cases.items():
            name = (ups or dels)[0]["Name"]
            users.append(name)
            got = alter(harness, conn, ups, dels)
            verify.check(
                list(got) == [name] and got[name][0] == want[kind],
                f"AlterUserScramCredentials v0 with {label} for {name} answered {got}, not "
                f"{want[kind].name}",
                R12,
            )
        found = describe(harness, conn, users).body["Results"]
        made = [(r["User"], r["ErrorCode"]) for r in found if r["ErrorCode"] == 0]
        verify.check(
            not made,
            f"refused alterations made credentials: DescribeUserScramCredentials found {made}",
            R12,
        )
        verify.check(
            {r["ErrorCode"] for r in found} == {ErrorCode.RESOURCE_NOT_FOUND},
            "DescribeUserScramCredentials v0 of users without credentials answered "
            f"{[(r['User'], r['ErrorCode']) for r in found]}, not RESOURCE_NOT_FOUND each",
            R12,
        )
        doubled = describe(harness, conn, [absent, absent]).body["Results"]
        verify.check(
            [r["ErrorCode"] for r in doubled] == [ErrorCode.DUPLICATE_RESOURCE],
            f"DescribeUserScramCredentials v0 naming {absent} twice answered "
            f"{[(r['User'], r['ErrorCode']) for r in doubled]}, not one DUPLICATE_RESOURCE",
            R12,
        )
    finally:  # (refused as they should be, there is nothing to delete; a faulty target: clean)
        for name in users:
            for mechanism in (SHA256, SHA512):
                alter(harness, conn, [], [{"Name": name, "Mechanism": mechanism}])


@conformance("security/scram/cluster-operations", R13, api=ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
def test_the_scram_apis_need_the_cluster_operations(harness: Harness) -> None:
    harness.pick_version(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
    harness.pick_version(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
    if harness.target.sasl is None or harness.target.unprivileged is None:
        raise MissingPrecondition(NO_PRINCIPAL)
    where = controller_endpoint(harness)
    alice = harness.connect(where, as_=harness.target.unprivileged)
    user, password = _user()
    got = alter(harness, alice, [upsertion(user, password)], [])
    listed = describe(harness, alice, [harness.target.unprivileged.username]).body
    time.sleep(0.5)
    made = describe(harness, harness.connect(), [user]).body["Results"]
    created = [r["User"] for r in made if r["ErrorCode"] == 0]
    if created:
        alter(harness, harness.connect(where), [], [{"Name": user, "Mechanism": SHA256}])
    verify.check(
        [code for code, _ in got.values()] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED],
        f"AlterUserScramCredentials v0 by a principal without ALTER on the cluster answered {got}",
        R13,
    )
    verify.check(not created, f"a principal without ALTER on the cluster created {user}", R13)
    verify.check(
        listed["ErrorCode"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        "DescribeUserScramCredentials v0 by a principal without DESCRIBE on the cluster "
        f"answered {listed['ErrorCode']} with {len(listed['Results'])} results",
        R13,
    )
