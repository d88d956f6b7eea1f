"""IncrementalAlterConfigs (44): brokers forward it (KIP-590); the controller applies the
operations to a resource's configs (``config_changes``)."""

from __future__ import annotations

from functools import partial

from conformance.protocol import ApiKey
from reference_impl.forwarded import mutation_api
from reference_impl.handlers.config_changes import alter
from reference_impl.net.listener import Api
from reference_impl.roles import NodeView

ROLES = ("broker", "controller")


def api(node: NodeView) -> Api:
    return mutation_api(node, ApiKey.INCREMENTAL_ALTER_CONFIGS, partial(alter, incremental=True))
