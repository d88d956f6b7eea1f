"""What ``reference_impl/security_hooks.py`` asks of this package for one node process.

``authorizer(config)``: the ACL authorizer when the ``security`` settings say
``authorizer: "acl"`` (else None: the hooks keep their default authorizer); it also sets the
inter-node credentials of this process (``inter_node.configure``). The authorizer learns its
node, whose view of the ACLs it reads, in ``authorize.gated`` (``bind``).

``listener_security(config, listener)``: SASL for a ``SASL_PLAINTEXT`` listener (its
SCRAM credentials derived from the configured passwords when the listener is built), else None.
"""

from __future__ import annotations

from reference_impl.config import ConfigError, ListenerConfig, NodeConfig
from reference_impl.process import NodeFatal
from reference_impl.security import inter_node
from reference_impl.security.authorizer import NodeAclAuthorizer
from reference_impl.security.sasl import SaslSecurity
from reference_impl.security.settings import SASL_PLAINTEXT, SecuritySettings


def _settings(config: NodeConfig) -> SecuritySettings:
    """The node's security settings; a bad section stops the node with a one-line reason."""
    try:
        return SecuritySettings.of(config)
    except ConfigError as e:
        raise NodeFatal(str(e)) from None


def authorizer(config: NodeConfig) -> NodeAclAuthorizer | None:
    settings = _settings(config)
    inter_node.configure(settings.inter_node)
    if not settings.acl_enabled:
        return None
    return NodeAclAuthorizer(config, settings)


def listener_security(config: NodeConfig, listener: ListenerConfig) -> SaslSecurity | None:
    if listener.security_protocol != SASL_PLAINTEXT:
        return None
    return SaslSecurity.from_settings(_settings(config))
