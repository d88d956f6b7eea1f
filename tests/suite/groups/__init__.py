"""Tests of the GROUPS, OFFSETS and CONFIGS suite tests (``conformance/suite/groups/``,
``offsets/``, ``configs/``)."""
