"""IncrementalAlterConfigs (44): brokers forward it (KIP-590); the controller applies the ops.

Operations: SET (0), DELETE (1), APPEND (2) and SUBTRACT (3) (list configs only). A config
named twice in one resource, an unknown operation or a null SET value is INVALID_REQUEST.
Otherwise as AlterConfigs (``alter_configs``).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from conformance.protocol import ApiKey, ErrorCode, KafkaError
from reference_impl.broker.forwarding import mutation_api
from reference_impl.config import ConfigDef
from reference_impl.handlers.alter_configs import alter
from reference_impl.net.listener import Api

ROLES = ("broker", "controller")
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def api(node: Any) -> Api:
    return mutation_api(node, ApiKey.INCREMENTAL_ALTER_CONFIGS, partial(alter, incremental=True))


def apply_ops(
    configs: list[dict], current: dict[str, str], defs: dict[str, ConfigDef]
) -> dict[str, str]:
    """The dynamic configs after the ops; APPEND and SUBTRACT start from the default when the
    config has no dynamic value (as Kafka does)."""
    names = [c["Name"] for c in configs]
    if len(set(names)) != len(names):
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    new = dict(current)
    for c in configs:
        name, op, value = c["Name"], c["ConfigOperation"], c["Value"]
        if op == SET:
            if value is None:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Null value not supported for {name}")
            new[name] = value
        elif op == DELETE:
            new.pop(name, None)
        elif op in (APPEND, SUBTRACT):
            d = defs.get(name)
            base = new.get(name, d.default if d is not None else None) or ""
            items = [x for x in base.split(",") if x]
            given = [x.strip() for x in (value or "").split(",") if x.strip()]
            if op == APPEND:
                items += [x for x in given if x not in items]
            else:
                items = [x for x in items if x not in given]
            new[name] = ",".join(items)
        else:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"unknown config operation {op}")
    return new
