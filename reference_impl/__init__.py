"""The bundled reference cluster: a controller and brokers as OS processes (see README.md here).

PYTEST_DONT_REWRITE: ``kafka-conformance run`` starts this cluster before it starts pytest, which
would otherwise warn, for an installed wheel, that it cannot rewrite the package's asserts.
"""
