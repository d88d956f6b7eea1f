"""Where security plugs into the nodes: each listener's ``Security`` and the node's authorizer.

On a listener without SASL a connection is the principal the listener is configured with
(``ListenerConfig.principal``, ``User:ANONYMOUS`` by default, as Kafka's PLAINTEXT listeners);
``SASL_PLAINTEXT`` listeners authenticate (``reference_impl/security/``). A node without ACLs
enabled uses ``DefaultAuthorizer``: everything is allowed except ClusterAction on CLUSTER, which
only broker principals and super users hold: that is what Envelope, broker registration and the
controller-to-broker RPCs require (KIP-590).

Handlers call ``node.authorize(session, operation, resource)`` with Kafka's operation names
("CREATE", "ALTER_CONFIGS", "CLUSTER_ACTION" …) and a resource ``(type, name)``; the ACL
authorizer replaces ``DefaultAuthorizer`` through ``authorizer_for``, SASL replaces
``ListenerSecurity`` through ``security_for``.
"""

from __future__ import annotations

from typing import Protocol

from conformance.client.wire import Connection
from conformance.protocol import Codec
from reference_impl.config import ListenerConfig, NodeConfig
from reference_impl.net.listener import Security, Session

CLUSTER = ("CLUSTER", "kafka-cluster")
CLUSTER_ACTION = "CLUSTER_ACTION"


class Authorizer(Protocol):
    def authorize(self, session: Session, operation: str, resource: tuple[str, str]) -> bool: ...


class DefaultAuthorizer:
    """No ACLs: all allowed, but ClusterAction on CLUSTER only to broker principals, super users."""

    def __init__(self, broker_principals: list[str], super_users: list[str]) -> None:
        self.privileged = set(broker_principals) | set(super_users)

    def authorize(self, session: Session, operation: str, resource: tuple[str, str]) -> bool:
        if operation == CLUSTER_ACTION:
            return session.principal in self.privileged
        return True


class ListenerSecurity(Security):
    """Every connection of the listener is its configured principal, authenticated."""

    def __init__(self, principal: str) -> None:
        self.principal = principal

    def new_session(self) -> Session:
        return Session(principal=self.principal)


async def connect(
    host: str, port: int, *, codec: Codec, client_id: str, timeout: float
) -> Connection:
    """A connection to another node (controller channel, propagation, replica fetches),
    authenticated as this node's broker principal when ``security/inter_node.py`` says so."""
    from reference_impl.security import inter_node

    return await inter_node.connect(host, port, codec=codec, client_id=client_id, timeout=timeout)


def authorizer_for(config: NodeConfig) -> Authorizer:
    from reference_impl.security import node_security

    acl = node_security.authorizer(config)
    return acl or DefaultAuthorizer(config.broker_principals, config.super_users)


def security_for(config: NodeConfig, listener: ListenerConfig) -> Security:
    from reference_impl.security import node_security

    sasl = node_security.listener_security(config, listener)
    return sasl or ListenerSecurity(listener.principal)
