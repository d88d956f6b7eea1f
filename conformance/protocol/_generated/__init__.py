"""Generated modules: see conformance.protocol.gen_tables."""
