"""Tests of the TXN suite tests (``conformance/suite/txn/``)."""
