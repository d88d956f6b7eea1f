"""The state-machine models and their generic builder, without a target.

A small in-memory controller that follows the registration draft stands in for the wire: the
hypothesis machine built from ``specs/models/broker-registration-lifecycle.json`` passes against
it, and each deliberate fault in it fails exactly the requirement the model ties to that
behaviour, with the steps that led there in the message. The model files validate, and a broken
model is refused with its file and JSON path.
"""

from __future__ import annotations

import json
import time
from types import SimpleNamespace
from typing import Any

import pytest

from conformance.protocol import Codec, ErrorCode
from conformance.protocol.errors import SpecError
from conformance.suite.kit import verify
from conformance.suite.kit.models import (
    MODELS_DIR,
    Binding,
    ModelRunner,
    load_model,
    run_machine,
    state_machine,
)

LIFECYCLE = load_model("broker-registration-lifecycle")


class FakeController(Binding):
    """The draft's controller in memory; ``faults`` switch on one misbehaviour each."""

    def __init__(self, *faults: str, session: float = 60.0) -> None:
        self.faults, self.session = set(faults), session
        self.offset = 100
        self.brokers: dict[int, dict[str, Any]] = {}
        self.listed_ever: set[int] = set()
        self.first: dict[int, int] = {}  # broker id -> the epoch of its first registration

    def entity_id(self, index: int) -> int:
        return 1000 + index

    def context(self, name: str) -> Any:
        return {
            "cluster_id": "c",
            "listeners": [],
            "features": [],
            "caught_up_offset": 2**62,
            "behind_offset": -1,
        }[name]

    def duration(self, name: str) -> float:
        return {"session_timeout": self.session, "propagation": 0.0, "shutdown_bound": 1.0}[name]

    def send(self, name: str, request: dict, body: dict, to: Any) -> dict:
        b = self.brokers.get(body["BrokerId"])
        if name == "register":
            if b and b["state"] != "OFFLINE" and b["incarnation"] != body["IncarnationId"]:
                return {"ErrorCode": ErrorCode.DUPLICATE_BROKER_REGISTRATION, "BrokerEpoch": -1}
            if (
                "reuse-epoch" in self.faults
                and b
                and b["state"] != "OFFLINE"
                and b["incarnation"] == body["IncarnationId"]
            ):
                # a retry by the registered incarnation keeping epoch and state is KIP-631's
                # amendment, which the model allows: the fault shows where a new epoch is due
                return {"ErrorCode": ErrorCode.NONE, "BrokerEpoch": b["epoch"]}
            self.offset += 1
            # the fault hands a broker id its first epoch again, also after UnregisterBroker
            first = self.first.setdefault(body["BrokerId"], self.offset)
            epoch = first if "reuse-epoch" in self.faults else self.offset
            self.brokers[body["BrokerId"]] = {
                "state": "FENCED",
                "epoch": epoch,
                "incarnation": body["IncarnationId"],
            }
            return {"ErrorCode": ErrorCode.NONE, "BrokerEpoch": epoch}
        if name == "unregister":
            if b is None:
                return {"ErrorCode": ErrorCode.BROKER_ID_NOT_REGISTERED}
            del self.brokers[body["BrokerId"]]
            return {"ErrorCode": ErrorCode.NONE}
        if b is None:
            return {"ErrorCode": ErrorCode.BROKER_ID_NOT_REGISTERED}
        if body["BrokerEpoch"] != b["epoch"]:
            return {"ErrorCode": ErrorCode.STALE_BROKER_EPOCH}
        caught_up = body["CurrentMetadataOffset"] >= b["epoch"]
        shut = False
        if b["state"] == "OFFLINE" or body["WantShutDown"]:
            shut = b["state"] in ("FENCED", "OFFLINE", "STOPPING")
            b["state"] = "OFFLINE" if shut else "STOPPING"
        elif body["WantFence"]:
            b["state"] = "FENCED"
        elif b["state"] == "FENCED" and caught_up:
            b["state"] = "ONLINE"
        fenced = b["state"] in ("FENCED", "OFFLINE")
        if "never-fenced" in self.faults:
            fenced = False
        return {
            "ErrorCode": ErrorCode.NONE,
            "IsCaughtUp": caught_up,
            "IsFenced": fenced,
            "ShouldShutDown": shut,
        }

    def observe(self, name: str) -> dict:
        listed = {i - 1000 for i, b in self.brokers.items() if b["state"] in ("ONLINE", "STOPPING")}
        if "sticky" in self.faults:
            self.listed_ever |= listed
            listed = set(self.listed_ever)
        return {"client": listed}


#: the suite profile draws at random unless the run gives a seed: these tests give one, so
#: every fault is met the same way each time (at random the reuse-epoch fault went unmet once)
SEED = 20261128


def harness() -> Any:
    return SimpleNamespace(notes=SimpleNamespace(seeded=False), examples=25, seed=SEED)


def machine(*faults: str):
    fast = [n for n, e in LIFECYCLE.events.items() if e.wait is None]
    return state_machine(
        LIFECYCLE,
        lambda: ModelRunner(LIFECYCLE, FakeController(*faults), invariants=["client-metadata"]),
        events=fast,
        initialize=["register"],
    )


def test_the_machine_passes_against_a_faithful_controller() -> None:
    h = harness()
    assert run_machine(h, machine(), steps=20) >= 10
    assert h.notes.seeded


@pytest.mark.parametrize(
    ("fault", "requirement"),
    [
        ("reuse-epoch", "BROKER-REGISTRATION.R7"),
        ("never-fenced", "BROKER-REGISTRATION.R2"),
        ("sticky", "BROKER-REGISTRATION.R4"),
    ],
)
def test_each_fault_fails_its_requirement(fault: str, requirement: str) -> None:
    with pytest.raises(verify.Failed) as e:
        run_machine(harness(), machine(fault), steps=20)
    assert e.value.req_ids == (requirement,)
    assert "steps: " in str(e.value) and "register(#" in str(e.value)


def test_a_session_near_its_timeout_may_or_may_not_have_expired() -> None:
    controller = FakeController(session=10.0)
    runner = ModelRunner(LIFECYCLE, controller, invariants=["client-metadata"])
    runner.step("register", 0)
    runner.step("heartbeat-caught-up", 0)
    assert runner.entities[0].state == "Online"
    runner.entities[0].contact = time.monotonic() - 8  # between half and 1.5 timeouts
    assert runner.candidates(runner.entities[0]) == ["Online", "Fenced"]
    controller.brokers[1000]["state"] = "FENCED"  # the target timed it out: accepted
    runner.check_invariants()
    runner.entities[0].contact = time.monotonic() - 20  # certainly over: the model fences it
    assert runner.candidates(runner.entities[0]) == ["Fenced"]
    assert runner.entities[0].timed_out == ("BROKER-REGISTRATION.R5",)
    controller.brokers[1000]["state"] = "ONLINE"  # ... but the target still lists it
    with pytest.raises(verify.Failed) as e:
        runner.check_invariants()
    assert set(e.value.req_ids) == {"BROKER-REGISTRATION.R4", "BROKER-REGISTRATION.R5"}


def test_liveness_is_bounded() -> None:
    controller = FakeController()
    runner = ModelRunner(LIFECYCLE, controller, invariants=[])
    runner.step("register", 0)
    runner.step("heartbeat-caught-up", 0)
    runner.step("want-shutdown", 0)
    assert runner.entities[0].state == "Stopping"
    runner.drive("stopping-shuts-down", 0)
    assert runner.entities[0].state == "Offline"


def test_model_files_validate_and_name_real_apis() -> None:
    codec = Codec.from_specs()
    names = sorted(p.stem for p in MODELS_DIR.glob("*.json"))
    assert {"broker-registration-lifecycle", "kip-590-controller-routing"} <= set(names)
    for name in names:
        model = load_model(name)
        assert model.requirement_ids()
        for req in model.requests.values():
            assert codec.message(req["api_key"], "request").name == f"{req['api']}Request"
        for ev in model.events.values():
            assert ev.wait or ev.transitions, ev.name


@pytest.mark.parametrize(
    ("change", "where", "what"),
    [
        (lambda m: m["events"][0]["transitions"][0].update(to="Gone"), "$.events[0]", "Gone"),
        (
            lambda m: m["events"][0]["transitions"][0].update(
                requirements=["BROKER-REGISTRATION.R99"]
            ),
            "$",
            "BROKER-REGISTRATION.R99",
        ),
        (
            lambda m: m["events"][0]["transitions"][0]["expect"].update(ErrorCode="NO_SUCH"),
            "$.events[0]",
            "NO_SUCH",
        ),
        (lambda m: m["states"][0].pop("observed_as"), "$.states[0]", "observed_as"),
        (lambda m: m["events"][1].update(request="nothing"), "$.events[1].request", "nothing"),
    ],
)
def test_a_broken_model_is_refused_with_its_path(tmp_path, change, where, what) -> None:
    obj = json.loads((MODELS_DIR / "broker-registration-lifecycle.json").read_text())
    change(obj)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(obj))
    with pytest.raises(SpecError) as e:
        load_model(path)
    assert "broken.json" in str(e.value) and where in str(e.value) and what in str(e.value)
