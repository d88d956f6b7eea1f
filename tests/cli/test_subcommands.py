"""ARCHITECTURE.md says where each subcommand lives: its table's command-line row names the
module of every ``add_<command>`` in ``cli.COMMANDS``, and says which ones ``cli.py`` holds."""

from __future__ import annotations

import inspect
from pathlib import Path

from conformance import cli

ROOT = Path(__file__).resolve().parents[2]


def command_line_row() -> str:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    return next(line for line in text.splitlines() if line.startswith("| command line |"))


def homes() -> dict[str, str]:
    """Each subcommand's name and the module file (from the ``conformance`` folder) defining it."""
    out = {}
    for add in cli.COMMANDS:
        name = add.__name__.removeprefix("add_")
        path = Path(inspect.getfile(add)).resolve().relative_to(ROOT / "conformance")
        out[name] = path.as_posix()
    return out


def test_the_architecture_says_where_each_subcommand_lives() -> None:
    row = command_line_row()
    found = homes()
    assert len(found) == len(cli.COMMANDS) >= 8
    here = sorted(n for n, f in found.items() if f == "cli.py")
    elsewhere = {n: f for n, f in found.items() if f != "cli.py"}
    assert ", ".join(f"`{n}`" for n in sorted(here, key=row.find)) in row, (here, row)
    for name, file in elsewhere.items():
        assert f"`{name}` in `{file}`" in row, (name, file, row)


def test_the_check_sees_a_misplaced_subcommand() -> None:
    """The row as it was before: every subcommand in cli.py; the check must not pass on it."""
    old = "| command line | `conformance/cli.py` | `kafka-conformance` and its subcommands |"
    elsewhere = {n: f for n, f in homes().items() if f != "cli.py"}
    assert elsewhere and not all(f"`{n}` in `{f}`" in old for n, f in elsewhere.items())
