"""Verdicts, result records and run manifests: what a run leaves behind for the matrix."""
