from __future__ import annotations

import pytest

from tests.matrix import spark_support


@pytest.fixture(scope="session")
def spark():
    yield spark_support.shared_spark()
    spark_support.stop()


@pytest.fixture(scope="session")
def fixture_output(spark):
    return spark_support.fixture_output()


@pytest.fixture(scope="session")
def model(fixture_output):
    return fixture_output.model
