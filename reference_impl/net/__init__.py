"""Networking of the reference nodes: listeners that frame, dispatch and answer requests."""
