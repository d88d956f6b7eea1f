"""KIP-932 share-group bugs, as answer rewrites for ``faults_groups.ProxiedCluster``: each breaks
one SHARE-GROUPS requirement the way a real broker's bug would (a member id not kept, a partition
never shared, a delivery count that does not rise, more records acquired than asked, ...)."""

from __future__ import annotations

from conformance.protocol import ApiKey

HEARTBEAT = ApiKey.SHARE_GROUP_HEARTBEAT
FETCH = ApiKey.SHARE_FETCH


def member_id_not_kept(api: int, version: int, body: dict) -> bool:
    """SHARE-GROUPS.R1: answers carry another member id than the one the client chose."""
    if api != HEARTBEAT or body.get("ErrorCode") or not body.get("MemberId"):
        return False
    body["MemberId"] = body["MemberId"][::-1]
    return True


class NeverShared:
    """SHARE-GROUPS.R3: a partition assigned to one member is left out of every other member's
    assignment (an assignor that gives each partition to one member only, as a consumer group's
    does)."""

    def __init__(self) -> None:
        self.owner: dict[tuple, str] = {}

    def __call__(self, api: int, version: int, body: dict) -> bool:
        if api != HEARTBEAT or not body.get("Assignment") or not body.get("MemberId"):
            return False
        hit = False
        for tp in body["Assignment"]["TopicPartitions"]:
            kept = []
            for p in tp["Partitions"]:
                owner = self.owner.setdefault((tp["TopicId"], p), body["MemberId"])
                if owner == body["MemberId"]:
                    kept.append(p)
            hit = hit or kept != tp["Partitions"]
            tp["Partitions"] = kept
        return hit


def leave_keeps_epoch(api: int, version: int, body: dict) -> bool:
    """SHARE-GROUPS.R4: a leave (-1) answered with member epoch 0."""
    if api != HEARTBEAT or body.get("MemberEpoch") != -1:
        return False
    body["MemberEpoch"] = 0
    return True


def acquired_ranges(body: dict) -> list[dict]:
    return [
        a
        for t in body.get("Responses") or []
        for p in t.get("Partitions") or []
        for a in p.get("AcquiredRecords") or []
    ]


def delivery_count_stuck(api: int, version: int, body: dict) -> bool:
    """SHARE-GROUPS.R9, R11, R13: every acquired record is said to be on its first delivery."""
    hit = [a for a in acquired_ranges(body) if api == FETCH and a["DeliveryCount"] != 1]
    for a in hit:
        a["DeliveryCount"] = 1
    return bool(hit)


def ranges_widened(api: int, version: int, body: dict) -> bool:
    """SHARE-GROUPS.R10: every acquired range reaches two offsets further than asked for."""
    hit = acquired_ranges(body) if api == FETCH else []
    for a in hit:
        a["LastOffset"] += 2
    return bool(hit)


def log_start_withheld(api: int, version: int, body: dict) -> bool:
    """SHARE-GROUPS.R14: records from offset 0 are never handed out (a share partition that
    starts at the log end whatever share.auto.offset.reset says, for a topic written before)."""
    if api != FETCH:
        return False
    hit = False
    for t in body.get("Responses") or []:
        for p in t.get("Partitions") or []:
            ranges = p.get("AcquiredRecords") or []
            kept = [a for a in ranges if a["FirstOffset"] > 1]
            if kept != ranges:
                p["AcquiredRecords"] = kept
                hit = True
    return hit


def share_type_hidden(api: int, version: int, body: dict) -> bool:
    """SHARE-GROUPS.R15: ListGroups calls share groups consumer groups (a coordinator that
    lists every modern group under one type)."""
    if api != ApiKey.LIST_GROUPS:
        return False
    hit = [g for g in body.get("Groups") or [] if g.get("GroupType") == "share"]
    for g in hit:
        g["GroupType"] = "consumer"
    return bool(hit)


def described(api: int, body: dict) -> list[dict]:
    """The partitions of a DescribeShareGroupOffsets answer (none for another API's)."""
    if api != ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS:
        return []
    return [
        p
        for g in body.get("Groups") or []
        for t in g.get("Topics") or []
        for p in t.get("Partitions") or []
    ]


def unknown_start_as_zero(api: int, version: int, body: dict) -> bool:
    """SHARE-GROUPS.R17, R19: DescribeShareGroupOffsets answers 0, not -1, for a partition the
    group has no start offset for (a missing offset read as a default)."""
    hit = [p for p in described(api, body) if p.get("StartOffset") == -1]
    for p in hit:
        p["StartOffset"] = 0
    return bool(hit)


def start_offset_unsaid(api: int, version: int, body: dict) -> bool:
    """SHARE-GROUPS.R25: DescribeShareGroupOffsets answers -1 for every start offset (a group
    coordinator that never learns its share partitions' start offsets from where they live)."""
    hit = [p for p in described(api, body) if p.get("StartOffset", -1) >= 0]
    for p in hit:
        p["StartOffset"] = -1
    return bool(hit)


def lag_unsaid(api: int, version: int, body: dict) -> bool:
    """SHARE-GROUPS.R26: DescribeShareGroupOffsets v1 answers Lag -1 for every partition (the
    reference before it asked the leaders: a coordinator that does not know the lag)."""
    hit = [p for p in described(api, body) if version >= 1 and p.get("Lag", -1) >= 0]
    for p in hit:
        p["Lag"] = -1
    return bool(hit)


def renew_lock_unsaid(api: int, version: int, body: dict) -> bool:
    """SHARE-GROUPS.R23: ShareAcknowledge v2 answers AcquisitionLockTimeoutMs 0 (a broker that
    took the field on with v2 but never fills it in)."""
    if api != ApiKey.SHARE_ACKNOWLEDGE or version < 2 or not body.get("AcquisitionLockTimeoutMs"):
        return False
    body["AcquisitionLockTimeoutMs"] = 0
    return True
