"""The conformance tests, shipped in the package.

Run them with ``kafka-conformance run [--target ...]`` or ``pytest --pyargs conformance.suite
--bootstrap-server H:P`` (the plugin, ``conformance.plugin``, takes the same options).

Layout: one folder per requirement file (``specs/requirements/<feature>.json``), named after it
as a Python name (``kip-78`` -> ``kip78/``, ``broker-registration`` -> ``broker_registration/``;
``protocol`` -> ``protocol_basics/``, which would otherwise shadow the kernel's
``conformance.protocol``); a requirement's tests live in its feature's folder, and the machinery
every feature uses in ``kit/`` (``tests/suite/test_layout.py`` checks both):

    protocol_basics/       PROTOCOL.*: framing, versions, headers, robustness for every API
    kip78/ broker_registration/ kip536/ kip590/ kip42/   the seed features
    log/ idempotence/ topics/ groups/ offsets/ configs/ txn/ durability/   the broker's semantics
    kit/                   the harness, topic provisioning, checks and crediting, request bodies,
                           safety rules, the state-machine models' engine (imports no feature)
    catalog.py             the ``requirements`` subcommand: which test credits which requirement

A helper several test modules of a feature use goes into the feature's ``shared.py``: no module
imports a ``test_*`` module (an import-linter contract, pyproject.toml).

Writing a test:

    from conformance.protocol import ApiKey
    from conformance.suite.kit import verify
    from conformance.suite.kit.harness import Harness
    from conformance.suite.kit.meta import conformance

    @conformance("kip-78/metadata/v2+/cluster-id/format", "KIP-78.R3", api=ApiKey.METADATA)
    def test_format(harness: Harness) -> None:
        version = harness.pick_version(ApiKey.METADATA, "2+")  # UNSUPPORTED / NOT_EXPOSED
        conn = harness.connect()                     # or "controller", or an Endpoint
        resp = verify.expect_response(conn, ApiKey.METADATA, version, {"Topics": []})
        verify.check(ok, "what was expected, what came back", "KIP-78.R3")

* The test id is stable and readable and starts with its feature (``kip-78/...``); the
  requirement ids must exist in ``specs/requirements``.
* Capability: ``harness.require``/``pick_version`` raise UNSUPPORTED (ApiVersions) or
  NOT_EXPOSED (the spec's ``listeners``); raise ``verdicts.ProposalAbsent`` where a proposal's
  feature is missing and ``verdicts.MissingPrecondition("no ZooKeeper connect string
  (--zookeeper)")`` where the environment lacks something: never a FAIL, never a vacuous PASS.
* Every check names its requirement ids: ``verify.check(cond, message, "KIP-78.R3")``. Only a
  check that ran credits a PASS (see ``conformance.suite.kit.meta``); ``harness.can_check`` records
  why a requirement cannot be checked here and lets the test go on with the others.
* ``verify.Failed(message, *req_ids)`` fails only the named requirements of the test;
  ``verify.soft`` records a SHOULD failure without stopping the test.
* Property tests go through ``conformance.suite.kit.harness.run_property(harness, strategy,
  check)``: the run's seed (recorded, ``--seed`` replays it), no example database.
* Names the suite creates start with ``kc-suite-`` (``safety.fresh_name``, and
  ``safety.suite_name`` for generated requests); nothing else is touched but the topics a user
  gives for the run (``--topics``), which are written to and never deleted.
* A test that needs topics gets them from ``provision`` (``obtain``, ``Topics``;
  ``SuiteTopic.create`` on top): created where CreateTopics is advertised and allowed, else
  auto-created, else given; with none of these the test is SKIP saying so, never UNSUPPORTED.
"""
