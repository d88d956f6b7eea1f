"""IDEMPOTENCE: producer ids, epochs and sequence numbers as the partition leader checks them."""
