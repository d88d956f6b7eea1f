"""kafka-conformance: a spec-driven conformance suite for the Kafka wire protocol (see
ARCHITECTURE.md for the packages and the direction of their imports).

PYTEST_DONT_REWRITE: ``kafka-conformance run`` imports this package before it starts pytest, which
would otherwise warn, for an installed wheel, that it cannot rewrite the package's asserts.

The suite's data (message specs, requirements, models, schemas) is the top-level ``specs/`` folder
of the repository, which the wheel ships as the package ``conformance.specs`` (setup.py maps it).
In a checkout, run through an editable install or with the checkout on ``PYTHONPATH``, there is no
``conformance/specs/``: the lines below load the checkout's own ``specs/`` under that name, so a
second checkout never reads another's specs.
"""

import sys
from importlib.util import module_from_spec, spec_from_file_location
from pathlib import Path
from types import ModuleType

# Not a package mapping: setup.py's maps specs/ for the wheel and the editable install, but with
# PYTHONPATH=<clone> (any venv) nothing maps it, and no ordinary import finds specs/ by this name.

#: the package ``conformance.specs`` (declared for type checkers, which cannot see the mapping)
specs: ModuleType


def _checkout_specs() -> None:
    """Register ``<checkout>/specs`` as ``conformance.specs`` when this is a checkout."""
    here = Path(__file__).parent
    top = here.parent / "specs" / "__init__.py"
    if (here / "specs" / "__init__.py").is_file() or not top.is_file():
        return  # an installed wheel carries conformance/specs/ itself
    spec = spec_from_file_location(
        f"{__name__}.specs", top, submodule_search_locations=[str(top.parent)]
    )
    assert spec is not None and spec.loader is not None
    module = module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    globals()["specs"] = module


_checkout_specs()
