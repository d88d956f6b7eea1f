"""AlterConfigs (33): brokers forward it (KIP-590); the controller replaces a resource's
configs (``config_changes``)."""

from __future__ import annotations

from typing import Any

from conformance.protocol import ApiKey
from reference_impl.forwarded import mutation_api
from reference_impl.handlers.config_changes import alter
from reference_impl.net.listener import Api

ROLES = ("broker", "controller")


def api(node: Any) -> Api:
    return mutation_api(node, ApiKey.ALTER_CONFIGS, alter)
