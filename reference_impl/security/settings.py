"""The ``security`` section of a node's config (``NodeConfig.settings["security"]``).

JSON form (every key optional)::

    {"sasl_mechanisms": ["PLAIN", "SCRAM-SHA-256"],
     "users": {"alice": "alice-secret", "broker": "broker-secret"},
     "scram_iterations": 4096,
     "session_lifetime_ms": 0,
     "session_lifetime_mechanisms": ["SCRAM-SHA-512"],
     "inter_node": {"mechanism": "SCRAM-SHA-256", "username": "broker",
                    "password": "broker-secret"},
     "authorizer": "acl",
     "allow_everyone_if_no_acl_found": false}

SASL is on for the listeners whose ``security_protocol`` is ``SASL_PLAINTEXT`` (Kafka's names);
``session_lifetime_ms`` (KIP-368, Kafka's connections.max.reauth.ms) is the lifetime of an
authenticated session, for the ``session_lifetime_mechanisms`` only when they are named (Kafka's
listener.name.L.M.connections.max.reauth.ms); ``users`` are the PLAIN passwords, from which
the credentials of both SCRAMs (SHA-256 and SHA-512) are derived (random salt) when the node
starts. ``inter_node`` is what this node authenticates as on other nodes' SASL listeners
(Kafka's inter-broker JAAS login); its principal belongs in ``broker_principals``.
``authorizer: "acl"`` turns on the ACL authorizer (``acl.py``); without it the node keeps the
default one of ``reference_impl/security_hooks.py`` and the ACL APIs answer SECURITY_DISABLED.

``faults`` (names, for the project's tests of the SECURITY requirements only: nothing shipped
writes them, ``tests/support/faulty_security.py`` does): ``accept_wrong_password`` (PLAIN takes
any password of a configured user, SCRAM answers such a user's wrong proof with success),
``serve_before_authentication`` (a SASL connection is served as ``User:ANONYMOUS`` before it
authenticates), ``ignore_deny`` (the authorizer passes over DENY bindings),
``match_literal_only`` (a MATCH filter selects only the LITERAL bindings of its name),
``accept_any_mechanism`` (a handshake naming a mechanism that is not enabled is answered NONE
with no mechanism listed, then the connection is closed), ``keep_deleted_credentials``
(AlterUserScramCredentials answers a deletion NONE and keeps the credential),
``accept_any_credential`` (it refuses nothing: unknown mechanisms, iterations out of range,
a user twice, deleting what does not exist are all answered NONE), ``report_every_operation``
(the authorized-operations fields of Metadata, DescribeCluster and DescribeGroups carry every
operation of the resource, whatever the ACLs), ``ignore_session_lifetime`` (SaslAuthenticate
announces the session lifetime but a session that was not re-authenticated is served on).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reference_impl.config import ConfigError, NodeConfig

SASL_PLAINTEXT = "SASL_PLAINTEXT"
PLAIN = "PLAIN"
SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"
SCRAM_MECHANISMS = (SCRAM_SHA_256, SCRAM_SHA_512)
SUPPORTED_MECHANISMS = (PLAIN, *SCRAM_MECHANISMS)
FAULTS = (
    "accept_wrong_password",
    "serve_before_authentication",
    "ignore_deny",
    "match_literal_only",
    "accept_any_mechanism",
    "keep_deleted_credentials",
    "accept_any_credential",
    "report_every_operation",
    "ignore_session_lifetime",
)


@dataclass(frozen=True)
class ClientCredentials:
    mechanism: str
    username: str
    password: str


@dataclass
class SecuritySettings:
    sasl_mechanisms: list[str] = field(default_factory=lambda: [PLAIN, SCRAM_SHA_256])
    users: dict[str, str] = field(default_factory=dict)
    scram_iterations: int = 4096
    session_lifetime_ms: int = 0
    session_lifetime_mechanisms: list[str] | None = None
    inter_node: ClientCredentials | None = None
    authorizer: str | None = None
    allow_everyone_if_no_acl_found: bool = False
    faults: list[str] = field(default_factory=list)

    @property
    def acl_enabled(self) -> bool:
        return self.authorizer == "acl"

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> SecuritySettings:
        data = dict(data or {})
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown security settings: {', '.join(unknown)}")
        inter = data.pop("inter_node", None)
        try:
            settings = cls(**data)
            if inter is not None:
                settings.inter_node = ClientCredentials(**inter)
        except TypeError as e:
            raise ConfigError(f"security settings: {e}") from None
        for mech in [*settings.sasl_mechanisms] + (
            [settings.inter_node.mechanism] if settings.inter_node else []
        ):
            if mech not in SUPPORTED_MECHANISMS:
                raise ConfigError(
                    f"unsupported SASL mechanism {mech!r} (supported: "
                    f"{', '.join(SUPPORTED_MECHANISMS)})"
                )
        if settings.authorizer not in (None, "acl"):
            raise ConfigError(f"authorizer must be 'acl' or null, not {settings.authorizer!r}")
        unknown_faults = sorted(set(settings.faults) - set(FAULTS))
        if unknown_faults:
            raise ConfigError(f"unknown security faults: {', '.join(unknown_faults)}")
        if settings.scram_iterations < 4096:
            raise ConfigError("scram_iterations must be at least 4096 (the SCRAMs' minimum)")
        return settings

    @classmethod
    def of(cls, config: NodeConfig) -> SecuritySettings:
        return cls.from_dict(config.settings.get("security"))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "sasl_mechanisms": list(self.sasl_mechanisms),
            "users": dict(self.users),
            "scram_iterations": self.scram_iterations,
            "session_lifetime_ms": self.session_lifetime_ms,
            "session_lifetime_mechanisms": self.session_lifetime_mechanisms,
            "authorizer": self.authorizer,
            "allow_everyone_if_no_acl_found": self.allow_everyone_if_no_acl_found,
        }
        if self.faults:
            out["faults"] = list(self.faults)
        if self.inter_node is not None:
            out["inter_node"] = {
                "mechanism": self.inter_node.mechanism,
                "username": self.inter_node.username,
                "password": self.inter_node.password,
            }
        return out
