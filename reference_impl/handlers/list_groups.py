"""ListGroups (16): the groups this broker coordinates (v4+ filtered by state, v5+ by type).

Each group is listed as its type says (GroupType "classic" for a classic group). Without
DESCRIBE on the cluster, only the groups the principal may DESCRIBE are listed, as Kafka does.
"""

from __future__ import annotations

from conformance.protocol import ApiKey
from reference_impl.handlers.group_common import allowed, group_allowed, groups
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView

CLUSTER = ("CLUSTER", "kafka-cluster")


def api(node: BrokerView) -> Api:
    service = groups(node)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        v = ctx.version
        states = body["StatesFilter"] if v >= 4 else []
        types = {t.lower() for t in body["TypesFilter"]} if v >= 5 else set()
        error, listed = service.coordinator.list_groups(states, types)
        if not allowed(node, ctx, "DESCRIBE", CLUSTER):
            listed = [g for g in listed if group_allowed(node, ctx, "DESCRIBE", g.group_id)]
        return {
            "ThrottleTimeMs": 0,
            "ErrorCode": int(error),
            "Groups": [
                {
                    "GroupId": g.group_id,
                    "ProtocolType": g.protocol_type,
                    "GroupState": g.state,
                    "GroupType": g.group_type,
                }
                for g in listed
            ],
        }

    return Api(ApiKey.LIST_GROUPS, handle)
