"""Tests of the KIP-590 suite tests (``conformance/suite/kip590/``)."""
