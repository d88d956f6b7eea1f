"""Tests of the PROTOCOL feature's suite tests (``conformance/suite/wire_protocol/``)."""
