"""Whole runs of the suite (``run``, ``pytest --pyargs conformance.suite``) against the reference,
tansu, Apache Kafka and deliberately broken targets: selection, determinism, verdicts across
features, a target that goes down, what the run records and reports."""
