"""The role views (``reference_impl/roles.py``) say what a handler may use of its node, and say
it truly: each view's members exist on the node classes of its roles, every function typed with
a view uses no other member of its node, and no function takes its node as ``Any``."""

from __future__ import annotations

import ast
import inspect
import textwrap
from pathlib import Path

from reference_impl import data_plane, roles
from reference_impl.broker.broker import BrokerNode
from reference_impl.broker.lifecycle import LifecycleHost
from reference_impl.broker.zookeeper import ZooKeeperHost
from reference_impl.controller.controller import ControllerNode
from reference_impl.log.partition_log import PartitionLog
from reference_impl.log.producer_state import ProducerEntry, ProducerStateManager
from reference_impl.replica.fetcher import FetcherHost
from reference_impl.replica.manager import ReplicaManager
from reference_impl.replica.partition import Partition

ROOT = Path(__file__).resolve().parents[2] / "reference_impl"
VIEWS = {"NodeView": roles.NodeView, "BrokerView": roles.BrokerView}
VIEWS["ControllerView"] = roles.ControllerView
CLASSES = {
    "NodeView": (BrokerNode, ControllerNode),
    "BrokerView": (BrokerNode,),
    "ControllerView": (ControllerNode,),
}
#: the Protocols a part of a node names its host by (instead of importing the host's class)
HOSTS: dict[type, type] = {
    LifecycleHost: BrokerNode,
    ZooKeeperHost: BrokerNode,
    FetcherHost: ReplicaManager,
    # the data plane as handlers and services see it (reference_impl/data_plane.py)
    data_plane.ReplicaView: ReplicaManager,
    data_plane.HostedPartition: Partition,
    data_plane.HostedLog: PartitionLog,
    data_plane.Producers: ProducerStateManager,
    data_plane.ProducerEntry: ProducerEntry,
}


def members(view: type) -> set[str]:
    """The names a view declares (annotated attributes, properties and methods, its bases'
    included)."""
    names: set[str] = set()
    for cls in view.__mro__:
        if not cls.__module__.startswith("reference_impl."):
            continue
        names |= set(inspect.get_annotations(cls))
        names |= {
            n
            for n, v in vars(cls).items()
            if (callable(v) or isinstance(v, property)) and not n.startswith("_")
        }
    return names


def offered(cls: type) -> set[str]:
    """What a node class offers: its (and its bases') attributes, methods and the attributes
    its methods assign to ``self``."""
    names = set(dir(cls))
    for base in cls.__mro__:
        if base.__module__.startswith("reference_impl"):
            names |= set(getattr(base, "__annotations__", {}))
            names |= assigned_to_self(inspect.getsource(base))
    return names


def assigned_to_self(source: str) -> set[str]:
    """The attributes of ``self`` some statement of ``source`` assigns (tuple targets too)."""
    names = set()
    for node in ast.walk(ast.parse(textwrap.dedent(source))):
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for t in ast.walk(target):
                    if (
                        isinstance(t, ast.Attribute)
                        and isinstance(t.value, ast.Name)
                        and t.value.id == "self"
                    ):
                        names.add(t.attr)
    return names


def test_each_view_is_what_its_node_classes_offer() -> None:
    missing = [
        f"{cls.__name__} lacks {view}.{name}"
        for view, classes in CLASSES.items()
        for cls in classes
        for name in sorted(members(VIEWS[view]) - offered(cls))
    ]
    missing += [
        f"{cls.__name__} lacks {host.__name__}.{name}"
        for host, cls in HOSTS.items()
        for name in sorted(members(host) - offered(cls))
    ]
    assert missing == []
    assert {"metadata_cache", "create_topic"} <= members(roles.BrokerView)
    assert {"lifecycle_channel", "metadata_cache"} <= members(LifecycleHost)
    assert "metadata_cache" not in members(roles.NodeView)


def typed_functions(path: Path) -> list[tuple[int, str, set[str], set[str]]]:
    """``(line, function, views of its node parameter, members of its node it uses)``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for arg in fn.args.args + fn.args.kwonlyargs:
            if arg.arg != "node" or arg.annotation is None:
                continue
            views = {n.id for n in ast.walk(arg.annotation) if isinstance(n, ast.Name)}
            used = {
                n.attr
                for n in ast.walk(fn)
                if isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name)
                and n.value.id == "node"
            }
            out.append((fn.lineno, fn.name, views, used))
    return out


def test_a_function_uses_only_what_its_view_declares() -> None:
    wrong, untyped = [], []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent)
        for line, name, views, used in typed_functions(path):
            if "Any" in views:
                untyped.append(f"{rel}:{line} {name}")
                continue
            allowed = set().union(*(members(VIEWS[v]) for v in views if v in VIEWS))
            if views & set(VIEWS) and used - allowed:
                wrong.append(f"{rel}:{line} {name} uses {sorted(used - allowed)}")
    assert wrong == [], wrong
    assert untyped == [], f"node: Any left: {untyped}"


def test_the_check_sees_an_undeclared_member(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text(
        "def f(node: NodeView) -> None:\n    node.metadata_cache.topics\n"
        "def g(node: Any) -> None:\n    pass\n"
    )
    (_, _, views, used), (_, _, any_views, _) = typed_functions(src)
    assert views == {"NodeView"} and used - members(roles.NodeView) == {"metadata_cache"}
    assert any_views == {"Any"}
