"""The ``kafka-conformance`` command line (placeholder until the CLI module lands)."""
