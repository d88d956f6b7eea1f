"""The project's own import-linter contract type, named in pyproject.toml (``contract_types``).

import-linter's wildcards replace whole module names only (``conformance.suite.*``), so "no module
imports a ``test_*`` module" cannot be said with its built-in contracts: a module that several
test modules need goes into a non-test module beside them (``<feature>/shared.py``, the suite's
``kit``), so that importing it never collects, runs or loads another module's tests.
"""

from __future__ import annotations

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck
from importlinter.domain.helpers import module_expressions_to_modules


def is_test_module(name: str) -> bool:
    return name.rpartition(".")[2].startswith("test_")


class NoTestModuleImports(Contract):
    """No module of ``source_modules`` (and their submodules) imports a module whose own name
    starts with ``test_``, directly (an indirect one goes through a module that this contract
    judges too)."""

    type_name = "no-test-module-imports"

    source_modules = fields.ListField(subfield=fields.ModuleExpressionField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        sources = module_expressions_to_modules(
            graph,
            self.source_modules,  # type: ignore[arg-type]
            as_packages=True,
        )
        found = []
        for module in sorted(m.name for m in sources):
            for imported in sorted(graph.find_modules_directly_imported_by(module)):
                if is_test_module(imported):
                    lines = [
                        d["line_number"]
                        for d in graph.get_import_details(importer=module, imported=imported)
                    ]
                    found.append((module, imported, lines))
        return ContractCheck(kept=not found, metadata={"found": found})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for importer, imported, lines in check.metadata["found"]:
            where = ", ".join(f"l.{n}" for n in lines)
            output.print_error(f"{importer} -> {imported} ({where})", bold=False)
            output.new_line()
