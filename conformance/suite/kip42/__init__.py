"""KIP-42 (interceptors, checksums and sizes on record metadata: KIP-42.*), exercised through the
suite's own client (conformance/client) against the target."""
