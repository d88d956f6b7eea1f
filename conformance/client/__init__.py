"""The suite's own Kafka client: wire connection and version negotiation."""
