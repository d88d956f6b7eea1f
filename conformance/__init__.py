"""kafka-conformance: a spec-driven conformance suite for the Kafka wire protocol (see
ARCHITECTURE.md for the packages and the direction of their imports).

PYTEST_DONT_REWRITE: ``kafka-conformance run`` imports this package before it starts pytest, which
would otherwise warn, for an installed wheel, that it cannot rewrite the package's asserts.
"""
