"""Support for the project's tests, no tests in it: the fault proxies and faulty brokers the tests
(and ``benchmarks/``) put in front of a good target (``proxies``, ``faults_*``), the pytest plugins
that start a faulty reference (``faulty_reference``, ``crash_target``), the suite runs started early
and shared by several modules (``early``), helpers to run the suite and read what it recorded
(``runs``), and suite test functions run in-process through the proxies (``in_process``)."""
