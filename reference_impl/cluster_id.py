"""KIP-78 cluster id: generation, its format, and the copy every node keeps in ``meta.properties``.

The id is a random UUID in URL-safe Base64 without padding (22 characters of
``[a-zA-Z0-9_-]``). It is created once per cluster, by whoever first creates it in the metadata
store (create-if-absent), and never changes; a node whose stored id disagrees with the cluster's
refuses to join (Kafka's InconsistentClusterIdException).
"""

from __future__ import annotations

import base64
import os
import re
import uuid
from pathlib import Path

META_PROPERTIES = "meta.properties"
_FORMAT = re.compile(r"^[a-zA-Z0-9_-]+$")


def generate() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode("ascii")


def is_valid(cluster_id: str) -> bool:
    return bool(_FORMAT.match(cluster_id))


class InconsistentClusterId(Exception):
    """The node's stored cluster id is not the cluster's: it belongs to another cluster."""

    def __init__(self, stored: str, actual: str, where: str) -> None:
        super().__init__(
            f"INCONSISTENT_CLUSTER_ID: the cluster id {actual} does not match the id {stored} "
            f"stored in {where}; this node belongs to another cluster "
            f"(wrong data dir or metadata store?)"
        )
        self.stored, self.actual = stored, actual


def read_meta_properties(data_dir: str | Path) -> dict[str, str]:
    """The ``key=value`` lines of ``meta.properties`` (empty when there is none)."""
    path = Path(data_dir) / META_PROPERTIES
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    props = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            props[key.strip()] = value.strip()
    return props


def write_meta_properties(data_dir: str | Path, cluster_id: str, node_id: int) -> None:
    """Write ``meta.properties`` durably (temp file, fsync, rename), as Kafka's version 1."""
    path = Path(data_dir) / META_PROPERTIES
    tmp = path.with_suffix(".tmp")
    text = f"#reference_impl\nversion=1\ncluster.id={cluster_id}\nnode.id={node_id}\n"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def check_and_store(data_dir: str | Path, cluster_id: str, node_id: int) -> None:
    """Compare the cluster's id with the node's stored one; store it the first time.

    Raises InconsistentClusterId when the data dir belongs to another cluster, ValueError when
    it belongs to another node id.
    """
    props = read_meta_properties(data_dir)
    stored = props.get("cluster.id")
    if stored is not None and stored != cluster_id:
        raise InconsistentClusterId(stored, cluster_id, str(Path(data_dir) / META_PROPERTIES))
    stored_node = props.get("node.id", props.get("broker.id"))
    if stored_node is not None and stored_node != str(node_id):
        raise ValueError(
            f"{Path(data_dir) / META_PROPERTIES} belongs to node {stored_node}, not {node_id}"
        )
    if stored is None:
        write_meta_properties(data_dir, cluster_id, node_id)
