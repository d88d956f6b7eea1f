"""The conformance tests (run with: pytest --pyargs conformance.suite, or kafka-conformance run)."""
