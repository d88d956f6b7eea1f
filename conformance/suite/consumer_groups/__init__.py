"""CONSUMER-GROUPS: KIP-848 consumer groups on the wire."""
