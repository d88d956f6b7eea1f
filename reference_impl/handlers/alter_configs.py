"""AlterConfigs (33): brokers forward it (KIP-590); the controller replaces a resource's
configs (``config_changes``)."""

from __future__ import annotations

from conformance.protocol import ApiKey
from reference_impl.forwarded import mutation_api
from reference_impl.handlers.config_changes import alter
from reference_impl.net.listener import Api
from reference_impl.roles import NodeView

ROLES = ("broker", "controller")


def api(node: NodeView) -> Api:
    return mutation_api(node, ApiKey.ALTER_CONFIGS, alter)
