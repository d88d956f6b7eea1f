"""Group-coordinator bugs, injected by proxies in front of the reference cluster.

``ProxiedCluster`` puts one ``FaultyProxy`` in front of every broker and rewrites the broker
addresses in Metadata, FindCoordinator and DescribeCluster answers to the proxies, so that the
suite reaches every broker (the coordinator included) through them. Each fault below rewrites
answers the way a real implementation's bug would: a generation that is not bumped, an
assignment handed to the wrong member, a state misreported, -1 offsets read as 0, a refusal
turned into an acceptance. ``Faults`` applies several at once (each touches answers that only
its own requirement's checks read first).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.protocol import ApiKey, Codec, ErrorCode
from conformance.protocol.framing import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from conformance.targets.base import Endpoint
from tests.support.proxies import FaultyProxy

CODEC = Codec.from_specs()
TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5
SET, DELETE, APPEND = 0, 1, 2

#: rewrites one decoded answer in place: (api key, version, body) -> whether it changed
BodyFault = Callable[[int, int, dict], bool]


def codes(body: Any, field_name: str = "ErrorCode"):
    """Every dict in ``body`` (nested) that has ``field_name``."""
    if isinstance(body, dict):
        if field_name in body:
            yield body
        for v in body.values():
            yield from codes(v, field_name)
    elif isinstance(body, list):
        for v in body:
            yield from codes(v, field_name)


def replace_code(apis: set[int], old: int, new: int) -> BodyFault:
    """Answers of ``apis``: every error code ``old`` becomes ``new``."""

    def fault(api: int, version: int, body: dict) -> bool:
        if api not in apis:
            return False
        hit = [d for d in codes(body) if d["ErrorCode"] == old]
        for d in hit:
            d["ErrorCode"] = new
        return bool(hit)

    fault.__name__ = f"replace_{old}_by_{new}"
    return fault


# --- membership -------------------------------------------------------------------------------


def generation_not_bumped(api: int, version: int, body: dict) -> bool:
    """JoinGroup answers always carry the first generation."""
    if api != ApiKey.JOIN_GROUP or body["ErrorCode"] != ErrorCode.NONE or body["GenerationId"] == 1:
        return False
    body["GenerationId"] = 1
    return True


def wrong_coordinator_id(api: int, version: int, body: dict) -> bool:
    """FindCoordinator names the right address under another broker's node id."""
    if api != ApiKey.FIND_COORDINATOR:
        return False
    for entry in body.get("Coordinators") or [body]:
        if entry.get("ErrorCode") == ErrorCode.NONE:
            entry["NodeId"] += 1
    return True


def no_member_id_given(api: int, version: int, body: dict) -> bool:
    """MEMBER_ID_REQUIRED comes without the id the member must use."""
    if api != ApiKey.JOIN_GROUP or body["ErrorCode"] != ErrorCode.MEMBER_ID_REQUIRED:
        return False
    body["MemberId"] = ""
    return True


def metadata_to_followers(api: int, version: int, body: dict) -> bool:
    """Followers are sent a member list too (their own entry)."""
    if (
        api != ApiKey.JOIN_GROUP
        or body["ErrorCode"] != ErrorCode.NONE
        or body["Leader"] == body["MemberId"]
    ):
        return False
    body["Members"] = [{"MemberId": body["MemberId"], "GroupInstanceId": None, "Metadata": b""}]
    return True


@dataclass
class AssignmentToWrongMember:
    """Each SyncGroup answer hands over the assignment of the answer before it."""

    previous: bytes | None = None

    def __call__(self, api: int, version: int, body: dict) -> bool:
        if api != ApiKey.SYNC_GROUP or body["ErrorCode"] != ErrorCode.NONE:
            return False
        mine, given = body["Assignment"], self.previous
        self.previous = mine
        if given is None or given == mine:
            return False
        body["Assignment"] = given
        return True


@dataclass
class LeftMembersStayListed:
    """The leader keeps being told of every member it was ever told of."""

    seen: dict[str, dict] = field(default_factory=dict)

    def __call__(self, api: int, version: int, body: dict) -> bool:
        if api != ApiKey.JOIN_GROUP or body["ErrorCode"] != ErrorCode.NONE or not body["Members"]:
            return False
        listed = {m["MemberId"] for m in body["Members"]}
        if not listed & set(self.seen):  # another group: start over
            self.seen.clear()
        gone = [m for k, m in self.seen.items() if k not in listed]
        for m in body["Members"]:
            self.seen[m["MemberId"]] = m
        body["Members"] = [*body["Members"], *gone]
        return bool(gone)


# --- administration ---------------------------------------------------------------------------


def state_renamed(
    mapping: dict[str, str], apis: tuple[int, ...] = (ApiKey.DESCRIBE_GROUPS,)
) -> BodyFault:
    def fault(api: int, version: int, body: dict) -> bool:
        if api not in apis:
            return False
        hit = False
        for g in body["Groups"]:
            if g.get("GroupState") in mapping:
                g["GroupState"] = mapping[g["GroupState"]]
                hit = True
        return hit

    return fault


def assignments_not_described(api: int, version: int, body: dict) -> bool:
    if api != ApiKey.DESCRIBE_GROUPS:
        return False
    hit = False
    for g in body["Groups"]:
        for m in g["Members"]:
            if m["MemberAssignment"]:
                m["MemberAssignment"] = b""
                hit = True
    return hit


def empty_groups_unlisted(api: int, version: int, body: dict) -> bool:
    """ListGroups leaves out groups whose protocol type is empty (made by commits only)."""
    if api != ApiKey.LIST_GROUPS:
        return False
    kept = [g for g in body["Groups"] if g["ProtocolType"]]
    hit = len(kept) != len(body["Groups"])
    body["Groups"] = kept
    return hit


# --- offsets -----------------------------------------------------------------------------------


def partitions_of(body: dict, version: int) -> list[dict]:
    if version >= 8:
        return [p for g in body["Groups"] for t in g["Topics"] for p in t["Partitions"]]
    return [p for t in body["Topics"] for p in t["Partitions"]]


def unknown_offset_as_zero(api: int, version: int, body: dict) -> bool:
    if api != ApiKey.OFFSET_FETCH:
        return False
    hit = [p for p in partitions_of(body, version) if p["CommittedOffset"] == -1]
    for p in hit:
        p["CommittedOffset"] = 0
    return bool(hit)


def metadata_dropped(api: int, version: int, body: dict) -> bool:
    if api != ApiKey.OFFSET_FETCH:
        return False
    hit = [p for p in partitions_of(body, version) if p["Metadata"]]
    for p in hit:
        p["Metadata"] = ""
    return bool(hit)


def fetch_lists_extra_partition(api: int, version: int, body: dict) -> bool:
    """OffsetFetch answers list one more partition, never committed, of each topic."""
    if api != ApiKey.OFFSET_FETCH:
        return False
    topics = [t for g in body["Groups"] for t in g["Topics"]] if version >= 8 else body["Topics"]
    for t in topics:
        if t["Partitions"]:
            extra = dict(t["Partitions"][0], PartitionIndex=999, CommittedOffset=-1, Metadata="")
            t["Partitions"].append(extra)
    return bool(topics)


# --- configs -----------------------------------------------------------------------------------


def config_source(old: int, new: int, *, spare_bootstrap: bool = False) -> BodyFault:
    """DescribeConfigs reports source ``old`` as ``new`` (optionally not on the bootstrap
    broker: the others then disagree with it)."""

    def fault(api: int, version: int, body: dict) -> bool:
        if api != ApiKey.DESCRIBE_CONFIGS:
            return False
        hit = [c for r in body["Results"] for c in r["Configs"] if c["ConfigSource"] == old]
        for c in hit:
            c["ConfigSource"] = new
        return bool(hit)

    fault.__name__ = f"config_source_{old}_as_{new}"
    fault.spare_bootstrap = spare_bootstrap  # type: ignore[attr-defined]
    return fault


def unknown_topic_described(api: int, version: int, body: dict) -> bool:
    """DescribeConfigs of a topic that does not exist answers NONE with no configs."""
    if api != ApiKey.DESCRIBE_CONFIGS:
        return False
    hit = [r for r in body["Results"] if r["ErrorCode"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    for r in hit:
        r["ErrorCode"], r["ErrorMessage"] = ErrorCode.NONE, None
    return bool(hit)


#: rewrites one decoded request in place: (api key, version, body) -> (api key, version) to
#: send it as (the answer's layout must be the same), or None when it is left alone
RequestFault = Callable[[int, int, dict], "tuple[int, int] | None"]


def alter_applied_incrementally(api: int, version: int, body: dict) -> tuple[int, int] | None:
    """AlterConfigs is applied as IncrementalAlterConfigs SET of the configs it names (the
    answers of the two have the same layout)."""
    if api != ApiKey.ALTER_CONFIGS:
        return None
    for r in body["Resources"]:
        for c in r["Configs"]:
            c["ConfigOperation"] = SET
    return ApiKey.INCREMENTAL_ALTER_CONFIGS, 1 if version >= 2 else 0


def incremental_op(old: int, new: int | None) -> RequestFault:
    """IncrementalAlterConfigs operation ``old`` becomes ``new`` (None: the config is left
    out of the request)."""

    def fault(api: int, version: int, body: dict) -> tuple[int, int] | None:
        if api != ApiKey.INCREMENTAL_ALTER_CONFIGS:
            return None
        hit = False
        for r in body["Resources"]:
            kept = []
            for c in r["Configs"]:
                if c["ConfigOperation"] == old:
                    hit = True
                    if new is None:
                        continue
                    c["ConfigOperation"] = new
                kept.append(c)
            r["Configs"] = kept
        return (api, version) if hit else None

    fault.__name__ = f"incremental_op_{old}_as_{new}"
    return fault


#: how far ``offset_delete_elsewhere`` moves the partitions an OffsetDelete names
ELSEWHERE = 1000


def offset_delete_elsewhere(api: int, version: int, body: dict) -> tuple[int, int] | None:
    """OffsetDelete is applied to other partitions than those named (nothing is removed);
    ``offset_delete_answered_as_asked`` answers for the named ones: acknowledged, not done."""
    if api != ApiKey.OFFSET_DELETE:
        return None
    for t in body["Topics"]:
        for p in t["Partitions"]:
            p["PartitionIndex"] += ELSEWHERE
    return api, version


def offset_delete_answered_as_asked(api: int, version: int, body: dict) -> bool:
    if api != ApiKey.OFFSET_DELETE:
        return False
    moved = [p for t in body["Topics"] for p in t["Partitions"] if p["PartitionIndex"] >= ELSEWHERE]
    for p in moved:
        p["PartitionIndex"] -= ELSEWHERE
    return bool(moved)


#: what a request fault returns to swallow the request (never forwarded, never answered)
SWALLOW = (-1, -1)


def join_never_answered(api: int, version: int, body: dict) -> tuple[int, int] | None:
    """The coordinator never answers JoinGroup (a rebalance that never completes)."""
    return SWALLOW if api == ApiKey.JOIN_GROUP else None


def values_not_validated(api: int, version: int, body: dict) -> tuple[int, int] | None:
    """A value that is not a number is stored as 1 (the broker does not validate numbers)."""
    if api not in (ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS):
        return None
    hit = [c for r in body["Resources"] for c in r["Configs"] if c.get("Value") == "not-a-number"]
    for c in hit:
        c["Value"] = "1"
    return (api, version) if hit else None


def validate_only_ignored(api: int, version: int, body: dict) -> tuple[int, int] | None:
    if (
        api not in (ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS)
        or not body["ValidateOnly"]
    ):
        return None
    body["ValidateOnly"] = False
    return api, version


def config_keys_ignored(api: int, version: int, body: dict) -> tuple[int, int] | None:
    if api != ApiKey.DESCRIBE_CONFIGS:
        return None
    hit = [r for r in body["Resources"] if r["ConfigurationKeys"] is not None]
    for r in hit:
        r["ConfigurationKeys"] = None
    return (api, version) if hit else None


# --- plumbing ----------------------------------------------------------------------------------


@dataclass
class Faults:
    """Several answer and request faults at once; counts what each rewrote."""

    faults: tuple[BodyFault, ...]
    requests: tuple[RequestFault, ...] = ()
    hits: dict[str, int] = field(default_factory=dict)

    def _hit(self, f: Any) -> None:
        name = getattr(f, "__name__", type(f).__name__)
        self.hits[name] = self.hits.get(name, 0) + 1

    def apply(self, api: int, version: int, body: dict, bootstrap: bool) -> bool:
        changed = False
        for f in self.faults:
            if bootstrap and getattr(f, "spare_bootstrap", False):
                continue
            if f(api, version, body):
                self._hit(f)
                changed = True
        return changed

    def apply_request(self, api: int, version: int, body: dict) -> tuple[int, int] | None:
        sent_as = None
        for f in self.requests:
            got = f(api, version, body)
            if got is not None:
                self._hit(f)
                sent_as = got
                api, version = got
        return sent_as


INTERESTING = {
    ApiKey.OFFSET_COMMIT,
    ApiKey.OFFSET_FETCH,
    ApiKey.FIND_COORDINATOR,
    ApiKey.JOIN_GROUP,
    ApiKey.HEARTBEAT,
    ApiKey.LEAVE_GROUP,
    ApiKey.SYNC_GROUP,
    ApiKey.DESCRIBE_GROUPS,
    ApiKey.LIST_GROUPS,
    ApiKey.DESCRIBE_CONFIGS,
    ApiKey.DELETE_GROUPS,
    ApiKey.ALTER_CONFIGS,
    ApiKey.INCREMENTAL_ALTER_CONFIGS,
    ApiKey.CREATE_TOPICS,
    ApiKey.OFFSET_DELETE,
    ApiKey.CONSUMER_GROUP_HEARTBEAT,
    ApiKey.CONSUMER_GROUP_DESCRIBE,
    ApiKey.SHARE_GROUP_HEARTBEAT,
    ApiKey.SHARE_GROUP_DESCRIBE,
    ApiKey.SHARE_FETCH,
    ApiKey.SHARE_ACKNOWLEDGE,
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS,
    ApiKey.DELETE_SHARE_GROUP_OFFSETS,
}


class ProxiedCluster:
    """One proxy per broker of ``brokers`` (node id -> endpoint; the first is the bootstrap);
    addresses rewritten to the proxies."""

    def __init__(self, brokers: dict[int, Endpoint], faults: Faults | None = None) -> None:
        self.faults = faults or Faults(())
        first = next(iter(brokers))
        self.proxies = {
            node: FaultyProxy(
                (ep.host, ep.port),
                lambda a, v, f, boot=(node == first): self._frame(a, v, f, boot),
                self._request,
            )
            for node, ep in brokers.items()
        }
        self.by_address = {
            (ep.host, ep.port): self.proxies[node].port for node, ep in brokers.items()
        }

    @property
    def bootstrap(self) -> str:
        return next(iter(self.proxies.values())).address

    def __enter__(self) -> ProxiedCluster:
        for p in self.proxies.values():
            p.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.proxies.values():
            p.__exit__(*exc)

    def _redirect(self, api: int, body: dict) -> bool:
        entries: list[dict] = []
        if api == ApiKey.METADATA or api == ApiKey.DESCRIBE_CLUSTER:
            entries = body.get("Brokers") or []
        elif api == ApiKey.FIND_COORDINATOR:
            entries = body.get("Coordinators") or [body]
        hit = False
        for e in entries:
            port = self.by_address.get((e.get("Host"), e.get("Port")))
            if port is not None:
                e["Port"] = port
                hit = True
        return hit

    def _request(self, api: int, version: int, frame: bytes) -> bytes | None:
        if not self.faults.requests or api not in INTERESTING:
            return frame
        header, body = decode_request(CODEC, frame)
        sent_as = self.faults.apply_request(api, version, body)
        if sent_as is None:
            return frame
        if sent_as == SWALLOW:
            return None
        new_api, new_version = sent_as
        return encode_request(
            CODEC, new_api, new_version, header["CorrelationId"], header["ClientId"], body
        )

    def _frame(self, api: int, version: int, frame: bytes, bootstrap: bool) -> bytes:
        if api not in INTERESTING | {ApiKey.METADATA, ApiKey.DESCRIBE_CLUSTER}:
            return frame
        header, body = decode_response(CODEC, api, version, frame)
        moved = self._redirect(api, body)
        changed = api in INTERESTING and self.faults.apply(api, version, body, bootstrap)
        if not (moved or changed):
            return frame
        return encode_response(CODEC, api, version, header["CorrelationId"], body)


def run_through(cli: Any, target: Any, select: str, faults: Faults, seed: str) -> Any:
    """``run --select SELECT`` (the ``cli`` fixture) against the reference ``target`` behind
    one proxy per broker with ``faults``: the run, which must have recorded no ERROR."""
    with ProxiedCluster(dict(target.restartable), faults) as proxied:
        proc, run = cli(
            "--bootstrap-server",
            proxied.bootstrap,
            "--target-name",
            "proxied",
            "--seed",
            seed,
            "--select",
            select,
        )
    assert run is not None, proc.stderr[-2000:]
    assert not [r for r in run.records if r["verdict"] == "ERROR"], proc.stdout[-3000:]
    return run
