"""The suite's shared machinery, apart from the features: what every feature folder's tests use
(the harness, topic provisioning, checks and crediting, request bodies, safety rules, the
state-machine models' engine, ...). Nothing here imports a feature folder or a ``test_*`` module
(an import-linter contract in pyproject.toml keeps it so)."""
