"""KIP-78 (cluster id): Metadata v2+, format, stability, DescribeCluster, the /cluster/id znode,
and the client's ClusterResourceListeners (R9)."""
