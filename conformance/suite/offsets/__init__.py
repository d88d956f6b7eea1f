"""Committed offsets: OffsetCommit and OffsetFetch (OFFSETS.Rn)."""
