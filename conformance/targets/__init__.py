"""Targets the suite runs against: reference, tansu, external, docker:IMAGE, kafka:VERSION.

``make_target`` turns the command-line options (shared by ``run`` and the pytest plugin) into a
Target, or raises TargetError with one line saying what is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.client.sasl import MECHANISMS
from conformance.targets.base import (
    Endpoint,
    Sasl,
    Target,
    TargetError,
    parse_bootstrap,
    parse_zookeeper,
)

#: the mechanisms conformance.client.sasl speaks
SASL_MECHANISMS = MECHANISMS
KINDS = (
    "reference",
    "reference:zookeeper",
    "reference:zookeeper?controllers=N",
    "reference[:zookeeper]?security=sasl",
    "tansu",
    "external",
    "docker:IMAGE[?profile=NAME|PATH]",
    "kafka:VERSION[?store=kraft|zookeeper&brokers=N&controllers=N&security=sasl]",
)


@dataclass
class TargetOptions:
    target: str | None = None
    bootstrap: str | None = None
    controller: str | None = None
    zookeeper: str | None = None
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = None
    unprivileged_username: str | None = None
    unprivileged_password: str | None = None
    target_name: str | None = None
    target_version: str | None = None


def _sasl(opts: TargetOptions) -> Sasl | None:
    given = [opts.sasl_mechanism, opts.sasl_username, opts.sasl_password]
    if not any(given):
        return None
    if not all(given):
        raise TargetError(
            "SASL needs --sasl-mechanism, --sasl-username and --sasl-password together"
        )
    mech = str(opts.sasl_mechanism).upper()
    if mech not in SASL_MECHANISMS:
        raise TargetError(
            f"unknown SASL mechanism {opts.sasl_mechanism!r} (known: {', '.join(SASL_MECHANISMS)})"
        )
    return Sasl(mech, str(opts.sasl_username), str(opts.sasl_password))


def _unprivileged(opts: TargetOptions, sasl: Sasl | None) -> Sasl | None:
    given = [opts.unprivileged_username, opts.unprivileged_password]
    if not any(given):
        return None
    if not all(given) or sasl is None:
        raise TargetError(
            "an unprivileged user needs --unprivileged-username and --unprivileged-password "
            "together, and the suite's own --sasl-mechanism/--sasl-username/--sasl-password"
        )
    return Sasl(sasl.mechanism, str(opts.unprivileged_username), str(opts.unprivileged_password))


def make_target(opts: TargetOptions) -> Target:
    """The target the options describe (not started yet)."""
    kind = opts.target or ("external" if opts.bootstrap else "reference")
    sasl = _sasl(opts)
    controllers = (
        parse_bootstrap(opts.controller, "controller bootstrap") if opts.controller else []
    )
    zookeeper = parse_zookeeper(opts.zookeeper) if opts.zookeeper else None
    target: Target
    if kind == "external":
        if not opts.bootstrap:
            raise TargetError("the external target needs --bootstrap-server HOST:PORT")
        target = Target(kind="external", name="external", bootstrap=parse_bootstrap(opts.bootstrap))
    elif kind in ("tansu",):
        _no_bootstrap(kind, opts)
        from conformance.targets.tansu import TansuTarget

        target = TansuTarget()
    elif kind.partition("?")[0] in ("reference", "reference:embedded", "reference:zookeeper"):
        _no_bootstrap(kind, opts)
        from conformance.targets.reference import ReferenceTarget

        target = ReferenceTarget.from_spec(kind)
    elif kind.startswith("docker:"):
        _no_bootstrap(kind, opts)
        from conformance.targets.docker import DockerTarget

        target = DockerTarget.from_spec(kind.removeprefix("docker:"))
    elif kind.startswith("kafka:"):
        _no_bootstrap(kind, opts)
        from conformance.targets.kafka import KafkaTarget

        target = KafkaTarget.from_spec(kind.removeprefix("kafka:"))
    else:
        raise TargetError(f"unknown target {kind!r} (known: {', '.join(KINDS)})")
    target.sasl = sasl or target.sasl
    target.unprivileged = _unprivileged(opts, sasl) or target.unprivileged
    if controllers:
        target.controller, target.controllers = controllers[0], controllers
    target.zookeeper = zookeeper or target.zookeeper
    target.given = frozenset(
        name for name, value in (("controller", controllers), ("zookeeper", zookeeper)) if value
    )
    if opts.target_name:
        target.name = opts.target_name
    if opts.target_version:
        target.version = opts.target_version
    return target


def _no_bootstrap(kind: str, opts: TargetOptions) -> None:
    if opts.bootstrap:
        raise TargetError(
            f"--bootstrap-server names an external target; the {kind} target starts its own"
        )


__all__ = [
    "KINDS",
    "Endpoint",
    "Target",
    "TargetError",
    "TargetOptions",
    "make_target",
]
