"""UpdateFeatures as Kafka 4.4.0's controller checks it (confirmations/txn_v2_wire_kafka.out):
a level above the supported range, an unknown feature and a downgrade without a downgrade type
are INVALID_UPDATE_VERSION for the whole request (no results), forwarded by any broker; a valid
update is answered per feature; the reference changes no level (fixed by configuration)."""

from __future__ import annotations

from conformance.client.wire import Connection
from conformance.protocol import ApiKey, ErrorCode
from tests.reference.data_plane import CODEC
from tests.reference.handlers.test_produce_fetch import run

E = ErrorCode
TV = "transaction.version"


def test_update_features_refuses_as_kafka_and_validates(shared_cluster) -> None:
    async def main():
        host, port = shared_cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
        conn = await Connection.open(host, int(port), codec=CODEC)

        async def update(version: int, *updates: tuple, validate: bool = True) -> dict:
            body = {
                "timeoutMs": 5000,
                "FeatureUpdates": [
                    {"Feature": f, "MaxVersionLevel": level, "UpgradeType": kind}
                    for f, level, kind in updates
                ],
                "ValidateOnly": validate,
            }
            return (await conn.request(ApiKey.UPDATE_FEATURES, version, body)).body

        try:
            for version in (1, 2):
                for updates in (
                    [(TV, 3, 1)],
                    [(TV, 2, 1), ("no.such.feature", 1, 1)],
                    [(TV, 1, 1)],
                ):
                    answer = await update(version, *updates)
                    assert answer["ErrorCode"] == E.INVALID_UPDATE_VERSION, (version, updates)
                    assert "failed for all features" in answer["ErrorMessage"]
                    assert not answer.get("Results")
                answer = await update(version, (TV, 1, 2), (TV, 2, 1))
                assert answer["ErrorCode"] == 0, answer
                if version == 1:
                    assert [r["ErrorCode"] for r in answer["Results"]] == [0, 0]
            assert (await update(1, (TV, 2, 1), validate=False))["ErrorCode"] == 0
            changed = await update(1, (TV, 1, 2), validate=False)
            assert changed["ErrorCode"] == E.INVALID_REQUEST
            unknown_type = await update(1, ("no.such.feature", 1, 9))
            assert unknown_type["ErrorCode"] == E.INVALID_UPDATE_VERSION
            assert "upgrade type" in unknown_type["ErrorMessage"]
            v0 = {
                "timeoutMs": 5000,
                "FeatureUpdates": [{"Feature": TV, "MaxVersionLevel": 1, "AllowDowngrade": False}],
            }
            answer = (await conn.request(ApiKey.UPDATE_FEATURES, 0, v0)).body
            assert answer["ErrorCode"] == E.INVALID_UPDATE_VERSION
        finally:
            await conn.close()

    run(main())
