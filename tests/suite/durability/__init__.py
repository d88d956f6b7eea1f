"""Tests of the DURABILITY suite tests (``conformance/suite/durability/``)."""
