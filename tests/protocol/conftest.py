"""Fixtures of the protocol tests, and a summary line of what the Java oracle checked."""

from __future__ import annotations

import pytest

from tests.oracle.java_oracle import STATS, java_oracle, java_oracle_latest

__all__ = ["java_oracle", "java_oracle_latest"]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if STATS:
        figures = ", ".join(f"{name}: {n}" for name, n in sorted(STATS.items()))
        terminalreporter.write_line(
            f"java codec oracle (kafka-clients 3.9 and 4.4.0) checked {figures}"
        )
