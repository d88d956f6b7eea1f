"""Parameters of the spec-derived tests: every (API, version) of the message specs in scope."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from conformance.protocol import Codec
from conformance.suite.kit.meta import kebab


@dataclass(frozen=True)
class ApiCase:
    api_key: int
    name: str
    version: int | None = None

    def __str__(self) -> str:
        base = kebab(self.name)
        return base if self.version is None else f"{base}/v{self.version}"


@cache
def project_codec() -> Codec:
    return Codec.from_specs()


def request_specs():
    codec = project_codec()
    return sorted(
        (spec for (key, kind), spec in codec.specs.by_key.items() if kind == "request"),
        key=lambda s: s.api_key,
    )


def api_version_cases() -> list[ApiCase]:
    """One case per (API, version) the project's specs define."""
    return [
        ApiCase(s.api_key, s.name.removesuffix("Request"), v)
        for s in request_specs()
        for v in s.valid_versions
    ]


def api_cases() -> list[ApiCase]:
    """One case per API."""
    return [ApiCase(s.api_key, s.name.removesuffix("Request")) for s in request_specs()]
