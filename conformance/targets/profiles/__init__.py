"""Image profiles: how to start one kind of container image and know when it serves, as data.

A profile is a small TOML or JSON file (``specs/schema/docker-profile.schema.json``):
the command and environment templates, named ports in a block of free loopback ports, whether
it needs a ZooKeeper, and its readiness check. The project's own profiles are the ``*.toml``
files beside this module; users give theirs as a path (``docker:IMAGE?profile=./mine.toml``).
"""

from __future__ import annotations

import json
import string
import tomllib
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from conformance import specs
from conformance.targets.base import CLIENT_LISTENER_TYPES, TargetError

#: the folder of the project's profiles (a real directory, as for conformance.specs)
PROFILES = Path(__file__).resolve().parent
SCHEMA = specs.SCHEMA / "docker-profile.schema.json"


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    ports: dict[str, int]
    ready_check: str
    ready_brokers: int = 1
    ready_timeout: float = 120.0
    images: tuple[str, ...] = ()
    command: tuple[str, ...] | None = None
    env: dict[str, str] = field(default_factory=dict)
    volumes: dict[str, str] = field(default_factory=dict)
    tmpfs: tuple[str, ...] = ()
    zookeeper: bool = False
    client_listener_types: tuple[str, ...] = CLIENT_LISTENER_TYPES
    node_id: int | None = None
    #: node id -> the port name of its client listener, for a container of several brokers:
    #: restarting any of them restarts the container (all its nodes)
    nodes: dict[int, str] = field(default_factory=dict)
    #: node id -> the port name of its listener, for the controllers of such a container (the
    #: DURABILITY faults kill and start them as processes found by that port)
    controllers: dict[int, str] = field(default_factory=dict)
    #: the file it was read from
    source: str = ""

    @property
    def block(self) -> int:
        """How many consecutive ports the container needs."""
        return max(self.ports.values()) + 1

    def values(self, host: str, base: int, zookeeper: str | None) -> dict[str, str]:
        """What the templates may name, for a block starting at ``base``."""
        out = {"host": host, "port": str(base), "zookeeper": zookeeper or ""}
        out |= {f"{name}_port": str(base + off) for name, off in self.ports.items()}
        return out

    def render(self, values: dict[str, str]) -> tuple[list[str] | None, dict[str, str]]:
        """(command, environment) with the templates filled in."""
        command = [_fill(a, values) for a in self.command] if self.command else None
        return command, {k: _fill(v, values) for k, v in self.env.items()}

    def matches(self, repository: str) -> bool:
        return any(fnmatchcase(repository, pattern) for pattern in self.images)


def _fill(template: str, values: dict[str, str]) -> str:
    return template.format_map(values)  # names checked when the profile was loaded


def builtin_names() -> list[str]:
    return sorted(p.stem for p in PROFILES.glob("*.toml"))


def load_profile(ref: str) -> Profile:
    """A profile by name (one of the project's) or by path (a user's ``.toml`` or ``.json``)."""
    if ref.endswith((".toml", ".json")) or "/" in ref:
        return _load(Path(ref), Path(ref).stem)
    if ref not in builtin_names():
        raise TargetError(
            f"unknown docker profile {ref!r} (known: {', '.join(builtin_names())}; "
            "or a path to a .toml or .json profile)"
        )
    return _load(PROFILES / f"{ref}.toml", ref)


def recognise(repository: str) -> Profile:
    """The one project profile whose image patterns match ``repository`` (name without tag)."""
    found = [p for p in map(load_profile, builtin_names()) if p.matches(repository)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise TargetError(
            f"no docker profile recognises the image {repository!r}: add ?profile=NAME "
            f"(one of {', '.join(builtin_names())}) or ?profile=PATH to your own profile file"
        )
    names = ", ".join(p.name for p in found)
    raise TargetError(f"the image {repository!r} matches several profiles ({names}): add ?profile=")


def _load(path: Path, name: str) -> Profile:
    import jsonschema

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise TargetError(f"cannot read docker profile {path}: {e.strerror or e}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as e:
        kind = path.suffix[1:].upper() or "TOML"
        raise TargetError(f"docker profile {path}: malformed {kind}: {e}") from None
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        where = "/".join(map(str, error.absolute_path)) or "top level"
        raise TargetError(f"docker profile {path}: at {where}: {error.message}")
    ready: dict[str, Any] = data["ready"]
    profile = Profile(
        name=name,
        description=data["description"],
        ports=dict(data["ports"]),
        ready_check=ready["check"],
        ready_brokers=ready.get("brokers", 1),
        ready_timeout=float(ready.get("timeout", 120.0)),
        images=tuple(data.get("images", ())),
        command=tuple(data["command"]) if "command" in data else None,
        env=dict(data.get("env", {})),
        volumes=dict(data.get("volumes", {})),
        tmpfs=tuple(data.get("tmpfs", ())),
        zookeeper=data.get("zookeeper", False),
        client_listener_types=tuple(data.get("client_listener_types", CLIENT_LISTENER_TYPES)),
        node_id=data.get("node_id"),
        nodes={int(k): v for k, v in data.get("nodes", {}).items()},
        controllers={int(k): v for k, v in data.get("controllers", {}).items()},
        source=str(path),
    )
    _check_templates(profile)
    return profile


def _check_templates(profile: Profile) -> None:
    """Every template names only what the target will give it (checked before anything runs)."""
    known = set(profile.values("127.0.0.1", 1, "127.0.0.1:2"))
    if not profile.zookeeper:
        known.discard("zookeeper")
    for template in [*(profile.command or ()), *profile.env.values()]:
        try:
            names = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
        except ValueError as e:
            raise TargetError(
                f"docker profile {profile.source}: malformed template {template!r}: {e}"
            ) from None
        unknown = names - known
        if unknown:
            raise TargetError(
                f"docker profile {profile.source}: unknown template name "
                f"{{{sorted(unknown)[0]}}} in {template!r} (known: {', '.join(sorted(known))})"
            )
    missing = sorted({*profile.nodes.values(), *profile.controllers.values()} - set(profile.ports))
    if missing:
        raise TargetError(
            f"docker profile {profile.source}: nodes name the port {missing[0]!r}, "
            f"which ports does not list"
        )
