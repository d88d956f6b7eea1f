"""Tests of the BROKER-REGISTRATION suite tests (``conformance/suite/broker_registration/``)."""
