"""Shared test set-up: hypothesis profiles and the location of the upstream spec corpus.

Profiles (choose with HYPOTHESIS_PROFILE=...):
  ci        deterministic (derandomized), few examples per test: the default, and what CI runs
  thorough  random seeds, many examples: for deeper local runs; failures print a replay seed
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=10,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough",
    max_examples=500,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

ROOT = Path(__file__).resolve().parents[1]
#: Upstream Kafka message specs, one folder per release (reference data beside the project).
KAFKA_SPECS = ROOT.parent / "shared" / "kafka-specs"


def kafka_release_dirs() -> list[Path]:
    if not KAFKA_SPECS.is_dir():
        return []
    return sorted(p for p in KAFKA_SPECS.iterdir() if p.is_dir())


@pytest.fixture(scope="session")
def kafka_specs() -> Path:
    if not KAFKA_SPECS.is_dir():
        pytest.skip(f"upstream spec corpus not found at {KAFKA_SPECS}")
    return KAFKA_SPECS
