"""The build's package mapping: the top-level ``specs/`` folder (message specs, requirements,
models, schemas) ships inside the wheel as the package ``conformance.specs``, beside the packages
found under ``conformance/`` and ``reference_impl/``. pyproject.toml's package discovery cannot map
a folder to another package's name, so the list is made here; everything else is in pyproject.toml.
"""

from setuptools import find_namespace_packages, setup

#: ``specs`` and its data folders (messages, requirements, ...), as packages of ``conformance``
SPECS = ["conformance.specs", *(f"conformance.specs.{p}" for p in find_namespace_packages("specs"))]

setup(
    packages=[*find_namespace_packages(include=["conformance*", "reference_impl*"]), *SPECS],
    package_dir={"conformance.specs": "specs"},
)
