"""The suite obtains and cleans up its topics in one place (``conformance/suite/kit/provision.py``)
and names what it makes with one function (``safety.fresh_name``).

A second way of making set-up topics would not know the ways a target without CreateTopics
offers (auto-creation, given topics) and would turn such a target's whole data plane
UNSUPPORTED again (issue 24); a second name maker would leave names outside the suite's prefix.
"""

from __future__ import annotations

import ast
from pathlib import Path

SUITE = Path(__file__).resolve().parents[3] / "conformance" / "suite"
#: the only module that defines the create-then-clean-up helpers, and the name maker's home
HELPERS = {
    "kit/provision.py": {"obtain", "delete_topics", "topic_body", "Topics"},
    "kit/safety.py": {"fresh_name"},
}
#: modules that send CreateTopics because their tests judge it (TOPICS, KIP-590, the log
#: model's create/delete events, a deleted topic's name made again) or make generic requests
JUDGE_CREATE_TOPICS = {
    "kit/provision.py",
    "kit/edges.py",
    "kit/bodies.py",
    "log/binding.py",
    "log/test_partition_model.py",
    "log/test_delete_then_use.py",
    "kip42/env.py",  # the client's own tests' new_topic; the suite's go through provision
    # the durability scenarios put one partition's replicas on named brokers with
    # min.insync.replicas, which only CreateTopics does, on managed targets only (that create)
    "durability/faults.py",
}
#: set-up makers allowed outside provision, each for what provision does not offer (above)
ALSO_DEFINED = {("durability/faults.py", "create_topic")}


def modules() -> dict[str, ast.Module]:
    return {
        str(p.relative_to(SUITE)): ast.parse(p.read_text(), str(p)) for p in SUITE.rglob("*.py")
    }


def test_helpers_are_defined_once() -> None:
    owner = {name: home for home, names in HELPERS.items() for name in names}
    names = set(owner) | {"create_topic", "new_topic", "seed_topic"}
    for path, tree in modules().items():
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in names:
                if (path, node.name) in ALSO_DEFINED:
                    continue
                assert owner.get(node.name) == path, f"{path} defines {node.name} again"


def test_only_modules_judging_create_topics_send_it() -> None:
    for path, tree in modules().items():
        if path in JUDGE_CREATE_TOPICS or path.startswith(("topics/", "kip590/")):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "CREATE_TOPICS":
                raise AssertionError(
                    f"{path}:{node.lineno} uses CreateTopics: obtain set-up topics through "
                    "conformance.suite.kit.provision"
                )
