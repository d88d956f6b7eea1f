"""Harness.setup_request where no advertised version works (issue 42): the test is SKIP naming
the set-up defect and the requirement that judges it, never the tested requirements' FAIL; each
version tried is kept once per run and node, so a later test's set-up sends none of them again.
No network: the harness is a stand-in carrying what the method reads, the connection a fake
whose answers do not decode (or decode into something the step cannot use)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from conformance.protocol import ApiKey, DecodeError
from conformance.results.verdicts import MissingPrecondition
from conformance.suite.kit.harness import Harness
from conformance.targets.base import Endpoint

NODE = Endpoint("127.0.0.1", 9092)


class Conn:
    """Answers every request with ``answer(version)``: raises it when it is an exception."""

    def __init__(self, answer) -> None:
        self.endpoint, self.closed, self.answer, self.sent = NODE, False, answer, []

    def request(self, api_key, version, body):
        self.sent.append(version)
        got = self.answer(version)
        if isinstance(got, Exception):
            raise got
        return got


def _harness(test: str, advertised: tuple[int, int] = (10, 12)):
    notes = SimpleNamespace(api_key=None, api_version=None, listener="client")
    return SimpleNamespace(
        notes=notes,
        setup_defects={},
        pick_version=lambda api_key, within, note=True: advertised[1],
        advertised_on=lambda listener: {ApiKey.METADATA: advertised},
        api_name=lambda api_key: "Metadata",
        test_name=lambda: test,
        connect=lambda node: pytest.fail("the connection was open"),
    )


def _undecodable(version):
    return DecodeError("MetadataResponse", "", 40 + version, "1 byte left over")


def test_no_version_decodes_skip_names_the_defect_and_is_kept() -> None:
    h = _harness("kip-78/a")
    conn = Conn(_undecodable)
    with pytest.raises(MissingPrecondition) as why:
        Harness.setup_request(h, conn, ApiKey.METADATA, {"Topics": None})
    assert conn.sent == [12, 11, 10]  # newest first, down to the oldest advertised
    text = str(why.value)
    assert "set-up needs Metadata, whose answers do not decode: see PROTOCOL.R3" in text
    assert "v12: its answer does not decode" in text and "1 byte left over" in text
    assert sorted(h.setup_defects) == [(ApiKey.METADATA, v, NODE) for v in (10, 11, 12)]
    assert h.notes.api_key is None  # set-up does not note the API

    h.test_name = lambda: "kip-78/b"  # a later test on the same node: nothing sent again
    with pytest.raises(MissingPrecondition, match=r"see PROTOCOL\.R3"):
        Harness.setup_request(h, conn, ApiKey.METADATA, {"Topics": None})
    assert conn.sent == [12, 11, 10]
    defect = h.setup_defects[(ApiKey.METADATA, 12, NODE)].as_dict()
    assert defect["tests"] == 2 and defect["test_id"] == "kip-78/a"


def test_answers_the_step_cannot_use_are_judged_by_the_named_requirement() -> None:
    h = _harness("groups/a", advertised=(11, 12))
    conn = Conn(lambda version: SimpleNamespace(body={"ErrorCode": 15}))
    with pytest.raises(MissingPrecondition) as why:
        Harness.setup_request(
            h,
            conn,
            ApiKey.METADATA,
            lambda v: {},
            usable=lambda r: "no coordinator",
            judged_by="GROUPS.R1",
        )
    assert "whose answers it cannot use: see GROUPS.R1 (v12: no coordinator" in str(why.value)
    assert {d.requirement for d in h.setup_defects.values()} == {"GROUPS.R1"}


def test_a_lower_version_that_decodes_is_used() -> None:
    h = _harness("kip-78/a")
    answer = SimpleNamespace(body={})
    conn = Conn(lambda version: answer if version == 10 else _undecodable(version))
    assert Harness.setup_request(h, conn, ApiKey.METADATA, {"Topics": None}) is answer
    assert conn.sent == [12, 11, 10]
    assert sorted(v for _, v, _ in h.setup_defects) == [11, 12]
