"""Each protocol fact is stated in one module, and the rest of the tree imports it from there.

A second statement of a fact drifts from the first one day (a reference that reads batches one
way and a suite that writes them another agree with each other and with nobody else), so this
test fails when a module of ``conformance`` or ``reference_impl`` other than the fact's home
assigns one of the fact's names at module level, or writes one of its tell-tale literals.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

import pytest

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
}


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
