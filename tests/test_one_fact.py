"""Each protocol fact is stated in one module, and the rest of the tree imports it from there.

A second statement of a fact drifts from the first one day (a reference that reads batches one
way and a suite that writes them another agree with each other and with nobody else), so this
test fails when a module of ``conformance`` or ``reference_impl`` other than the fact's home
assigns one of the fact's names at module level, or writes one of its tell-tale literals.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conformance.protocol import (
    AUTHORIZED_OPERATIONS_UNSET,
    AclOperation,
    AclPatternType,
    AclPermissionType,
    AclResourceType,
    ConfigOperation,
    ConfigResourceType,
)

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Fact:
    home: str  # path of the one module that states it
    names: frozenset[str]  # module-level names only the home may assign
    literals: frozenset[str] = field(default_factory=frozenset)  # strings only the home writes


FACTS = {
    "v2 record-batch header layout": Fact(
        "conformance/protocol/records/header.py",
        frozenset(
            {
                "HEADER_SIZE",
                "CRC_OFFSET",
                "ATTRIBUTES_OFFSET",
                "LEADER_EPOCH_OFFSET",
                "MAX_TIMESTAMP_OFFSET",
                "TRANSACTIONAL_BIT",
                "CONTROL_BIT",
                "DELETE_HORIZON_BIT",
                "COMPRESSION_MASK",
            }
        ),
        frozenset({">qiib", ">Hiqqqhii", ">qiibIhiqqqhii", ">qiibIHiqqqhii"}),
    ),
    "the internal topics' names": Fact(
        "conformance/protocol/internal_topics.py",
        frozenset({"OFFSETS_TOPIC", "TRANSACTION_STATE_TOPIC", "INTERNAL_TOPICS"}),
        frozenset({"__consumer_offsets", "__transaction_state"}),
    ),
}


def elsewhere(home: str, check: Callable[[Path], list[Any]]) -> list[str]:
    """``file:finding`` for what ``check`` finds in every module but ``home`` and the
    generated ones."""
    found = []
    for path in sources():
        rel = path.relative_to(ROOT).as_posix()
        if "_generated" not in path.parts and rel != home:
            found += [f"{rel}:{line}" for line in check(path)]
    return found


def sources() -> list[Path]:
    return sorted(
        p for pkg in ("conformance", "reference_impl") for p in (ROOT / pkg).rglob("*.py")
    )


def statements(path: Path) -> tuple[set[str], set[str]]:
    """The names ``path`` assigns at module level, and every string constant in it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    names.add(n.id)
    strings = {
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }
    return names, strings


@pytest.mark.parametrize("fact", sorted(FACTS))
def test_a_fact_is_stated_once(fact: str) -> None:
    f = FACTS[fact]
    assert (ROOT / f.home).is_file(), f.home
    elsewhere = []
    for path in sources():
        rel = path.relative_to(ROOT).as_posix()
        if rel == f.home:
            continue
        names, strings = statements(path)
        elsewhere += [f"{rel}: {n} =" for n in sorted(names & f.names)]
        elsewhere += [f"{rel}: {s!r}" for s in sorted(strings & f.literals)]
    assert not elsewhere, f"{fact} is stated outside {f.home}: {elsewhere}"


def test_the_guard_sees_a_second_statement(tmp_path: Path) -> None:
    """The check itself can fail: a module that writes the header's offsets again."""
    copy = tmp_path / "m.py"
    copy.write_text('import struct\nCRC_OFFSET = 17\n_H = struct.Struct(">qiib")\n')
    names, strings = statements(copy)
    f = FACTS["v2 record-batch header layout"]
    assert names & f.names == {"CRC_OFFSET"}
    assert strings & f.literals == {">qiib"}


# --- the enums the specs carry as integers: generated (gen_tables), never restated -----------

ENUMS = (
    ConfigResourceType,
    ConfigOperation,
    AclOperation,
    AclResourceType,
    AclPatternType,
    AclPermissionType,
)
#: request fields whose value is one of ENUMS (a bare integer there restates the enum)
ENUM_FIELDS = frozenset(
    {
        "ResourceType",
        "ConfigOperation",
        "Operation",
        "ResourceTypeFilter",
        "PatternTypeFilter",
        "ResourcePatternType",
        "PermissionType",
    }
)


def _int(node: ast.AST) -> int | None:
    """The value of an int literal (``2``, ``-2``, ``-(2**31)``), else None."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        if isinstance(node, ast.UnaryOp | ast.BinOp):
            try:
                value = eval(
                    compile(ast.Expression(node), "<literal>", "eval"), {"__builtins__": {}}
                )
            except Exception:
                return None
        else:
            return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _spellings(member: str) -> set[str]:
    """How a module names its own copy of a member: ``TOPIC``, ``TOPIC_RESOURCE``, ``OP_SET``."""
    marks = ("RESOURCE", "OPERATION", "OP", "TYPE", "ACL", "PATTERN", "PERMISSION")
    return {member} | {f"{member}_{m}" for m in marks} | {f"{m}_{member}" for m in marks}


def enum_restatements(path: Path) -> list[str]:
    """``TOPIC_RESOURCE = 2``, ``SET, DELETE = 0, 1``, ``{"ResourceType": 2}``, ``UNSET =
    -(2**31)``: module-level names and request bodies that state again what the generated
    module states."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    members = [(m.name, int(m)) for enum in ENUMS for m in enum]
    found = []
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            for name, value in zip(names, values, strict=False):
                v = _int(value)
                if not isinstance(name, ast.Name) or v is None:
                    continue
                bare = name.id.strip("_")
                hits = [m for m, mv in members if mv == v and bare in _spellings(m)]
                if hits:
                    found.append(f"{node.lineno}: {name.id} = {v} (the enum's {hits[0]})")
                elif v == AUTHORIZED_OPERATIONS_UNSET:
                    found.append(f"{node.lineno}: {name.id} = {v} (AUTHORIZED_OPERATIONS_UNSET)")
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=False):
                # a field name, or a key ending in one: ``(ApiKey.CREATE_ACLS, "ResourceType")``
                field = key.elts[-1] if isinstance(key, ast.Tuple) and key.elts else key
                if (
                    isinstance(field, ast.Constant)
                    and field.value in ENUM_FIELDS
                    and _int(value) is not None
                ):
                    found.append(f"{node.lineno}: {field.value!r}: {_int(value)}")
    return found


#: where the int32 range itself is stated (the codec's ranges), the one place it may be written
INT_RANGES_HOME = "conformance/protocol/spec.py"


def test_no_module_restates_a_generated_enum() -> None:
    found = elsewhere(INT_RANGES_HOME, enum_restatements)
    assert found == [], "use conformance.protocol's enums:\n" + "\n".join(found)


def test_the_enum_guard_sees_a_restatement(tmp_path: Path) -> None:
    copy = tmp_path / "m.py"
    copy.write_text(
        "TOPIC_RESOURCE = 2\nSET, DELETE = 0, 1\nUNSET = -(2**31)\nTOPIC_CONFIG = 2\n"
        "BODY = {'ResourceType': 2, 'Name': 3}\nACL_ANY = 1\nLITERAL = 3\n"
        "MEANINGFUL = {(12, 'PermissionType'): 3, (12, 'Name'): 3}\n"
    )
    found = enum_restatements(copy)
    assert [f.split(":")[0] for f in found] == ["1", "2", "2", "3", "6", "7", "5", "8"], found
    assert ConfigResourceType.TOPIC == 2 and ConfigOperation.SUBTRACT == 3
    assert AclOperation.TWO_PHASE_COMMIT.since == "4.0.0" and AclOperation.READ.since is None


# --- error names: conformance.protocol.kafka_errors.error_name / is_defined, nothing else ----

ERROR_NAMES_HOME = "conformance/protocol/kafka_errors.py"


def error_tables(path: Path) -> list[str]:
    """Comprehensions over ``ErrorCode``: a module's own code-to-name (or name-to-code) table."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    comprehensions = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
    return [
        f"{node.lineno}: a table built over ErrorCode"
        for node in ast.walk(tree)
        if isinstance(node, comprehensions)
        and any(isinstance(g.iter, ast.Name) and g.iter.id == "ErrorCode" for g in node.generators)
    ]


def test_error_names_come_from_one_function() -> None:
    found = elsewhere(ERROR_NAMES_HOME, error_tables)
    assert found == [], "name codes with kafka_errors.error_name:\n" + "\n".join(found)


def test_the_error_table_guard_sees_a_table(tmp_path: Path) -> None:
    copy = tmp_path / "m.py"
    copy.write_text("def known():\n    return {int(c): c.name for c in ErrorCode}\n")
    assert [f.split(":")[0] for f in error_tables(copy)] == ["2"]


# --- the zero UUID (no topic id): conformance.protocol.spec.ZERO_UUID ------------------------

ZERO_UUID_HOME = "conformance/protocol/spec.py"


def zero_uuids(path: Path) -> list[int]:
    """Lines that build the zero UUID again (``uuid.UUID(int=0)``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", getattr(node.func, "id", None)) == "UUID"
        and any(k.arg == "int" and _int(k.value) == 0 for k in node.keywords)
    ]


def test_the_zero_uuid_is_built_once(tmp_path: Path) -> None:
    found = elsewhere(ZERO_UUID_HOME, zero_uuids)
    assert found == [], "use conformance.protocol.spec.ZERO_UUID: " + ", ".join(found)
    probe = tmp_path / "m.py"
    probe.write_text("import uuid\nNO_ID = uuid.UUID(int=0)\nOTHER = uuid.UUID(int=1)\n")
    assert zero_uuids(probe) == [2]
