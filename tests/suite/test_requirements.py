"""The requirement files: schema-valid, ids unique and prefixed, APIs named as in the specs,
and every suite test naming only requirement ids that exist."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.protocol import Codec
from conformance.protocol.errors import SpecError
from conformance.requirements import (
    load_feature,
    load_requirements,
    requirement_texts,
    requirements,
)
from tests.support.runs import collect

FILES = ("protocol", "kip-78", "broker-registration", "kip-42", "kip-536", "kip-590")


def test_every_feature_file_loads() -> None:
    reqs = load_requirements()
    assert {f.path.stem for f in reqs.features.values()} >= set(FILES)
    assert len(reqs) >= 50
    levels = {r.level for r in reqs}
    assert levels <= {"MUST", "SHOULD", "MAY"} and "MUST" in levels and "SHOULD" in levels


def test_apis_are_named_and_numbered_as_in_the_specs() -> None:
    codec = Codec.from_specs()
    for r in requirements():
        for a in r.apis:
            spec = codec.message(a.key, "request")
            assert spec.name == f"{a.api}Request", (r.id, a)
            assert not a.versions.intersect(spec.valid_versions).empty, (r.id, a)


def test_proposals_are_marked() -> None:
    for r in requirements():
        assert r.proposal == (r.feature == "KIP-536"), r.id


def test_each_reading_of_seed_versus_kafka_is_documented() -> None:
    reqs = requirements()
    for name in ("KIP-78", "BROKER-REGISTRATION", "KIP-536"):
        readings = reqs.features[name].raw["readings"]
        assert readings and all(r["checked"] and r["why"] for r in readings)
    assert "string" in json.dumps(reqs.features["KIP-78"].raw["readings"])


def _write(tmp: Path, obj: dict, name: str = "kip-1") -> Path:
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(obj))
    return path


def _good() -> dict:
    return {
        "feature": "KIP-1",
        "title": "t",
        "status": "adopted",
        "source": "s.txt",
        "requirements": [
            {
                "id": "KIP-1.R1",
                "level": "MUST",
                "statement": "something holds always",
                "basis": "seed: Section",
                "apis": [],
                "listener": "client",
            }
        ],
    }


def test_a_good_file_loads(tmp_path: Path) -> None:
    feature, reqs = load_feature(_write(tmp_path, _good()))
    assert feature.name == "KIP-1" and reqs[0].id == "KIP-1.R1" and reqs[0].file == "kip-1"


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda o: o["requirements"][0].update(level="OUGHT"), "level"),
        (lambda o: o["requirements"][0].pop("basis"), "basis"),
        (lambda o: o["requirements"][0].update(id="KIP-1-R1"), "id"),
        (lambda o: o["requirements"][0].update(id="KIP-2.R1"), "does not start with"),
        (lambda o: o["requirements"][0].update(listener="anywhere"), "listener"),
    ],
)
def test_a_bad_file_is_refused_with_its_path(tmp_path: Path, change, where) -> None:
    obj = _good()
    change(obj)
    with pytest.raises(SpecError) as e:
        load_feature(_write(tmp_path, obj))
    assert "kip-1.json" in str(e.value) and where in str(e.value)


def test_the_feature_is_the_file_stem_in_upper_case(tmp_path: Path) -> None:
    """One name per feature: ``broker-registration.json`` holds ``BROKER-REGISTRATION.Rn``."""
    with pytest.raises(SpecError) as e:
        load_feature(_write(tmp_path, _good(), name="kip-one"))
    assert "kip-one.json" in str(e.value) and "$.feature" in str(e.value)


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    obj = _good()
    obj["requirements"].append(obj["requirements"][0])
    _write(tmp_path, obj)
    with pytest.raises(SpecError, match="already defined"):
        load_requirements(tmp_path)


def test_the_suite_names_only_known_requirements() -> None:
    """Collecting the suite validates every test's ids (the plugin refuses unknown ones)."""
    code, ids, out = collect()
    assert code == 0, out[-3000:]
    assert len(ids) > 280


def test_the_report_texts_come_from_the_same_validated_files(tmp_path: Path) -> None:
    """One loader: the report's texts are the requirements' own, and a malformed file is a
    SpecError for the report too (never silently passed over)."""
    texts = requirement_texts()
    assert {rid: t["statement"] for rid, t in texts.items()} == {
        r.id: r.statement for r in requirements()
    }
    assert texts["KIP-78.R1"]["feature"] == "kip-78" and texts["KIP-78.R1"]["level"] == "MUST"
    obj = _good()
    del obj["title"]
    _write(tmp_path, obj)
    with pytest.raises(SpecError, match=r"kip-1\.json"):
        requirement_texts(tmp_path)
