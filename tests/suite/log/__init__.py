"""Tests of the LOG, IDEMPOTENCE and TOPICS suite tests (``conformance/suite/log/``,
``idempotence/``, ``topics/``)."""
