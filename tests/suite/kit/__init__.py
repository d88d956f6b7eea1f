"""Tests of the suite's shared machinery, ``conformance/suite/kit/``."""
