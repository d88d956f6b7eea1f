"""The node's ACL authorizer: Kafka's rules (``acl.py``) over the node's view of the ACLs.

ACLs are cluster metadata: the controller holds them in its image (records ``acl`` /
``remove_acl``, written by CreateAcls / DeleteAcls), and brokers learn them with the rest of the
metadata, in the JSON the controller's UpdateMetadata carries (``acls`` next to the dynamic
configs, see ``reference_impl/extensions.py``), kept in ``MetadataCache.acls``. Each node asks
its own view; the index is rebuilt when that view changes.

Super users are the configured ``super_users`` plus the ``broker_principals`` (Kafka clusters
list their broker principal in ``super.users``; it needs ClusterAction on CLUSTER at least).
The client host an ACL's host is compared with is ``session.state["host"]``
(``authorize.host_of``).
"""

from __future__ import annotations

from typing import Any

from reference_impl.config import NodeConfig
from reference_impl.net.listener import Session
from reference_impl.roles import NodeView
from reference_impl.security.acl import AclAuthorizer
from reference_impl.security.settings import SecuritySettings


def acl_view(node: NodeView) -> Any:
    """The callable giving ``node``'s current bindings (JSON dicts)."""
    if getattr(node, "role", None) == "controller":

        def controller_acls() -> list:
            image = getattr(node, "image", None)
            return image.acls if image is not None else []

        return controller_acls

    def broker_acls() -> list:
        cache = getattr(node, "metadata_cache", None)
        return getattr(cache, "acls", None) or _EMPTY

    return broker_acls


_EMPTY: list = []


def _no_acls() -> list:
    return _EMPTY


class NodeAclAuthorizer:
    """The ``security_hooks.Authorizer`` of a node with ``authorizer: "acl"``."""

    def __init__(
        self, config: NodeConfig, settings: SecuritySettings, node: NodeView = None
    ) -> None:
        self._view: Any = _no_acls
        self.acl = AclAuthorizer(
            lambda: self._view(),
            super_users=[*config.super_users, *config.broker_principals],
            allow_everyone_if_no_acl_found=settings.allow_everyone_if_no_acl_found,
            faults=settings.faults,
        )
        if node is not None:
            self.bind(node)

    def bind(self, node: NodeView) -> None:
        """Read ACLs from ``node``'s view (until then there are none: only super users pass)."""
        self._view = acl_view(node)

    def authorize(self, session: Session, operation: str, resource: tuple[str, str]) -> bool:
        host = session.state.get("host", "")
        return self.acl.authorize(session.principal, host, operation, resource[0], resource[1])

    def authorize_any(self, session: Session, operation: str, resource_type: str) -> bool:
        host = session.state.get("host", "")
        return self.acl.authorize_any(session.principal, host, operation, resource_type)
