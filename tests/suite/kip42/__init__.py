"""Tests of the KIP-42 suite tests (``conformance/suite/kip42/``), on the suite's client and
Java's."""
