"""Tests of the PROTOCOL feature's suite tests (``conformance/suite/protocol_basics/``)."""
