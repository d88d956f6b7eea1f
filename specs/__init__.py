"""The suite's data, the repository's top-level ``specs/`` folder, shipped inside the wheel as the
package ``conformance.specs`` (setup.py maps it; ``conformance/__init__.py`` gives a checkout the
same name): one place that knows where it lives.

    messages/       our message specs (Kafka's JSON dialect), facts checked against Kafka 3.9
    requirements/   one file per feature: requirement ids, levels, statements, basis
    models/         state-machine models driven against targets
    schema/         JSON Schemas of every file format above and of result records
    error_codes.json  Kafka's error codes (name, retriable, meaning): the source of ErrorCode
    enums.json        the enums the specs carry as integers (config resource types, config
                      and ACL operations): the source of ConfigResourceType and the others

Everything else finds these folders through the names below, so a wheel install and a checkout
read the same files.
"""

from __future__ import annotations

from pathlib import Path

#: the folder of this package (a real directory: the project is never imported from a zip)
ROOT = Path(__file__).parent
MESSAGES = ROOT / "messages"
REQUIREMENTS = ROOT / "requirements"
MODELS = ROOT / "models"
SCHEMA = ROOT / "schema"
ERROR_CODES = ROOT / "error_codes.json"
ENUMS = ROOT / "enums.json"
