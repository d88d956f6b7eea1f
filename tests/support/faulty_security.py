"""A pytest plugin for the project's tests: ``reference?security=sasl`` with security faults.

Loaded with ``-p tests.support.faulty_security --security-faults NAME[,NAME]`` in a suite run.
It makes a secured reference target (``--target 'reference[:zookeeper]?security=sasl'``) write
the named faults into every node's ``security`` settings (``reference_impl/security/
settings.py``: ``accept_wrong_password``, ``serve_before_authentication``, ``ignore_deny``,
``match_literal_only``, ``accept_any_mechanism``, ``keep_deleted_credentials``,
``accept_any_credential``, ``report_every_operation``, ``ignore_session_lifetime``), plus
``allow_everyone``: the authorizer's ``allow_everyone_if_no_acl_found`` on, so a principal
with no ACL may do anything. Nothing else can switch them on: the option exists only where this
plugin is loaded.

``--record-passwords FILE`` writes the passwords the target drew (JSON, user -> password) into
FILE, outside the run's folders, so that a project test can look for them in what the run kept.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import conformance.targets
from conformance.targets import Target, TargetOptions
from conformance.targets.reference import ReferenceTarget

ALLOW_EVERYONE = "allow_everyone"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--security-faults",
        default="",
        help="comma-separated faults of reference_impl/security/settings.py, and allow_everyone",
    )
    parser.addoption("--record-passwords", default="", help="where to write the drawn passwords")


def pytest_configure(config: pytest.Config) -> None:
    names = [n.strip() for n in config.getoption("security_faults").split(",") if n.strip()]
    record = config.getoption("record_passwords")
    make = conformance.targets.make_target

    def faulty(opts: TargetOptions) -> Target:
        target: Any = make(opts)
        if isinstance(target, ReferenceTarget) and target.security == "sasl":
            secured = target._secured

            def with_faults() -> dict[str, Any]:
                out = secured()
                if record:
                    Path(record).write_text(json.dumps(target.passwords))
                section = out["settings"]["security"]
                section["faults"] = [n for n in names if n != ALLOW_EVERYONE]
                section["allow_everyone_if_no_acl_found"] = ALLOW_EVERYONE in names
                return out

            target._secured = with_faults
            if names:
                target.name = "faulty-reference"
        return target

    conformance.targets.make_target = faulty
