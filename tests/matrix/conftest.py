from tests.matrix.spark_support import fixture_output, model, spark  # noqa: F401
