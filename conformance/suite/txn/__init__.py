"""TXN: transactions (KIP-98, KIP-447, KIP-890) as clients see them on the wire."""
