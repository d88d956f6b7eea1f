"""UpdateFeatures (57): brokers forward it (KIP-590); the controller checks the feature levels.

Kafka's checks (FeatureControlManager.updateFeature), each failure INVALID_UPDATE_VERSION for the
whole request ("The update failed for all features since the following feature had an error:
…", no per-feature results, as Kafka 4.4.0 answers): a feature this controller does not support,
a level outside its supported range, a lower level than the finalized one without a downgrade
type (v0's AllowDowngrade, v1+'s UpgradeType 2 or 3), an unknown UpgradeType (checked first).
ALTER on the cluster, or CLUSTER_AUTHORIZATION_FAILED. A request that passes is answered NONE
for each feature.

The reference finalizes feature levels by configuration (``settings["features"]``, fixed for the
cluster's life: its brokers learn no feature changes), so it applies none: ValidateOnly (v1+) and
updates to the finalized level itself are answered as Kafka answers them, a real change of a
level is INVALID_REQUEST saying so.
"""

from __future__ import annotations

from typing import Any

from conformance.protocol import ApiKey, ErrorCode, KafkaError
from reference_impl.forwarded import mutation_api
from reference_impl.net.listener import Api, RequestContext
from reference_impl.node import features_for
from reference_impl.roles import ControllerView, NodeView
from reference_impl.security_hooks import CLUSTER

ROLES = ("broker", "controller")
#: UpgradeType codes (v1+; v0's AllowDowngrade is SAFE_DOWNGRADE or UPGRADE)
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


def api(node: NodeView) -> Api:
    return mutation_api(node, ApiKey.UPDATE_FEATURES, update)


def _refused(code: int, message: str | None) -> dict[str, Any]:
    return {"ThrottleTimeMs": 0, "ErrorCode": int(code), "ErrorMessage": message, "Results": []}


def _check(node: ControllerView, update: dict, version: int) -> None:
    """Raise KafkaError when Kafka's controller would refuse this feature's update."""
    name, level = update["Feature"], update["MaxVersionLevel"]
    if version == 0:
        kind = SAFE_DOWNGRADE if update["AllowDowngrade"] else UPGRADE
    else:
        kind = update["UpgradeType"]
    features = features_for(node.config)

    def invalid(why: str) -> KafkaError:
        return KafkaError(
            ErrorCode.INVALID_UPDATE_VERSION,
            f"Invalid update version {level} for feature {name}. {why}",
        )

    if kind not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        raise invalid("The controller does not support the given upgrade type.")
    supported = features.supported.get(name)
    if supported is None:
        raise invalid(f"Feature {name} not found.")
    lo, hi = supported
    if level < 0 or level > hi or (0 < level < lo):  # 0: the feature disabled
        raise invalid(f"Local controller {node.node_id} only supports versions {lo}-{hi}")
    if level < features.finalized.get(name, 0) and kind == UPGRADE:
        raise invalid(
            "Can't downgrade the version of this feature without setting the upgrade type to "
            "either safe or unsafe downgrade."
        )


async def update(node: ControllerView, ctx: RequestContext, body: dict) -> dict:
    node.require_active()
    if not node.authorize(ctx.session, "ALTER", CLUSTER):
        return _refused(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    updates = body["FeatureUpdates"]
    try:
        for u in updates:
            _check(node, u, ctx.version)
    except KafkaError as e:
        return _refused(
            e.code,
            f"The update failed for all features since the following feature had an error: "
            f"{e.message}",
        )
    finalized = features_for(node.config).finalized
    changes = [
        u["Feature"] for u in updates if u["MaxVersionLevel"] != finalized.get(u["Feature"], 0)
    ]
    if changes and not (ctx.version >= 1 and body["ValidateOnly"]):
        return _refused(
            ErrorCode.INVALID_REQUEST,
            f"the reference finalizes feature levels by configuration and changes none: {changes}",
        )
    return {
        "ThrottleTimeMs": 0,
        "ErrorCode": 0,
        "ErrorMessage": None,
        "Results": [
            {"Feature": u["Feature"], "ErrorCode": 0, "ErrorMessage": None} for u in updates
        ],
    }
