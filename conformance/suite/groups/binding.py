"""How the groups-membership model (``specs/models/groups-membership.json``) meets a target.

Entities are fresh suite groups (new names for every example). A group's rounds are driven by
``members.Group`` as a client drives them; the binding reports each round as the flat answer
the model's ``join-member`` / ``leave-member`` expect, fills the member id ``<member>`` with the
group's oldest member, flattens OffsetFetch and DeleteGroups to one partition / one group, and
observes DescribeGroups (each group's coordinator) and ListGroups (every broker). At the end its
members leave and its groups and topic are deleted.

Between steps its members stay alive as a client's would: at every step and view, a group not
contacted for a heartbeat interval (a third of its members' session, as Kafka's clients
advise) has each member heartbeat first. The model assumes sessions never end; without this, a
slow step of one group (a machine under load) let the other group's member expire, and its
stale commit was answered UNKNOWN_MEMBER_ID, rightly. The keep-alive's answers judge nothing.
"""

from __future__ import annotations

import time
from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.groups.commits import fetch_body
from conformance.suite.groups.members import (
    SESSION_MS,
    Group,
    Round,
    coordinator_request,
    list_groups,
)
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, SyncConnection
from conformance.suite.kit.models import Binding, ModelRunner
from conformance.suite.kit.safety import fresh_name
from conformance.suite.kit.topic_ids import name_both_ways
from conformance.targets.base import Endpoint

MEMBER = "<member>"
#: how long DescribeGroups / ListGroups may take to show what an answered request did
SETTLE = 3.0
#: a member heartbeats when so long has passed since its group was last contacted (Kafka's
#: clients: heartbeat.interval.ms no more than a third of session.timeout.ms)
HEARTBEAT_INTERVAL = SESSION_MS / 1000 / 3
#: the requests after which every member of the group has been heard from
ROUNDS = frozenset({"join-member", "leave-member", "heartbeat"})


class GroupsBinding(Binding):
    def __init__(self, harness: Harness, topic: str, count: int) -> None:
        self.harness, self.topic, self.count = harness, topic, count
        self.names = [fresh_name("model") for _ in range(count)]
        self.groups: dict[int, Group] = {}
        self.conns: dict[Endpoint, SyncConnection] = {}
        #: group index -> when (monotonic, before sending) every member was last contacted
        self.contacted: dict[int, float] = {}
        self.fetch_version = harness.pick_version(ApiKey.OFFSET_FETCH, "1+")
        self.commit_version = harness.pick_version(ApiKey.OFFSET_COMMIT, "1+")

    def entity_id(self, index: int) -> str:
        return self.names[index]

    def context(self, name: str) -> Any:
        if name == "topic":
            return self.topic
        raise KeyError(name)

    def duration(self, name: str) -> float:
        if name == "settle":
            return SETTLE
        raise KeyError(name)

    def group(self, name: str) -> Group:
        index = self.names.index(name)
        if index not in self.groups:
            self.groups[index] = Group(self.harness, name)
        return self.groups[index]

    def keep_alive(self, now: float) -> None:
        """Every member of a group not contacted for HEARTBEAT_INTERVAL heartbeats (its answer
        unjudged: the steps judge heartbeats). ``now``: the time before the step's first
        request (a session restarts no earlier)."""
        for index, g in self.groups.items():
            if now - self.contacted.setdefault(index, now) >= HEARTBEAT_INTERVAL:
                for m in g.members:
                    g.heartbeat(m)
                self.contacted[index] = now

    # --- requests ---------------------------------------------------------------------------

    def send(self, name: str, request: dict[str, Any], body: dict[str, Any], to: Any) -> dict:
        g = self.group(body["GroupsNames"][0] if name == "delete" else body["GroupId"])
        now = time.monotonic()
        self.keep_alive(now)
        got = self._send(name, body, g)
        if name in ROUNDS:  # every member of the group was sent a request
            self.contacted[self.names.index(g.name)] = now
        return got

    def _send(self, name: str, body: dict[str, Any], g: Group) -> dict:
        if name == "delete":
            v = self.harness.pick_version(ApiKey.DELETE_GROUPS)
            got = coordinator_request(self.harness, g.admin, ApiKey.DELETE_GROUPS, v, body).body
            return {"ErrorCode": got["Results"][0]["ErrorCode"]}
        if name == "join-member":
            return self._summary(g, g.rebalance(joining=[g.new_member()]))
        if name == "leave-member":
            leaving = g.members[-1]
            summary = self._summary(g, g.rebalance(leaving=[leaving]), leaving.member_id)
            summary["LeftHeartbeatErrorCode"] = g.heartbeat(leaving)
            return summary
        if name == "heartbeat":
            codes = [g.heartbeat(m) for m in g.members]
            return {"ErrorCode": next((c for c in codes if c != ErrorCode.NONE), ErrorCode.NONE)}
        if body.get("MemberId") == MEMBER:
            body = {**body, "MemberId": g.members[0].member_id if g.members else ""}
        if name == "member-heartbeat":
            v = g.versions[ApiKey.HEARTBEAT]
            return g.request(ApiKey.HEARTBEAT, v, body).body
        if name == "commit":
            body = {**body, "Topics": [dict(t) for t in body["Topics"]]}
            name_both_ways(self.harness, ApiKey.OFFSET_COMMIT, self.commit_version, body["Topics"])
            return g.request(ApiKey.OFFSET_COMMIT, self.commit_version, body).body
        if name == "fetch":
            v = self.fetch_version
            req, _ = fetch_body(self.harness, g.name, v, [(self.topic, 0)])
            got = g.request(ApiKey.OFFSET_FETCH, v, req).body
            entry = got["Groups"][0] if v >= 8 else got
            parts = [p for t in entry["Topics"] for p in t["Partitions"]]
            code = entry.get("ErrorCode", ErrorCode.NONE) or (
                parts[0]["ErrorCode"] if parts else None
            )
            return {
                "ErrorCode": code,
                "CommittedOffset": parts[0]["CommittedOffset"] if parts else None,
            }
        raise KeyError(name)

    @staticmethod
    def _summary(g: Group, r: Round, left: str | None = None) -> dict[str, Any]:
        answers = [*r.joins.values(), *r.syncs.values()]
        if r.leave is not None:
            answers.append(r.leave)
        codes = [
            c
            for a in answers
            for c in [a.get("ErrorCode", ErrorCode.NONE)]
            + [
                m.get("ErrorCode", ErrorCode.NONE)
                for m in a.get("Members") or []
                if "ErrorCode" in m
            ]
        ]
        gens = {b["GenerationId"] for b in r.joins.values()}
        leaders = {b["Leader"] for b in r.joins.values()}
        ids = {b["MemberId"] for b in r.joins.values()}
        leader_answer = next((b for b in r.joins.values() if b["Leader"] == b["MemberId"]), None)
        listed = {m["MemberId"] for m in (leader_answer or {}).get("Members") or []}
        followers = sum(len(b["Members"]) for b in r.joins.values() if b["Leader"] != b["MemberId"])
        delivered = bool(r.syncs) and all(
            s["ErrorCode"] == ErrorCode.NONE and s["Assignment"] == r.assigned.get(m.member_id)
            for m in g.members
            for s in [r.syncs.get(m.client_id, {"ErrorCode": -1})]
        )
        return {
            "ErrorCode": next((c for c in codes if c != ErrorCode.NONE), ErrorCode.NONE),
            "GenerationId": gens.pop() if len(gens) == 1 else -2,
            "Members": len(listed),
            "LeaderIsMember": len(leaders) == 1 and leaders <= ids,
            "FollowersListed": followers,
            "AssignmentsDelivered": delivered,
            "RebalanceSeen": not r.heartbeats or ErrorCode.REBALANCE_IN_PROGRESS in r.heartbeats,
            "LeftListed": left in listed if left is not None else False,
        }

    # --- views ------------------------------------------------------------------------------

    def observe(self, name: str) -> dict[str, Any]:
        self.keep_alive(time.monotonic())
        if name == "describe":
            records: dict[int, Any] = {}
            for conn, names in self._by_coordinator().items():
                body = {"Groups": names, "IncludeAuthorizedOperations": False}
                dv = self.harness.pick_version(ApiKey.DESCRIBE_GROUPS)
                got = coordinator_request(self.harness, conn, ApiKey.DESCRIBE_GROUPS, dv, body).body
                for d in got["Groups"]:
                    i = self.names.index(d["GroupId"])
                    if dv >= 6 and d["ErrorCode"] == ErrorCode.GROUP_ID_NOT_FOUND:
                        # v6+ (KIP-1043) answers a group that does not exist so: it reads as Dead
                        records[i] = {"GroupState": "Dead", "members": 0}
                        continue
                    verify.check(
                        d["ErrorCode"] == ErrorCode.NONE,
                        f"DescribeGroups v{dv} of {d['GroupId']}: error {d['ErrorCode']}",
                        "GROUPS.R13",
                    )
                    verify.check(
                        dv < 6 or d["GroupState"] != "Dead",
                        f"DescribeGroups v{dv} of {d['GroupId']}: NONE with state Dead; from v6 "
                        "a group that does not exist is GROUP_ID_NOT_FOUND",
                        "GROUPS.R13",
                    )
                    records[i] = {"GroupState": d["GroupState"], "members": len(d["Members"])}
            return {"DescribeGroups": records}
        if name == "list":
            listed: set[str] = set()
            for conn in self._by_coordinator():
                listed |= set(list_groups(self.harness, conn=conn))
            return {
                "ListGroups (the groups' coordinators)": {
                    i for i, n in enumerate(self.names) if n in listed
                }
            }
        raise KeyError(name)

    def _by_coordinator(self) -> dict[SyncConnection, list[str]]:
        """The groups' names by a kept connection to their coordinator (one per broker)."""
        out: dict[SyncConnection, list[str]] = {}
        for n in self.names:
            ep = self.group(n).coordinator.endpoint
            conn = self.conns.get(ep)
            if conn is None or conn.closed:
                conn = self.conns[ep] = self.harness.connect(ep)
            out.setdefault(conn, []).append(n)
        return out

    def cleanup(self, runner: ModelRunner | None = None) -> None:
        for g in self.groups.values():
            try:
                g.cleanup()
            except Exception:
                pass
